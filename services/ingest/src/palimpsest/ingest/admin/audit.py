"""The audit log: every admin action (who, what, when, outcome) in the tenant's ``audit_log``.

A note is taken when a ``manage`` or operator route is called with a changing method (see
`palimpsest.ingest.api.deps`); the `AuditTrail` middleware writes it with the answer's status
before the answer leaves, so a client that saw the answer finds the entry. Request bodies are
never recorded (they may hold secrets): the entry names the route and the ids in its path.
Entries older than ``PALIMPSEST_AUDIT_RETENTION_DAYS`` are deleted by the retention task.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta

from palimpsest.core.db import Pool, tenant_tx
from palimpsest.ingest.store import lookups
from palimpsest.ingest.store.audit import AuditNote, entries, insert

__all__ = ["BATCH", "AuditNote", "entries", "insert", "outcome_of", "prune_once", "record"]

log = logging.getLogger(__name__)

BATCH = 5000


def outcome_of(status: int) -> str:
    if status < 400:
        return "ok"
    if status in (401, 403):
        return "denied"
    return "failed"


async def record(pool: Pool, note: AuditNote, status: int) -> None:
    """Write the entry; a failure is logged, never turned into the request's failure."""
    outcome = outcome_of(status)
    if note.tenant_id is None:
        log.info("audit: %s %s by %s -> %s %d", note.action, note.target, note.actor, outcome, status)
        return
    try:
        async with tenant_tx(pool, note.tenant_id) as conn:
            await insert(conn, note, outcome, status)
    except Exception as exc:  # a deleted or unknown tenant: nothing to attach the entry to
        log.warning(
            "audit entry not written (%s): %s %s -> %s",
            exc.__class__.__name__,
            note.action,
            note.target,
            outcome,
        )


async def prune_once(pool: Pool, retention_days: float, *, now: datetime | None = None) -> int:
    before = (now or datetime.now(UTC)) - timedelta(days=retention_days)
    total = 0
    while True:
        deleted = await lookups.prune_audit(pool, before, BATCH)
        total += deleted
        if deleted < BATCH:
            return total
