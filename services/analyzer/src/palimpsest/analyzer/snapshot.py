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

from palimpsest.core.db import Conn, fetch_all_as
from palimpsest.index.snapshots import Snapshot
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
        page = await _file_page(conn, repository_id, snapshot_id, after)
        if not page:
            break
        _add_page(index, page, dates)
        after = page[-1].path
    return index


async def _recency(conn: Conn, repository_id: UUID) -> dict[str, datetime | None]:
    cur = await conn.execute(
        "SELECT path, last_modified_at FROM file_recency WHERE repository_id = %s", (repository_id,)
    )
    return {row["path"]: row["last_modified_at"] for row in await cur.fetchall()}


@dataclass(frozen=True, slots=True)
class _FileRow:
    path: str
    blob_sha: str
    language: str | None
    skip_reason: str | None
    chunks: list[tuple[int, int, int, str, str | None]]  # json: ordinal, start, end, kind, name


async def _file_page(conn: Conn, repository_id: UUID, snapshot_id: UUID, after: str) -> list[_FileRow]:
    """Up to FILES_PER_PAGE files after ``after`` (the index's order), each with its chunks' metadata."""
    return await fetch_all_as(
        conn,
        _FileRow,
        "WITH page AS ("
        "  SELECT path, blob_sha, language, skip_reason FROM code_index_files"
        "  WHERE snapshot_id = %(snap)s AND path > %(after)s"
        "  ORDER BY path LIMIT %(n)s)"
        " SELECT page.path, page.blob_sha, page.language, page.skip_reason,"
        "   coalesce(json_agg(json_build_array(c.ordinal, c.start_line, c.end_line, c.kind, c.name)"
        "     ORDER BY c.ordinal) FILTER (WHERE c.ordinal IS NOT NULL), '[]') AS chunks"
        " FROM page LEFT JOIN code_chunks c ON c.repository_id = %(repo)s AND c.blob_sha = page.blob_sha"
        " GROUP BY page.path, page.blob_sha, page.language, page.skip_reason ORDER BY page.path",
        {"snap": snapshot_id, "after": after, "n": FILES_PER_PAGE, "repo": repository_id},
    )


def _add_page(index: SnapshotIndex, page: Iterable[_FileRow], dates: dict[str, datetime | None]) -> None:
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
    cur = await conn.execute(
        "SELECT c.blob_sha, c.ordinal, c.content FROM code_chunks c"
        " JOIN unnest(%s::text[], %s::int[]) AS k(blob_sha, ordinal)"
        "   ON c.blob_sha = k.blob_sha AND c.ordinal = k.ordinal"
        " WHERE c.repository_id = %s",
        ([k[0] for k in keys], [k[1] for k in keys], repository_id),
    )
    return {(row["blob_sha"], row["ordinal"]): row["content"] for row in await cur.fetchall()}
