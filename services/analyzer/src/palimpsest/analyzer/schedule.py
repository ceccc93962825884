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

from palimpsest.analyzer.analysis import Analyzer, Job, completed_event
from palimpsest.analyzer.store import save_analysis, snapshot_analysed
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


@dataclass(frozen=True, slots=True)
class Claim:
    tenant_id: UUID
    repository_id: UUID
    snapshot_id: UUID
    version: int
    attempts: int


async def mark_due(
    conn: Conn, tenant_id: UUID, repository_id: UUID, snapshot_id: UUID, config: ScheduleConfig
) -> bool:
    """Mark the repository due for an automatic analysis (in the caller's tenant transaction).

    Returns False when there is nothing to do: the repository is gone or the snapshot already has
    an analysis.
    """
    cur = await conn.execute(
        "INSERT INTO analysis_schedule (tenant_id, repository_id, snapshot_id, due_at)"
        " SELECT %(t)s, r.repository_id, %(s)s, greatest("
        "   now() + make_interval(secs => %(debounce)s),"
        "   coalesce((SELECT max(a.created_at) FROM analyses a WHERE a.repository_id = r.repository_id),"
        "            '-infinity'::timestamptz) + make_interval(secs => %(interval)s))"
        " FROM repositories r WHERE r.repository_id = %(r)s"
        "   AND NOT EXISTS (SELECT 1 FROM analyses a WHERE a.repository_id = %(r)s AND a.snapshot_id = %(s)s)"
        " ON CONFLICT (tenant_id, repository_id) DO UPDATE SET snapshot_id = EXCLUDED.snapshot_id,"
        "   due_at = EXCLUDED.due_at, version = analysis_schedule.version + 1, attempts = 0, updated_at = now()",
        {
            "t": tenant_id,
            "r": repository_id,
            "s": snapshot_id,
            "debounce": config.debounce_s,
            "interval": config.interval_s,
        },
    )
    return cur.rowcount > 0


async def claim_due(pool: Pool, config: ScheduleConfig, limit: int = 2) -> list[Claim]:
    async with system_tx(pool) as conn:
        cur = await conn.execute(
            "WITH due AS ("
            "  SELECT tenant_id, repository_id FROM analysis_schedule"
            "  WHERE due_at <= now() AND (claimed_until IS NULL OR claimed_until < now())"
            "  ORDER BY due_at LIMIT %(n)s FOR UPDATE SKIP LOCKED)"
            " UPDATE analysis_schedule s SET claimed_until = now() + make_interval(secs => %(lease)s),"
            "   attempts = s.attempts + 1"
            " FROM due WHERE s.tenant_id = due.tenant_id AND s.repository_id = due.repository_id"
            " RETURNING s.tenant_id, s.repository_id, s.snapshot_id, s.version, s.attempts",
            {"n": limit, "lease": config.lease_s},
        )
        rows = await cur.fetchall()
    return [
        Claim(r["tenant_id"], r["repository_id"], r["snapshot_id"], r["version"], r["attempts"]) for r in rows
    ]


async def settle(conn: Conn, claim: Claim) -> None:
    """Remove the row if nothing marked it since the claim; otherwise release it for its next turn."""
    cur = await conn.execute(
        "DELETE FROM analysis_schedule WHERE tenant_id = %s AND repository_id = %s AND version = %s",
        (claim.tenant_id, claim.repository_id, claim.version),
    )
    if cur.rowcount == 0:
        await conn.execute(
            "UPDATE analysis_schedule SET claimed_until = NULL WHERE tenant_id = %s AND repository_id = %s",
            (claim.tenant_id, claim.repository_id),
        )


async def _back_off(pool: Pool, claim: Claim, config: ScheduleConfig) -> None:
    async with system_tx(pool) as conn:
        if claim.attempts >= MAX_ATTEMPTS:
            log.error(
                "automatic analysis of repository %s failed %d times; giving up until its next snapshot",
                claim.repository_id,
                claim.attempts,
            )
            await conn.execute(
                "DELETE FROM analysis_schedule WHERE tenant_id = %s AND repository_id = %s AND version = %s",
                (claim.tenant_id, claim.repository_id, claim.version),
            )
            return
        delay = min(config.retry_s * 2.0 ** (claim.attempts - 1), config.lease_s)
        await conn.execute(
            "UPDATE analysis_schedule SET claimed_until = now() + make_interval(secs => %s)"
            " WHERE tenant_id = %s AND repository_id = %s",
            (delay, claim.tenant_id, claim.repository_id),
        )


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
