"""Reading recency: when files last changed, what changes with them, and the per-repo listing.

The recency-scanner writes ``file_recency``, ``cochange`` and ``recency_scans`` (migration
0003); the analyzer, the reviewer, the graph and ``palimpsest recency`` read them through this
module. Recency is joined to the code index by path at read time — the two are built in
parallel — and a path without a row, or with a NULL date, has an unknown age: it is reported
as ``None``, never guessed. Every function runs in the caller's tenant transaction (RLS); the
statements are :mod:`palimpsest.index.recency_store`'s.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal, NamedTuple
from uuid import UUID

from palimpsest.core.db import Conn
from palimpsest.index import recency_store as store
from palimpsest.index.cochange import MIN_TOGETHER, PairEvidence
from palimpsest.index.evidence import HALF_LIFE_DAYS
from palimpsest.index.recency_store import DatedPath, RecencyScan
from palimpsest.index.staleness import FileKind, file_kind, is_stale, median_code_date, stale_annotation

__all__ = [
    "CoChangeNeighbour",
    "RecencyEntry",
    "RecencyListing",
    "RecencyScan",
    "cochange_evidence",
    "cochange_neighbours",
    "counted_paths",
    "last_modified_at",
    "last_scan",
    "list_recency",
]


class CoChangeNeighbour(NamedTuple):
    """A path that changed together with the one asked about: in ``commits`` commits (the
    ``count`` column), the last of them at ``last_at``, with ``evidence`` as of ``last_at``
    (:mod:`palimpsest.index.evidence`; None for pairs scanned before migration 0016)."""

    path: str
    commits: int
    last_at: datetime
    evidence: float | None = None


@dataclass(frozen=True, slots=True)
class RecencyEntry:
    path: str
    kind: FileKind
    last_commit: str | None
    last_modified_at: datetime | None  # None: age unknown
    stale: bool
    age: str | None = None  # "14 months older than typical code in this repo", stale docs only

    def as_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "kind": self.kind,
            "last_commit": self.last_commit,
            "last_modified_at": self.last_modified_at.isoformat() if self.last_modified_at else None,
            "stale": self.stale,
            "age": self.age,
        }


@dataclass(slots=True)
class RecencyListing:
    """Every indexed path of a repository, oldest first, with the shared staleness verdict."""

    repository_id: UUID
    source: Literal["snapshot", "recency"]  # where the path list came from
    snapshot_id: UUID | None
    median_code_date: datetime | None
    entries: list[RecencyEntry] = field(default_factory=list)
    scan: RecencyScan | None = None  # the repository's last recency scan, if any

    def as_dict(self) -> dict[str, Any]:
        return {
            "repository_id": str(self.repository_id),
            "source": self.source,
            "snapshot_id": str(self.snapshot_id) if self.snapshot_id else None,
            "median_code_date": self.median_code_date.isoformat() if self.median_code_date else None,
            "scan": self.scan.to_json() if self.scan is not None else None,
            "files": [e.as_dict() for e in self.entries],
        }


async def last_modified_at(
    conn: Conn, repository_id: UUID, paths: Iterable[str]
) -> dict[str, datetime | None]:
    """The last-modified date of each of ``paths``; ``None`` where the age is unknown."""
    wanted = list(dict.fromkeys(paths))
    if not wanted:
        return {}
    known = {row.path: row.last_modified_at for row in await store.file_dates(conn, repository_id, wanted)}
    return {path: known.get(path) for path in wanted}


async def cochange_neighbours(
    conn: Conn, repository_id: UUID, path: str, limit: int = 10
) -> list[CoChangeNeighbour]:
    """The paths that changed together with ``path``, strongest first: by evidence decayed to
    now where the scan stored it (by count where it did not), then latest."""
    if limit <= 0:
        return []
    rows = await store.cochange_rows(conn, repository_id, path, limit=limit, half_life_days=HALF_LIFE_DAYS)
    return [CoChangeNeighbour(row.path, row.commits, row.last_at, row.evidence) for row in rows]


async def cochange_evidence(conn: Conn, repository_id: UUID, sources: Iterable[str]) -> list[PairEvidence]:
    """Every pair of each of ``sources`` with at least ``MIN_TOGETHER`` shared commits, with the
    counts that score it (:func:`palimpsest.index.cochange.missing_partners`): the pair's, both
    files' counted commits, the repository's (the last full scan's) and the source's oldest.
    Empty when the scan predates those counts (migration 0043) — no evidence, no warning."""
    wanted = list(dict.fromkeys(sources))
    if not wanted:
        return []
    total = await store.counted_commits(conn, repository_id)
    if not total:
        return []
    return [
        PairEvidence(
            source=row.source,
            partner=row.partner,
            together=row.count,
            source_commits=row.source_commits,
            partner_commits=row.partner_commits or row.count,
            total_commits=total,
            since=row.counted_since,
            last_at=row.last_at,
        )
        for row in await store.cochange_pairs(conn, repository_id, wanted, min_together=MIN_TOGETHER)
    ]


async def counted_paths(conn: Conn, repository_id: UUID, paths: Iterable[str]) -> set[str]:
    """Of ``paths``, those the last scan counted commits for: the pull request's files whose
    history can speak (the co-change warning's denominator, :func:`palimpsest.index.cochange.missing_partners`)."""
    wanted = list(dict.fromkeys(paths))
    if not wanted:
        return set()
    return await store.counted_paths(conn, repository_id, wanted)


async def last_scan(conn: Conn, repository_id: UUID) -> RecencyScan | None:
    """The outcome of the repository's last recency scan (status, reason, counts, when)."""
    return await store.last_scan(conn, repository_id)


async def list_recency(conn: Conn, repository_id: UUID) -> RecencyListing:
    """Every indexed path with its kind, last commit, date and staleness, oldest first.

    "Indexed" means the files of the newest ready snapshot when the code index exists and has
    one; otherwise every path the recency scan recorded. Undated paths come last.

    A snapshot's files never change and the dates change only when a scan runs, so the verdicts
    are computed once per (snapshot, scan) the tenant's transaction can see and kept for a few
    repositories (a 50 000-file listing takes about a second to read and judge); without a scan
    row nothing is kept.
    """
    snapshot_id = await store.newest_ready_snapshot_id(conn, repository_id)
    scan = await last_scan(conn, repository_id)
    key: _ListingKey | None = (
        (repository_id, snapshot_id, scan.scanned_at, scan.request_id) if scan is not None else None
    )
    found = _LISTINGS.get(key) if key is not None else None
    if key is not None and found is not None:
        _LISTINGS.move_to_end(key)
        median, entries = found
    else:
        median, entries = await _judge(conn, repository_id, snapshot_id)
        if key is not None:
            _LISTINGS[key] = (median, entries)
            while len(_LISTINGS) > _LISTINGS_KEPT:
                _LISTINGS.popitem(last=False)
    return RecencyListing(
        repository_id=repository_id,
        source="snapshot" if snapshot_id is not None else "recency",
        snapshot_id=snapshot_id,
        median_code_date=median,
        entries=list(entries),  # the caller's own list: the kept one is never handed out
        scan=scan,
    )


_ListingKey = tuple[UUID, UUID | None, datetime, UUID | None]
_LISTINGS: OrderedDict[_ListingKey, tuple[datetime | None, list[RecencyEntry]]] = OrderedDict()
_LISTINGS_KEPT = 4  # repositories whose judged listing this process keeps


async def _judge(
    conn: Conn, repository_id: UUID, snapshot_id: UUID | None
) -> tuple[datetime | None, list[RecencyEntry]]:
    """The median code date and every path's entry, oldest first."""
    if snapshot_id is not None:
        rows = await store.indexed_dated_paths(conn, repository_id, snapshot_id)
    else:
        rows = await store.dated_paths(conn, repository_id)
    median = median_code_date((row.path, row.last_modified_at) for row in rows)
    entries = [_entry(row, median) for row in rows]
    entries.sort(key=_oldest_first)
    return median, entries


def _entry(row: DatedPath, median: datetime | None) -> RecencyEntry:
    path, when = row.path, row.last_modified_at
    return RecencyEntry(
        path=path,
        kind=file_kind(path),
        last_commit=row.last_commit,
        last_modified_at=when,
        stale=is_stale(path, when, median),
        age=stale_annotation(path, when, median),
    )


_UNDATED = datetime.min.replace(tzinfo=UTC)


def _oldest_first(entry: RecencyEntry) -> tuple[bool, datetime, str]:
    when = entry.last_modified_at
    return (when is None, when or _UNDATED, entry.path)
