"""Which chunks an analysis reads: ``select_analysis_chunks`` (DESIGN §5 "Analyzer").

An unordered sample lets a handful of stale design docs dominate what the model sees. The
selection instead:

1. classifies every chunk by its file's extension: doc (``.md .mdx .txt .rst``, the shared
   staleness rule's definition) or code (everything else, config included);
2. caps docs at 20 % of the limit (80 → 16); code fills the rest, and doc budget the docs do not
   use spills over to code;
3. always seeds the root ``README*`` and the root manifest(s) (package.json, pyproject.toml,
   go.mod, Cargo.toml, …) when present;
4. spreads the rest round-robin across top-level directories, at most 3 chunks per file;
5. within a directory prefers the newest files; files of unknown age come after dated ones;
6. returns the chunks with the median code-file date of the snapshot, the reference point of the
   staleness rule.

A repository with no more chunks than the limit is returned whole: caps and spreading only
matter when something has to be left out.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from uuid import UUID

from palimpsest.analyzer.errors import NoReadySnapshot
from palimpsest.analyzer.snapshot import (
    ChunkRef,
    SnapshotIndex,
    chunk_contents,
    load_snapshot,
    resolve_snapshot,
)
from palimpsest.core.db import Conn
from palimpsest.index.staleness import FileKind, is_stale, stale_annotation

__all__ = [
    "DOC_SHARE",
    "MANIFESTS",
    "MAX_CHUNKS_PER_FILE",
    "AnalysisChunk",
    "Selection",
    "choose",
    "select_analysis_chunks",
    "select_from_index",
]

DOC_SHARE = 0.2
MAX_CHUNKS_PER_FILE = 3
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

    def as_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "kind": self.kind,
            "last_modified_at": self.last_modified_at.isoformat() if self.last_modified_at else None,
            "stale": self.stale,
            "start_line": self.start_line,
            "end_line": self.end_line,
        }


@dataclass(frozen=True, slots=True)
class Selection:
    chunks: list[AnalysisChunk]
    median_code: datetime | None

    @property
    def code(self) -> list[AnalysisChunk]:
        return [c for c in self.chunks if c.kind == "code"]

    @property
    def docs(self) -> list[AnalysisChunk]:
        return [c for c in self.chunks if c.kind == "doc"]


# ----------------------------------------------------------------------------- the pure rule


def choose(refs: Sequence[ChunkRef], limit: int) -> list[ChunkRef]:
    """The chunks to analyse among ``refs`` (one snapshot's chunk metadata), in context order."""
    if limit <= 0:
        return []
    if len(refs) <= limit:  # tiny repository: everything, in the same order a larger one would use
        return _pick(refs, limit, doc_budget=limit, per_file=len(refs))
    return _pick(refs, limit, doc_budget=int(limit * DOC_SHARE), per_file=MAX_CHUNKS_PER_FILE)


def _pick(refs: Sequence[ChunkRef], limit: int, *, doc_budget: int, per_file: int) -> list[ChunkRef]:
    files = _files(refs, per_file)
    seeds = _seed_paths(files)
    picked: list[ChunkRef] = []
    budgets = {"doc": doc_budget, "code": limit}

    def take(ref: ChunkRef) -> bool:
        if len(picked) >= limit or budgets[ref.kind] <= 0:
            return False
        picked.append(ref)
        budgets[ref.kind] -= 1
        return True

    for path in seeds:
        for ref in files[path]:
            take(ref)
    rest = {path: chunks for path, chunks in files.items() if path not in seeds}
    for kind in ("doc", "code"):  # docs first only to know what they leave: code gets the spill-over
        for ref in _round_robin(rest, kind):
            if len(picked) >= limit or budgets[kind] <= 0:
                break
            take(ref)
    return _context_order(picked)


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


def _round_robin(files: dict[str, list[ChunkRef]], kind: str) -> Iterator[ChunkRef]:
    """One chunk per top-level directory in turn; newest files first inside each directory."""
    groups: dict[str, list[list[ChunkRef]]] = defaultdict(list)
    for path, chunks in files.items():
        if chunks and chunks[0].kind == kind:
            groups[_top_level(path)].append(chunks)
    queues: list[Iterator[ChunkRef]] = []
    for _, members in sorted(groups.items(), key=lambda item: _group_order(item[0], item[1])):
        members.sort(key=_newest_first)
        queues.append(iter([ref for chunks in members for ref in chunks]))
    while queues:
        still: list[Iterator[ChunkRef]] = []
        for queue in queues:
            ref = next(queue, None)
            if ref is not None:
                yield ref
                still.append(queue)
        queues = still


def _group_order(name: str, members: list[list[ChunkRef]]) -> tuple[bool, float, str]:
    """Directories whose newest file is newest go first in each round; undated ones last."""
    dated = [m[0].last_modified_at for m in members if m[0].last_modified_at is not None]
    newest = max(dated) if dated else None
    return (newest is None, -(newest or _UNDATED).timestamp(), name)


def _top_level(path: str) -> str:
    return path.split("/", 1)[0] if "/" in path else ""


def _context_order(picked: list[ChunkRef]) -> list[ChunkRef]:
    """Code first, then docs, each in the order chosen (seeds lead their kind)."""
    return [r for r in picked if r.kind == "code"] + [r for r in picked if r.kind == "doc"]


# ----------------------------------------------------------------------------- against the index


async def select_analysis_chunks(
    conn: Conn, repository_id: UUID, limit: int, *, snapshot_id: UUID | None = None
) -> Selection:
    """The analysis selection for a repository's snapshot (the newest ready one by default)."""
    snapshot = await resolve_snapshot(conn, repository_id, snapshot_id)
    if snapshot is None:
        raise NoReadySnapshot("the repository has no ready snapshot to analyse")
    index = await load_snapshot(conn, repository_id, snapshot)
    return await select_from_index(conn, index, limit)


async def select_from_index(conn: Conn, index: SnapshotIndex, limit: int) -> Selection:
    """The selection over an already loaded snapshot (an analysis selects twice: 80 and 40)."""
    chosen = choose(index.chunks, limit)
    contents = await chunk_contents(conn, index.repository_id, chosen)
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
        )
        for ref in chosen
    ]
    return Selection(chunks, median)
