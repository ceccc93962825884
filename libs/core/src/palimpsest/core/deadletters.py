"""Dead letters: record messages that exhausted ``max_deliver``, list them, and replay them.

The server emits a MAX_DELIVERIES advisory when a consumer gives up on a message; the advisory
stream keeps it, and each service's recorder turns it into a ``dead_letters`` row holding the
original message (fetched from the stream by sequence) and the handler's last error. Replay
republishes the original envelope under a fresh ``Nats-Msg-Id``; consumers that applied the event
before skip it through their inbox, the one that dead-lettered it applies it.
"""

from __future__ import annotations

import asyncio
import json
import logging
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

from nats.aio.client import Client as NATS
from nats.errors import TimeoutError as NatsTimeout
from nats.js.errors import NotFoundError
from psycopg.types.json import Jsonb

from palimpsest.core import metrics, outcomes
from palimpsest.core.bus import ADVISORY_STREAM, STREAM, ConsumerSpec
from palimpsest.core.db import Conn, Pool, system_tx, tenant_tx
from palimpsest.core.stores import CORE, Owns, Store

# Failures (event_failures) are counted by palimpsest.core.consumer through record_failure.
STORE = Store(owner=CORE, writes=(Owns("dead_letters"), Owns("event_failures")))


log = logging.getLogger(__name__)


_COLUMNS = (
    "id, consumer, subject, event_id::text, tenant_id::text, event_type, deliveries, last_error,"
    " created_at, replayed_at, replay_count"
)


@dataclass(frozen=True, slots=True)
class DeadLetter:
    id: int
    consumer: str
    subject: str
    event_id: str | None
    tenant_id: str | None
    event_type: str | None
    deliveries: int
    last_error: str | None
    created_at: datetime
    replayed_at: datetime | None
    replay_count: int

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "consumer": self.consumer,
            "subject": self.subject,
            "event_id": self.event_id,
            "tenant_id": self.tenant_id,
            "event_type": self.event_type,
            "deliveries": self.deliveries,
            "last_error": self.last_error,
            "created_at": self.created_at.isoformat(),
            "replayed_at": self.replayed_at.isoformat() if self.replayed_at else None,
            "replay_count": self.replay_count,
        }


async def record_advisory(pool: Pool, nc: NATS, consumer: str, advisory: dict[str, Any]) -> bool:
    """Store the message an advisory names; returns False if the stream no longer holds it."""
    seq = int(advisory["stream_seq"])
    js = nc.jetstream()
    try:
        msg = await js.get_msg(STREAM, seq)
    except NotFoundError:
        log.error("dead letter %s seq %d is gone from the stream (max_age passed?)", consumer, seq)
        return False
    data = msg.data or b""
    headers = dict(msg.headers or {})
    event_id = tenant_id = event_type = None
    try:
        raw = json.loads(data)
        event_id, tenant_id, event_type = raw.get("id"), raw.get("tenant_id"), raw.get("type")
    except (ValueError, AttributeError):
        pass
    async with system_tx(pool) as conn:
        last_error = None
        if event_id:
            cur = await conn.execute(
                "SELECT last_error FROM event_failures WHERE consumer = %s AND event_id = %s",
                (consumer, event_id),
            )
            row = await cur.fetchone()
            last_error = row["last_error"] if row else None
        cur = await conn.execute(
            "INSERT INTO dead_letters (consumer, stream_seq, subject, event_id, tenant_id, event_type,"
            " payload, headers, deliveries, last_error) VALUES (%s,%s,%s,%s,%s,%s,%s,%s,%s,%s)"
            " ON CONFLICT (consumer, stream_seq) DO NOTHING RETURNING id",
            (
                consumer,
                seq,
                msg.subject,
                event_id,
                tenant_id,
                event_type,
                data,
                Jsonb(headers),
                int(advisory.get("deliveries", 0)),
                last_error,
            ),
        )
        row = await cur.fetchone()
        inserted = row is not None
    if row is not None and event_id and tenant_id:
        await _mark_repository(pool, str(tenant_id), str(event_id), int(row["id"]), last_error)
    if inserted:
        metrics.DEAD_LETTERS.labels(consumer).inc()
        log.error(
            "dead letter: %s gave up on %s %s after %s deliveries: %s",
            consumer,
            event_type,
            event_id,
            advisory.get("deliveries"),
            last_error,
        )
    return True


async def _mark_repository(
    pool: Pool, tenant_id: str, event_id: str, dead_letter_id: int, last_error: str | None
) -> None:
    """A build or analysis request that became a dead letter says so on its repository (the
    outcome its handler stored; see :mod:`palimpsest.core.outcomes`), naming the row to replay."""
    try:
        tenant, event = UUID(tenant_id), UUID(event_id)
    except ValueError:  # not a tenant or event id: nothing names this message
        return
    try:
        async with tenant_tx(pool, tenant) as conn:
            await outcomes.link_dead_letter(conn, event, dead_letter_id, last_error)
    except Exception as exc:  # the dead letter is stored; its repository keeps the handler's word
        log.warning(
            "dead letter %d: repository outcome not linked (%s)", dead_letter_id, exc.__class__.__name__
        )


async def run_recorder(pool: Pool, nc: NATS, spec: ConsumerSpec, stop: asyncio.Event) -> None:
    """Pull this consumer's advisories and record them, until ``stop``."""
    js = nc.jetstream()
    sub = None
    while not stop.is_set():
        try:
            if sub is None:
                sub = await js.pull_subscribe_bind(spec.dead_letter_consumer, stream=ADVISORY_STREAM)
            try:
                msgs = await sub.fetch(batch=16, timeout=2.0)
            except NatsTimeout:
                continue
            for m in msgs:
                try:
                    await record_advisory(pool, nc, spec.name, json.loads(m.data))
                    await m.ack()
                except Exception:
                    log.exception("could not record dead letter; will retry")
                    await m.nak(delay=5.0)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            log.debug("dead-letter recorder for %s: %s", spec.name, exc.__class__.__name__)
            sub = None
            await asyncio.sleep(1.0)


async def list_dead_letters(
    pool: Pool, *, include_replayed: bool = False, limit: int = 100
) -> list[DeadLetter]:
    async with system_tx(pool) as conn:
        cur = await conn.execute(
            f"SELECT {_COLUMNS} FROM dead_letters WHERE %s OR replayed_at IS NULL ORDER BY id LIMIT %s",
            (include_replayed, limit),
        )
        return [DeadLetter(**row) for row in await cur.fetchall()]


async def replay(pool: Pool, nc: NATS, dead_letter_id: int) -> DeadLetter:
    """Republish one dead letter's original message; raises KeyError if there is no such row."""
    js = nc.jetstream()
    async with system_tx(pool) as conn:
        cur = await conn.execute(
            "SELECT subject, payload, headers, event_id, replay_count FROM dead_letters WHERE id = %s FOR UPDATE",
            (dead_letter_id,),
        )
        row = await cur.fetchone()
        if row is None:
            raise KeyError(dead_letter_id)
        headers = {
            str(k): str(v) for k, v in dict(row["headers"] or {}).items() if k.lower() != "nats-msg-id"
        }
        headers["Nats-Msg-Id"] = f"{row['event_id']}.replay.{int(row['replay_count']) + 1}"
        await js.publish(row["subject"], bytes(row["payload"]), stream=STREAM, headers=headers)
        await conn.execute(
            "UPDATE dead_letters SET replayed_at = clock_timestamp(), replay_count = replay_count + 1"
            " WHERE id = %s",
            (dead_letter_id,),
        )
    found = await get_dead_letter(pool, dead_letter_id)
    assert found is not None
    return found


async def get_dead_letter(pool: Pool, dead_letter_id: int) -> DeadLetter | None:
    async with system_tx(pool) as conn:
        cur = await conn.execute(f"SELECT {_COLUMNS} FROM dead_letters WHERE id = %s", (dead_letter_id,))
        row = await cur.fetchone()
        return DeadLetter(**row) if row else None


async def record_failure(
    conn: Conn, consumer: str, event_id: UUID, tenant_id: UUID | None, error: str
) -> None:
    """Count a failed delivery of the event to ``consumer`` and keep its last error (a system
    transaction); the dead letter recorder reads it back when the bus gives up."""
    await conn.execute(
        "INSERT INTO event_failures (consumer, event_id, tenant_id, last_error)"
        " VALUES (%s, %s, %s, %s) ON CONFLICT (consumer, event_id) DO UPDATE"
        " SET attempts = event_failures.attempts + 1, last_error = EXCLUDED.last_error,"
        " updated_at = clock_timestamp()",
        (consumer, event_id, tenant_id, error[:2000]),
    )
