"""The chunker's tables: a snapshot of a repository's default branch and what it is built from.

The declaration below is their home, and the functions below the chunker's statements over them:
a snapshot's life (started, progress, ready, failed, superseded, pruned, deleted) and a build's
reads and writes (``build.py`` decides what to write; its rows go through COPY into staging
tables and on with ``INSERT … SELECT``). The chunker also stamps
``repositories.index_updated_at`` in the build's own transaction (a build and its stamp commit
together, and a service may not import the ingest service's store); ingest clears the stamp when a
repository's index data is deleted. Readers read these tables through ``palimpsest.index.snapshots``.
"""

from __future__ import annotations

from dataclasses import dataclass
from uuid import UUID

from psycopg.types.json import Jsonb

from palimpsest.chunker.work import CHUNK_COLUMNS, CHUNK_FIELDS
from palimpsest.core.db import Conn, fetch_all_as, fetch_one_as
from palimpsest.core.stores import Owns, Store

STORE = Store(
    owner="chunker",
    writes=(
        Owns("code_index_snapshots"),
        Owns("code_index_files"),
        Owns("code_blobs"),
        Owns("code_chunks"),
        Owns("code_symbols"),
        Owns("code_facts"),
        Owns("repositories", "its `index_updated_at`"),
    ),
)


@dataclass(frozen=True, slots=True)
class _SnapshotId:
    snapshot_id: UUID


async def ready_for(conn: Conn, repository_id: UUID, commit: str, *, pinned: bool) -> UUID | None:
    """The newest kept snapshot of ``commit`` that makes a build unnecessary: for the branch, its
    ready snapshot (a pinned one is not the branch's); for a review's base (``pinned``), any kept one."""
    row = await fetch_one_as(
        conn,
        _SnapshotId,
        "SELECT snapshot_id FROM code_index_snapshots WHERE repository_id = %s AND commit_sha = %s"
        " AND (state = 'ready' AND NOT pinned OR %s AND state IN ('ready', 'superseded'))"
        " ORDER BY created_at DESC LIMIT 1",
        (repository_id, commit, pinned),
    )
    return row.snapshot_id if row is not None else None


async def start_snapshot(
    conn: Conn,
    tenant_id: UUID,
    repository_id: UUID,
    snapshot_id: UUID,
    commit: str,
    request_id: UUID | None,
    *,
    pinned: bool,
) -> None:
    """A ``building`` row for ``commit``; the repository's builds left ``building`` (interrupted)
    become failed."""
    await conn.execute(
        "UPDATE code_index_snapshots SET state = 'failed', reason = 'interrupted'"
        " WHERE repository_id = %s AND state = 'building'",
        (repository_id,),
    )
    await conn.execute(
        "INSERT INTO code_index_snapshots (tenant_id, repository_id, snapshot_id, commit_sha, request_id, pinned)"
        " VALUES (%s, %s, %s, %s, %s, %s)",
        (tenant_id, repository_id, snapshot_id, commit, request_id, pinned),
    )


async def record_progress(conn: Conn, snapshot_id: UUID, parsed_blobs: int) -> None:
    await conn.execute(
        "UPDATE code_index_snapshots SET parsed_blobs = %s WHERE snapshot_id = %s",
        (parsed_blobs, snapshot_id),
    )


async def mark_failed(conn: Conn, snapshot_id: UUID, reason: str, duration_s: float) -> None:
    await conn.execute(
        "UPDATE code_index_snapshots SET state = 'failed', reason = %s, duration_s = %s WHERE snapshot_id = %s",
        (reason, duration_s, snapshot_id),
    )


async def delete_snapshot(conn: Conn, snapshot_id: UUID) -> None:
    """Delete one snapshot (its file rows go by trigger; its blobs stay until garbage collection)."""
    await conn.execute("DELETE FROM code_index_snapshots WHERE snapshot_id = %s", (snapshot_id,))


async def delete_snapshots(conn: Conn, repository_id: UUID) -> None:
    """Delete every snapshot of the repository (its index mode is off)."""
    await conn.execute("DELETE FROM code_index_snapshots WHERE repository_id = %s", (repository_id,))


# ------------------------------------------------------------------------------------------- a build


async def lock_repository(conn: Conn, repository_id: UUID) -> None:
    """The repository's build lock, to the end of the transaction: one build (or garbage
    collection) of a repository at a time."""
    await conn.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (str(repository_id),))


async def ready_of_commit(conn: Conn, repository_id: UUID, commit: str, *, pinned: bool) -> UUID | None:
    """A ready snapshot of ``commit`` that another build made meanwhile: the branch's build is made
    unnecessary by the branch's snapshot only; a review's base (``pinned``) by any ready one."""
    row = await fetch_one_as(
        conn,
        _SnapshotId,
        "SELECT snapshot_id FROM code_index_snapshots WHERE repository_id = %s AND commit_sha = %s"
        " AND state = 'ready' AND (%s OR NOT pinned) LIMIT 1",
        (repository_id, commit, pinned),
    )
    return row.snapshot_id if row is not None else None


async def hold_snapshot(conn: Conn, snapshot_id: UUID) -> bool:
    """Keep the snapshot from being deleted until the transaction ends; False: it is gone already."""
    cur = await conn.execute(
        "SELECT 1 FROM code_index_snapshots WHERE snapshot_id = %s FOR KEY SHARE", (snapshot_id,)
    )
    return await cur.fetchone() is not None


async def bulk_load_settings(conn: Conn) -> None:
    """A bulk load's settings, for this transaction only."""
    await conn.execute("SET LOCAL work_mem = '64MB'")
    await conn.execute("SET LOCAL synchronous_commit = off")


async def no_nested_loops(conn: Conn) -> None:
    """Hash joins for the rest of the transaction (the set operations that end a load)."""
    await conn.execute("SET LOCAL enable_nestloop = off")


@dataclass(frozen=True, slots=True)
class _Exists:
    found: bool


async def _exists(conn: Conn, statement: str, params: tuple[object, ...]) -> bool:
    row = await fetch_one_as(conn, _Exists, statement, params)
    return row is not None and row.found


async def has_blobs(conn: Conn, repository_id: UUID) -> bool:
    """Whether the repository has any blob (else a build is its first: every blob is new)."""
    return await _exists(
        conn, "SELECT EXISTS (SELECT 1 FROM code_blobs WHERE repository_id = %s) AS found", (repository_id,)
    )


@dataclass(frozen=True, slots=True)
class ReadyBuild:
    """The repository's newest ready snapshot, as an incremental build starts from it."""

    snapshot_id: UUID
    commit_sha: str
    files: int
    chunks: int
    symbols: int
    bytes: int
    skipped: dict[str, int]  # jsonb: skip reason → files
    analysis_version: int


async def newest_ready_build(conn: Conn, repository_id: UUID) -> ReadyBuild | None:
    return await fetch_one_as(
        conn,
        ReadyBuild,
        "SELECT snapshot_id, commit_sha, files, chunks, symbols, bytes, skipped, analysis_version"
        " FROM code_index_snapshots"
        " WHERE repository_id = %s AND state = 'ready' ORDER BY created_at DESC LIMIT 1",
        (repository_id,),
    )


async def skipped_too_large_up_to(conn: Conn, snapshot_id: UUID, max_bytes: int) -> bool:
    """Whether the snapshot skipped, as too large, a file of at most ``max_bytes`` (a raised limit)."""
    return await _exists(
        conn,
        "SELECT EXISTS (SELECT 1 FROM code_index_files WHERE snapshot_id = %s AND skip_reason = 'too_large'"
        " AND size <= %s) AS found",
        (snapshot_id, max_bytes),
    )


@dataclass(frozen=True, slots=True)
class FileTotals:
    """The files of some paths of a snapshot with one skip reason (None: indexed), and their blobs'
    chunks, symbols and bytes."""

    skip_reason: str | None
    files: int
    chunks: int
    symbols: int
    bytes: int


async def totals_at(conn: Conn, repository_id: UUID, snapshot_id: UUID, paths: list[str]) -> list[FileTotals]:
    """The totals of the snapshot's files at ``paths``, by skip reason (summed as a build sums them)."""
    return await fetch_all_as(
        conn,
        FileTotals,
        "SELECT f.skip_reason, count(*) AS files, coalesce(sum(b.chunk_count), 0) AS chunks,"
        " coalesce(sum(b.symbol_count), 0) AS symbols, coalesce(sum(b.size), 0) AS bytes"
        " FROM code_index_files f LEFT JOIN code_blobs b ON b.repository_id = %s AND b.blob_sha = f.blob_sha"
        " WHERE f.snapshot_id = %s AND f.path = ANY(%s::text[]) GROUP BY f.skip_reason",
        (repository_id, snapshot_id, paths),
    )


@dataclass(frozen=True, slots=True)
class KnownBlob:
    """A blob the repository has parsed before, as a build decides whether to parse it again."""

    blob_sha: str
    language: str | None
    size: int
    analysis_version: int
    skip_reason: str | None
    chunk_count: int
    symbol_count: int


async def known_blobs(conn: Conn, repository_id: UUID, shas: list[str]) -> dict[str, KnownBlob]:
    """The blobs of ``shas`` the repository has, by blob id."""
    rows = await fetch_all_as(
        conn,
        KnownBlob,
        "SELECT blob_sha, language, size, analysis_version, skip_reason, chunk_count, symbol_count"
        " FROM code_blobs WHERE repository_id = %s AND blob_sha = ANY(%s)",
        (repository_id, shas),
    )
    return {r.blob_sha: r for r in rows}


async def delete_blobs(conn: Conn, repository_id: UUID, shas: list[str]) -> None:
    """Drop blobs to parse again (migration 0013's trigger removes their chunks, symbols, facts)."""
    await conn.execute(
        "DELETE FROM code_blobs WHERE repository_id = %s AND blob_sha = ANY(%s)", (repository_id, shas)
    )


@dataclass(frozen=True, slots=True)
class _Bytes:
    n: int


async def source_bytes(conn: Conn) -> int:
    """The bytes of indexed source the caller's tenant holds."""
    row = await fetch_one_as(
        conn, _Bytes, "SELECT coalesce(sum(size), 0) AS n FROM code_blobs WHERE skip_reason IS NULL"
    )
    return row.n if row is not None else 0


# ------------------------------------------------------------------------------ writing, with COPY

# PostgreSQL refuses COPY FROM into a table under row-level security, so rows are copied into
# session-private staging tables (no RLS) and moved with INSERT … SELECT, which the tenant policy's
# WITH CHECK still guards. Staged rows carry no tenant or repository: the move adds them.
_STAGED = {
    "code_chunks": CHUNK_FIELDS,
    "code_blobs": "blob_sha, language, size, analysis_version, skip_reason, parse_errors, chunk_count, symbol_count,"
    " symbols, facts",
}
_FILES = "tenant_id, snapshot_id, path, blob_sha, language, kind, size, skip_reason"


async def create_staging(conn: Conn) -> None:
    """The transaction's staging tables (dropped at commit)."""
    for table, cols in _STAGED.items():
        await conn.execute(
            f"CREATE TEMP TABLE IF NOT EXISTS stage_{table} ON COMMIT DROP AS"
            f" SELECT {cols} FROM {table} WITH NO DATA"
        )
    # a chunk's lexical vector, or (where only to_tsvector can say) its tokens. Staged vectors stay
    # uncompressed: a large vector rarely compresses, and PostgreSQL would try (with pglz, at the
    # cost of compressing it) here and again when the row moves to code_chunks
    await conn.execute(
        "ALTER TABLE stage_code_chunks ADD COLUMN IF NOT EXISTS tokens text,"
        " ADD COLUMN IF NOT EXISTS vector tsvector, ALTER COLUMN vector SET STORAGE EXTERNAL"
    )
    await conn.execute(
        f"CREATE TEMP TABLE IF NOT EXISTS stage_code_index_files ON COMMIT DROP AS"
        f" SELECT {_FILES} FROM code_index_files WITH NO DATA"
    )


async def _flush(conn: Conn, table: str, tenant_id: UUID, repository_id: UUID) -> None:
    cols = _STAGED[table]
    if table == "code_chunks":
        await conn.execute(
            f"INSERT INTO code_chunks (tenant_id, repository_id, {cols}, lexical)"
            f" SELECT %s, %s, {cols}, coalesce(vector, to_tsvector('simple', tokens))"
            " FROM stage_code_chunks",
            (tenant_id, repository_id),
        )
    else:
        await conn.execute(
            f"INSERT INTO {table} (tenant_id, repository_id, {cols}) SELECT %s, %s, {cols} FROM stage_{table}",
            (tenant_id, repository_id),
        )
    await conn.execute(f"TRUNCATE stage_{table}")


async def write_batch(
    conn: Conn, tenant_id: UUID, repository_id: UUID, blob_rows: bytes, chunks: bytes
) -> None:
    """Write a parsed batch: its blob rows (COPY text) and chunks (binary COPY), through staging."""
    for table, payload in (("code_blobs", blob_rows), ("code_chunks", chunks)):
        if payload:
            await stage(conn, table, payload)
            await _flush(conn, table, tenant_id, repository_id)


# what BatchResult holds per table: blob rows as COPY text, chunks in binary COPY (work.chunk_copy)
_COPY_STAGED = {
    "code_blobs": f"COPY stage_code_blobs ({_STAGED['code_blobs']}) FROM STDIN",
    "code_chunks": f"COPY stage_code_chunks ({CHUNK_COLUMNS}) FROM STDIN (FORMAT binary)",
}


async def stage(conn: Conn, table: str, payload: bytes) -> None:
    """Copy a batch's ``payload`` for ``table`` into its staging table (:func:`create_staging`)."""
    async with conn.cursor() as cur, cur.copy(_COPY_STAGED[table]) as copy:
        await copy.write(payload)


async def write_files(conn: Conn, payload: bytes) -> None:
    """Write file rows (``_FILES`` in COPY text, one line each) through their staging table."""
    async with (
        conn.cursor() as cur,
        cur.copy(f"COPY stage_code_index_files ({_FILES}) FROM STDIN") as copy,
    ):
        await copy.write(payload)
    await conn.execute(f"INSERT INTO code_index_files ({_FILES}) SELECT {_FILES} FROM stage_code_index_files")
    await conn.execute("TRUNCATE stage_code_index_files")


async def copy_files(conn: Conn, snapshot_id: UUID, base_snapshot_id: UUID, changed: list[str]) -> None:
    """Copy the file rows of ``base_snapshot_id`` into ``snapshot_id``, except those at ``changed``."""
    await conn.execute(
        f"INSERT INTO code_index_files ({_FILES}) SELECT tenant_id, %s, path, blob_sha, language, kind, size,"
        " skip_reason FROM code_index_files WHERE snapshot_id = %s AND path NOT IN (SELECT unnest(%s::text[]))",
        (snapshot_id, base_snapshot_id, changed),
    )


async def correct_files(
    conn: Conn,
    snapshot_id: UUID,
    paths: list[str],
    languages: list[str | None],
    sizes: list[int],
    reasons: list[str | None],
) -> None:
    """Set the language, size and skip reason of the snapshot's files at ``paths`` (in order)."""
    await conn.execute(
        "UPDATE code_index_files f SET language = u.language, size = u.size, skip_reason = u.skip_reason"
        " FROM unnest(%s::text[], %s::text[], %s::int[], %s::text[]) AS u(path, language, size, skip_reason)"
        " WHERE f.snapshot_id = %s AND f.path = u.path",
        (paths, languages, sizes, reasons, snapshot_id),
    )


async def merge_lexical_index(conn: Conn) -> None:
    """Merge the GIN pending list a load left (as the owner, through migration 0004's function)."""
    await conn.execute("SELECT palimpsest_merge_lexical_index()")


async def analyze_code_index(conn: Conn) -> None:
    """Refresh the planner's statistics of the index tables after a large load."""
    await conn.execute("SELECT palimpsest_analyze_code_index()")


async def analyze_code_files(conn: Conn) -> None:
    """Refresh the statistics of ``code_index_files`` only (migration 0055)."""
    await conn.execute("SELECT palimpsest_analyze_code_files()")


# --------------------------------------------------------------------------------- a build's end


async def mark_ready(
    conn: Conn,
    snapshot_id: UUID,
    *,
    files: int,
    chunks: int,
    symbols: int,
    bytes: int,
    parsed_blobs: int,
    skipped: dict[str, int],
    duration_s: float,
    analysis_version: int,
) -> None:
    await conn.execute(
        "UPDATE code_index_snapshots SET state = 'ready', reason = NULL, ready_at = now(), files = %s,"
        " chunks = %s, symbols = %s, bytes = %s, parsed_blobs = %s, skipped = %s, duration_s = %s,"
        " analysis_version = %s WHERE snapshot_id = %s",
        (
            files,
            chunks,
            symbols,
            bytes,
            parsed_blobs,
            Jsonb(skipped),
            duration_s,
            analysis_version,
            snapshot_id,
        ),
    )


async def supersede(conn: Conn, repository_id: UUID, snapshot_id: UUID) -> None:
    """The branch's other ready snapshots become superseded (a review base's pinned ones stay)."""
    await conn.execute(
        "UPDATE code_index_snapshots SET state = 'superseded' WHERE repository_id = %s AND state = 'ready'"
        " AND snapshot_id <> %s AND NOT pinned",
        (repository_id, snapshot_id),
    )


async def prune(conn: Conn, repository_id: UUID, *, pinned: bool, keep: int) -> None:
    """Keep the newest ``keep`` kept snapshots of the kind (pinned or the branch's) and the newest
    five failed ones; delete the others."""
    await conn.execute(
        "DELETE FROM code_index_snapshots WHERE repository_id = %s AND state IN ('ready', 'superseded')"
        " AND pinned = %s AND snapshot_id NOT IN (SELECT snapshot_id FROM code_index_snapshots"
        "   WHERE repository_id = %s AND state IN ('ready', 'superseded') AND pinned = %s"
        "   ORDER BY created_at DESC LIMIT %s)",
        (repository_id, pinned, repository_id, pinned, keep),
    )
    await conn.execute(
        "DELETE FROM code_index_snapshots WHERE repository_id = %s AND state = 'failed'"
        " AND snapshot_id NOT IN (SELECT snapshot_id FROM code_index_snapshots WHERE repository_id = %s"
        "   AND state = 'failed' ORDER BY created_at DESC LIMIT 5)",
        (repository_id, repository_id),
    )


async def stamp_index_updated(conn: Conn, repository_id: UUID) -> None:
    """``repositories.index_updated_at``: the chunker's part of the repository row."""
    await conn.execute(
        "UPDATE repositories SET index_updated_at = now() WHERE repository_id = %s", (repository_id,)
    )


async def collect_garbage(conn: Conn, repository_id: UUID) -> int:
    """Delete blobs (and their chunks, symbols, facts) that no remaining snapshot references.

    Under the repository's build lock: a blob's rows are written only by the build that inserts
    the blob (migration 0013 cascades their deletion by trigger, not by foreign key).
    """
    await lock_repository(conn, repository_id)
    cur = await conn.execute(
        "DELETE FROM code_blobs b WHERE b.repository_id = %s AND NOT EXISTS ("
        " SELECT 1 FROM code_index_files f JOIN code_index_snapshots s ON s.snapshot_id = f.snapshot_id"
        " WHERE s.repository_id = %s AND f.blob_sha = b.blob_sha)",
        (repository_id, repository_id),
    )
    return cur.rowcount
