"""The review context's reads of one snapshot: the chunks its sources rank (:mod:`.candidates`).

Read-only, in the caller's tenant transaction; the chunker writes these tables. Every statement
stays on indexed access paths (symbol names, blob ids, snapshot paths) so a review of a
50 000-file repository stays fast: one round trip per call, planned as the sources ask.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from uuid import UUID

from psycopg.rows import tuple_row

from palimpsest.core.db import Conn, fetch_all_as
from palimpsest.core.stores import Store

__all__ = [
    "STORE",
    "ChunkRow",
    "DefinitionSpan",
    "defining_chunks",
    "definition_spans",
    "file_chunks",
    "first_chunks",
    "mentioning_chunks",
    "present_paths",
    "using_chunks",
]

STORE = Store(
    owner="chunker",
    reads=("code_index_files", "code_blobs", "code_chunks", "code_symbols", "code_facts"),
)

_CHUNK_COLUMNS = "c.blob_sha, c.ordinal, c.start_line, c.end_line, c.content"


@dataclass(frozen=True, slots=True)
class ChunkRow:
    """A chunk at one of the snapshot's paths, as the sources read it; ``name`` is the definition
    (or the changed name used) it was found for, ``focus`` the line of that use."""

    path: str
    blob_sha: str
    ordinal: int
    start_line: int
    end_line: int
    content: str
    name: str | None = None
    focus: int = 0  # the line of the use (usages only)


async def defining_chunks(
    conn: Conn, repository_id: UUID, snapshot_id: UUID, names: Sequence[str], limit: int, max_definers: int
) -> list[ChunkRow]:
    """The chunks that define ``names`` at the snapshot's paths (in the order of ``names``, at most
    ``limit``), one per definition; a name defined in more than ``max_definers`` files of the
    snapshot is left out. Each row's ``name`` is the name it defines."""
    return await fetch_all_as(
        conn,
        ChunkRow,
        # the defining blobs come from the name index (palimpsest_symbol_blobs, migration 0015);
        # each blob's paths through the files' blob index, a blob's first n paths being all the
        # final top n can take from it; the chunk only for the n rows kept
        "WITH s AS (SELECT DISTINCT ON (b.blob_sha, r.name) b.blob_sha, r.name, r.start_line"
        "   FROM palimpsest_symbol_blobs(%(r)s, %(names)s::text[]) b"
        "   CROSS JOIN LATERAL palimpsest_symbol_rows(b.symbols) r"
        "   WHERE r.name = ANY(%(names)s::text[]) ORDER BY b.blob_sha, r.name, r.start_line),"
        " here AS (SELECT f.path, s.name, s.blob_sha, s.start_line FROM s"
        "   CROSS JOIN LATERAL (SELECT f.path FROM code_index_files f WHERE f.snapshot_id = %(snap)s"
        "     AND f.blob_sha = s.blob_sha ORDER BY f.path LIMIT %(n)s) f),"
        # a name defined in many places of the snapshot (read, open, get) does not say which one
        # the diff means (counted in the snapshot: the repository keeps older snapshots' blobs)
        " clear AS (SELECT name FROM here GROUP BY name HAVING count(*) <= %(definers)s),"
        " top AS (SELECT here.* FROM here JOIN clear USING (name)"
        "   ORDER BY array_position(%(names)s::text[], here.name), here.path LIMIT %(n)s)"
        f" SELECT top.path, top.name, {_CHUNK_COLUMNS} FROM top"
        " CROSS JOIN LATERAL (SELECT * FROM code_chunks c WHERE c.repository_id = %(r)s"
        "   AND c.blob_sha = top.blob_sha AND c.start_line <= top.start_line AND c.end_line >= top.start_line"
        "   ORDER BY (c.name = top.name) DESC NULLS LAST, c.end_line - c.start_line, c.ordinal LIMIT 1) c"
        " ORDER BY array_position(%(names)s::text[], top.name), top.path",
        {"r": repository_id, "snap": snapshot_id, "names": list(names), "n": limit, "definers": max_definers},
    )


@dataclass(frozen=True, slots=True)
class DefinitionSpan:
    """A definition (the index's symbol) in a file of the snapshot, and its lines."""

    path: str
    name: str
    start_line: int
    end_line: int


async def definition_spans(
    conn: Conn, repository_id: UUID, snapshot_id: UUID, paths: Sequence[str]
) -> list[DefinitionSpan]:
    """The definitions of the files at ``paths`` in the snapshot, by path and first line."""
    return await fetch_all_as(
        conn,
        DefinitionSpan,
        "SELECT f.path, s.name, s.start_line, s.end_line FROM code_index_files f"
        " JOIN code_symbols s ON s.repository_id = %s AND s.blob_sha = f.blob_sha"
        " WHERE f.snapshot_id = %s AND f.path = ANY(%s::text[]) ORDER BY f.path, s.start_line",
        (repository_id, snapshot_id, list(paths)),
    )


async def using_chunks(
    conn: Conn, repository_id: UUID, snapshot_id: UUID, paths: Sequence[str], names: Sequence[str]
) -> list[ChunkRow]:
    """For each (path, name) pair, in order: the chunk of the file at ``path`` holding its first
    reference to or call of ``name`` (else its shortest chunk), with that line as ``focus``."""
    return await fetch_all_as(
        conn,
        ChunkRow,
        "WITH u AS (SELECT * FROM unnest(%(paths)s::text[], %(names)s::text[]) WITH ORDINALITY AS u(path, name, i))"
        f" SELECT u.path, u.name, x.line AS focus, {_CHUNK_COLUMNS} FROM u"
        " JOIN code_index_files f ON f.snapshot_id = %(snap)s AND f.path = u.path"
        " CROSS JOIN LATERAL (SELECT coalesce(min(x.line), 1) AS line FROM code_facts x"
        "   WHERE x.repository_id = %(r)s AND x.blob_sha = f.blob_sha AND x.name = u.name"
        "   AND x.kind IN ('reference', 'call')) x"
        " CROSS JOIN LATERAL (SELECT * FROM code_chunks c WHERE c.repository_id = %(r)s"
        "   AND c.blob_sha = f.blob_sha ORDER BY (c.start_line <= x.line AND c.end_line >= x.line) DESC,"
        "   c.end_line - c.start_line, c.ordinal LIMIT 1) c"
        " ORDER BY u.i",
        {"r": repository_id, "snap": snapshot_id, "paths": list(paths), "names": list(names)},
    )


async def present_paths(conn: Conn, snapshot_id: UUID, paths: Sequence[str]) -> set[str]:
    """Which of ``paths`` the snapshot has."""
    async with conn.cursor(row_factory=tuple_row) as cur:
        await cur.execute(
            "SELECT path FROM code_index_files WHERE snapshot_id = %s AND path = ANY(%s::text[])",
            (snapshot_id, list(paths)),
        )
        return {path for (path,) in await cur.fetchall()}


async def file_chunks(
    conn: Conn, repository_id: UUID, snapshot_id: UUID, paths: Sequence[str]
) -> list[ChunkRow]:
    """Every chunk of the files at ``paths`` in the snapshot, by path (in the order of ``paths``)
    and then in chunk order."""
    return await fetch_all_as(
        conn,
        ChunkRow,
        f"SELECT f.path, {_CHUNK_COLUMNS} FROM unnest(%(paths)s::text[]) WITH ORDINALITY AS p(path, i)"
        " JOIN code_index_files f ON f.snapshot_id = %(snap)s AND f.path = p.path"
        " JOIN code_chunks c ON c.repository_id = %(r)s AND c.blob_sha = f.blob_sha"
        " ORDER BY p.i, c.ordinal",
        {"r": repository_id, "snap": snapshot_id, "paths": list(paths)},
    )


async def mentioning_chunks(
    conn: Conn, repository_id: UUID, snapshot_id: UUID, lexeme: str, candidates: int
) -> list[ChunkRow]:
    """The chunks of the snapshot whose lexical vector holds ``lexeme`` (the lexical index's first
    ``candidates`` matches), one row per path holding the chunk, by path and shortest chunk first."""
    return await fetch_all_as(
        conn,
        ChunkRow,
        "WITH top AS (SELECT * FROM palimpsest_lexical_candidates("
        "   %(r)s, %(snap)s, to_tsquery('simple', %(q)s), NULL::text, %(cand)s, %(cand)s))"
        f" SELECT f.path, {_CHUNK_COLUMNS} FROM top"
        " JOIN code_chunks c ON c.repository_id = %(r)s AND c.blob_sha = top.blob_sha AND c.ordinal = top.ordinal"
        " JOIN code_index_files f ON f.snapshot_id = %(snap)s AND f.blob_sha = top.blob_sha"
        " ORDER BY f.path, c.end_line - c.start_line",
        {"r": repository_id, "snap": snapshot_id, "q": f"'{lexeme}'", "cand": candidates},
    )


async def first_chunks(
    conn: Conn, repository_id: UUID, snapshot_id: UUID, paths: Sequence[str]
) -> list[ChunkRow]:
    """The first chunk of each of ``paths`` in the snapshot, in the order of ``paths``."""
    return await fetch_all_as(
        conn,
        ChunkRow,
        f"SELECT f.path, {_CHUNK_COLUMNS} FROM unnest(%(paths)s::text[]) WITH ORDINALITY AS p(path, i)"
        " JOIN code_index_files f ON f.snapshot_id = %(snap)s AND f.path = p.path"
        " CROSS JOIN LATERAL (SELECT * FROM code_chunks c WHERE c.repository_id = %(r)s"
        "   AND c.blob_sha = f.blob_sha ORDER BY c.ordinal LIMIT 1) c"
        " ORDER BY p.i",
        {"r": repository_id, "snap": snapshot_id, "paths": list(paths)},
    )
