"""Writing what a scan learned: COPY into a temporary table, then one merge per table.

A full scan is authoritative for its repository: rows it did not produce are deleted, changed
rows are updated, unchanged rows are left alone (no dead tuples for files that did not move).
An incremental push only touches its paths. Writers of one repository are serialised by a
transaction-level advisory lock, and the repository row is share-locked so a concurrent delete
cannot interleave; every function runs inside the caller's tenant transaction, which also
writes the ``recency.scanned`` event.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from uuid import UUID

from psycopg.types.json import Jsonb

from palimpsest.core.db import Conn
from palimpsest.core.stores import Owns, Store
from palimpsest.recency_scanner.logparse import CommitCount, RecencyResult

STORE = Store(
    owner="recency-scanner",
    writes=(Owns("file_recency"), Owns("cochange"), Owns("recency_scans")),
    reads=("repositories",),
)


__all__ = [
    "MAX_PATH_CHARS",
    "ScanRecord",
    "WriteStats",
    "apply_incremental",
    "clear_repository",
    "lock_repository",
    "record_scan",
    "replace_full",
    "storable_path",
    "valid_sha",
]

MAX_PATH_CHARS = 4096
_SHA = re.compile(r"[0-9a-f]{40}(?:[0-9a-f]{24})?")


def storable_path(path: str) -> bool:
    """Whether PostgreSQL can hold ``path`` as text (valid UTF-8, no NUL, bounded)."""
    if not path or len(path) > MAX_PATH_CHARS or "\0" in path:
        return False
    if path.isascii():
        return True
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:  # a non-UTF-8 name decoded with surrogateescape
        return False
    return True


def valid_sha(value: str | None) -> str | None:
    return value if value is not None and _SHA.fullmatch(value) else None


@dataclass(slots=True)
class WriteStats:
    files: int = 0
    pairs: int = 0
    skipped_paths: int = 0  # names PostgreSQL cannot store (non-UTF-8, over-long)


@dataclass(slots=True)
class ScanRecord:
    """One ``recency_scans`` row: the outcome of the repository's latest scan."""

    status: str
    mode: str
    request_id: UUID
    reason: str | None = None
    detail: str | None = None
    commit_sha: str | None = None
    files: int = 0
    pairs: int = 0
    commits: int = 0
    duration_s: float = 0.0
    stats: dict[str, Any] = field(default_factory=dict)
    counted_commits: int | None = None  # a full scan's counted commits; None keeps the last full scan's


async def lock_repository(conn: Conn, repository_id: UUID) -> bool:
    """Serialise recency writers of one repository; False when the repository is gone."""
    cur = await conn.execute(
        "SELECT 1 FROM repositories WHERE repository_id = %s FOR KEY SHARE", (repository_id,)
    )
    if await cur.fetchone() is None:
        return False
    await conn.execute(
        "SELECT pg_advisory_xact_lock(hashtextextended('palimpsest.recency:' || %s::text, 0))",
        (repository_id,),
    )
    return True


async def replace_full(conn: Conn, tenant_id: UUID, repository_id: UUID, result: RecencyResult) -> WriteStats:
    """Make the repository's recency and co-change rows exactly ``result``'s."""
    stats = WriteStats()
    counts = result.commit_counts
    files = sorted(
        (path, change.commit, change.when, *_counted(counts.get(path)))
        for path, change in result.files.items()
        if storable_path(path)
    )
    stats.skipped_paths = len(result.files) - len(files)
    pairs = sorted(
        (a, b, pair.commits, pair.last, pair.evidence)
        for (a, b), pair in result.cochange.items()
        if storable_path(a) and storable_path(b)
    )
    stats.files = len(files)
    stats.pairs = len(pairs)
    await _merge_files(conn, tenant_id, repository_id, files)
    await _merge_pairs(conn, tenant_id, repository_id, pairs)
    return stats


def _counted(count: CommitCount | None) -> tuple[int, datetime | None]:
    return (count.commits, count.since) if count is not None else (0, None)


async def _copy(
    conn: Conn, table: str, columns: tuple[str, ...], types: tuple[str, ...], rows: Iterable[tuple[Any, ...]]
) -> None:
    statement = f"COPY {table} ({', '.join(columns)}) FROM STDIN (FORMAT BINARY)"
    async with conn.cursor() as cur, cur.copy(statement) as copy:
        copy.set_types(list(types))
        for row in rows:
            await copy.write_row(row)


async def _merge_files(
    conn: Conn,
    tenant_id: UUID,
    repository_id: UUID,
    files: list[tuple[str, str, datetime, int, datetime | None]],
) -> None:
    await conn.execute(
        'CREATE TEMP TABLE recency_in (path text COLLATE "C" PRIMARY KEY,'
        " last_commit text NOT NULL, last_modified_at timestamptz NOT NULL,"
        " commits integer NOT NULL, counted_since timestamptz) ON COMMIT DROP"
    )
    await _copy(
        conn,
        "recency_in",
        ("path", "last_commit", "last_modified_at", "commits", "counted_since"),
        ("text", "text", "timestamptz", "int4", "timestamptz"),
        files,
    )
    await conn.execute("ANALYZE recency_in")
    await conn.execute(
        "DELETE FROM file_recency f WHERE f.repository_id = %s"
        " AND NOT EXISTS (SELECT 1 FROM recency_in i WHERE i.path = f.path)",
        (repository_id,),
    )
    await conn.execute(
        "INSERT INTO file_recency AS f"
        " (tenant_id, repository_id, path, last_commit, last_modified_at, commits, counted_since)"
        " SELECT %s, %s, i.path, i.last_commit, i.last_modified_at, i.commits, i.counted_since"
        " FROM recency_in i"
        " LEFT JOIN file_recency o ON o.repository_id = %s AND o.path = i.path"
        " WHERE o.path IS NULL"
        " OR (o.last_commit, o.last_modified_at, o.commits, o.counted_since)"
        " IS DISTINCT FROM (i.last_commit, i.last_modified_at, i.commits, i.counted_since)"
        " ORDER BY i.path"
        " ON CONFLICT (tenant_id, repository_id, path) DO UPDATE"
        " SET last_commit = EXCLUDED.last_commit, last_modified_at = EXCLUDED.last_modified_at,"
        " commits = EXCLUDED.commits, counted_since = EXCLUDED.counted_since, updated_at = now()"
        " WHERE (f.last_commit, f.last_modified_at, f.commits, f.counted_since)"
        " IS DISTINCT FROM (EXCLUDED.last_commit, EXCLUDED.last_modified_at, EXCLUDED.commits,"
        " EXCLUDED.counted_since)",
        (tenant_id, repository_id, repository_id),
    )


async def _merge_pairs(
    conn: Conn, tenant_id: UUID, repository_id: UUID, pairs: list[tuple[str, str, int, datetime, float]]
) -> None:
    await conn.execute(
        'CREATE TEMP TABLE cochange_in (path_a text COLLATE "C", path_b text COLLATE "C",'
        " count integer NOT NULL, last_at timestamptz NOT NULL, evidence real NOT NULL,"
        " PRIMARY KEY (path_a, path_b)) ON COMMIT DROP"
    )
    await _copy(
        conn,
        "cochange_in",
        ("path_a", "path_b", "count", "last_at", "evidence"),
        ("text", "text", "int4", "timestamptz", "float4"),
        pairs,
    )
    await conn.execute("ANALYZE cochange_in")
    await conn.execute(
        "DELETE FROM cochange c WHERE c.repository_id = %s AND NOT EXISTS"
        " (SELECT 1 FROM cochange_in i WHERE i.path_a = c.path_a AND i.path_b = c.path_b)",
        (repository_id,),
    )
    await conn.execute(
        "INSERT INTO cochange AS c (tenant_id, repository_id, path_a, path_b, count, last_at, evidence)"
        " SELECT %s, %s, i.path_a, i.path_b, i.count, i.last_at, i.evidence FROM cochange_in i"
        " LEFT JOIN cochange o ON o.repository_id = %s AND o.path_a = i.path_a AND o.path_b = i.path_b"
        " WHERE o.path_a IS NULL OR (o.count, o.last_at, o.evidence) IS DISTINCT FROM (i.count, i.last_at, i.evidence)"
        " ORDER BY i.path_a, i.path_b"
        " ON CONFLICT (tenant_id, repository_id, path_a, path_b) DO UPDATE"
        " SET count = EXCLUDED.count, last_at = EXCLUDED.last_at, evidence = EXCLUDED.evidence"
        " WHERE (c.count, c.last_at, c.evidence) IS DISTINCT FROM"
        " (EXCLUDED.count, EXCLUDED.last_at, EXCLUDED.evidence)",
        (tenant_id, repository_id, repository_id),
    )


async def apply_incremental(
    conn: Conn,
    tenant_id: UUID,
    repository_id: UUID,
    paths: Iterable[str],
    commit: str | None,
    when: datetime | None,
) -> WriteStats:
    """Date a push's changed paths: the head commit's date, or unknown (NULL) — never now().

    A known date never moves a path's date backwards (an older push processed late); an
    unknown one makes it unknown, because the file did change after whatever was recorded.
    """
    stats = WriteStats()
    rows = sorted({p for p in paths if storable_path(p)})
    stats.files = len(rows)
    if not rows:
        return stats
    await conn.execute(
        "INSERT INTO file_recency AS f (tenant_id, repository_id, path, last_commit, last_modified_at)"
        " SELECT %(tenant)s::uuid, %(repo)s::uuid, p, %(commit)s::text, %(when)s::timestamptz"
        " FROM unnest(%(paths)s::text[]) AS p"
        " ON CONFLICT (tenant_id, repository_id, path) DO UPDATE"
        " SET last_commit = CASE WHEN EXCLUDED.last_modified_at < f.last_modified_at"
        "                        THEN f.last_commit ELSE EXCLUDED.last_commit END,"
        "     last_modified_at = CASE WHEN EXCLUDED.last_modified_at IS NULL THEN NULL"
        "                        ELSE greatest(f.last_modified_at, EXCLUDED.last_modified_at) END,"
        "     updated_at = now()",
        {"tenant": tenant_id, "repo": repository_id, "commit": commit, "when": when, "paths": rows},
    )
    return stats


async def clear_repository(conn: Conn, repository_id: UUID) -> None:
    """Forget a repository's recency (scanning disabled: every age reads as unknown)."""
    await conn.execute("DELETE FROM cochange WHERE repository_id = %s", (repository_id,))
    await conn.execute("DELETE FROM file_recency WHERE repository_id = %s", (repository_id,))


async def record_scan(conn: Conn, tenant_id: UUID, repository_id: UUID, record: ScanRecord) -> None:
    await conn.execute(
        "INSERT INTO recency_scans (tenant_id, repository_id, status, mode, reason, detail, commit_sha,"
        " request_id, files, pairs, commits, stats, duration_s, counted_commits, scanned_at)"
        " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, now())"
        " ON CONFLICT (tenant_id, repository_id) DO UPDATE SET status = EXCLUDED.status,"
        " mode = EXCLUDED.mode, reason = EXCLUDED.reason, detail = EXCLUDED.detail,"
        " commit_sha = EXCLUDED.commit_sha, request_id = EXCLUDED.request_id, files = EXCLUDED.files,"
        " pairs = EXCLUDED.pairs, commits = EXCLUDED.commits, stats = EXCLUDED.stats,"
        " duration_s = EXCLUDED.duration_s, scanned_at = EXCLUDED.scanned_at,"
        " counted_commits = coalesce(EXCLUDED.counted_commits, recency_scans.counted_commits)",
        (
            tenant_id,
            repository_id,
            record.status,
            record.mode,
            _bounded(record.reason, 100),
            _bounded(record.detail, 1000),
            valid_sha(record.commit_sha),
            record.request_id,
            record.files,
            record.pairs,
            record.commits,
            Jsonb(record.stats),
            max(record.duration_s, 0.0),
            record.counted_commits,
        ),
    )


def _bounded(text: str | None, limit: int) -> str | None:
    if text is None:
        return None
    return text if len(text) <= limit else text[: limit - 3] + "..."
