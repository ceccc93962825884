"""The transactional outbox: write an event in the same transaction as the state change it reports.

``emit`` inserts the envelope (and the current W3C trace context) into ``outbox`` using the caller's
connection, so the event exists if and only if the state change commits. The relay
(:mod:`palimpsest.core.relay`) publishes it later; an ``AFTER INSERT`` trigger sends ``pg_notify`` so
the relay wakes at once instead of waiting for its poll.
"""

from __future__ import annotations

from psycopg.types.json import Jsonb

from palimpsest.core.db import Conn
from palimpsest.core.events import Event
from palimpsest.core.telemetry import current_trace_headers


async def emit(conn: Conn, *events: Event) -> None:
    """Queue events for publication inside the caller's open transaction."""
    if not events:
        return
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
