"""What the analyzer reads of one snapshot: its files with their recency, and chunk metadata.

Chunk *payloads* are read page by page without their content (and there are no vectors here):
path, span, kind and the file's ``last_modified_at``, joined from the recency tables by path at
read time (recency and the index are built in parallel; a path without a date has an unknown
age). Content is fetched afterwards for the few chunks the selection keeps.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from uuid import UUID

from palimpsest.core.db import Conn
from palimpsest.index import snapshots
from palimpsest.index.recency_store import file_dates
from palimpsest.index.snapshots import FileChunks, Snapshot
from palimpsest.index.staleness import FileKind, file_kind, median_code_date

FILES_PER_PAGE = 1000


@dataclass(frozen=True, slots=True)
class SnapshotFile:
    path: str
    blob_sha: str
    language: str | None
    kind: FileKind
    last_modified_at: datetime | None
    skip_reason: str | None = None


@dataclass(frozen=True, slots=True)
class ChunkRef:
    """One chunk's metadata (no content): enough to select it."""

    path: str
    blob_sha: str
    ordinal: int
    start_line: int
    end_line: int
    chunk_kind: str
    name: str | None
    kind: FileKind
    last_modified_at: datetime | None


@dataclass(slots=True)
class SnapshotIndex:
    """A snapshot's files and chunk metadata, loaded once per analysis."""

    repository_id: UUID
    snapshot_id: UUID
    commit_sha: str
    files: list[SnapshotFile] = field(default_factory=list)
    chunks: list[ChunkRef] = field(default_factory=list)

    @property
    def median_code(self) -> datetime | None:
        """The median code-file date of the whole snapshot (the staleness reference point)."""
        return median_code_date((f.path, f.last_modified_at) for f in self.files)

    def paths(self) -> set[str]:
        return {f.path for f in self.files}


async def load_snapshot(conn: Conn, repository_id: UUID, snapshot: Snapshot) -> SnapshotIndex:
    snapshot_id = snapshot.snapshot_id
    index = SnapshotIndex(repository_id, snapshot_id, snapshot.commit_sha)
    dates = await _recency(conn, repository_id)
    after = ""
    while True:
        page = await snapshots.file_chunks_page(
            conn, repository_id, snapshot_id, after=after, limit=FILES_PER_PAGE
        )
        if not page:
            break
        _add_page(index, page, dates)
        after = page[-1].path
    return index


async def _recency(conn: Conn, repository_id: UUID) -> dict[str, datetime | None]:
    return {row.path: row.last_modified_at for row in await file_dates(conn, repository_id)}


def _add_page(index: SnapshotIndex, page: Iterable[FileChunks], dates: dict[str, datetime | None]) -> None:
    for row in page:
        path = row.path
        when = dates.get(path)
        kind = file_kind(path)
        index.files.append(SnapshotFile(path, row.blob_sha, row.language, kind, when, row.skip_reason))
        for ordinal, start, end, chunk_kind, name in row.chunks:
            index.chunks.append(
                ChunkRef(path, row.blob_sha, int(ordinal), int(start), int(end), chunk_kind, name, kind, when)
            )


async def chunk_contents(
    conn: Conn, repository_id: UUID, refs: Iterable[ChunkRef]
) -> dict[tuple[str, int], str]:
    """The content of each chunk in ``refs``, keyed by ``(blob_sha, ordinal)``."""
    keys = list(dict.fromkeys((r.blob_sha, r.ordinal) for r in refs))
    if not keys:
        return {}
    return {
        (row.blob_sha, row.ordinal): row.content
        for row in await snapshots.chunk_contents(conn, repository_id, keys)
    }
