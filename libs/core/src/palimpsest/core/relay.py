"""The outbox relay: publish committed outbox rows to JetStream, at least once, in order of creation.

One pass claims up to ``batch`` unpublished rows with ``FOR UPDATE SKIP LOCKED`` (so several relays
share the work), publishes each to the stream with ``Nats-Msg-Id = event id`` and waits for the
PubAck, then marks exactly the acknowledged rows published — in the same transaction that holds the
claim. A relay killed after a PubAck but before its commit leaves the rows unpublished; the next
pass publishes them again and JetStream's duplicate window drops the copy (and the consumer inbox
would catch it even outside the window). ``pg_notify`` wakes the relay; polling is the safety net.

``LISTEN`` needs a session of its own, which a transaction-mode pooler (PgBouncer) hands to another
client after every transaction: the relay listens only on ``listen_url``, a direct connection
(``PALIMPSEST_DATABASE_DIRECT_URL``), and without one it polls every ``poll_s``. It logs which at start.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Awaitable, Callable
from datetime import timedelta

import psycopg
from nats.aio.client import Client as NATS

from palimpsest.core import inbox, metrics, outbox
from palimpsest.core.bus import STREAM
from palimpsest.core.db import Pool, system_tx

log = logging.getLogger(__name__)

CHANNEL = "palimpsest_outbox"


class Relay:
    def __init__(
        self,
        pool: Pool,
        nc: NATS,
        *,
        listen_url: str | None,
        batch: int = 500,
        poll_s: float = 1.0,
        publish_timeout_s: float = 5.0,
        retention: timedelta = timedelta(days=7),
    ) -> None:
        self.pool = pool
        self.nc = nc
        self.js = nc.jetstream(publish_async_max_pending=max(batch, 1000))
        self.listen_url = listen_url
        self.batch = batch
        self.poll_s = poll_s
        self.publish_timeout_s = publish_timeout_s
        self.retention = retention
        self.paused = asyncio.Event()  # set = paused (operators and the chaos soak pause the relay)
        self.published_total = 0
        # test hook: runs after the PubAcks and before the rows are marked (simulates a crash there)
        self.after_publish: Callable[[list[str]], Awaitable[None]] | None = None

    async def publish_pending(self) -> int:
        """One pass: publish up to ``batch`` rows; returns how many were marked published."""
        async with system_tx(self.pool) as conn:
            rows = await outbox.claim_pending(conn, self.batch)
            if not rows:
                metrics.OUTBOX_PENDING.set(0)
                return 0
            futures = []
            for row in rows:
                headers = {str(k): str(v) for k, v in dict(row.headers or {}).items()}
                headers["Nats-Msg-Id"] = str(row.id)
                body = json.dumps(row.payload, separators=(",", ":")).encode()
                futures.append(await self.js.publish_async(row.subject, body, stream=STREAM, headers=headers))
            results = await asyncio.gather(
                *(asyncio.wait_for(f, self.publish_timeout_s) for f in futures), return_exceptions=True
            )
            ok = [
                row.id for row, res in zip(rows, results, strict=True) if not isinstance(res, BaseException)
            ]
            failed = [
                (row.id, f"{res.__class__.__name__}: {res}"[:500])
                for row, res in zip(rows, results, strict=True)
                if isinstance(res, BaseException)
            ]
            if self.after_publish is not None:
                await self.after_publish([str(i) for i in ok])
            if ok:
                await outbox.mark_published(conn, ok)
            if failed:
                await outbox.mark_failed(conn, failed)
                metrics.RELAY_PUBLISH_FAILURES.inc(len(failed))
        for row, res in zip(rows, results, strict=True):
            if not isinstance(res, BaseException):
                metrics.EVENTS_PUBLISHED.labels(type=str(row.payload.get("type", ""))).inc()
        self.published_total += len(ok)
        if failed:
            log.warning(
                "relay: %d of %d events not acknowledged by JetStream (first: %s); will retry",
                len(failed),
                len(rows),
                failed[0][1][:200],
            )
        return len(ok) if not failed else -len(failed)

    async def drain(self) -> int:
        """Publish until nothing is pending (or a pass fails); returns rows published."""
        total = 0
        while not self.paused.is_set():
            n = await self.publish_pending()
            if n < 0:
                break
            total += n
            if n < self.batch:
                break
        return total

    async def prune(self) -> None:
        async with system_tx(self.pool) as conn:
            await outbox.prune_published(conn, self.retention)
            await inbox.prune_processed(conn, self.retention * 2)
            metrics.OUTBOX_PENDING.set(await outbox.pending_count(conn))

    async def run(self, stop: asyncio.Event) -> None:
        """Publish on every notify and every ``poll_s``, until ``stop`` is set."""
        wake = asyncio.Event()
        listener: asyncio.Task[None] | None = None
        if self.listen_url is not None:
            log.info(
                "relay: woken by LISTEN %s on the direct database connection, polling every %.1f s as well",
                CHANNEL,
                self.poll_s,
            )
            listener = asyncio.create_task(self._listen(self.listen_url, wake, stop), name="relay-listen")
        else:
            log.info(
                "relay: polling the outbox every %.1f s (no PALIMPSEST_DATABASE_DIRECT_URL to LISTEN on)",
                self.poll_s,
            )
        backoff = 0.2
        last_prune = 0.0
        try:
            while not stop.is_set():
                try:
                    if not self.paused.is_set():
                        n = await self.drain()
                        backoff = 0.2 if n >= 0 else min(backoff * 2, 5.0)
                    if time.monotonic() - last_prune > 600:
                        last_prune = time.monotonic()
                        await self.prune()
                except (psycopg.Error, OSError) as exc:
                    log.warning("relay: database unavailable (%s); retrying", exc.__class__.__name__)
                    backoff = min(backoff * 2, 5.0)
                    await asyncio.sleep(backoff)
                    continue
                except Exception:
                    log.exception("relay pass failed; retrying")
                    backoff = min(backoff * 2, 5.0)
                    await asyncio.sleep(backoff)
                    continue
                wake.clear()
                timeout = self.poll_s if backoff <= 0.2 else backoff
                waiters = {asyncio.ensure_future(wake.wait()), asyncio.ensure_future(stop.wait())}
                _, pending = await asyncio.wait(waiters, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
                for w in pending:
                    w.cancel()
        finally:
            if listener is not None:
                listener.cancel()
                await asyncio.gather(listener, return_exceptions=True)

    async def _listen(self, url: str, wake: asyncio.Event, stop: asyncio.Event) -> None:
        while not stop.is_set():
            try:
                async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
                    await conn.execute(f"LISTEN {CHANNEL}")
                    wake.set()  # catch up on anything written while we were not listening
                    while not stop.is_set():
                        async for _ in conn.notifies(timeout=5.0, stop_after=1):
                            wake.set()
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log.debug("relay listener reconnecting after %s", exc.__class__.__name__)
                await asyncio.sleep(1.0)
