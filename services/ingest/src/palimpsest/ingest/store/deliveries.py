"""The record of webhook deliveries: one row per delivery received for a known tenant.

An accepted delivery is claimed by inserting its row under the partial unique index on
(tenant, provider, installation, delivery id): a redelivery (or a concurrent copy) finds the
claim taken and is recorded as a duplicate instead, emitting nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final
from uuid import UUID

from psycopg import sql

from palimpsest.core.db import Conn, JsonRow, columns, fetch_all_as, fetch_one, fetch_one_as
from palimpsest.core.events import Event
from palimpsest.core.outbox import emit_guarded
from palimpsest.core.stores import Owns, Store

STORE = Store(owner="ingest", writes=(Owns("deliveries"),))


@dataclass(frozen=True, slots=True)
class StoredDelivery(JsonRow):
    """A recorded delivery, as the API lists it."""

    id: UUID
    provider: str
    installation_id: UUID | None
    delivery_id: str
    event: str
    action: str | None
    outcome: str  # accepted | duplicate | ignored | rejected
    http_status: int
    reason: str | None
    repository_id: UUID | None
    event_ids: list[UUID]
    received_at: datetime


COLUMNS: Final = sql.SQL(columns(StoredDelivery))
_INSERT: Final = (
    "INSERT INTO deliveries (tenant_id, id, provider, installation_id, delivery_id, event, action, outcome,"
    " http_status, reason, repository_id, event_ids) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)"
)

_CLAIM: Final = (
    _INSERT + " ON CONFLICT (tenant_id, provider, installation_id, delivery_id)"
    " WHERE outcome = 'accepted' DO NOTHING RETURNING id"
)


def _clip(text: str | None, limit: int) -> str | None:
    if text is None:
        return None
    return text if len(text) <= limit else text[: limit - 1] + "…"


@dataclass(slots=True)
class DeliveryRow:
    id: UUID
    provider: str
    installation_id: UUID | None
    delivery_id: str
    event: str
    action: str | None
    outcome: str
    http_status: int
    reason: str | None
    repository_id: UUID | None = None
    event_ids: list[UUID] = field(default_factory=list)

    def params(self, tenant_id: UUID) -> tuple[Any, ...]:
        return (
            tenant_id,
            self.id,
            self.provider,
            self.installation_id,
            _clip(self.delivery_id, 255),
            _clip(self.event, 255),
            _clip(self.action, 255),
            self.outcome,
            self.http_status,
            _clip(self.reason, 1000),
            self.repository_id,
            self.event_ids,
        )


async def claim(conn: Conn, tenant_id: UUID, row: DeliveryRow) -> bool:
    """Insert an accepted delivery; False when this delivery was accepted before."""
    return await fetch_one(conn, _CLAIM, row.params(tenant_id)) is not None


async def claim_and_emit(conn: Conn, tenant_id: UUID, row: DeliveryRow, events: Sequence[Event]) -> bool:
    """`claim`, and write `events` to the outbox only if the claim succeeded — in one statement."""
    return await emit_guarded(conn, _CLAIM, row.params(tenant_id), *events)


async def insert(conn: Conn, tenant_id: UUID, row: DeliveryRow) -> None:
    await conn.execute(_INSERT, row.params(tenant_id))


async def was_accepted(conn: Conn, provider: str, installation_id: UUID | None, delivery_id: str) -> bool:
    found = await fetch_one(
        conn,
        "SELECT 1 AS found FROM deliveries WHERE provider = %s AND installation_id = %s AND delivery_id = %s"
        " AND outcome = 'accepted'",
        (provider, installation_id, delivery_id),
    )
    return found is not None


async def finish(conn: Conn, id_: UUID, event_ids: list[UUID], reason: str | None) -> None:
    await conn.execute(
        "UPDATE deliveries SET event_ids = %s, reason = %s WHERE id = %s",
        (event_ids, _clip(reason, 1000), id_),
    )


@dataclass(frozen=True, slots=True)
class DeliveryFilter:
    provider: str | None = None
    outcome: str | None = None
    event: str | None = None
    repository_id: UUID | None = None
    installation_id: UUID | None = None


async def list_deliveries(
    conn: Conn, where: DeliveryFilter, *, limit: int, before: UUID | None
) -> list[StoredDelivery]:
    """Newest first; `before` continues after the last id of the previous page."""
    query = sql.SQL(
        "SELECT {} FROM deliveries WHERE (%(p)s::text IS NULL OR provider = %(p)s)"
        " AND (%(o)s::text IS NULL OR outcome = %(o)s) AND (%(e)s::text IS NULL OR event = %(e)s)"
        " AND (%(r)s::uuid IS NULL OR repository_id = %(r)s)"
        " AND (%(i)s::uuid IS NULL OR installation_id = %(i)s)"
        " AND (%(b)s::uuid IS NULL OR id < %(b)s) ORDER BY id DESC LIMIT %(n)s"
    ).format(COLUMNS)
    params = {
        "p": where.provider,
        "o": where.outcome,
        "e": where.event,
        "r": where.repository_id,
        "i": where.installation_id,
        "b": before,
        "n": limit,
    }
    return await fetch_all_as(conn, StoredDelivery, query, params)


async def get_delivery(conn: Conn, id_: UUID) -> StoredDelivery | None:
    return await fetch_one_as(
        conn, StoredDelivery, sql.SQL("SELECT {} FROM deliveries WHERE id = %s").format(COLUMNS), (id_,)
    )
