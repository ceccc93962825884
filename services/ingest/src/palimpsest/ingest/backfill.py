"""The maintenance backfill: re-request an index for repositories a missed webhook left behind.

Every ``PALIMPSEST_BACKFILL_INTERVAL_S`` (an hour by default; 0 turns it off) each repository is
looked at once: the interval is cut into ``PALIMPSEST_BACKFILL_SLICES`` ticks and a repository
belongs to the tick its id hashes to, so the work is spread over the hour. A repository is a
candidate when its newest (branch) snapshot is

- ``missing`` — none at all, though registered longer than ``PALIMPSEST_BACKFILL_GRACE_S`` ago;
- ``failed`` for a transient reason (network, timeout, a remote that broke off, a full disk, an
  interrupted build), or ``stuck`` building for longer than the grace period;
- ``behind`` — for local sources, the branch head is not the snapshot's commit. The ingest
  service runs no git (its image has none), so it requests every local repository with a ready
  snapshot (``local``) and the chunker, which resolves the head anyway, skips the build as
  ``up_to_date`` when the head is indexed; ``palimpsest backfill`` resolves the heads itself and
  names only the repositories that are behind.

Index requests carry the reason ``backfill``: never a forced rebuild of an indexed commit. A tick
also drops the embeddings partitions of deleted repositories (migration 0037), and first syncs the
installations of its slice with their providers (:mod:`palimpsest.ingest.sync`: repositories
added while no delivery reached us are registered, removed ones deleted), so each installation is
synced once per interval.

Repositories with index mode ``off``, of a suspended tenant or installation, or of a tenant being
deleted are left alone. At most ``PALIMPSEST_BACKFILL_MAX_PER_TICK`` times the slices index requests go
out per interval. A tick is claimed by inserting its ``maintenance_ticks`` row: with several
ingest replicas, the one whose insert succeeded runs it, the others skip it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import os
import socket
import time
from collections.abc import Awaitable, Callable, Collection
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID

import psycopg

from palimpsest.core import metrics
from palimpsest.core.db import Pool, system_tx, tenant_tx
from palimpsest.core.events import IndexRequested
from palimpsest.core.outbox import emit
from palimpsest.core.outcomes import TRANSIENT_REASONS
from palimpsest.ingest.store import lookups, maintenance, repositories
from palimpsest.ingest.store.maintenance import BackfillRow

log = logging.getLogger(__name__)

# (clone_url, branch) -> the branch head's commit, or None when it cannot be read
HeadResolver = Callable[[str, str], Awaitable[str | None]]
# (slice, slices, tenants) -> sync the installations of that slice with their providers
InstallationSync = Callable[[int, int, Collection[UUID] | None], Awaitable[object]]

JOB = "backfill"


@dataclass(frozen=True, slots=True)
class BackfillPolicy:
    interval_s: float = 3600.0
    slices: int = 12
    max_per_tick: int = 50
    grace_s: float = 900.0
    local_sources: bool = False

    @property
    def slice_s(self) -> float:
        return self.interval_s / self.slices


@dataclass(frozen=True, slots=True)
class Candidate:
    tenant_id: UUID
    repository_id: UUID
    full_name: str
    why: str  # missing | failed | stuck | behind | local
    detail: str | None
    slice: int

    def as_dict(self) -> dict[str, Any]:
        return {k: str(v) if isinstance(v, UUID) else v for k, v in asdict(self).items()}


async def candidates(
    pool: Pool,
    policy: BackfillPolicy,
    *,
    slice_no: int | None,
    limit: int,
    now: datetime | None = None,
    head_of: HeadResolver | None = None,
    tenants: Collection[UUID] | None = None,
) -> list[Candidate]:
    """The repositories to re-index in one slice (None: every slice), at most ``limit``, taken from
    the tenants in turn (one tenant's many candidates cannot starve the others')."""
    now = now or datetime.now(UTC)
    grace = timedelta(seconds=policy.grace_s)
    per_tenant: list[list[Candidate]] = []
    for tenant in await lookups.tenant_list(pool):
        if tenant.suspended_at is not None or tenant.deleting_at is not None:
            continue
        if tenants is not None and tenant.tenant_id not in tenants:
            continue
        try:
            async with tenant_tx(pool, tenant.tenant_id) as conn:
                rows = await maintenance.backfill_rows(conn, slices=policy.slices, slice_no=slice_no)
        except Exception as exc:  # one tenant's failure does not stop the others'
            log.warning("backfill: tenant %s skipped (%s)", tenant.tenant_id, exc.__class__.__name__)
            continue
        mine: list[Candidate] = []
        for row in rows:
            if len(mine) >= limit:
                break
            why = await _why(row, policy, now, grace, head_of)
            if why is not None:
                mine.append(
                    Candidate(tenant.tenant_id, row.repository_id, row.full_name, why[0], why[1], row.slice)
                )
        per_tenant.append(mine)
    found: list[Candidate] = []
    for rank in range(max((len(m) for m in per_tenant), default=0)):
        found.extend(m[rank] for m in per_tenant if rank < len(m))
    return found[:limit]


async def _why(
    row: BackfillRow, policy: BackfillPolicy, now: datetime, grace: timedelta, head_of: HeadResolver | None
) -> tuple[str, str | None] | None:
    state = row.state
    if state is None:
        return ("missing", None) if now - row.created_at > grace else None
    if state == "failed":
        return ("failed", row.reason) if row.reason in TRANSIENT_REASONS else None
    if state == "building":
        return ("stuck", None) if row.snapshot_at is not None and now - row.snapshot_at > grace else None
    if state == "ready" and row.provider == "local" and policy.local_sources:
        if head_of is None:
            return "local", "the chunker compares the branch head with the snapshot"
        head = await head_of(row.clone_url, row.default_branch)
        if head is not None and head != row.commit_sha:
            return "behind", f"{str(row.commit_sha)[:12]} -> {head[:12]}"
    return None


async def request(pool: Pool, found: list[Candidate]) -> int:
    """Emit an index request (reason ``backfill``) for each candidate, in its tenant's transaction."""
    sent = 0
    for cand in found:
        event = IndexRequested(tenant_id=cand.tenant_id, repository_id=cand.repository_id, reason="backfill")
        try:
            async with tenant_tx(pool, cand.tenant_id) as conn:
                await emit(conn, event)
        except Exception as exc:  # the next interval tries again
            log.warning("backfill: no index request for %s (%s)", cand.repository_id, exc.__class__.__name__)
            continue
        sent += 1
        metrics.BACKFILL_REQUESTS.labels(cand.why).inc()
    return sent


async def claim_tick(pool: Pool, tick_at: datetime, *, who: str) -> bool:
    """True when this process inserted the tick's row (and so runs it)."""
    async with system_tx(pool) as conn:
        return await maintenance.claim_tick(conn, JOB, tick_at, who=who)


async def finish_tick(pool: Pool, tick_at: datetime, requested: int) -> None:
    async with system_tx(pool) as conn:
        await maintenance.finish_tick(conn, JOB, tick_at, requested)


async def run_tick(
    pool: Pool,
    policy: BackfillPolicy,
    tick_at: datetime,
    *,
    who: str,
    tenants: Collection[UUID] | None = None,
    sync: InstallationSync | None = None,
) -> int | None:
    """Run the slice of ``tick_at`` if no replica has: how many index requests went out, or None."""
    if not await claim_tick(pool, tick_at, who=who):
        return None
    slice_no = round(tick_at.timestamp() / policy.slice_s) % policy.slices
    if sync is not None:
        try:
            await sync(slice_no, policy.slices, tenants)
        except Exception as exc:  # the repositories' backfill goes on; the next interval syncs again
            log.warning("installation sync of slice %d failed: %s", slice_no, exc.__class__.__name__)
    found = await candidates(pool, policy, slice_no=slice_no, limit=policy.max_per_tick, tenants=tenants)
    sent = await request(pool, found)
    await _drop_partitions(pool)
    await finish_tick(pool, tick_at, sent)
    if sent:
        log.info("backfill tick %s (slice %d): %d index requests", tick_at.isoformat(), slice_no, sent)
    return sent


async def _drop_partitions(pool: Pool) -> None:
    """Drop the embeddings partitions of deleted repositories (those an installation lost); a
    failure is logged and left for the next tick, never the backfill's."""
    try:
        async with system_tx(pool) as conn:
            dropped = await repositories.drop_embedding_partitions(conn)
    except psycopg.Error as exc:
        log.warning("embeddings partitions of deleted repositories not dropped: %s", exc)
        return
    if dropped:
        log.info("dropped %d embeddings partition(s) of deleted repositories", dropped)


def tick_start(now_s: float, slice_s: float) -> datetime:
    return datetime.fromtimestamp(math.floor(now_s / slice_s) * slice_s, UTC)


async def backfill_forever(
    pool: Pool, policy: BackfillPolicy, stop: asyncio.Event, *, sync: InstallationSync | None = None
) -> None:
    """Run each tick once (across replicas), at its start, until ``stop``."""
    if policy.interval_s <= 0:
        return
    who = f"{socket.gethostname()}:{os.getpid()}"[:200]
    while not stop.is_set():
        now = time.time()
        tick = tick_start(now, policy.slice_s)
        try:
            await run_tick(pool, policy, tick, who=who, sync=sync)
        except Exception as exc:  # the next tick tries again; one tenant's failure is logged
            log.warning("backfill tick failed: %s", exc.__class__.__name__)
        wait = tick.timestamp() + policy.slice_s - time.time()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), max(wait, 1.0))
