"""Throughput of the parsing core: ``python -m palimpsest.devtools.bench.parsing``.

The corpus is TypeScript. Without ``--corpus`` it is generated in memory, deterministically:
injectable service classes with documented async methods, interfaces, exported functions and
arrow functions, relative and aliased imports, file sizes spread like a real repository's. So
the figure compares between machines and runs; ``--corpus DIR`` reads the ``.ts``/``.tsx``
files under ``DIR`` instead. It prints one JSON object: bytes, files, seconds and MB/s for
``screen`` + ``analyze_file``; for tree-sitter's parse alone (the floor under the first figure,
to read it against the machine); for ``code_tokens`` over the chunks (what queries and the doc
checks use); and for ``code_vector`` over them (what a build writes per chunk). Seconds are CPU
seconds of this process (one core), so other load on the machine does not count as ours.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from palimpsest.chunker.parsing.chunks import analyze_file
from palimpsest.chunker.parsing.screen import Screened, screen
from palimpsest.index.codefacts import grammars
from palimpsest.index.languages import detect_language
from palimpsest.index.tokens import code_tokens, code_vector

__all__ = ["generate_typescript_corpus", "main", "measure"]

_MAX_BYTES = 256 * 1024
_WORDS = [
    "account",
    "address",
    "amount",
    "audit",
    "balance",
    "batch",
    "billing",
    "cache",
    "cart",
    "catalog",
    "channel",
    "charge",
    "client",
    "config",
    "context",
    "coupon",
    "currency",
    "customer",
    "delivery",
    "discount",
    "document",
    "entry",
    "event",
    "feature",
    "filter",
    "handler",
    "history",
    "inventory",
    "invoice",
    "item",
    "ledger",
    "limit",
    "line",
    "message",
    "metric",
    "notification",
    "order",
    "owner",
    "page",
    "payment",
    "permission",
    "plan",
    "policy",
    "price",
    "product",
    "profile",
    "query",
    "queue",
    "quota",
    "rate",
    "record",
    "refund",
    "region",
    "report",
    "request",
    "resource",
    "response",
    "result",
    "retry",
    "role",
    "schedule",
    "session",
    "settings",
    "shipment",
    "snapshot",
    "status",
    "subscription",
    "summary",
    "tax",
    "template",
    "tenant",
    "token",
    "total",
    "transaction",
    "user",
    "value",
    "webhook",
]
_TYPES = ("string", "number", "boolean", "Date", "unknown", "string[]", "number | null")
_MODIFIERS = ("", "private ", "public ", "protected ")
_IMPORT_PREFIXES = ("./", "../", "../../", "@app/")
_HOLE = re.compile(r"~([wcfPnts])")

# Statement templates; each ``~x`` hole gets a fresh value (see ``_Writer.fill``).
_STATEMENTS: tuple[tuple[float, tuple[str, ...]], ...] = (
    (0.20, ("const ~c = await this.~c.~c(~w);",)),
    (
        0.35,
        (
            "if (!~w.~c || ~w.length > ~n) {",
            "  throw new ~PError(`~s: ${~w.id}`);",
            "}",
        ),
    ),
    (0.50, ("// ~s ~s",)),
    (0.62, ("for (const ~w of ~c) {", "  ~c.push({ id: ~w.id, ~w: ~w.~c });", "}")),
    (0.75, ("const ~c = ~c", "  .filter((~w) => ~w.~w !== '~w')", "  .map((~w) => ~c(~w));")),
    (0.85, ("this.logger.debug('~s', { ~w });", "")),
    (1.00, ("return ~c(~w, { ...~w, ~w: true });",)),
)


class _Writer:
    """Deterministic pieces of plausible TypeScript."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def word(self) -> str:
        return self.rng.choice(_WORDS)

    def camel(self, parts: int = 2) -> str:
        words = [self.word() for _ in range(parts)]
        return words[0] + "".join(w.capitalize() for w in words[1:])

    def pascal(self, parts: int = 2) -> str:
        return "".join(self.word().capitalize() for _ in range(parts))

    def sentence(self, words: int) -> str:
        return " ".join(self.word() for _ in range(words))

    def fill(self, template: str) -> str:
        """``~w`` word, ``~c`` camelCase, ``~f`` longer camelCase, ``~P`` PascalCase,
        ``~n`` number, ``~t`` type, ``~s`` a few words -- each hole filled afresh."""
        makers: dict[str, Callable[[], str]] = {
            "w": lambda: self.camel(1),
            "c": self.camel,
            "f": lambda: self.camel(3),
            "P": self.pascal,
            "n": lambda: str(self.rng.randint(1, 99)),
            "t": lambda: self.rng.choice(_TYPES),
            "s": lambda: self.sentence(self.rng.randint(3, 7)),
        }
        return _HOLE.sub(lambda hole: makers[hole.group(1)](), template)

    def statement(self, depth: int) -> list[str]:
        pad = "  " * depth
        roll = self.rng.random()
        lines = next(t for limit, t in _STATEMENTS if roll < limit)
        return [pad + self.fill(line) if line else line for line in lines]

    def body(self, depth: int, statements: int) -> list[str]:
        return [line for _ in range(statements) for line in self.statement(depth)]

    def method(self) -> list[str]:
        params = ", ".join(self.fill("~w: ~P") for _ in range(self.rng.randint(0, 3)))
        modifier = self.rng.choice(_MODIFIERS)
        head = self.fill(f"  {modifier}async ~f({params}): Promise<~P> {{")
        doc = ["  /**", self.fill("   * ~s ~s"), "   */"] if self.rng.random() < 0.6 else []
        return [*doc, head, *self.body(2, self.rng.randint(2, 12)), "  }", ""]

    def interface(self) -> list[str]:
        fields = [
            self.fill(f"  {self.rng.choice(('', 'readonly '))}~c{self.rng.choice(('', '?'))}: ~t;")
            for _ in range(self.rng.randint(2, 9))
        ]
        return [self.fill("export interface ~P {"), *fields, "}", ""]

    def klass(self) -> list[str]:
        lines = [
            self.fill("/** ~s ~s */"),
            "@Injectable()",
            self.fill("export class ~PService implements ~P {"),
            self.fill("  private readonly cache = new Map<string, ~P>();"),
            "",
            self.fill("  constructor(private readonly ~c: ~PRepository, private readonly log: Logger) {}"),
            "",
        ]
        for _ in range(self.rng.randint(2, 9)):
            lines.extend(self.method())
        return [*lines, "}", ""]

    def function(self) -> list[str]:
        if self.rng.random() < 0.5:
            head = self.fill("export function ~f(~w: ~P): ~P {")
            return [head, *self.body(1, self.rng.randint(1, 8)), "}", ""]
        head = self.fill("export const ~f = (~w: ~P) => {")
        return [head, *self.body(1, self.rng.randint(1, 6)), "};", ""]

    def file(self) -> str:
        imports = [
            self.fill(f"import {{ ~P, ~c }} from '{self.rng.choice(_IMPORT_PREFIXES)}~w/~c';")
            for _ in range(self.rng.randint(2, 9))
        ]
        parts: list[str] = [*imports, ""]
        shape = self.rng.random()
        blocks = max(1, int(self.rng.lognormvariate(0.8, 0.8)))
        for _ in range(blocks):
            if shape < 0.45:
                parts.extend(self.klass() if self.rng.random() < 0.6 else self.interface())
            elif shape < 0.8:
                parts.extend(self.function() if self.rng.random() < 0.7 else self.interface())
            else:
                parts.extend(self.interface())
        return "\n".join(parts) + "\n"


def generate_typescript_corpus(total_bytes: int, seed: int = 17) -> Iterator[tuple[str, str]]:
    """``(path, text)`` pairs of generated TypeScript until ``total_bytes`` are produced."""
    writer = _Writer(random.Random(seed))  # noqa: S311 - reproducible corpus, not security
    produced, index = 0, 0
    while produced < total_bytes:
        text = writer.file()
        produced += len(text.encode())
        directory = f"src/{writer.word()}/{writer.word()}"
        yield f"{directory}/{writer.camel()}.{index}.ts", text
        index += 1


def _read_corpus(root: Path) -> list[tuple[str, bytes]]:
    files = sorted(p for p in root.rglob("*") if p.suffix in {".ts", ".tsx"} and p.is_file())
    return [(str(p.relative_to(root)), p.read_bytes()) for p in files]


def measure(files: list[tuple[str, bytes]]) -> dict[str, float | int]:
    """Run screen + analyze_file, then code_tokens and code_vector over every chunk, and time each."""
    total = sum(len(data) for _, data in files)
    contents: list[str] = []
    chunks = 0
    started = time.process_time()
    for path, data in files:
        screened = screen(path, data, _MAX_BYTES)
        if isinstance(screened, Screened):
            analysis = analyze_file(path, screened.text, detect_language(path))
            contents.extend(chunk.content for chunk in analysis.chunks)
            chunks += len(analysis.chunks)
    analyze_seconds = time.process_time() - started
    chunk_bytes = sum(len(c.encode()) for c in contents)
    started = time.process_time()
    for content in contents:
        code_tokens(content)
    token_seconds = time.process_time() - started
    started = time.process_time()
    for content in contents:
        code_vector(content)
    vector_seconds = time.process_time() - started
    parse_seconds = _parse_only_seconds(files)
    return {
        "files": len(files),
        "bytes": total,
        "chunks": chunks,
        "analyze_seconds": round(analyze_seconds, 3),
        "analyze_mb_per_s": round(total / 1e6 / analyze_seconds, 2),
        "parse_only_mb_per_s": round(total / 1e6 / parse_seconds, 2),
        "token_bytes": chunk_bytes,
        "token_seconds": round(token_seconds, 3),
        "token_mb_per_s": round(chunk_bytes / 1e6 / token_seconds, 2),
        "vector_seconds": round(vector_seconds, 3),
        "vector_mb_per_s": round(chunk_bytes / 1e6 / vector_seconds, 2),
    }


def _parse_only_seconds(files: list[tuple[str, bytes]]) -> float:
    """Seconds tree-sitter alone takes to parse the files: the floor under ``analyze_file``."""
    parsers = {}
    started = time.process_time()
    for path, data in files:
        grammar = detect_language(path) or "typescript"
        if grammar not in parsers:
            parsers[grammar] = grammars.parser(grammar)
        parsers[grammar].parse(data)
    return time.process_time() - started


def main(argv: list[str] | None = None) -> None:
    """Command line entry point; prints the measurement as JSON."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--corpus", type=Path, help="directory of .ts/.tsx files to read")
    parser.add_argument("--mb", type=float, default=25.0, help="size of the generated corpus")
    parser.add_argument("--seed", type=int, default=17)
    args = parser.parse_args(argv)
    if args.corpus is not None:
        files = _read_corpus(args.corpus)
    else:
        generated = generate_typescript_corpus(int(args.mb * 1e6), args.seed)
        files = [(path, text.encode()) for path, text in generated]
    print(json.dumps(measure(files), indent=2))


if __name__ == "__main__":
    main()
