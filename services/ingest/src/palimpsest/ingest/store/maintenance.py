"""The maintenance backfill's statements: its ticks, and the repositories it looks at.

A tick is claimed by inserting its ``maintenance_ticks`` row (the replica whose insert succeeded
runs it) and finished by stamping it; :func:`backfill_rows` reads each repository of the
transaction's tenant with its newest branch snapshot, for :mod:`palimpsest.ingest.backfill` to
decide which to request again. Ticks are infrastructure rows (a system transaction); the
repositories are read in the tenant's transaction.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Final
from uuid import UUID

from palimpsest.core.db import Conn, fetch_all_as, fetch_one_as
from palimpsest.core.stores import Owns, Store

STORE = Store(
    owner="ingest",
    writes=(Owns("maintenance_ticks"),),
    reads=("repositories", "tenants", "installations", "code_index_snapshots"),
)

__all__ = ["BackfillRow", "backfill_rows", "claim_tick", "finish_tick"]


@dataclass(frozen=True, slots=True)
class BackfillRow:
    """A repository the backfill may look at, with its newest branch snapshot (the snapshot's
    columns None when it has none) and the slice its id hashes to."""

    repository_id: UUID
    full_name: str
    provider: str
    clone_url: str
    default_branch: str
    slice: int
    state: str | None
    reason: str | None
    commit_sha: str | None
    snapshot_at: datetime | None
    created_at: datetime


_BACKFILL_ROWS: Final = """
SELECT r.repository_id, r.full_name, r.provider, r.clone_url, r.default_branch,
       mod(abs(hashtext(r.repository_id::text)), %(slices)s) AS slice,
       s.state, s.reason, s.commit_sha, s.created_at AS snapshot_at, r.created_at
FROM repositories r
JOIN tenants t ON t.tenant_id = r.tenant_id
LEFT JOIN installations i ON i.tenant_id = r.tenant_id AND i.installation_id = r.installation_id
LEFT JOIN LATERAL (
    SELECT state, reason, commit_sha, created_at FROM code_index_snapshots x
    WHERE x.repository_id = r.repository_id AND NOT x.pinned
    ORDER BY x.created_at DESC LIMIT 1
) s ON true
WHERE r.index_mode <> 'off' AND t.suspended_at IS NULL AND t.deleting_at IS NULL
  AND i.suspended_at IS NULL
  AND (%(slice)s::int IS NULL OR mod(abs(hashtext(r.repository_id::text)), %(slices)s) = %(slice)s::int)
ORDER BY r.repository_id
"""


async def backfill_rows(conn: Conn, *, slices: int, slice_no: int | None) -> list[BackfillRow]:
    """The tenant's indexed repositories (index mode not ``off``, neither the tenant nor the
    installation suspended, the tenant not being deleted) of slice ``slice_no`` (None: every
    slice), by id."""
    return await fetch_all_as(conn, BackfillRow, _BACKFILL_ROWS, {"slices": slices, "slice": slice_no})


@dataclass(frozen=True, slots=True)
class _Claimed:
    claimed: int


async def claim_tick(conn: Conn, job: str, tick_at: datetime, *, who: str) -> bool:
    """Insert the tick's row: True when this insert made it (so the caller runs the tick). Ticks
    older than a week are deleted."""
    row = await fetch_one_as(
        conn,
        _Claimed,
        "INSERT INTO maintenance_ticks (job, tick_at, claimed_by) VALUES (%s, %s, %s)"
        " ON CONFLICT DO NOTHING RETURNING 1 AS claimed",
        (job, tick_at, who),
    )
    await conn.execute(
        "DELETE FROM maintenance_ticks WHERE job = %s AND tick_at < now() - interval '7 days'",
        (job,),
    )
    return row is not None


async def finish_tick(conn: Conn, job: str, tick_at: datetime, requested: int) -> None:
    """Stamp the tick finished, with how many index requests it sent."""
    await conn.execute(
        "UPDATE maintenance_ticks SET finished_at = clock_timestamp(), requested = %s WHERE job = %s AND tick_at = %s",
        (requested, job, tick_at),
    )
