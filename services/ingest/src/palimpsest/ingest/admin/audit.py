"""The audit log: every admin action (who, what, when, outcome) in the tenant's ``audit_log``.

A note is taken when a ``manage`` or operator route is called with a changing method (see
`palimpsest.ingest.api.deps`); the `AuditTrail` middleware writes it with the answer's status
before the answer leaves, so a client that saw the answer finds the entry. Request bodies are
never recorded (they may hold secrets): the entry names the route and the ids in its path.
Entries older than ``PALIMPSEST_AUDIT_RETENTION_DAYS`` are deleted by the retention task.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID

from psycopg.types.json import Jsonb

from palimpsest.core.db import Conn, Pool, fetch_all, tenant_tx
from palimpsest.core.ids import uuid7
from palimpsest.ingest.store import lookups

log = logging.getLogger(__name__)

BATCH = 5000


@dataclass(slots=True)
class AuditNote:
    tenant_id: UUID | None  # None: nowhere to record it (a deleted tenant); logged only
    actor: str
    token_id: UUID | None
    token_name: str | None
    action: str
    method: str | None = None
    route: str | None = None
    target: dict[str, str] = field(default_factory=dict)


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


async def insert(conn: Conn, note: AuditNote, outcome: str, status: int | None) -> None:
    await conn.execute(
        "INSERT INTO audit_log (tenant_id, id, actor, token_id, token_name, action, method, route, target,"
        " outcome, http_status) SELECT %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s"
        " WHERE EXISTS (SELECT 1 FROM tenants WHERE tenant_id = %s AND deleting_at IS NULL)",
        (
            note.tenant_id,
            uuid7(),
            note.actor,
            note.token_id,
            note.token_name,
            note.action,
            note.method,
            note.route,
            Jsonb(note.target),
            outcome,
            status,
            note.tenant_id,
        ),
    )


async def entries(
    conn: Conn,
    *,
    limit: int,
    before: UUID | None = None,
    action: str | None = None,
    outcome: str | None = None,
) -> list[dict[str, Any]]:
    rows = await fetch_all(
        conn,
        "SELECT id, at, actor, token_id, token_name, action, method, route, target, outcome, http_status"
        " FROM audit_log WHERE (%(before)s::uuid IS NULL OR id < %(before)s::uuid)"
        " AND (%(action)s::text IS NULL OR action = %(action)s::text)"
        " AND (%(outcome)s::text IS NULL OR outcome = %(outcome)s::text)"
        " ORDER BY id DESC LIMIT %(limit)s",
        {"before": before, "action": action, "outcome": outcome, "limit": limit},
    )
    return [dict(r) for r in rows]


async def prune_once(pool: Pool, retention_days: float, *, now: datetime | None = None) -> int:
    before = (now or datetime.now(UTC)) - timedelta(days=retention_days)
    total = 0
    while True:
        deleted = await lookups.prune_audit(pool, before, BATCH)
        total += deleted
        if deleted < BATCH:
            return total
