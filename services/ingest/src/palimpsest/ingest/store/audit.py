"""The audit log's rows (``audit_log``): an admin action's entry, and the entries an operator reads.

Old entries are pruned through :func:`palimpsest.ingest.store.lookups.prune_audit` (the retention
task runs across tenants); :mod:`palimpsest.ingest.admin.audit` decides what is recorded.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

from psycopg.types.json import Jsonb

from palimpsest.core.db import Conn, fetch_all
from palimpsest.core.ids import uuid7
from palimpsest.core.stores import Owns, Store

STORE = Store(owner="ingest", writes=(Owns("audit_log"),), reads=("tenants",))


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
