"""Resolving one snapshot's per-blob facts into its graph — in passes, never in one.

Definitions of the *whole* tree are collected before any reference is resolved, so whether a
reference finds its definer never depends on the order files are listed in (a one-pass
resolver silently misses every definer that sorts after the referencing file).

* defines: file -> each symbol it defines (one node per path and name);
* imports: file -> file(s), per language (:mod:`palimpsest.index.graph.imports`), a package
  import split 1/N over the package's files;
* references: file -> symbol. Candidates are the other files defining the name; when some of
  them are files this one imports, only those count, else those in the same directory (Go
  packages, C translation units), else all — and each of the N left gets 1/N. Definitions
  nested in a function are local and answer no other file; definitions in test code answer
  only references from test code (code never depends on tests). A name with more
  than ``max_definers`` candidates makes no edge at all (it would be noise) and is reported;
* calls: symbol -> symbol, from the innermost definition around the call site; a name defined
  in the same file wins, otherwise candidates as for references;
* governs: doc -> each covered path (1/N), supersedes: doc -> doc;
* mentions: doc -> the file a relative link or inline path names, or -> the definitions of an
  identifier it names in inline code (1/N) — the edge that reaches docs without ``Governs:``.

Everything the passes cannot resolve lands in the :class:`GraphReport`.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Sequence
from itertools import islice
from pathlib import PurePosixPath

from palimpsest.index.codefacts import is_test
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
        self._tests: dict[str, bool] = {}
        self.imported: dict[str, set[str]] = {}

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
            test = is_test(file.path)
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
                for target in targets:
                    node = self.builder.node_of_path(target)
                    if node is not None:
                        self.builder.add_edge(source, node, EdgeKind.IMPORTS, 1.0 / len(targets))

    def uses(self) -> None:
        for file in self.files:
            source = self.builder.node_of_path(file.path)
            assert source is not None
            for fact in file.facts:
                if fact.kind == "reference":
                    self._link(file, source, fact.name, EdgeKind.REFERENCES)
                elif fact.kind == "call":
                    caller = self.builder.symbol(file.path, fact.target) if fact.target else None
                    local = self.builder.symbol(file.path, fact.name)
                    if local is not None:
                        self.builder.add_edge(caller if caller is not None else source, local, EdgeKind.CALLS)
                    else:
                        self._link(file, caller if caller is not None else source, fact.name, EdgeKind.CALLS)
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

    def _is_test(self, path: str) -> bool:
        known = self._tests.get(path)
        if known is None:
            known = self._tests[path] = is_test(path)
        return known

    def _candidates(self, path: str, name: str) -> list[tuple[str, int]]:
        """Definers of ``name`` a reference from ``path`` may mean (at most ``max_definers + 1``:
        more than that is "too common" however many there are)."""
        entry = self.definers.get(name)
        if not entry:
            return []
        # code never depends on tests: a test's definitions only answer references from tests
        from_test = self._is_test(path)

        def allowed(p: str) -> bool:
            return p != path and (from_test or not entry[p][1])

        if len(entry) <= 2:
            found = [(p, entry[p][0]) for p in entry if allowed(p)]
            if len(found) <= 1:
                return found
        imported = self.imported.get(path)
        if imported:
            scoped = sorted((p, entry[p][0]) for p in imported if p in entry and allowed(p))
            if scoped:
                return scoped
        nearby = [(p, entry[p][0]) for p in self.by_dir.get((name, dirname(path)), ()) if allowed(p)]
        if nearby:
            return nearby
        return list(islice(((p, entry[p][0]) for p in entry if allowed(p)), self.max_definers + 1))

    def _link(self, file: FileFacts, source: int, name: str, kind: EdgeKind) -> None:
        candidates = self._candidates(file.path, name)
        if not candidates:
            return  # defined nowhere in the tree: a library or builtin name
        if len(candidates) > 1:
            self._ambiguous(name, len(candidates) > self.max_definers)
            if len(candidates) > self.max_definers:
                return
        share = 1.0 / len(candidates)
        for _, node in candidates:
            self.builder.add_edge(source, node, kind, share)

    def _mention(self, file: FileFacts, source: int, fact: FactRow) -> None:
        """A doc naming code: a path (relative to the doc, else to the root) or an identifier."""
        if fact.target == "path":
            name = fact.name.split("#", 1)[0]
            for base in (normalize(posixpath.join(dirname(file.path), name)), normalize(name.lstrip("/"))):
                node = self.builder.node_of_path(base) if base else None
                if node is not None and base != file.path:
                    self.builder.add_edge(source, node, EdgeKind.MENTIONS)
                    return
            return
        if fact.detail == "output":
            return  # a name in a console or log block: only the doc check weighs it, against its line
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
