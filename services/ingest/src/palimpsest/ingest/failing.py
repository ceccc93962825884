"""The ``palimpsest_repositories_failing`` gauge: how many repositories of each tenant cannot be
built or analysed now, read from their stored outcomes (:mod:`palimpsest.core.outcomes`).

Ingest reads it every ``every_s`` seconds, each tenant in its own transaction (forced row-level
security), and sets the gauge for every active tenant, zeros included, so an alert resolves when
the last failing repository is fixed; a tenant that is gone, suspended or being deleted drops out.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from uuid import UUID

from palimpsest.core import metrics, outcomes
from palimpsest.core.db import Pool, tenant_tx
from palimpsest.ingest.store import lookups

log = logging.getLogger(__name__)


async def measure_once(pool: Pool) -> dict[UUID, dict[str, int]]:
    """Each active tenant's failing repositories by kind; the gauge is set to exactly these."""
    found: dict[UUID, dict[str, int]] = {}
    for tenant in await lookups.tenant_list(pool):
        if tenant.suspended_at is not None or tenant.deleting_at is not None:
            continue
        try:
            async with tenant_tx(pool, tenant.tenant_id) as conn:
                found[tenant.tenant_id] = await outcomes.failing_counts(conn)
        except Exception as exc:  # one tenant's failure does not hide the others'
            log.warning(
                "failing repositories of tenant %s not read (%s)", tenant.tenant_id, exc.__class__.__name__
            )
    metrics.REPOSITORIES_FAILING.clear()
    for tenant_id, counts in found.items():
        for kind, n in counts.items():
            metrics.REPOSITORIES_FAILING.labels(str(tenant_id), kind).set(n)
    return found


async def measure_forever(pool: Pool, stop: asyncio.Event, *, every_s: float = 30.0) -> None:
    while not stop.is_set():
        try:
            await measure_once(pool)
        except Exception as exc:  # the next pass tries again
            log.warning("failing repositories not measured: %s", exc.__class__.__name__)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), every_s)
