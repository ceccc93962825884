"""Resolving one snapshot's per-blob facts into its graph — in passes, never in one.

Definitions of the *whole* tree are collected before any reference is resolved, so whether a
reference finds its definer never depends on the order files are listed in (a one-pass
resolver silently misses every definer that sorts after the referencing file).

* defines: file -> each symbol it defines (one node per path and name);
* imports: file -> file(s), per language (:mod:`palimpsest.index.graph.imports`), a package
  import split 1/N over the package's files;
* re-exports: an import that passes names on — TS/JS ``export … from``, any ``from`` import in
  a Python ``__init__.py``, Rust ``pub use`` — is an import edge like any other (the barrel hop
  stays in the graph) and also makes its file a *barrel*: what a file imports reaches, through
  barrels, every module they re-export, transitively (cycles end where a module was seen);
* references: file -> symbol. Candidates are the other files defining the name, narrowed by
  *route*: the files this one imports, if some define it; else the modules reached through the
  barrels it imports; else the only definer; else those in the same directory (Go packages,
  C translation units); else all (the bare-name fallback) — and each of the N left gets 1/N.
  Definitions nested in a function are local and answer no other file. In a language whose
  files are modules (Python, JS/TS, Rust) a plain name crosses files only through an import:
  only a member call (``x.m()``, a method of a type the file may never name) goes past the
  imports, and then only to product code (a Rust plain name reaches its crate's only definer:
  the facts do not tell ``de::from_str()`` from ``from_str()``). By bare name (routes
  after the imports), a file reaches only definers of its own *unit*: a Go file its package
  (its folder), a JS/TS file its package (the nearest ``package.json``), a Rust file its crate
  (the nearest ``Cargo.toml``) — names cross units through imports; definitions in tests
  answer only tests (code never depends on tests), and
  definitions in examples and benchmarks answer only files of their own kind, and a
  major-version folder with a rival (``v3`` beside ``v4``,
  :func:`~palimpsest.index.codefacts.rival_version_dirs`) answers its own files, the newest
  one also files outside every version folder: any other file reaches them only by importing
  them. A name with more than
  ``max_definers`` candidates makes no edge at all (it would be noise) and is reported;
* calls: symbol -> symbol, from the innermost definition around the call site; a name defined
  in the same file wins, otherwise candidates as for references;
* governs: doc -> each covered path (1/N), supersedes: doc -> doc;
* mentions: doc -> the file a relative link names (where the doc's site resolves it:
  :mod:`palimpsest.index.codefacts.sites`) or an inline path names, or -> the definitions of an
  identifier it names in inline code (1/N) — the edge that reaches docs without ``Governs:``.

Everything the passes cannot resolve lands in the :class:`GraphReport`.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Sequence
from itertools import islice
from pathlib import PurePosixPath

from palimpsest.index.codefacts import Kind, classify, rival_version_dirs
from palimpsest.index.codefacts.sites import Sites
from palimpsest.index.graph.docs import governed_paths, superseded_docs
from palimpsest.index.graph.facts import FactRow, FileFacts, SnapshotFacts
from palimpsest.index.graph.gcpause import gc_paused
from palimpsest.index.graph.imports import ImportResolver, ResolveContext
from palimpsest.index.graph.model import EdgeKind, Graph, GraphBuilder
from palimpsest.index.graph.report import (
    AmbiguousName,
    DynamicSite,
    GraphReport,
    UnmatchedHeader,
    UnresolvedImport,
)
from palimpsest.index.graph.tree import Tree, dirname, normalize
from palimpsest.index.languages import PARSED_LANGUAGES

__all__ = ["GRAPH_LANGUAGES", "MAX_DEFINERS", "build_graph"]

_FUNCTION_KINDS = frozenset({"function", "method"})
_JAVASCRIPT = frozenset({"javascript", "typescript", "tsx"})
_PYTHON_INITS = frozenset({"__init__.py", "__init__.pyi"})
# languages whose files are modules: a plain name (not ``x.m()``) crosses files only through an
# import, so it never falls back to a bare-name match (Rust's facts do not tell a path-qualified
# call, ``de::from_str()``, from a plain one: a plain Rust name still reaches the crate's only definer)
_MODULE_LANGUAGES = frozenset({"python", "javascript", "typescript", "tsx", "rust"})
# the file that makes a folder a unit bare names do not leave, and the languages it holds
_UNIT_MARKERS = {"package.json": _JAVASCRIPT, "cargo.toml": frozenset({"rust"})}
_MAX_REEXPORTED = 4000
"""A barrel reaching more modules than this is cut there (a whole repository re-exported)."""

# the role of a file for bare-name resolution: product code, tests, and code set aside that
# only its own kind reaches by name (examples, benchmarks)
_PRODUCT, _TEST, _EXAMPLE, _BENCHMARK = 0, 1, 2, 3
_QUALIFIER = re.compile(r"\.|::|#|->")

MAX_DEFINERS = 25
"""A name defined in more files than this is too common to say anything; no edges are made."""

GRAPH_LANGUAGES = PARSED_LANGUAGES
"""Languages the chunker parses into definitions and facts (:mod:`palimpsest.index.languages`)."""


class _Resolution:
    """State shared by the passes of one build."""

    def __init__(self, snapshot: SnapshotFacts, max_definers: int) -> None:
        self.files = sorted(snapshot.files, key=lambda f: f.path)
        self.tree = Tree(f.path for f in self.files)
        self.texts = snapshot.texts
        self.max_definers = max_definers
        self.builder = GraphBuilder()
        self.report = GraphReport(files=len(self.files))
        # name -> path -> (symbol node, defined in test code); and (name, directory) -> paths
        self.definers: dict[str, dict[str, tuple[int, bool]]] = {}
        self.by_dir: dict[tuple[str, str], list[str]] = {}
        self._roles: dict[str, int] = {}
        self._versions = rival_version_dirs(f.path for f in self.files)  # folder -> superseded
        # the folders a bare name never leaves (names cross them only through imports): a JS/TS
        # package (its package.json) and a Rust crate (its Cargo.toml); a Go package is its folder
        self._units = {
            language: frozenset(dirname(p) for p in self.texts if p.rpartition("/")[2].lower() == marker)
            for marker, languages in _UNIT_MARKERS.items()
            for language in languages
        }
        self._unit_of: dict[str, str | None] = {}
        self.languages = {f.path: f.language for f in self.files}
        self._version_of: dict[str, str | None] = {}
        self.imported: dict[str, set[str]] = {}
        self.reexports: dict[str, list[str]] = {}  # barrel -> the modules it re-exports
        self._through: dict[str, frozenset[str]] = {}  # barrel -> every module it reaches
        self._scopes: dict[str, frozenset[str]] = {}  # file -> modules reached through its barrels
        self._sites: Sites | None = None  # where a doc's links point, built on the first link

    # ------------------------------------------------------------------ passes

    def nodes(self) -> None:
        for file in self.files:
            self.builder.add_path(file.path, "doc" if file.kind == "doc" else "file")
            if file.skip_reason is not None:
                self.report.not_indexed[file.skip_reason.split(":", 1)[0]] += 1
            elif file.kind != "doc" and file.language not in GRAPH_LANGUAGES:
                self.report.no_parser[_extension(file.path)] += 1

    def definitions(self) -> None:
        builder = self.builder
        for file in self.files:
            owner = builder.node_of_path(file.path)
            assert owner is not None
            test = self._role(file.path) == _TEST
            functions = {s.name for s in file.symbols if s.kind in _FUNCTION_KINDS}
            for symbol in file.symbols:
                if builder.symbol(file.path, symbol.name) is not None:
                    continue
                node = builder.add_symbol(file.path, symbol.name)
                builder.add_edge(owner, node, EdgeKind.DEFINES)
                if symbol.parent is None or symbol.parent not in functions:  # a nested def is local
                    self.definers.setdefault(symbol.name, {})[file.path] = (node, test)
                    self.by_dir.setdefault((symbol.name, dirname(file.path)), []).append(file.path)

    def imports(self) -> None:
        resolver = ImportResolver(ResolveContext(self.tree, self.texts))
        for file in self.files:
            source = self.builder.node_of_path(file.path)
            assert source is not None
            for fact in file.facts:
                if fact.kind != "import":
                    continue
                outcome = resolver.resolve(file.path, file.language, fact)
                if outcome.status == "external":
                    self.report.external_imports[outcome.package or "?"] += 1
                    continue
                if outcome.status == "unresolved":
                    self.report.unresolved_imports.append(
                        UnresolvedImport(file.path, fact.line, fact.name, file.language)
                    )
                    continue
                self.report.resolved_imports += 1
                targets = [t for t in outcome.targets if t != file.path]
                self.imported.setdefault(file.path, set()).update(targets)
                if targets and _reexports(file, fact):
                    self.reexports.setdefault(file.path, []).extend(targets)
                for target in targets:
                    node = self.builder.node_of_path(target)
                    if node is not None:
                        self.builder.add_edge(source, node, EdgeKind.IMPORTS, 1.0 / len(targets))
        self.report.barrels = len(self.reexports)
        self.report.workspace_packages = resolver.workspace_packages()

    def uses(self) -> None:
        for file in self.files:
            source = self.builder.node_of_path(file.path)
            assert source is not None
            for fact in file.facts:
                if fact.kind == "reference":
                    self._link(file, source, fact.name, EdgeKind.REFERENCES, fact.detail == "member")
                elif fact.kind == "call":
                    caller = self.builder.symbol(file.path, fact.target) if fact.target else None
                    local = self.builder.symbol(file.path, fact.name)
                    if local is not None:
                        self.builder.add_edge(caller if caller is not None else source, local, EdgeKind.CALLS)
                    else:
                        origin = caller if caller is not None else source
                        self._link(file, origin, fact.name, EdgeKind.CALLS, fact.detail == "member")
                elif fact.kind == "dynamic":
                    self.report.dynamic.append(
                        DynamicSite(file.path, fact.line, fact.name, fact.target, fact.detail)
                    )

    def documents(self) -> None:
        docs = [f.path for f in self.files if f.kind == "doc"]
        for file in self.files:
            source = self.builder.node_of_path(file.path)
            assert source is not None
            for fact in file.facts:
                if fact.kind == "governs":
                    self._header(file, source, fact, governed_paths(self.tree, fact.name), EdgeKind.GOVERNS)
                elif fact.kind == "supersedes":
                    found = [d for d in superseded_docs(docs, fact.name) if d != file.path]
                    self._header(file, source, fact, found, EdgeKind.SUPERSEDES)
                elif fact.kind == "mention":
                    self._mention(file, source, fact)

    # ------------------------------------------------------------------ helpers

    def _role(self, path: str) -> int:
        known = self._roles.get(path)
        if known is None:
            facts = classify(path)
            if facts.kind is Kind.TEST:
                known = _TEST
            elif facts.kind is Kind.EXAMPLE:
                known = _EXAMPLE
            elif facts.benchmark:
                known = _BENCHMARK
            else:
                known = _PRODUCT
            self._roles[path] = known
        return known

    def _version(self, path: str) -> str | None:
        """The major-version folder (one with a rival, ``v3`` beside ``v4``) ``path`` is under."""
        if not self._versions:
            return None
        if path in self._version_of:
            return self._version_of[path]
        found = next((folder for folder in self._versions if path.startswith(folder + "/")), None)
        self._version_of[path] = found
        return found

    def _unit(self, path: str) -> str | None:
        """The folder a bare name used in ``path`` cannot leave: its Go package (the folder), its
        JS/TS package (nearest ``package.json``) or Rust crate (nearest ``Cargo.toml``); ``None``
        where the language has no such unit or the tree declares none."""
        if path in self._unit_of:
            return self._unit_of[path]
        language = self.languages.get(path)
        found: str | None = None
        if language == "go":
            found = dirname(path)
        elif markers := self._units.get(language or ""):
            directory: str | None = dirname(path)
            while directory is not None:
                if directory in markers:
                    found = directory
                    break
                directory = dirname(directory) if directory else None
        self._unit_of[path] = found
        return found

    def _by_name(self, path: str, definer: str) -> bool:
        """Whether a bare-name match from ``path`` may mean ``definer``: tests answer tests,
        examples and benchmarks their own kind; a Go file only its own package, a JS/TS file
        only its own package and a Rust file only its own crate (another unit's names come
        through an import, :meth:`_unit`); a major-version folder answers itself, and the newest
        one also answers files outside every version folder."""
        if definer == path:
            return False
        role = self._role(definer)
        if role not in (_PRODUCT, self._role(path)):
            return False
        unit = self._unit(path)
        if unit is not None and self._unit(definer) != unit:  # (a definer in another language has none)
            return False
        theirs = self._version(definer)
        if theirs is None:
            return True
        ours = self._version(path)
        return theirs == ours or (ours is None and not self._versions[theirs])

    def _reexported(self, barrel: str) -> frozenset[str]:
        """Every module ``barrel`` re-exports, transitively (cycles end at a module seen)."""
        known = self._through.get(barrel)
        if known is not None:
            return known
        seen = {barrel}
        stack = [barrel]
        while stack and len(seen) <= _MAX_REEXPORTED:
            for target in self.reexports.get(stack.pop(), ()):
                if target not in seen:
                    seen.add(target)
                    stack.append(target)
        seen.discard(barrel)
        found = self._through[barrel] = frozenset(seen)
        return found

    def _scope(self, path: str) -> frozenset[str]:
        """The modules ``path`` reaches through the barrels it imports (not the barrels)."""
        known = self._scopes.get(path)
        if known is None:
            reached: set[str] = set()
            for imported in self.imported.get(path, ()):
                if imported in self.reexports:
                    reached |= self._reexported(imported)
            reached.discard(path)
            known = self._scopes[path] = frozenset(reached)
        return known

    def _candidates(self, path: str, name: str, member: bool = False) -> tuple[list[tuple[str, int]], str]:
        """Definers of ``name`` a reference from ``path`` may mean (at most ``max_definers + 1``:
        more than that is "too common" however many there are), and the route that found them
        (``import``, ``barrel``, ``unique``, ``directory``, ``name``; ``not_imported``: none, a
        plain name of a module language that the file does not import)."""
        entry = self.definers.get(name)
        if not entry:
            return [], "none"
        imported = self.imported.get(path)
        if imported:
            scoped = sorted((p, entry[p][0]) for p in imported if p in entry)
            if scoped:
                return scoped, "import"
            through = self._scope(path)
            if through:
                pool = entry if len(entry) < len(through) else through
                scoped = sorted((p, entry[p][0]) for p in pool if p in through and p in entry)
                if scoped:
                    return scoped, "barrel"

        language = self.languages.get(path)
        modular = language in _MODULE_LANGUAGES

        def allowed(p: str) -> bool:
            # in a module language a method of a test, example or benchmark is reached by import only
            return self._by_name(path, p) and not (modular and self._role(p) != _PRODUCT)

        if modular and not member:
            found = [(p, entry[p][0]) for p in entry if self._by_name(path, p)] if language == "rust" else []
            return (found, "unique") if len(found) == 1 else ([], "not_imported")
        if len(entry) <= 2:
            found = [(p, entry[p][0]) for p in entry if allowed(p)]
            if len(found) <= 1:
                return found, "unique"
        nearby = [(p, entry[p][0]) for p in self.by_dir.get((name, dirname(path)), ()) if allowed(p)]
        if nearby:
            return nearby, "directory"
        return list(islice(((p, entry[p][0]) for p in entry if allowed(p)), self.max_definers + 1)), "name"

    def _link(self, file: FileFacts, source: int, name: str, kind: EdgeKind, member: bool = False) -> None:
        candidates, route = self._candidates(file.path, name, member)
        if route == "not_imported":
            self.report.routes[route] += 1
        if not candidates:
            return  # defined nowhere in the tree (a library or builtin name), or only set aside
        self.report.routes[route] += 1
        if member:  # x.m(): resolved through what the file imports, or by the name alone
            self.report.member_routes[route] += 1
        if route == "name":
            self.report.bare_name_by_language[file.language or "?"] += 1
        if len(candidates) > 1:
            self._ambiguous(name, len(candidates) > self.max_definers)
            if len(candidates) > self.max_definers:
                return
        share = 1.0 / len(candidates)
        for _, node in candidates:
            self.builder.add_edge(source, node, kind, share)

    def _mention(self, file: FileFacts, source: int, fact: FactRow) -> None:
        """A doc naming code: a path (relative to the doc, else to the root) or an identifier."""
        if fact.target == "path" and fact.detail in ("link", "docref"):
            if self._sites is None:
                self._sites = Sites.of((f.path for f in self.files), self.texts)
            found = self._sites.resolve(file.path, fact.name).found
            node = self.builder.node_of_path(found) if found and found != file.path else None
            if node is not None:
                self.builder.add_edge(source, node, EdgeKind.MENTIONS)
            return
        if fact.target == "path":
            name = fact.name.split("#", 1)[0]
            for base in (normalize(posixpath.join(dirname(file.path), name)), normalize(name.lstrip("/"))):
                node = self.builder.node_of_path(base) if base else None
                if node is not None and base != file.path:
                    self.builder.add_edge(source, node, EdgeKind.MENTIONS)
                    return
            return
        if fact.detail == "output" or fact.target == "label":
            # a name in a console or log block: only the doc check weighs it, against its line; a
            # ``:ref:`` label names a place in the docs, not code
            return
        name = _QUALIFIER.split(fact.name)[-1]
        entry = self.definers.get(name, {})
        if len(entry) > 2 * self.max_definers:
            return
        candidates = [(p, node) for p, (node, test) in entry.items() if not test and p != file.path]
        if candidates and len(candidates) <= self.max_definers:
            for _, node in candidates:
                self.builder.add_edge(source, node, EdgeKind.MENTIONS, 1.0 / len(candidates))

    def _ambiguous(self, name: str, dropped: bool) -> None:
        entry = self.report.ambiguous.get(name)
        if entry is None:
            definers = sorted(self.definers.get(name, {}))
            entry = self.report.ambiguous[name] = AmbiguousName(name, definers)
        entry.references += 1
        entry.dropped = entry.dropped or dropped

    def _header(
        self, file: FileFacts, source: int, fact: FactRow, targets: Sequence[str], kind: EdgeKind
    ) -> None:
        targets = [t for t in targets if t != file.path]
        if not targets:
            unmatched = (
                self.report.governs_unmatched
                if kind == EdgeKind.GOVERNS
                else self.report.supersedes_unmatched
            )
            unmatched.append(UnmatchedHeader(file.path, fact.line, fact.name))
            return
        for target in targets:
            node = self.builder.node_of_path(target)
            if node is not None:
                self.builder.add_edge(source, node, kind, 1.0 / len(targets))


def _reexports(file: FileFacts, fact: FactRow) -> bool:
    """Whether an import passes the names it takes on to the importer's own importers."""
    if file.language in _JAVASCRIPT:
        return fact.detail == "reexport"
    if file.language == "python":
        return fact.detail == "from" and file.path.rpartition("/")[2] in _PYTHON_INITS
    if file.language == "rust":
        return fact.detail == "pub_use"
    return False


def _extension(path: str) -> str:
    name = PurePosixPath(path).name
    suffix = PurePosixPath(name).suffix.lower()
    return suffix if suffix and suffix != name.lower() else name


@gc_paused
def build_graph(snapshot: SnapshotFacts, *, max_definers: int = MAX_DEFINERS) -> tuple[Graph, GraphReport]:
    """The graph of one snapshot and the report of what it could not resolve."""
    resolution = _Resolution(snapshot, max_definers)
    resolution.nodes()
    resolution.definitions()
    resolution.imports()
    resolution.uses()
    resolution.documents()
    graph = resolution.builder.build()
    report = resolution.report
    report.nodes = graph.node_count
    report.edges = graph.edge_counts()
    return graph, report
