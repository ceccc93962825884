"""Debounced automatic analyses: one per ready snapshot, at most one per interval per repository.

``snapshot.built`` / ``snapshot.embedded`` do not run an analysis; they mark the repository due
in ``analysis_schedule`` (in the handler's inbox transaction), at
``max(now + debounce, last analysis + interval)``. A burst of pushes therefore produces one
analysis, of the newest snapshot, once the burst settles — and never more often than the interval.

The scheduler (a background task of the analyzer, one per replica) claims due rows across
tenants with ``FOR UPDATE SKIP LOCKED`` and a lease, analyses the repository's newest ready
snapshot in the tenant's transaction, and removes the row in the same transaction as the stored
analysis and its event. A snapshot that already has an analysis (an explicit request got there
first) is not analysed again. A row marked again while its analysis ran (``version`` changed)
stays for the next round; a job that crashed is retried when its lease ends, with a backoff, and
dropped after ``MAX_ATTEMPTS``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass
from uuid import UUID

from palimpsest.analyzer import store
from palimpsest.analyzer.analysis import Analyzer, Job, completed_event
from palimpsest.analyzer.store import Claim, save_analysis, snapshot_analysed
from palimpsest.core.db import Conn, Pool, system_tx, tenant_tx
from palimpsest.core.outbox import emit
from palimpsest.index.snapshots import newest_ready

log = logging.getLogger(__name__)

MAX_ATTEMPTS = 5


@dataclass(frozen=True, slots=True)
class ScheduleConfig:
    debounce_s: float = 30.0
    interval_s: float = 3600.0
    poll_s: float = 5.0
    lease_s: float = 1800.0
    retry_s: float = 30.0


async def mark_due(
    conn: Conn, tenant_id: UUID, repository_id: UUID, snapshot_id: UUID, config: ScheduleConfig
) -> bool:
    """Mark the repository due for an automatic analysis (in the caller's tenant transaction).

    Returns False when there is nothing to do: the repository is gone or the snapshot already has
    an analysis.
    """
    return await store.mark_due(
        conn,
        tenant_id,
        repository_id,
        snapshot_id,
        debounce_s=config.debounce_s,
        interval_s=config.interval_s,
    )


async def claim_due(pool: Pool, config: ScheduleConfig, limit: int = 2) -> list[Claim]:
    async with system_tx(pool) as conn:
        return await store.claim_due(conn, limit=limit, lease_s=config.lease_s)


async def settle(conn: Conn, claim: Claim) -> None:
    """Remove the row if nothing marked it since the claim; otherwise release it for its next turn."""
    if not await store.drop_claimed(conn, claim):
        await store.release(conn, claim)


async def _back_off(pool: Pool, claim: Claim, config: ScheduleConfig) -> None:
    async with system_tx(pool) as conn:
        if claim.attempts >= MAX_ATTEMPTS:
            log.error(
                "automatic analysis of repository %s failed %d times; giving up until its next snapshot",
                claim.repository_id,
                claim.attempts,
            )
            await store.drop_claimed(conn, claim)
            return
        delay = min(config.retry_s * 2.0 ** (claim.attempts - 1), config.lease_s)
        await store.hold_off(conn, claim, delay)


async def process(pool: Pool, analyzer: Analyzer, claim: Claim) -> str:
    """Analyse a claimed repository; returns what happened (analysed, up_to_date, gone)."""
    async with tenant_tx(pool, claim.tenant_id) as conn:
        snapshot = await newest_ready(conn, claim.repository_id)
        if snapshot is None or await snapshot_analysed(conn, claim.repository_id, snapshot.snapshot_id):
            await settle(conn, claim)
            return "up_to_date" if snapshot is not None else "no_snapshot"
    job = Job(claim.tenant_id, claim.repository_id, snapshot.snapshot_id, None, "snapshot")
    record = await analyzer.run(job)
    async with tenant_tx(pool, claim.tenant_id) as conn:
        if record is None:
            await settle(conn, claim)
            return "gone"
        await save_analysis(conn, claim.tenant_id, record)
        await emit(conn, completed_event(claim.tenant_id, record))
        await settle(conn, claim)
    return "analysed"


async def run_scheduler(pool: Pool, analyzer: Analyzer, config: ScheduleConfig, stop: asyncio.Event) -> None:
    """Claim and analyse due repositories until ``stop`` is set."""
    while not stop.is_set():
        try:
            claims = await claim_due(pool, config)
        except Exception:
            log.warning("analysis scheduler: claiming failed", exc_info=True)
            claims = []
        for claim in claims:
            if stop.is_set():
                break
            try:
                outcome = await process(pool, analyzer, claim)
                log.info("automatic analysis of repository %s: %s", claim.repository_id, outcome)
            except asyncio.CancelledError:
                raise
            except Exception:
                log.warning("automatic analysis of repository %s failed", claim.repository_id, exc_info=True)
                with contextlib.suppress(Exception):
                    await _back_off(pool, claim, config)
        if not claims:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), config.poll_s)
