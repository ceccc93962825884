"""``bench edges``: the precision of the graph's reference edges, checked independently.

The graph of a repository's revision is built in memory (the chunker's parsing, then
:func:`~palimpsest.index.graph.build_graph`); a seeded sample of its ``references`` and
``calls`` edges between two files is then checked by *this* module, which reads imports with
its own regular expressions and resolves them with its own (plainer) rules, sharing no code
with :mod:`palimpsest.index.graph.imports` but its JSONC reader (``parse_jsonc``, a file format,
not a resolution rule). An edge is *reachable* when its target file is
one the source imports, or one re-exported, transitively, by a file it imports (TS/JS
``export … from``, a Python ``__init__.py``'s ``from`` imports, Rust ``pub use``); a Go
file also reaches its own package (its directory) and every file of a package it imports.
Rust is read as the compiler declares modules: ``mod x;`` (``#[path]`` followed) makes the
module tree, ``crate::``/``super::``/``self::`` walk it from the file's crate root (the file no
module declares), a ``use`` tree or a path written inline names the deepest module it reaches
(a first segment may be a declared child module or a name an earlier ``use`` brought in), a
macro reaches its crate's ``macro_rules!`` by name, and a crate root re-exports its crate's
``#[macro_export]`` macros.

A JS/TS specifier also goes through the nearest ``tsconfig.json``/``jsconfig.json``'s ``paths``.

The figure is a floor: what the plain rules cannot resolve (a bundler alias, a module a macro
declares, Python ``sys.path`` tricks) counts as unreachable. Edges are reported both
as a plain share and weighted by their 1/N share, and per route language.
"""

from __future__ import annotations

import json
import posixpath
import random
import re
import subprocess
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from palimpsest.index.graph.imports.javascript import parse_jsonc

__all__ = ["ImportReader", "run_bench_edges"]

_JS_EXT = (".ts", ".tsx", ".d.ts", ".js", ".jsx", ".mjs", ".cjs", ".mts", ".cts")
_JS_LANGS = frozenset({"javascript", "typescript", "tsx"})
_JS_IMPORT = re.compile(r"""(?:^|[\s;}])import\s+(?:type\s+)?(?:[\w*{}\s,$]+?\s+from\s+)?["']([^"']+)["']""")
_JS_EXPORT_FROM = re.compile(
    r"""(?:^|[\s;}])export\s+(?:type\s+)?(?:\*|\*\s+as\s+\w+|\{[^}]*\})\s+from\s+["']([^"']+)["']"""
)
_JS_CALL = re.compile(r"""(?:require|import)\s*\(\s*["']([^"']+)["']\s*\)""")
_PY_IMPORT = re.compile(r"^[ \t]*import[ \t]+([\w.]+(?:[ \t]*,[ \t]*[\w.]+)*)", re.M)
_PY_FROM = re.compile(
    r"^[ \t]*from[ \t]+(\.*[\w.]*)[ \t]+import[ \t]+(?:\(([^)]*)\)|([\w*][\w \t,*]*))", re.M
)
_GO_IMPORT_BLOCK = re.compile(r"^import\s*\((.*?)\)", re.M | re.S)
_GO_IMPORT_LINE = re.compile(r'^import\s+(?:\w+\s+)?"([^"]+)"', re.M)
_GO_SPEC = re.compile(r'"([^"]+)"')
_GO_MODULE = re.compile(r"^module\s+(\S+)", re.M)
_RS_USE = re.compile(r"^\s*(pub(?:\([^)]*\))?\s+)?use\s+([^;]+);", re.M)
_CARGO_NAME = re.compile(r'^\[package\][^\[]*?^name\s*=\s*"([^"]+)"', re.M | re.S)
# `mod name;`, with the file a `#[path = "…"]` attribute (other attributes may sit between) names
_RS_MOD = re.compile(r"^[ \t]*((?:#\[[^\]]*\]\s*)*)(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*;", re.M)
_RS_PATH_ATTR = re.compile(r"""#\[path\s*=\s*"([^"]+)"\]""")
_RS_MACRO_DEF = re.compile(
    r"^[ \t]*(#\[macro_export[^\]]*\]\s*)?(?:#\[[^\]]*\]\s*)*macro_rules!\s*(\w+)", re.M
)
_RS_MACRO_USE = re.compile(r"(?<![\w:])(\w+)!\s*[(\[{]")
_RS_INLINE_PATH = re.compile(r"(?<![\w:])((?:\w+::)+\w+)")


def _git(repo: Path, *args: str) -> bytes:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True).stdout


def read_tree(repo: Path, rev: str, max_bytes: int = 512 * 1024) -> dict[str, bytes]:
    """Every blob of ``rev`` up to ``max_bytes``, by path (one ``cat-file --batch`` process)."""
    listing = _git(repo, "ls-tree", "-r", "-z", "--long", rev).split(b"\0")
    wanted: list[tuple[str, str]] = []
    for row in listing:
        if not row:
            continue
        meta, _, raw_path = row.partition(b"\t")
        _mode, kind, sha, size = meta.split()
        if kind == b"blob" and size != b"-" and int(size) <= max_bytes:
            wanted.append((raw_path.decode("utf-8", "replace"), sha.decode()))
    batch = subprocess.run(
        ["git", "-C", str(repo), "cat-file", "--batch"],
        input="".join(f"{sha}\n" for _, sha in wanted).encode(),
        check=True,
        capture_output=True,
    ).stdout
    out: dict[str, bytes] = {}
    offset = 0
    for path, _sha in wanted:
        header_end = batch.index(b"\n", offset)
        length = int(batch[offset:header_end].split()[2])
        out[path] = batch[header_end + 1 : header_end + 1 + length]
        offset = header_end + 1 + length + 1
    return out


class ImportReader:
    """Imports and re-exports of a tree by plain reading (independent of the graph's resolvers)."""

    def __init__(self, texts: dict[str, str]) -> None:
        self.texts = texts
        self.paths = set(texts)
        self.by_dir: dict[str, list[str]] = {}
        for path in texts:
            self.by_dir.setdefault(posixpath.dirname(path), []).append(path)
        self.packages = self._packages()
        self.go_modules = {
            posixpath.dirname(p): m.group(1)
            for p, t in texts.items()
            if posixpath.basename(p) == "go.mod" and (m := _GO_MODULE.search(t))
        }
        self.crates = {
            m.group(1).replace("-", "_"): posixpath.join(posixpath.dirname(p), "src")
            for p, t in texts.items()
            if posixpath.basename(p) == "Cargo.toml" and (m := _CARGO_NAME.search(t))
        }
        self._edges: dict[str, tuple[set[str], set[str]]] = {}
        self._children: dict[str, dict[str, str]] = {}
        self._parents: dict[str, str] | None = None
        self._configs: dict[str, tuple[str, dict[str, list[str]]] | None] = {}  # folder -> tsconfig paths
        self._macros: dict[str, dict[str, set[str]]] = {}

    def _packages(self) -> dict[str, str]:
        found: dict[str, str] = {}
        for path, text in self.texts.items():
            if posixpath.basename(path) != "package.json" or "node_modules/" in path:
                continue
            try:
                name = json.loads(text).get("name")
            except (ValueError, AttributeError):
                continue
            if isinstance(name, str):
                found[name] = posixpath.dirname(path)
        return found

    # ------------------------------------------------------------------ per file

    def edges(self, path: str) -> tuple[set[str], set[str]]:
        """(files ``path`` imports, the subset it re-exports)."""
        known = self._edges.get(path)
        if known is None:
            known = self._edges[path] = self._read(path)
        return known

    def _read(self, path: str) -> tuple[set[str], set[str]]:
        text = self.texts.get(path, "")
        if path.endswith(_JS_EXT):
            imports, reexports = self._read_js(path, text)
        elif path.endswith((".py", ".pyi")):
            imports, reexports = self._read_py(path, text)
        elif path.endswith(".go"):
            imports, reexports = self._read_go(path, text), set()
        elif path.endswith(".rs"):
            imports, reexports = self._read_rs(path, text)
        else:
            imports, reexports = set(), set()
        imports.discard(path)
        reexports.discard(path)
        return imports, reexports

    def _read_js(self, path: str, text: str) -> tuple[set[str], set[str]]:
        reexports: set[str] = set()
        for spec in _JS_EXPORT_FROM.findall(text):
            reexports |= self._js(path, spec)
        imports = set(reexports)
        for spec in [*_JS_IMPORT.findall(text), *_JS_CALL.findall(text)]:
            imports |= self._js(path, spec)
        return imports, reexports

    def _read_py(self, path: str, text: str) -> tuple[set[str], set[str]]:
        init = posixpath.basename(path).startswith("__init__.")
        imports: set[str] = set()
        reexports: set[str] = set()
        for group in _PY_IMPORT.findall(text):
            for module in group.split(","):
                imports |= self._py(path, module.strip(), None)
        for module, grouped, names in _PY_FROM.findall(text):
            found: set[str] = set()
            for name in (grouped or names).split(","):
                found |= self._py(path, module, name.split()[0] if name.split() else None)
            imports |= found
            if init:
                reexports |= found
        return imports, reexports

    def _read_go(self, path: str, text: str) -> set[str]:
        specs = _GO_IMPORT_LINE.findall(text)
        for block in _GO_IMPORT_BLOCK.findall(text):
            specs += _GO_SPEC.findall(block)
        imports = set(self.by_dir.get(posixpath.dirname(path), ()))  # its own package
        for spec in specs:
            imports |= self._go(spec)
        return imports

    def _read_rs(self, path: str, text: str) -> tuple[set[str], set[str]]:
        """``use`` trees (``pub use`` re-exports), ``mod`` declarations, paths written inline
        (``crate::de::from_str(…)``), and macros: one of the crate's own ``macro_rules!`` by
        name, another crate's ``#[macro_export]`` ones through that crate's root."""
        imports: set[str] = set()
        reexports: set[str] = set()
        aliases: dict[str, str] = {}  # a name a `use` brought in → its file
        for public, spec in _RS_USE.findall(text):
            found = self._rs(path, spec, aliases)
            imports |= found
            if public:
                reexports |= found
        children = self._rs_children(path)
        imports |= set(children.values())
        for spec in _RS_INLINE_PATH.findall(text):
            imports |= self._rs(path, spec, {**aliases})
        crate = self._rs_root(path)
        macros = self._rs_macros()
        for name in set(_RS_MACRO_USE.findall(text)) - {"macro_rules"}:
            imports |= {f for f in macros.get(name, ()) if self._rs_root(f) == crate}
        if self._rs_parent(path) is None:  # a crate root: its crate's #[macro_export] macros are here
            exported = {f for fs in self._rs_macros(exported=True).values() for f in fs}
            reexports |= {f for f in exported if self._rs_root(f) == crate}
            imports |= reexports
        return imports, reexports

    def _rs_macros(self, *, exported: bool = False) -> dict[str, set[str]]:
        """``macro_rules!`` name → the files defining it (only ``#[macro_export]`` ones)."""
        key = "exported" if exported else "all"
        known = self._macros.get(key)
        if known is None:
            known = self._macros[key] = {}
            for file, text in self.texts.items():
                if file.endswith(".rs") and "macro_rules!" in text:
                    for export, name in _RS_MACRO_DEF.findall(text):
                        if export or not exported:
                            known.setdefault(name, set()).add(file)
        return known

    def reachable(self, path: str) -> set[str]:
        """What ``path`` imports plus everything re-exported, transitively, by those files."""
        direct, _ = self.edges(path)
        seen = set(direct)
        stack = list(direct)
        while stack:
            _, passed = self.edges(stack.pop())
            for target in passed - seen:
                seen.add(target)
                stack.append(target)
        return seen

    # ------------------------------------------------------------------ languages

    def _file(self, base: str, extensions: Iterable[str]) -> str | None:
        base = posixpath.normpath(base)
        if base in self.paths:
            return base
        stem = re.sub(r"\.(?:js|jsx|mjs|cjs|d\.ts|d\.mts|d\.cts)$", "", base)
        for candidate in (base, stem):
            for extension in extensions:
                if candidate + extension in self.paths:
                    return candidate + extension
            for extension in extensions:
                if f"{candidate}/index{extension}" in self.paths:
                    return f"{candidate}/index{extension}"
        return None

    def _js(self, importer: str, spec: str) -> set[str]:
        if spec.startswith("."):
            found = self._file(posixpath.join(posixpath.dirname(importer), spec), _JS_EXT)
            return {found} if found else set()
        for target in self._aliased(importer, spec):
            found = self._file(target, _JS_EXT)
            if found:
                return {found}
        for name in sorted(self.packages, key=len, reverse=True):
            if spec == name or spec.startswith(name + "/"):
                directory, rest = self.packages[name], spec[len(name) + 1 :]
                for base in (
                    [rest, f"src/{rest}"] if rest else ["src/index", "index", "src/main", "lib/index"]
                ):
                    found = self._file(posixpath.join(directory, base), _JS_EXT)
                    if found:
                        return {found}
                return set()
        return set()

    def _aliased(self, importer: str, spec: str) -> list[str]:
        """Where the nearest ``tsconfig.json``/``jsconfig.json``'s ``paths`` send ``spec``."""
        directory = posixpath.dirname(importer)
        while True:
            config = self._ts_paths(directory)
            if config is not None:
                base, paths = config
                out: list[str] = []
                for key, targets in paths.items():
                    head, star, tail = key.partition("*")
                    if star and spec.startswith(head) and spec.endswith(tail) and len(spec) >= len(key) - 1:
                        middle = spec[len(head) : len(spec) - len(tail)]
                        out += [posixpath.join(base, t.replace("*", middle, 1)) for t in targets]
                    elif not star and spec == key:
                        out += [posixpath.join(base, t) for t in targets]
                return out
            if not directory:
                return []
            directory = posixpath.dirname(directory)

    def _ts_paths(self, directory: str) -> tuple[str, dict[str, list[str]]] | None:
        """(the folder ``paths`` are relative to, ``paths``) of the config in ``directory``;
        ``None`` when the folder has none. Read once per folder."""
        if directory not in self._configs:
            found = None
            for name in ("tsconfig.json", "jsconfig.json"):
                path = posixpath.join(directory, name) if directory else name
                if path in self.texts:
                    found = self._ts_config(path) or ("", {})
                    break
            self._configs[directory] = found
        return self._configs[directory]

    def _ts_config(self, path: str, depth: int = 0) -> tuple[str, dict[str, list[str]]] | None:
        """A config file's ``paths``, or what the config a relative ``extends`` names has."""
        directory = posixpath.dirname(path)
        options = parse_jsonc(self.texts.get(path, ""))
        if not isinstance(options, dict):
            return None
        compiler = options.get("compilerOptions")
        compiler = compiler if isinstance(compiler, dict) else {}
        paths = compiler.get("paths")
        if isinstance(paths, dict):
            base = compiler.get("baseUrl")
            return posixpath.normpath(posixpath.join(directory, base if isinstance(base, str) else ".")), {
                k: [t for t in v if isinstance(t, str)] for k, v in paths.items() if isinstance(v, list)
            }
        parent = options.get("extends")
        if isinstance(parent, str) and parent.startswith(".") and depth < 8:
            target = posixpath.normpath(posixpath.join(directory, parent))
            for candidate in (target, f"{target}.json", f"{target}/tsconfig.json"):
                if candidate in self.texts:
                    return self._ts_config(candidate, depth + 1)
        return None

    def _py(self, importer: str, module: str, name: str | None) -> set[str]:
        dots = len(module) - len(module.lstrip("."))
        parts = [p for p in module.lstrip(".").split(".") if p]
        candidates: list[list[str]] = []
        if dots:
            base = posixpath.dirname(importer).split("/") if posixpath.dirname(importer) else []
            base = base[: len(base) - (dots - 1)] if dots > 1 else base
            candidates = [[*base, *parts, name]] if name and name != "*" else []
            candidates.append([*base, *parts])
            found = {f for c in candidates for f in self._py_files("/".join(p for p in c if p))}
            return set(sorted(found)[:1]) if found else set()
        tails = ([[*parts, name]] if name and name != "*" else []) + [
            parts[:n] for n in range(len(parts), 0, -1)
        ]
        for tail in tails:
            key = "/".join(tail)
            found = {
                p
                for p in self.paths
                if p.endswith((f"/{key}.py", f"/{key}/__init__.py"))
                or p in (f"{key}.py", f"{key}/__init__.py")
            }
            if found:
                return found
        return set()

    def _py_files(self, base: str) -> set[str]:
        return {p for p in (f"{base}.py", f"{base}/__init__.py", f"{base}.pyi") if p in self.paths}

    def _go(self, spec: str) -> set[str]:
        for directory, module in self.go_modules.items():
            if spec == module or spec.startswith(module + "/"):
                rest = spec[len(module) :].lstrip("/")
                folder = posixpath.join(directory, rest) if rest else directory
                return {p for p in self.by_dir.get(folder.rstrip("/"), ()) if p.endswith(".go")}
        return set()

    def _rs_parent(self, module: str) -> str | None:
        """The file that declares ``module`` (``mod x;``, ``#[path]`` followed), if any."""
        if self._parents is None:
            self._parents = {}
            for file in sorted(p for p in self.paths if p.endswith(".rs")):
                for child in self._rs_children(file).values():
                    self._parents.setdefault(child, file)
        found = self._parents.get(module)
        if found is None and posixpath.basename(module) not in ("lib.rs", "main.rs"):
            # declared where this reader cannot see (a macro such as `automod::dir!`): the module
            # file of its folder, as Rust would have to find it
            folder = posixpath.dirname(module)
            found = next(
                (f"{folder}/{n}" for n in ("mod.rs", "main.rs", "lib.rs") if f"{folder}/{n}" in self.paths),
                None,
            )
            if found == module:
                found = None
        return found

    def _rs_root(self, module: str) -> str:
        """The crate root ``module`` belongs to: up the declaring files to one nobody declares."""
        seen = {module}
        while (parent := self._rs_parent(module)) is not None and parent not in seen:
            seen.add(parent)
            module = parent
        return module

    def _rs(self, importer: str, spec: str, aliases: dict[str, str] | None = None) -> set[str]:
        """The files a ``use`` tree or an inline path names; ``aliases`` (when given) gets each
        name a ``use`` brings in → the file it resolved to, for the inline paths read after."""
        found: set[str] = set()
        for one in _use_tree(spec):
            path, _, alias = one.partition("@")
            parts = [p for p in path.split("::") if p]
            if parts and parts[-1] == "self":
                parts = parts[:-1]
            start = self._rs_start(importer, parts, aliases or {}) if parts else None
            if start is None:
                continue
            hit = self._rs_walk(*start)
            found.add(hit)
            if aliases is not None:
                aliases.setdefault(alias or parts[-1], hit)
        return found

    def _rs_start(
        self, importer: str, parts: list[str], aliases: dict[str, str]
    ) -> tuple[str, list[str]] | None:
        """The module file a path starts from and the segments left, or ``None`` for a crate from
        outside the tree or a local name (``Self::``, a type's item)."""
        head = parts[0]
        if head == "crate":
            return self._rs_root(importer), parts[1:]
        if head in ("self", "super"):
            module: str | None = importer
            while parts and parts[0] in ("self", "super"):
                if parts[0] == "super":
                    module = self._rs_parent(module) if module else None
                parts = parts[1:]
            return (module, parts) if module else None
        if head in self._rs_children(importer):  # a module this file declares (a "uniform" path)
            return importer, parts
        if head in aliases:  # a module a `use` brought in
            return aliases[head], parts[1:]
        if head in self.crates:  # a crate of this workspace, by name
            root = self.crates[head].lstrip("/")
            for name in ("lib.rs", "main.rs"):
                if f"{root}/{name}" in self.paths:
                    return f"{root}/{name}", parts[1:]
        return None

    def _rs_walk(self, module: str, parts: list[str]) -> str:
        """The deepest declared module along ``parts`` from ``module`` (the rest are items)."""
        for part in parts:
            child = self._rs_children(module).get(part)
            if child is None:  # declared out of sight (a macro): only its conventional file can be it
                folder = self._module_dir(module)
                child = next(
                    (f for f in (f"{folder}/{part}.rs", f"{folder}/{part}/mod.rs") if f in self.paths), None
                )
            if child is None:
                break
            module = child
        return module

    def _rs_children(self, path: str) -> dict[str, str]:
        """The modules ``path`` declares (``mod x;``) → their files (``#[path]`` followed)."""
        known = self._children.get(path)
        if known is None:
            known = self._children[path] = {}
            base = self._module_dir(path)
            for attributes, name in _RS_MOD.findall(self.texts.get(path, "")):
                if explicit := _RS_PATH_ATTR.search(attributes):
                    target = posixpath.normpath(posixpath.join(posixpath.dirname(path), explicit.group(1)))
                    if target in self.paths:
                        known[name] = target
                    continue
                # a crate root that is no lib.rs/main.rs (tests/x.rs) declares beside itself
                here = posixpath.dirname(path)
                for f in (
                    f"{base}/{name}.rs",
                    f"{base}/{name}/mod.rs",
                    f"{here}/{name}.rs",
                    f"{here}/{name}/mod.rs",
                ):
                    if f in self.paths:
                        known[name] = f
                        break
        return known

    def _module_dir(self, path: str) -> str:
        name = posixpath.basename(path)
        if name in ("mod.rs", "lib.rs", "main.rs"):
            return posixpath.dirname(path)
        return path[: -len(".rs")]


def _use_tree(spec: str) -> list[str]:
    """A Rust ``use`` tree as flat paths: ``a::{b, c::{d as e, self}}`` → ``a::b``, ``a::c::d@e``
    (brought in as ``e``), ``a::c::self``."""
    spec = re.sub(r"\s+as\s+(\w+)", r"@\1", spec)  # the name it is brought in as
    spec = re.sub(r"\s+", "", spec)
    brace = spec.find("{")
    if brace < 0:
        return [spec]
    prefix, body = spec[:brace], spec[brace + 1 : spec.rfind("}")]
    items: list[str] = []
    depth, start = 0, 0
    for i, ch in enumerate(body):
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        elif ch == "," and depth == 0:
            items.append(body[start:i])
            start = i + 1
    items.append(body[start:])
    return [prefix + flat for item in items if item for flat in _use_tree(item)]


def run_bench_edges(repo: Path, rev: str = "HEAD", sample: int = 400, seed: int = 1) -> dict[str, Any]:
    """Build the graph of ``rev`` and check a sample of its cross-file reference edges."""
    import hashlib

    from palimpsest.chunker.parsing import is_doc
    from palimpsest.chunker.work import analyze_blob
    from palimpsest.index.graph import FactRow, FileFacts, SnapshotFacts, SymbolRow, build_graph
    from palimpsest.index.graph.facts import is_config_file
    from palimpsest.index.graph.model import EdgeKind
    from palimpsest.index.records import decode_facts, decode_symbols

    blobs = read_tree(repo, rev)
    files: list[FileFacts] = []
    config: dict[str, str] = {}
    texts: dict[str, str] = {}
    for path, data in sorted(blobs.items()):
        blob = analyze_blob(path, hashlib.sha1(data, usedforsecurity=False).hexdigest(), data, 512 * 1024)
        files.append(
            FileFacts(
                path=path,
                language=blob.language,
                kind="doc" if is_doc(path) else "code",
                skip_reason=blob.skip_reason,
                symbols=[SymbolRow(*r) for r in decode_symbols(blob.symbols)],
                facts=[FactRow(*r) for r in decode_facts(blob.facts)],
            )
        )
        if blob.skip_reason is None:
            text = data.decode("utf-8", "replace")
            texts[path] = text
            if is_config_file(path):
                config[path] = text
    languages = {f.path: f.language or "?" for f in files}
    graph, report = build_graph(SnapshotFacts(files, config))
    edges: list[tuple[str, str, float]] = []
    for node in range(graph.node_count):
        source = graph.paths[graph.node_owner[node]]
        for edge in graph.edges(node):
            if edge.backward or edge.kind not in (EdgeKind.REFERENCES, EdgeKind.CALLS):
                continue
            target = graph.paths[graph.node_owner[edge.target]]
            if target != source:
                edges.append((source, target, edge.weight))
    rng = random.Random(seed)  # noqa: S311 - a seeded sample, not a secret
    chosen = rng.sample(edges, min(sample, len(edges)))
    reader = ImportReader(texts)
    hits = Counter[str]()
    totals = Counter[str]()
    weight_hit = weight_all = 0.0
    misses: list[dict[str, Any]] = []
    for source, target, weight in chosen:
        language = languages.get(source, "?")
        totals[language] += 1
        weight_all += weight
        if target in reader.reachable(source):
            hits[language] += 1
            weight_hit += weight
        elif len(misses) < 25:
            misses.append({"source": source, "target": target, "weight": round(weight, 3)})
    checked = sum(totals.values())
    commit = _git(repo, "rev-parse", rev).decode().strip()
    return {
        "benchmark": "edges",
        "repository": repo.name if repo.name != "repo" else repo.parent.name,
        "commit": commit,
        "edges": len(edges),
        "sampled": checked,
        "seed": seed,
        "precision": round(sum(hits.values()) / checked, 4) if checked else None,
        "precision_weighted": round(weight_hit / weight_all, 4) if weight_all else None,
        "by_language": {
            lang: {"sampled": n, "precision": round(hits[lang] / n, 4)} for lang, n in totals.most_common()
        },
        # (read with getattr: the bench also checks graphs built by an older resolver)
        "routes": dict(getattr(report, "routes", {})),
        "member_call_routes": dict(getattr(report, "member_routes", {})),
        "barrels": getattr(report, "barrels", None),
        "workspace_packages": getattr(report, "workspace_packages", None),
        "misses": misses,
    }
