"""The recency tables as their readers see them: frozen rows and the only queries that read them.

The recency-scanner writes ``file_recency``, ``cochange`` and ``recency_scans`` (migration 0003;
its store is ``palimpsest.recency_scanner.store``); the analyzer, the reviewer, the graph, the
ingest service's views and ``palimpsest recency`` read them through :mod:`palimpsest.index.recency`,
which decides what the rows mean and calls the functions here. A path without a row, or with a
NULL date, has an unknown age (``None``). Every function runs in the caller's tenant transaction
(row-level security scopes it).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final
from uuid import UUID

from psycopg.rows import tuple_row

from palimpsest.core.db import Conn, JsonRow, columns, fetch_all_as, fetch_one_as
from palimpsest.core.stores import Store
from palimpsest.index.snapshots import newest_ready

# Written by the recency-scanner's store; the code index's files and snapshots are the chunker's.
STORE = Store(
    owner="recency-scanner",
    reads=("file_recency", "cochange", "recency_scans", "code_index_files", "code_index_snapshots"),
)

__all__ = [
    "CoChangePair",
    "CoChangeRow",
    "DatedPath",
    "FileDate",
    "RecencyScan",
    "ScanStamp",
    "cochange_pairs",
    "cochange_rows",
    "counted_commits",
    "counted_paths",
    "dated_paths",
    "file_dates",
    "indexed_dated_paths",
    "known_dates",
    "last_scan",
    "newest_ready_snapshot_id",
    "scan_stamp",
]


@dataclass(frozen=True, slots=True)
class RecencyScan(JsonRow):
    """The outcome of a repository's last recency scan (one ``recency_scans`` row)."""

    status: str  # ok | failed | disabled
    mode: str
    reason: str | None
    detail: str | None
    commit_sha: str | None
    request_id: UUID | None
    files: int
    pairs: int
    commits: int
    stats: dict[str, Any]  # jsonb: the scan's counters
    duration_s: float
    scanned_at: datetime

    def to_json(self) -> dict[str, Any]:
        """Every column, the request id and the time as strings."""
        return {
            **JsonRow.to_json(self),
            "request_id": str(self.request_id) if self.request_id else None,
            "scanned_at": self.scanned_at.isoformat(),
        }


@dataclass(frozen=True, slots=True)
class DatedPath:
    """A path with its last commit and date (both None where the scan recorded none)."""

    path: str
    last_commit: str | None
    last_modified_at: datetime | None


@dataclass(frozen=True, slots=True)
class CoChangeRow:
    """A path that changed with the one asked about: in ``commits`` commits, the last at
    ``last_at``, with the scan's ``evidence`` as of ``last_at`` (None before migration 0016)."""

    path: str
    commits: int
    last_at: datetime
    evidence: float | None


@dataclass(frozen=True, slots=True)
class CoChangePair:
    """A (source, partner) pair with the counts that score it: the pair's, both files' counted
    commits (``partner_commits`` None where the scan counted none) and the source's oldest."""

    source: str
    partner: str
    count: int
    last_at: datetime | None
    source_commits: int
    counted_since: datetime | None
    partner_commits: int | None


@dataclass(frozen=True, slots=True)
class _Path:
    path: str


@dataclass(frozen=True, slots=True)
class _Counted:
    counted_commits: int | None


@dataclass(frozen=True, slots=True)
class _Present:
    present: bool | None


async def dated_paths(conn: Conn, repository_id: UUID) -> list[DatedPath]:
    """Every recorded path of the repository with its last commit and date."""
    return await fetch_all_as(
        conn,
        DatedPath,
        "SELECT path, last_commit, last_modified_at FROM file_recency WHERE repository_id = %s",
        (repository_id,),
    )


@dataclass(frozen=True, slots=True)
class FileDate:
    """A recorded path and its date (None: unknown)."""

    path: str
    last_modified_at: datetime | None


async def file_dates(conn: Conn, repository_id: UUID, paths: list[str] | None = None) -> list[FileDate]:
    """The recorded paths of the repository (only ``paths`` of them, when given) with their dates."""
    if paths is None:
        return await fetch_all_as(
            conn,
            FileDate,
            "SELECT path, last_modified_at FROM file_recency WHERE repository_id = %s",
            (repository_id,),
        )
    return await fetch_all_as(
        conn,
        FileDate,
        "SELECT path, last_modified_at FROM file_recency WHERE repository_id = %s AND path = ANY(%s::text[])",
        (repository_id, paths),
    )


async def indexed_dated_paths(conn: Conn, repository_id: UUID, snapshot_id: UUID) -> list[DatedPath]:
    """Every file of the snapshot with its recorded date (None where the scan has no row)."""
    return await fetch_all_as(
        conn,
        DatedPath,
        "SELECT f.path, r.last_commit, r.last_modified_at FROM code_index_files f"
        ' LEFT JOIN file_recency r ON r.repository_id = %s AND r.path = f.path COLLATE "C"'
        " WHERE f.snapshot_id = %s",
        (repository_id, snapshot_id),
    )


_NEIGHBOURS: Final = (
    "SELECT path, count AS commits, last_at, evidence FROM ("
    "  SELECT path_b AS path, count, last_at, evidence FROM cochange"
    "  WHERE repository_id = %(r)s AND path_a = %(p)s"
    "  UNION ALL"
    "  SELECT path_a AS path, count, last_at, evidence FROM cochange"
    "  WHERE repository_id = %(r)s AND path_b = %(p)s"
    ") AS n ORDER BY coalesce(evidence * power(0.5, greatest(extract(epoch FROM now() - last_at), 0)"
    " / 86400.0 / %(half)s), count) DESC, last_at DESC, path LIMIT %(n)s"
)


async def cochange_rows(
    conn: Conn, repository_id: UUID, path: str, *, limit: int, half_life_days: float
) -> list[CoChangeRow]:
    """The paths that changed together with ``path``, strongest first: by evidence decayed to
    now (``half_life_days``) where the scan stored it, by count where it did not, then latest."""
    return await fetch_all_as(
        conn,
        CoChangeRow,
        _NEIGHBOURS,
        {"r": repository_id, "p": path, "n": limit, "half": half_life_days},
    )


async def counted_commits(conn: Conn, repository_id: UUID) -> int | None:
    """The counted commits of the repository's last full scan (None: no scan, or one before
    migration 0043)."""
    row = await fetch_one_as(
        conn, _Counted, "SELECT counted_commits FROM recency_scans WHERE repository_id = %s", (repository_id,)
    )
    return row.counted_commits if row is not None else None


_PAIRS: Final = (
    "SELECT s.path AS source, n.partner, n.count, n.last_at, s.commits AS source_commits,"
    " s.counted_since, p.commits AS partner_commits"
    " FROM file_recency s"
    " CROSS JOIN LATERAL ("
    "   SELECT path_b AS partner, count, last_at FROM cochange"
    "   WHERE repository_id = %(r)s AND path_a = s.path AND count >= %(min)s"
    "   UNION ALL"
    "   SELECT path_a AS partner, count, last_at FROM cochange"
    "   WHERE repository_id = %(r)s AND path_b = s.path AND count >= %(min)s"
    " ) AS n"
    " JOIN file_recency p ON p.repository_id = %(r)s AND p.path = n.partner"
    " WHERE s.repository_id = %(r)s AND s.path = ANY(%(paths)s::text[]) AND s.commits > 0"
)


async def cochange_pairs(
    conn: Conn, repository_id: UUID, sources: list[str], *, min_together: int
) -> list[CoChangePair]:
    """Every pair of each of ``sources`` (with counted commits) that changed together at least
    ``min_together`` times, with both files' counts."""
    return await fetch_all_as(
        conn, CoChangePair, _PAIRS, {"r": repository_id, "paths": sources, "min": min_together}
    )


async def counted_paths(conn: Conn, repository_id: UUID, paths: list[str]) -> set[str]:
    """Of ``paths``, those the last scan counted commits for."""
    rows = await fetch_all_as(
        conn,
        _Path,
        "SELECT path FROM file_recency WHERE repository_id = %s AND path = ANY(%s::text[]) AND commits > 0",
        (repository_id, paths),
    )
    return {row.path for row in rows}


async def last_scan(conn: Conn, repository_id: UUID) -> RecencyScan | None:
    """The outcome of the repository's last recency scan (status, reason, counts, when)."""
    return await fetch_one_as(
        conn,
        RecencyScan,
        f"SELECT {columns(RecencyScan)} FROM recency_scans WHERE repository_id = %s",
        (repository_id,),
    )


async def newest_ready_snapshot_id(conn: Conn, repository_id: UUID) -> UUID | None:
    """The newest ready snapshot's id, or None (no code index tables yet, or nothing ready)."""
    present = await fetch_one_as(
        conn,
        _Present,
        "SELECT to_regclass('code_index_snapshots') IS NOT NULL"
        " AND to_regclass('code_index_files') IS NOT NULL AS present",
    )
    if present is None or not present.present:
        return None
    found = await newest_ready(conn, repository_id)  # the snapshots store's one answer
    return found.snapshot_id if found is not None else None


@dataclass(frozen=True, slots=True)
class ScanStamp:
    """Which scan the transaction sees: the dates change only when a scan runs."""

    scanned_at: datetime
    request_id: UUID | None


async def scan_stamp(conn: Conn, repository_id: UUID) -> ScanStamp | None:
    """The last scan's time and request, or None (never scanned)."""
    return await fetch_one_as(
        conn,
        ScanStamp,
        "SELECT scanned_at, request_id FROM recency_scans WHERE repository_id = %s",
        (repository_id,),
    )


async def known_dates(conn: Conn, repository_id: UUID) -> dict[str, datetime]:
    """Every path of the repository whose date is known, with that date (read as tuples straight
    into the map: a 50 000-file repository's take ~0.5 s to read and decode)."""
    async with conn.cursor(row_factory=tuple_row) as cur:
        await cur.execute(
            "SELECT path, last_modified_at FROM file_recency"
            " WHERE repository_id = %s AND last_modified_at IS NOT NULL",
            (repository_id,),
        )
        return dict(await cur.fetchall())
