"""The consumer inbox: remember which events a consumer applied, in the same transaction as the work.

``claim`` inserts ``(consumer, event_id)``; if the row already exists the event was applied before
and :class:`DuplicateEvent` is raised, which rolls the caller's transaction back and makes the
consumer acknowledge the redelivery without applying it again.
"""

from __future__ import annotations

from datetime import timedelta

from palimpsest.core.db import Conn
from palimpsest.core.errors import DuplicateEvent
from palimpsest.core.events import Event
from palimpsest.core.stores import CORE, Owns, Store

STORE = Store(owner=CORE, writes=(Owns("inbox"),))


async def claim(conn: Conn, consumer: str, event: Event) -> None:
    cur = await conn.execute(
        "INSERT INTO inbox (consumer, event_id, tenant_id, event_type) VALUES (%s, %s, %s, %s)"
        " ON CONFLICT (consumer, event_id) DO NOTHING RETURNING 1",
        (consumer, event.id, event.tenant_id, event.TYPE),
    )
    if await cur.fetchone() is None:
        raise DuplicateEvent(f"{consumer} already applied event {event.id}")


async def seen(conn: Conn, consumer: str, event_id: object) -> bool:
    cur = await conn.execute(
        "SELECT 1 FROM inbox WHERE consumer = %s AND event_id = %s", (consumer, event_id)
    )
    return await cur.fetchone() is not None


async def prune_processed(conn: Conn, retention: timedelta) -> None:
    """Delete the rows processed longer than ``retention`` ago."""
    await conn.execute("DELETE FROM inbox WHERE processed_at < now() - %s::interval", (retention,))
