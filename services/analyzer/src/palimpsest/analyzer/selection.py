"""Which chunks an analysis reads: ``select_analysis_chunks`` (docs/architecture.md, "Analyzer").

The selection is made for understanding the repository, and says why it took each file:

1. every chunk is a doc or code by the shared rule (:mod:`palimpsest.index.staleness`);
2. docs are capped at 20 % of the limit (80 → 16); code fills the rest, and doc budget the docs
   do not use spills over to code; at most 3 chunks per file (its first ones);
3. the root ``README*`` and the root manifest(s) (package.json, pyproject.toml, go.mod, …) are
   always seeded when present;
4. code then comes from the repository's *primary source packages* — declared by its manifests,
   else its largest code tree (:mod:`palimpsest.analyzer.packages`): their entry points and
   public API first (``__init__.py``, ``index.ts``, ``lib.rs``, ``main.go`` near a package's
   root), then their central files by the index's own graph (a global PageRank over the
   snapshot's file graph) interleaved 3:1 with their most recently changed files;
5. only then other code, round-robin across top-level directories (programs before config and
   assets), newest first within a directory; docs are spread the same way; files of unknown
   age come after dated ones;
6. returns the chunks with the median code-file date of the snapshot, the reference point of
   the staleness rule.

Without a plan (no primary package known) step 4 is skipped. A repository with no more chunks
than the limit is returned whole: caps and spreading only matter when something has to be left
out.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any
from uuid import UUID

from palimpsest.analyzer.errors import NoReadySnapshot
from palimpsest.analyzer.packages import (
    MANIFEST_NAMES,
    Packages,
    entry_point,
    file_pagerank,
    is_source,
    primary_packages,
)
from palimpsest.analyzer.snapshot import (
    ChunkRef,
    SnapshotIndex,
    chunk_contents,
    load_snapshot,
)
from palimpsest.core.db import Conn
from palimpsest.index.docstates import DocState
from palimpsest.index.snapshots import blob_chunks, readable
from palimpsest.index.staleness import FileKind, is_stale, stale_annotation

__all__ = [
    "CENTRAL_PER_RECENT",
    "DOC_SHARE",
    "MANIFESTS",
    "MAX_CHUNKS_PER_FILE",
    "AnalysisChunk",
    "Plan",
    "Selection",
    "choose",
    "choose_with_reasons",
    "select_analysis_chunks",
    "select_from_index",
    "selection_plan",
]

DOC_SHARE = 0.2
MAX_CHUNKS_PER_FILE = 3
CENTRAL_PER_RECENT = 3  # primary files: three by centrality, then one by recency
ENTRY_DEPTH = 2  # an entry point at most this many folders below its package root
MAX_ENTRY_FILES = 6  # entry points read first; more of them (a package of packages) compete on rank
MANIFESTS = (
    "package.json",
    "pyproject.toml",
    "go.mod",
    "Cargo.toml",
    "pom.xml",
    "build.gradle.kts",
    "build.gradle",
    "composer.json",
    "Gemfile",
    "setup.py",
    "setup.cfg",
    "mix.exs",
    "build.sbt",
    "Package.swift",
    "pubspec.yaml",
    "deno.json",
)
"""Root manifests, seeded in this order when present (a monorepo root may have several)."""

_UNDATED = datetime.min.replace(tzinfo=UTC)
log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class AnalysisChunk:
    """A selected chunk with its text and what the context says about its age."""

    path: str
    kind: FileKind
    last_modified_at: datetime | None
    text: str
    start_line: int
    end_line: int
    name: str | None
    stale: bool  # a doc older than the rule allows (never for code or undated files)
    age: str | None  # "14 months older than typical code in this repo", stale docs only
    why: str = ""  # why the selection took this file
    primary: bool = False  # source of a primary package
    state: DocState | None = None  # a doc's state by the documentation check (with_doc_states)

    def as_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "kind": self.kind,
            "last_modified_at": self.last_modified_at.isoformat() if self.last_modified_at else None,
            "stale": self.stale,
            "start_line": self.start_line,
            "end_line": self.end_line,
            "why": self.why,
            "primary": self.primary,
        }


@dataclass(frozen=True, slots=True)
class Plan:
    """What the selection knows beyond chunk metadata: primary packages and graph centrality."""

    packages: Packages
    languages: dict[str, str | None]  # path → language
    rank: dict[str, float]  # path → PageRank over the snapshot's file graph

    def owner(self, path: str) -> str | None:
        return self.packages.owner(path, self.languages.get(path))


@dataclass(frozen=True, slots=True)
class Selection:
    chunks: list[AnalysisChunk]
    median_code: datetime | None
    packages: Packages | None = None

    @property
    def code(self) -> list[AnalysisChunk]:
        return [c for c in self.chunks if c.kind == "code"]

    @property
    def docs(self) -> list[AnalysisChunk]:
        return [c for c in self.chunks if c.kind == "doc"]

    def with_doc_states(self, states: Mapping[str, DocState]) -> Selection:
        """The selection with each judged doc's state: a doc is ``stale`` only when it is
        ``unverified_old`` (verified and generated-reference docs are not, whatever their age)."""
        return replace(
            self,
            chunks=[
                replace(c, state=states[c.path], stale=states[c.path] == "unverified_old")
                if c.kind == "doc" and c.path in states
                else c
                for c in self.chunks
            ],
        )


# ----------------------------------------------------------------------------- the pure rule


def choose(refs: Sequence[ChunkRef], limit: int, plan: Plan | None = None) -> list[ChunkRef]:
    """The chunks to analyse among ``refs`` (one snapshot's chunk metadata), in context order."""
    return [ref for ref, _ in choose_with_reasons(refs, limit, plan)]


def choose_with_reasons(
    refs: Sequence[ChunkRef], limit: int, plan: Plan | None = None
) -> list[tuple[ChunkRef, str]]:
    """:func:`choose`, with why each chunk's file was taken."""
    if limit <= 0:
        return []
    if len(refs) <= limit:  # tiny repository: everything, in the same order a larger one would use
        return _pick(refs, limit, doc_budget=limit, per_file=len(refs), plan=plan)
    return _pick(refs, limit, doc_budget=int(limit * DOC_SHARE), per_file=MAX_CHUNKS_PER_FILE, plan=plan)


def _pick(
    refs: Sequence[ChunkRef], limit: int, *, doc_budget: int, per_file: int, plan: Plan | None
) -> list[tuple[ChunkRef, str]]:
    files = _files(refs, per_file)
    seeds = _seed_paths(files)
    picked: list[tuple[ChunkRef, str]] = []
    taken: set[str] = set()
    budgets = {"doc": doc_budget, "code": limit}

    def take(path: str, why: str) -> None:
        if path in taken:
            return
        taken.add(path)
        for ref in files[path]:
            if len(picked) >= limit or budgets[ref.kind] <= 0:
                return
            picked.append((ref, why))
            budgets[ref.kind] -= 1

    for path in seeds:
        take(path, "root README" if files[path][0].kind == "doc" else "root manifest")
    rest = {path: chunks for path, chunks in files.items() if path not in seeds}
    for path in _round_robin_files(rest, "doc"):  # docs first only to know what they leave
        if len(picked) >= limit or budgets["doc"] <= 0:
            break
        take(path, "documentation, newest first across folders")
    for path, why in _code_order(rest, plan):
        if len(picked) >= limit or budgets["code"] <= 0:
            break
        take(path, why)
    return _context_order(picked)


def _code_order(files: dict[str, list[ChunkRef]], plan: Plan | None) -> Iterator[tuple[str, str]]:
    """Primary packages first (entry points, then centre and recent activity), then the rest."""
    if plan is not None:
        yield from _primary_order(files, plan)
    code = {p: c for p, c in files.items() if c and c[0].kind == "code"}
    programs = {p: c for p, c in code.items() if plan is None or is_source(p, plan.languages.get(p))}
    for path in _round_robin_files(programs, "code"):
        yield path, "other code, newest first across folders"
    others = {p: c for p, c in code.items() if p not in programs}
    for path in _round_robin_files(others, "code"):
        yield path, "other files, newest first across folders"


def _primary_order(files: dict[str, list[ChunkRef]], plan: Plan) -> Iterator[tuple[str, str]]:
    owners = {p: o for p in files if files[p][0].kind == "code" and (o := plan.owner(p)) is not None}
    entries = sorted(
        (p for p, o in owners.items() if entry_point(p) and _depth(p, o) <= ENTRY_DEPTH),
        key=lambda p: (_depth(p, owners[p]), -plan.rank.get(p, 0.0), p),
    )
    for path in entries[:MAX_ENTRY_FILES]:  # the rest compete on centrality
        yield path, f"entry point of {owners[path] or 'the root package'}"
    # equal rank (no graph, or files nothing uses) is broken by recency
    central = sorted(owners, key=lambda p: (-round(plan.rank.get(p, 0.0), 12), *_newest_first(files[p])))
    recent = sorted(
        (p for p in owners if files[p][0].last_modified_at is not None),
        key=lambda p: _newest_first(files[p]),
    )
    places = {p: i + 1 for i, p in enumerate(central)}
    for path, by in _interleave(central, recent, CENTRAL_PER_RECENT):
        package = owners[path] or "the root package"
        if by == "central":
            yield path, f"central in {package} (PageRank #{places[path]})"
        else:
            when = files[path][0].last_modified_at
            yield path, f"recently changed in {package} ({when.date().isoformat() if when else 'unknown'})"


def _interleave(central: list[str], recent: list[str], ratio: int) -> Iterator[tuple[str, str]]:
    seen: set[str] = set()
    queues = {"central": iter(central), "recent": iter(recent)}
    pattern = ["central"] * ratio + ["recent"]
    while queues:
        for by in pattern:
            queue = queues.get(by)
            if queue is None:
                continue
            for path in queue:
                if path not in seen:
                    seen.add(path)
                    yield path, by
                    break
            else:
                del queues[by]


def _depth(path: str, root: str) -> int:
    relative = path[len(root) + 1 :] if root else path
    return relative.count("/")


def _files(refs: Sequence[ChunkRef], per_file: int) -> dict[str, list[ChunkRef]]:
    """Each file's first ``per_file`` chunks, in file order."""
    files: dict[str, list[ChunkRef]] = defaultdict(list)
    for ref in sorted(refs, key=lambda r: (r.path, r.ordinal)):
        if len(files[ref.path]) < per_file:
            files[ref.path].append(ref)
    return files


def _seed_paths(files: dict[str, list[ChunkRef]]) -> list[str]:
    """Root README* first (README.md before README.rst…), then root manifests in MANIFESTS order."""
    readmes = sorted(
        (p for p in files if "/" not in p and p.upper().startswith("README")),
        key=lambda p: (p.upper() != "README.MD", p),
    )
    manifests = [m for m in MANIFESTS if m in files]
    return readmes + manifests


def _newest_first(chunks: list[ChunkRef]) -> tuple[bool, float, str]:
    when = chunks[0].last_modified_at
    return (when is None, -(when or _UNDATED).timestamp(), chunks[0].path)


def _round_robin_files(files: dict[str, list[ChunkRef]], kind: str) -> Iterator[str]:
    """One file per top-level directory in turn; newest files first inside each directory."""
    groups: dict[str, list[list[ChunkRef]]] = defaultdict(list)
    for path, chunks in files.items():
        if chunks and chunks[0].kind == kind:
            groups[_top_level(path)].append(chunks)
    queues: list[Iterator[list[ChunkRef]]] = []
    for _, members in sorted(groups.items(), key=lambda item: _group_order(item[0], item[1])):
        members.sort(key=_newest_first)
        queues.append(iter(members))
    while queues:
        still: list[Iterator[list[ChunkRef]]] = []
        for queue in queues:
            first: list[ChunkRef] | None = next(queue, None)
            if first is not None:
                yield first[0].path
                still.append(queue)
        queues = still


def _group_order(name: str, members: list[list[ChunkRef]]) -> tuple[bool, float, str]:
    """Directories whose newest file is newest go first in each round; undated ones last."""
    dated = [m[0].last_modified_at for m in members if m[0].last_modified_at is not None]
    newest = max(dated) if dated else None
    return (newest is None, -(newest or _UNDATED).timestamp(), name)


def _top_level(path: str) -> str:
    return path.split("/", 1)[0] if "/" in path else ""


def _context_order(picked: list[tuple[ChunkRef, str]]) -> list[tuple[ChunkRef, str]]:
    """Code first, then docs, each in the order chosen (seeds lead their kind)."""
    return [p for p in picked if p[0].kind == "code"] + [p for p in picked if p[0].kind == "doc"]


# ----------------------------------------------------------------------------- against the index


async def select_analysis_chunks(
    conn: Conn, repository_id: UUID, limit: int, *, snapshot_id: UUID | None = None
) -> Selection:
    """The analysis selection for a repository's snapshot (the newest ready one by default)."""
    snapshot = await readable(conn, repository_id, snapshot_id)
    if snapshot is None:
        raise NoReadySnapshot("the repository has no ready snapshot to analyse")
    index = await load_snapshot(conn, repository_id, snapshot)
    return await select_from_index(conn, index, limit)


async def selection_plan(conn: Conn, index: SnapshotIndex) -> Plan:
    """The primary packages (from the root manifests) and the graph's PageRank of the snapshot."""
    languages = {f.path: f.language for f in index.files}
    manifests = [f for f in index.files if f.path in MANIFEST_NAMES and f.skip_reason is None]
    texts = await _file_texts(conn, index, [f.blob_sha for f in manifests])
    packages = primary_packages({f.path: texts.get(f.blob_sha, "") for f in manifests}, languages.items())
    return Plan(packages, languages, await _pagerank(conn, index))


async def _file_texts(conn: Conn, index: SnapshotIndex, blobs: list[str]) -> dict[str, str]:
    if not blobs:
        return {}
    lines: dict[str, dict[int, str]] = defaultdict(dict)
    for chunk in await blob_chunks(conn, index.repository_id, blobs):  # windows overlap: line by line
        for offset, line in enumerate(chunk.content.split("\n")):
            lines[chunk.blob_sha].setdefault(chunk.start_line + offset, line)
    return {blob: "\n".join(by_line[n] for n in sorted(by_line)) for blob, by_line in lines.items()}


async def _pagerank(conn: Conn, index: SnapshotIndex) -> dict[str, float]:
    from palimpsest.index.graph.query import snapshot_graph

    try:
        _, graph, _ = await snapshot_graph(conn, index.repository_id, snapshot_id=index.snapshot_id)
    except Exception as exc:  # the graph is a ranking signal: without it, recency still orders
        log.warning("no graph for the analysis selection (%s): primary files ordered by recency", exc)
        return {}
    return file_pagerank(graph)


async def select_from_index(
    conn: Conn, index: SnapshotIndex, limit: int, plan: Plan | None = None
) -> Selection:
    """The selection over an already loaded snapshot (an analysis selects twice: 80 and 40)."""
    if plan is None:
        plan = await selection_plan(conn, index)
    chosen = choose_with_reasons(index.chunks, limit, plan)
    contents = await chunk_contents(conn, index.repository_id, [ref for ref, _ in chosen])
    median = index.median_code
    chunks = [
        AnalysisChunk(
            path=ref.path,
            kind=ref.kind,
            last_modified_at=ref.last_modified_at,
            text=contents.get((ref.blob_sha, ref.ordinal), ""),
            start_line=ref.start_line,
            end_line=ref.end_line,
            name=ref.name,
            stale=is_stale(ref.path, ref.last_modified_at, median),
            age=stale_annotation(ref.path, ref.last_modified_at, median),
            why=why,
            primary=plan.owner(ref.path) is not None,
        )
        for ref, why in chosen
    ]
    return Selection(chunks, median, plan.packages)
