"""Reading snapshots: which snapshot a query runs against, and what a build produced.

The chunker writes the snapshot tables (its builds; the embedder its embedding state); every
reader calls the typed functions here, in the caller's tenant transaction (row-level security
scopes them).
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from datetime import datetime
from typing import Any, Final, Literal, cast
from uuid import UUID

from psycopg.rows import tuple_row

from palimpsest.core.db import Conn, JsonRow, columns, fetch_all_as, fetch_one_as
from palimpsest.core.stores import Store

STORE = Store(
    owner="chunker",
    reads=(
        "code_index_snapshots",
        "code_index_files",
        "code_blobs",
        "code_chunks",
        "code_symbols",
        "code_facts",
    ),
)


SnapshotState = Literal["building", "ready", "superseded", "failed"]


@dataclass(frozen=True, slots=True)
class Snapshot(JsonRow):
    """A build of one commit and its embedding run, as the API (its schema is this class), the CLI
    and MCP show it: one row of ``code_index_snapshots``, without its owner."""

    snapshot_id: UUID
    repository_id: UUID
    commit_sha: str
    request_id: UUID | None
    state: SnapshotState
    reason: str | None
    files: int
    chunks: int
    symbols: int
    bytes: int
    parsed_blobs: int
    skipped: dict[str, int]  # jsonb: files left out, by reason (limits, binary, …)
    duration_s: float | None
    embedding_state: str
    embedding_reason: str | None
    embedding_model: str | None
    embedding_dimension: int | None
    embedded_chunks: int
    embedding_pending: int
    embedding_truncated: int
    embedding_updated_at: datetime | None
    created_at: datetime
    ready_at: datetime | None


@dataclass(frozen=True, slots=True)
class StoredSnapshot(Snapshot):
    """The row as the readers below return it: with its owner (its graph is stored under it),
    which is not shown (the caller is that tenant)."""

    tenant_id: UUID

    def shown(self) -> Snapshot:
        return Snapshot(**{f.name: getattr(self, f.name) for f in fields(Snapshot)})

    def to_json(self) -> dict[str, Any]:
        return self.shown().to_json()


_SELECT = f"SELECT {columns(StoredSnapshot)} FROM code_index_snapshots"


async def newest_ready(conn: Conn, repository_id: UUID) -> StoredSnapshot | None:
    return await fetch_one_as(
        conn,
        StoredSnapshot,
        _SELECT
        + " WHERE repository_id = %s AND state = 'ready' AND NOT pinned ORDER BY created_at DESC LIMIT 1",
        (repository_id,),
    )


async def for_commit(conn: Conn, repository_id: UUID, commit: str) -> StoredSnapshot | None:
    """The ready snapshot of ``commit`` (a PR's base), else None."""
    return await fetch_one_as(
        conn,
        StoredSnapshot,
        _SELECT + " WHERE repository_id = %s AND commit_sha = %s"
        " AND state IN ('ready', 'superseded') ORDER BY created_at DESC LIMIT 1",
        (repository_id, commit),
    )


async def readable(conn: Conn, repository_id: UUID, snapshot_id: UUID | None) -> StoredSnapshot | None:
    """The snapshot to read: ``snapshot_id`` of this repository if ready or superseded, else (when
    no id is given) the newest ready one."""
    if snapshot_id is None:
        return await newest_ready(conn, repository_id)
    return await fetch_one_as(
        conn,
        StoredSnapshot,
        _SELECT + " WHERE repository_id = %s AND snapshot_id = %s AND state IN ('ready', 'superseded')",
        (repository_id, snapshot_id),
    )


async def by_request(conn: Conn, request_id: UUID) -> StoredSnapshot | None:
    return await fetch_one_as(
        conn,
        StoredSnapshot,
        _SELECT + " WHERE request_id = %s ORDER BY created_at DESC LIMIT 1",
        (request_id,),
    )


async def list_snapshots(
    conn: Conn,
    repository_id: UUID,
    *,
    limit: int | None = None,
    before: UUID | None = None,
    pinned: bool | None = None,
) -> list[StoredSnapshot]:
    """Newest first (ids are UUIDv7); ``limit`` and ``before`` (the last id of a page) page through;
    ``pinned=False`` only the default branch's (not a review's pinned base), ``True`` only those."""
    return await fetch_all_as(
        conn,
        StoredSnapshot,
        _SELECT + " WHERE repository_id = %s AND (%s::uuid IS NULL OR snapshot_id < %s)"
        " AND (%s::boolean IS NULL OR pinned = %s)"
        " ORDER BY created_at DESC, snapshot_id DESC LIMIT %s",
        (repository_id, before, before, pinned, pinned, limit),
    )


async def get_snapshot(conn: Conn, snapshot_id: UUID) -> StoredSnapshot | None:
    return await fetch_one_as(conn, StoredSnapshot, _SELECT + " WHERE snapshot_id = %s", (snapshot_id,))


@dataclass(frozen=True, slots=True)
class FileText:
    """A file of a snapshot as its chunks hold it: ``text`` is None when indexing skipped the file
    (``skip_reason``: binary, too large, generated…), so it has no chunks."""

    path: str
    blob_sha: str
    size: int
    skip_reason: str | None
    text: str | None


async def file_text(conn: Conn, repository_id: UUID, snapshot_id: UUID, path: str) -> FileText | None:
    """The file at ``path`` in the snapshot, rebuilt line by line from its (overlapping) chunks;
    a line no chunk holds is empty, so every line keeps its number. None: not in the snapshot."""
    row = await fetch_one_as(
        conn,
        _File,
        "SELECT blob_sha, size, skip_reason FROM code_index_files WHERE snapshot_id = %s AND path = %s",
        (snapshot_id, path),
    )
    if row is None:
        return None
    if row.skip_reason is not None:
        return FileText(path, row.blob_sha, row.size, row.skip_reason, None)
    chunks = await fetch_all_as(
        conn,
        _Chunk,
        "SELECT start_line, content FROM code_chunks WHERE repository_id = %s AND blob_sha = %s ORDER BY ordinal",
        (repository_id, row.blob_sha),
    )
    lines: dict[int, str] = {}
    for chunk in chunks:
        for offset, line in enumerate(chunk.content.split("\n")):
            lines.setdefault(chunk.start_line + offset, line)
    text = "\n".join(lines.get(n, "") for n in range(1, max(lines) + 1)) if lines else ""
    return FileText(path, row.blob_sha, row.size, None, text)


@dataclass(frozen=True, slots=True)
class _File:
    blob_sha: str
    size: int
    skip_reason: str | None


@dataclass(frozen=True, slots=True)
class _Chunk:
    start_line: int
    content: str


@dataclass(frozen=True, slots=True)
class ChunkLines:
    """A chunk's first line and text, of one blob: enough to rebuild the blob's file line by line."""

    blob_sha: str
    start_line: int
    content: str


async def blob_chunks(conn: Conn, repository_id: UUID, blobs: list[str]) -> list[ChunkLines]:
    """The chunks of each of ``blobs``, by blob and then in chunk order (windows overlap)."""
    return await fetch_all_as(
        conn,
        ChunkLines,
        "SELECT blob_sha, start_line, content FROM code_chunks WHERE repository_id = %s"
        " AND blob_sha = ANY(%s::text[]) ORDER BY blob_sha, ordinal",
        (repository_id, blobs),
    )


@dataclass(frozen=True, slots=True)
class FileChunks:
    """A file of a snapshot with its chunks' metadata (no content), in chunk order."""

    path: str
    blob_sha: str
    language: str | None
    skip_reason: str | None
    chunks: list[tuple[int, int, int, str, str | None]]  # json: ordinal, start, end, kind, name


_FILE_CHUNKS: Final = (
    "WITH page AS ("
    "  SELECT path, blob_sha, language, skip_reason FROM code_index_files"
    "  WHERE snapshot_id = %(snap)s AND path > %(after)s"
    "  ORDER BY path LIMIT %(n)s)"
    " SELECT page.path, page.blob_sha, page.language, page.skip_reason,"
    "   coalesce(json_agg(json_build_array(c.ordinal, c.start_line, c.end_line, c.kind, c.name)"
    "     ORDER BY c.ordinal) FILTER (WHERE c.ordinal IS NOT NULL), '[]') AS chunks"
    " FROM page LEFT JOIN code_chunks c ON c.repository_id = %(repo)s AND c.blob_sha = page.blob_sha"
    " GROUP BY page.path, page.blob_sha, page.language, page.skip_reason ORDER BY page.path"
)


async def file_chunks_page(
    conn: Conn, repository_id: UUID, snapshot_id: UUID, *, after: str, limit: int
) -> list[FileChunks]:
    """Up to ``limit`` files of the snapshot after ``after`` (by path), each with its chunks' metadata."""
    return await fetch_all_as(
        conn,
        FileChunks,
        _FILE_CHUNKS,
        {"snap": snapshot_id, "after": after, "n": limit, "repo": repository_id},
    )


@dataclass(frozen=True, slots=True)
class ChunkContent:
    blob_sha: str
    ordinal: int
    content: str


async def chunk_contents(conn: Conn, repository_id: UUID, keys: list[tuple[str, int]]) -> list[ChunkContent]:
    """The content of each chunk named by ``(blob_sha, ordinal)`` in ``keys``."""
    return await fetch_all_as(
        conn,
        ChunkContent,
        "SELECT c.blob_sha, c.ordinal, c.content FROM code_chunks c"
        " JOIN unnest(%s::text[], %s::int[]) AS k(blob_sha, ordinal)"
        "   ON c.blob_sha = k.blob_sha AND c.ordinal = k.ordinal"
        " WHERE c.repository_id = %s",
        ([k[0] for k in keys], [k[1] for k in keys], repository_id),
    )


@dataclass(frozen=True, slots=True)
class BlobName:
    """A name the chunker's symbols say a blob defines."""

    blob_sha: str
    name: str


async def blob_symbol_names(conn: Conn, repository_id: UUID, blobs: list[str]) -> list[BlobName]:
    """The names each of ``blobs`` defines (blobs the index never parsed have none)."""
    return await fetch_all_as(
        conn,
        BlobName,
        "SELECT blob_sha, name FROM code_symbols WHERE repository_id = %s AND blob_sha = ANY(%s::text[])",
        (repository_id, blobs),
    )


@dataclass(frozen=True, slots=True)
class _Name:
    name: str


async def defined_names(conn: Conn, repository_id: UUID, names: list[str], blobs: list[str]) -> set[str]:
    """Which of ``names`` one of ``blobs`` defines."""
    rows = await fetch_all_as(
        conn,
        _Name,
        "SELECT DISTINCT name FROM code_symbols WHERE repository_id = %s AND name = ANY(%s::text[])"
        " AND blob_sha = ANY(%s::text[])",
        (repository_id, names, blobs),
    )
    return {row.name for row in rows}


@dataclass(frozen=True, slots=True)
class DocMention:
    """A doc blob's stored mention of an identifier or a path, or its ``Governs:`` line."""

    blob_sha: str
    kind: str  # mention | governs | label
    name: str
    line: int
    target: str | None
    detail: str | None


async def doc_mentions(conn: Conn, repository_id: UUID, blobs: list[str]) -> list[DocMention]:
    """Every identifier and path mention and every ``Governs:`` fact of ``blobs``, by blob, line
    and order of writing."""
    return await fetch_all_as(
        conn,
        DocMention,
        "SELECT blob_sha, kind, name, line, target, detail FROM code_facts"
        " WHERE repository_id = %s AND blob_sha = ANY(%s::text[])"
        " AND (kind = 'governs' OR (kind = 'mention' AND target IN ('identifier', 'path')))"
        " ORDER BY blob_sha, line, ordinal",
        (repository_id, blobs),
    )


async def doc_facts(conn: Conn, repository_id: UUID, blobs: list[str]) -> list[DocMention]:
    """Every mention, ``Governs:`` line and label target of ``blobs`` (the documentation check's
    claims), by blob, line and order of writing."""
    return await fetch_all_as(
        conn,
        DocMention,
        "SELECT blob_sha, kind, name, line, target, detail FROM code_facts"
        " WHERE repository_id = %s AND blob_sha = ANY(%s::text[]) AND kind IN ('mention', 'governs', 'label')"
        " ORDER BY blob_sha, line, ordinal",
        (repository_id, blobs),
    )


async def section_names(conn: Conn, repository_id: UUID, blobs: list[str]) -> list[BlobName]:
    """The titles of the sections (their chunks' names) of ``blobs``, each once per blob."""
    return await fetch_all_as(
        conn,
        BlobName,
        "SELECT DISTINCT blob_sha, name FROM code_chunks WHERE repository_id = %s"
        " AND blob_sha = ANY(%s::text[]) AND kind = 'section' AND name IS NOT NULL",
        (repository_id, blobs),
    )


async def snapshot_symbol_names(conn: Conn, repository_id: UUID, snapshot_id: UUID) -> set[str]:
    """Every name a file of the snapshot defines (the index's symbols)."""
    rows = await fetch_all_as(
        conn,
        _Name,
        "SELECT DISTINCT s.name FROM code_index_files f"
        " JOIN code_symbols s ON s.repository_id = %s AND s.blob_sha = f.blob_sha"
        " WHERE f.snapshot_id = %s",
        (repository_id, snapshot_id),
    )
    return {row.name for row in rows}


async def lexemes_present(conn: Conn, repository_id: UUID, snapshot_id: UUID, lexemes: list[str]) -> set[str]:
    """Which of ``lexemes`` occur in the lexical vector of some code chunk of the snapshot."""
    async with conn.cursor(row_factory=tuple_row) as cur:
        await cur.execute(
            "SELECT l AS lexeme FROM palimpsest_code_lexemes_present(%s, %s, %s::text[]) AS l",
            (repository_id, snapshot_id, lexemes),
        )
        return {lexeme for (lexeme,) in await cur.fetchall()}


async def names_present(
    conn: Conn, repository_id: UUID, snapshot_id: UUID, names: list[str], lexemes: list[str]
) -> set[str]:
    """Which of ``names`` occur exactly (case, whole word) in the snapshot's code, each looked up
    through its lexeme (``lexemes[i]`` of ``names[i]``)."""
    async with conn.cursor(row_factory=tuple_row) as cur:
        await cur.execute(
            "SELECT n AS name FROM palimpsest_code_names_present(%s, %s, %s::text[], %s::text[]) AS n",
            (repository_id, snapshot_id, names, lexemes),
        )
        return {name for (name,) in await cur.fetchall()}


@dataclass(frozen=True, slots=True)
class _Commit:
    commit_sha: str


async def snapshot_commit(conn: Conn, snapshot_id: UUID) -> str | None:
    """The commit a snapshot was built from, or None (no such snapshot)."""
    row = await fetch_one_as(
        conn, _Commit, "SELECT commit_sha FROM code_index_snapshots WHERE snapshot_id = %s", (snapshot_id,)
    )
    return row.commit_sha if row is not None else None


# ------------------------------------------ what the graph reads, as tuples (decoded in a thread)

# (path, blob_sha, language, kind, skip_reason)
FileTuple = tuple[str, str, str | None, str, str | None]
# (blob_sha, symbols, facts): a blob's records, two text columns (palimpsest.index.records)
RecordTuple = tuple[str, str | None, str | None]
# (blob_sha, start_line, content)
ChunkTuple = tuple[str, int, str]


async def _tuples(conn: Conn, statement: str, params: dict[str, Any]) -> list[tuple[Any, ...]]:
    async with conn.cursor(row_factory=tuple_row) as cur:
        await cur.execute(statement, params)
        return await cur.fetchall()


async def file_tuples(conn: Conn, snapshot_id: UUID) -> list[FileTuple]:
    """Every file of the snapshot, as plain tuples: a 50 000-file snapshot's rows are many."""
    rows = await _tuples(
        conn,
        "SELECT path, blob_sha, language, kind, skip_reason FROM code_index_files WHERE snapshot_id = %(snap)s",
        {"snap": snapshot_id},
    )
    return cast("list[FileTuple]", rows)


async def record_tuples(conn: Conn, repository_id: UUID, snapshot_id: UUID) -> list[RecordTuple]:
    """The symbols and facts of the snapshot's blobs that have any, as plain tuples."""
    rows = await _tuples(
        conn,
        "SELECT b.blob_sha, b.symbols, b.facts FROM code_blobs b"
        " WHERE b.repository_id = %(repo)s AND (b.symbols IS NOT NULL OR b.facts IS NOT NULL) AND b.blob_sha IN ("
        "   SELECT f.blob_sha FROM code_index_files f WHERE f.snapshot_id = %(snap)s)",
        {"repo": repository_id, "snap": snapshot_id},
    )
    return cast("list[RecordTuple]", rows)


async def chunk_tuples(conn: Conn, repository_id: UUID, blobs: list[str]) -> list[ChunkTuple]:
    """The chunks of ``blobs``, by blob and then in chunk order, as plain tuples."""
    rows = await _tuples(
        conn,
        "SELECT blob_sha, start_line, content FROM code_chunks WHERE repository_id = %(repo)s"
        " AND blob_sha = ANY(%(shas)s) ORDER BY blob_sha, ordinal",
        {"repo": repository_id, "shas": blobs},
    )
    return cast("list[ChunkTuple]", rows)
