"""Chunks, symbols and graph facts of one source file, from its tree-sitter tags.

The parse and the query pass are the code-facts library's (:mod:`palimpsest.index.codefacts.tags`,
shared with the analyzer's definitions of old blobs); this module builds the index rows from them.
Chunks follow ADR-0017: each outermost definition is a chunk (with its decorators, ``export``
and the doc comment right above it); text outside definitions becomes 60/10 windows; a
definition longer than ``MAX_DEFINITION_LINES`` -- and every namespace/module -- is split into
its member definitions, and whatever is left of it becomes windows under its name and kind.
Source with syntax errors still yields whatever tree-sitter recovered; nothing here raises
for bad source.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass, field
from operator import attrgetter
from typing import TYPE_CHECKING

from tree_sitter import QueryCursor

from palimpsest.chunker.parsing.lines import fitted_chunks, window_chunks
from palimpsest.chunker.parsing.model import WINDOW, Chunk, Fact, Symbol
from palimpsest.index.codefacts import grammars
from palimpsest.index.codefacts.tags import Collected as _Collected
from palimpsest.index.codefacts.tags import Tag as _Definition
from palimpsest.index.codefacts.tags import end_line as _end_line
from palimpsest.index.codefacts.tags import node_text as _text
from palimpsest.index.codefacts.tags import read_tags

if TYPE_CHECKING:
    from tree_sitter import Node

    from palimpsest.index.codefacts.queries import LanguageSpec

__all__ = ["MAX_DEFINITION_LINES", "CodeAnalysis", "analyze_code"]

MAX_DEFINITION_LINES = 200
_MIN_REFERENCE_CHARS = 2
_SNIPPET_CHARS = 80
_IMPORT_KEYWORDS = re.compile(
    r"^(?:(?:import|using|use|static|global|package|namespace|typealias|struct|class|enum"
    r"|protocol|let|var|func|function|const)\s+)+"
)
_STATIC = re.compile(r"\bstatic\b")
_USING_ALIAS = re.compile(r"^[A-Za-z_]\w*\s*=\s*")
_QUOTES = "\"'`<>"

_FACT_ORDER = attrgetter("line", "kind", "name")
_CHUNK_ROLES = frozenset({"definition", "container"})


@dataclass(frozen=True, slots=True)
class CodeAnalysis:
    """What one parse of a source file yields."""

    chunks: list[Chunk]
    symbols: list[Symbol]
    facts: list[Fact]
    parse_errors: int


def analyze_code(text: str, lines: list[str], spec: LanguageSpec) -> CodeAnalysis:
    """Chunks, symbols and facts of ``text`` (already split into ``lines``) in ``spec``'s language."""
    tagged = read_tags(text.encode("utf-8", "surrogatepass"), spec, len(lines))
    root = tagged.root
    errors = _count_errors(root, spec.grammar) if root.has_error else 0
    definitions = tagged.definitions
    locator = _Locator(definitions)
    return CodeAnalysis(
        chunks=_chunks(definitions, lines, spec),
        symbols=_symbols(definitions),
        facts=_facts(tagged.collected, definitions, locator),
        parse_errors=errors,
    )


def _count_errors(root: Node, grammar: str) -> int:
    captures = QueryCursor(grammars.error_query(grammar)).captures(root)
    return sum(len(nodes) for nodes in captures.values())


# ------------------------------------------------------------------------- definitions


def _chunk_span(definition: _Definition, spec: LanguageSpec, lines: list[str]) -> tuple[int, int]:
    """First and last line of a definition's chunk: wrappers and doc comments included.

    Computed only for definitions that become chunks: walking to parents and siblings is
    the expensive part of a tree-sitter node.
    """
    top = definition.node
    parent = top.parent
    while parent is not None and parent.type in spec.wrappers:
        top, parent = parent, parent.parent
    start = _leading_start(lines, top.start_point.row + 1, spec.line_comments)
    return start, max(_end_line(top), definition.symbol_end)


def _leading_start(lines: list[str], start: int, line_comments: tuple[str, ...]) -> int:
    """The first line of the comment lines (and attributes) directly above line ``start``."""
    blocks = "//" in line_comments
    above = start - 1
    while above >= 1:
        text = lines[above - 1].strip()
        if blocks and text.endswith("*/"):
            opening = above
            while opening >= 1 and "/*" not in lines[opening - 1]:
                opening -= 1
            if opening < 1 or not lines[opening - 1].lstrip().startswith("/*"):
                break  # the block opens after code: a trailing comment, not a doc comment
            start = above = opening
        elif text.startswith(line_comments):
            start = above
        else:
            break
        above -= 1
    return start


# ------------------------------------------------------------------------------ chunks


@dataclass(frozen=True, slots=True)
class _Emitter:
    """Emits the chunks of one file."""

    lines: list[str]
    spec: LanguageSpec
    out: list[Chunk] = field(default_factory=list)

    def region(
        self, definitions: list[_Definition], first: int, last: int, kind: str, name: str | None
    ) -> None:
        """Chunks for lines ``first..last``: the definitions, and windows between them."""
        cursor = first
        for definition in definitions:
            chunk_start, chunk_end = _chunk_span(definition, self.spec, self.lines)
            start = max(chunk_start, cursor)
            end = min(chunk_end, last)
            if end < start:
                continue  # shares its lines with the definition before it
            if start > cursor:
                self.out.extend(window_chunks(self.lines, cursor, start - 1, kind, name))
            self.definition(definition, start, end)
            cursor = end + 1
        if cursor <= last:
            self.out.extend(window_chunks(self.lines, cursor, last, kind, name))

    def definition(self, definition: _Definition, start: int, end: int) -> None:
        too_long = end - start + 1 > MAX_DEFINITION_LINES
        children = _chunk_children(definition) if too_long or definition.kind == "module" else []
        if children:
            self.region(children, start, end, definition.kind, definition.name)
        elif too_long:
            self.out.extend(window_chunks(self.lines, start, end, definition.kind, definition.name))
        else:
            self.out.extend(fitted_chunks(self.lines, start, end, definition.kind, definition.name))


def _chunks(definitions: list[_Definition], lines: list[str], spec: LanguageSpec) -> list[Chunk]:
    emitter = _Emitter(lines, spec)
    outermost = [d for d in definitions if d.parent is None and d.role in _CHUNK_ROLES]
    emitter.region(outermost, 1, len(lines), WINDOW, None)
    return emitter.out


def _chunk_children(definition: _Definition) -> list[_Definition]:
    """Chunkable definitions directly inside ``definition`` (through symbol-only ones)."""
    found: list[_Definition] = []
    for child in definition.children:
        if child.role in _CHUNK_ROLES:
            found.append(child)
        else:
            found.extend(_chunk_children(child))
    return found


# ----------------------------------------------------------------------------- symbols


def _symbols(definitions: list[_Definition]) -> list[Symbol]:
    symbols = [
        Symbol(
            name=d.name,
            kind=d.kind,
            start_line=d.symbol_start,
            end_line=max(d.symbol_end, d.symbol_start),
            parent=d.receiver or (d.parent.name if d.parent is not None else None),
        )
        for d in definitions
        if d.role != "container"
    ]
    symbols.sort(key=lambda s: (s.start_line, s.end_line, s.name))
    return symbols


# ------------------------------------------------------------------------------- facts


class _Locator:
    """Finds the innermost definition around a byte offset."""

    def __init__(self, definitions: list[_Definition]) -> None:
        self._definitions = definitions
        self._starts = [d.start_byte for d in definitions]

    def enclosing(self, offset: int) -> _Definition | None:
        index = bisect_right(self._starts, offset) - 1
        found = self._definitions[index] if index >= 0 else None
        while found is not None and found.end_byte <= offset:
            found = found.parent
        return found


def _facts(collected: _Collected, definitions: list[_Definition], locator: _Locator) -> list[Fact]:
    facts = [
        *_reference_facts(collected, definitions),
        *_call_facts(collected, locator),
        *_import_facts(collected),
        *_dynamic_facts(collected, locator),
    ]
    facts.sort(key=_FACT_ORDER)
    return facts


def _reference_facts(collected: _Collected, definitions: list[_Definition]) -> list[Fact]:
    defined = {d.name for d in definitions}
    facts: list[Fact] = []
    for raw, (node, detail) in collected.references.items():
        name = raw.decode("utf-8", "replace")
        if len(name) >= _MIN_REFERENCE_CHARS and name not in defined:
            facts.append(Fact("reference", name, node.start_point.row + 1, None, detail))
    return facts


def _call_facts(collected: _Collected, locator: _Locator) -> list[Fact]:
    seen: dict[tuple[bytes, str], tuple[Node, str]] = {}
    for raw, offset, node, label in collected.calls:
        caller = locator.enclosing(offset)
        if caller is not None:
            seen.setdefault((raw, caller.name), (node, label))
    return [
        Fact(
            "call",
            raw.decode("utf-8", "replace"),
            node.start_point.row + 1,
            target=caller,
            detail="member" if label == "member" else None,
        )
        for (raw, caller), (node, label) in seen.items()
    ]


_GENERAL_IMPORT = {"pub_use": "use"}
"""An import kind that is a narrower reading of another (a Rust ``pub use`` is a ``use`` that
re-exports): when both patterns match one statement, only the narrower fact is kept."""


def _import_facts(collected: _Collected) -> list[Fact]:
    facts: dict[tuple[str, int, str | None, str], Fact] = {}
    for label, node, imported in collected.imports:
        specifier = _specifier(_text(node), statement=label == "statement")
        if not specifier:
            continue
        kind = label
        if label == "statement":
            kind = "static_import" if _STATIC.search(_text(node)) else "import"
        name = " ".join(_text(imported).split()) or None
        fact = Fact("import", specifier, node.start_point.row + 1, target=name, detail=kind)
        facts.setdefault((specifier, fact.line, name, kind), fact)
    for specifier, line, name, kind in list(facts):
        general = _GENERAL_IMPORT.get(kind)
        if general is not None:  # the specific reading of a statement replaces the general one
            facts.pop((specifier, line, name, general), None)
    return list(facts.values())


def _specifier(raw: str, *, statement: bool) -> str:
    """A module specifier as written: whitespace collapsed, quotes and statement keywords gone."""
    text = " ".join(raw.split())
    if statement:
        text = _IMPORT_KEYWORDS.sub("", text.rstrip(";").strip())
        text = _USING_ALIAS.sub("", text)
    return text.strip(_QUOTES + " ;")


def _call_site(callee: Node) -> Node:
    """The call expression around a callee name (a few levels up at most)."""
    node = callee
    for _ in range(3):
        if node.parent is None:
            break
        node = node.parent
        if "call" in node.type or "invocation" in node.type:
            return node
    return callee.parent or callee


def _dynamic_facts(collected: _Collected, locator: _Locator) -> list[Fact]:
    facts: list[Fact] = []
    for label, node in collected.dynamic:
        site = _call_site(node) if label == "call" else node
        snippet = _text(site).split("\n", 1)[0].strip()[:_SNIPPET_CHARS]
        caller = locator.enclosing(node.start_byte)
        facts.append(
            Fact(
                "dynamic",
                _text(node) if label == "call" else label,
                node.start_point.row + 1,
                target=caller.name if caller is not None else None,
                detail=snippet,
            )
        )
    return facts
