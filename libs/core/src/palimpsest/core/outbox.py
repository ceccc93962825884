"""The transactional outbox: write an event in the same transaction as the state change it reports.

``emit`` inserts the envelope (and the current W3C trace context) into ``outbox`` using the caller's
connection, so the event exists if and only if the state change commits. The relay
(:mod:`palimpsest.core.relay`) publishes it later; an ``AFTER INSERT`` trigger sends ``pg_notify`` so
the relay wakes at once instead of waiting for its poll. The relay's own statements (claim the
pending rows, mark them, prune) are here too.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any
from uuid import UUID

from psycopg.types.json import Jsonb

from palimpsest.core.db import Conn, fetch_all_as, fetch_one_as
from palimpsest.core.events import Event
from palimpsest.core.stores import CORE, Owns, Store
from palimpsest.core.telemetry import current_trace_headers
from palimpsest.core.topology import require_declared

STORE = Store(owner=CORE, writes=(Owns("outbox"),))


async def emit(conn: Conn, *events: Event) -> None:
    """Queue events for publication inside the caller's open transaction.

    An event type the event map (:mod:`palimpsest.core.topology`) does not declare is refused.
    """
    if not events:
        return
    _declared(events)
    headers = Jsonb(current_trace_headers())
    async with conn.cursor() as cur:
        await cur.executemany(
            "INSERT INTO outbox (id, tenant_id, subject, type, payload, headers)"
            " VALUES (%s, %s, %s, %s, %s, %s)",
            [
                (ev.id, ev.tenant_id, ev.subject, ev.TYPE, Jsonb(ev.model_dump(mode="json")), headers)
                for ev in events
            ],
        )


def _declared(events: Sequence[Event]) -> None:
    for ev in events:
        require_declared(ev.TYPE)


_GUARDED: dict[tuple[str, int], str] = {}


def _guarded_sql(guard: str, count: int) -> str:
    key = (guard, count)
    found = _GUARDED.get(key)
    if found is None:
        values = ", ".join(["(%s, %s, %s, %s, %s, %s)"] * count)
        found = (
            f"WITH guard AS ({guard}) INSERT INTO outbox (id, tenant_id, subject, type, payload, headers)"
            f" SELECT v.* FROM (VALUES {values}) AS v(id, tenant_id, subject, type, payload, headers)"
            " WHERE EXISTS (SELECT 1 FROM guard) RETURNING id"
        )
        if len(_GUARDED) < 256:
            _GUARDED[key] = found
    return found


async def emit_guarded(conn: Conn, guard: str, guard_params: Sequence[Any], *events: Event) -> bool:
    """Claim-then-emit in one statement: queue ``events`` only if ``guard`` returns a row.

    ``guard`` is a constant data-modifying statement with ``RETURNING`` (for example an
    ``INSERT ... ON CONFLICT DO NOTHING RETURNING id`` that claims an idempotency key); it runs
    once, and the events are written only when it returned something. Returns whether it did.
    One round trip instead of two on hot paths (the ingest webhook endpoint).
    """
    if not events:
        raise ValueError("emit_guarded needs at least one event")
    _declared(events)
    headers = Jsonb(current_trace_headers())
    params: list[Any] = list(guard_params)
    for ev in events:
        params += [ev.id, ev.tenant_id, ev.subject, ev.TYPE, Jsonb(ev.model_dump(mode="json")), headers]
    cur = await conn.execute(_guarded_sql(guard, len(events)), params)
    return await cur.fetchone() is not None


# ------------------------------------------------------------------ the relay's statements


@dataclass(frozen=True, slots=True)
class PendingEvent:
    """An unpublished ``outbox`` row, as the relay publishes it."""

    id: UUID
    subject: str
    payload: Mapping[str, object]  # jsonb: the event's envelope
    headers: Mapping[str, object] | None  # jsonb: the trace context


async def claim_pending(conn: Conn, batch: int) -> list[PendingEvent]:
    """Up to ``batch`` unpublished rows, oldest first, locked for this transaction (rows another
    relay holds are skipped)."""
    return await fetch_all_as(
        conn,
        PendingEvent,
        "SELECT id, subject, payload, headers FROM outbox WHERE published_at IS NULL"
        " ORDER BY created_at, id LIMIT %s FOR UPDATE SKIP LOCKED",
        (batch,),
    )


async def mark_published(conn: Conn, ids: list[UUID]) -> None:
    await conn.execute(
        "UPDATE outbox SET published_at = clock_timestamp(), attempts = attempts + 1,"
        " last_error = NULL WHERE id = ANY(%s)",
        (ids,),
    )


async def mark_failed(conn: Conn, failed: list[tuple[UUID, str]]) -> None:
    """Count a failed attempt of each ``(id, error)`` and keep its error."""
    async with conn.cursor() as c:
        await c.executemany(
            "UPDATE outbox SET attempts = attempts + 1, last_error = %s WHERE id = %s",
            [(err, i) for i, err in failed],
        )


async def prune_published(conn: Conn, retention: timedelta) -> None:
    """Delete the rows published longer than ``retention`` ago."""
    await conn.execute("DELETE FROM outbox WHERE published_at < now() - %s::interval", (retention,))


@dataclass(frozen=True, slots=True)
class _Count:
    n: int


async def pending_count(conn: Conn) -> int:
    row = await fetch_one_as(conn, _Count, "SELECT count(*) AS n FROM outbox WHERE published_at IS NULL")
    return int(row.n) if row else 0
