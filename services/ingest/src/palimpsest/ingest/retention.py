"""Retention: a background task deleting delivery records and audit entries older than theirs,
and ended web sessions (expired, or of an operator token no longer in use).

Deletes in bounded batches through the migrations' SECURITY DEFINER functions (the application
role cannot see other tenants' rows), hourly, starting a minute after start-up.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from datetime import UTC, datetime, timedelta

from palimpsest.core.db import Pool
from palimpsest.ingest.admin import audit
from palimpsest.ingest.store import lookups, sessions

log = logging.getLogger(__name__)

BATCH = 5000


async def prune_once(pool: Pool, retention_days: float, *, now: datetime | None = None) -> int:
    before = (now or datetime.now(UTC)) - timedelta(days=retention_days)
    total = 0
    while True:
        deleted = await lookups.prune_deliveries(pool, before, BATCH)
        total += deleted
        if deleted < BATCH:
            return total


async def prune_forever(
    pool: Pool,
    retention_days: float,
    stop: asyncio.Event,
    *,
    operator_hash: bytes | None,
    audit_days: float | None = None,
    first_s: float = 60.0,
    every_s: float = 3600.0,
) -> None:
    delay = first_s
    while not stop.is_set():
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), delay)
        if stop.is_set():
            return
        delay = every_s
        try:
            ended = await sessions.prune(pool, operator_hash)
        except Exception as exc:  # the next pass tries again
            log.warning("web session pruning failed: %s", exc.__class__.__name__)
        else:
            if ended:
                log.info("deleted %d ended web sessions", ended)
        try:
            deleted = await prune_once(pool, retention_days)
        except Exception as exc:  # the next pass tries again
            log.warning("delivery retention failed: %s", exc.__class__.__name__)
            continue
        if deleted:
            log.info("deleted %d delivery records older than %.0f days", deleted, retention_days)
        if audit_days is None:
            continue
        try:
            pruned = await audit.prune_once(pool, audit_days)
        except Exception as exc:
            log.warning("audit retention failed: %s", exc.__class__.__name__)
            continue
        if pruned:
            log.info("deleted %d audit entries older than %.0f days", pruned, audit_days)
