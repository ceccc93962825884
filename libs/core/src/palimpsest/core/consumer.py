"""How a service applies one event: tracing, inbox de-duplication, retries and failure bookkeeping.

This module knows nothing of FastStream; the entrypoint hands it the raw body, the headers and the
delivery count. Handlers are plain async functions ``handler(event, ctx)``; they open
``ctx.transaction()`` for their writes, which sets the tenant and claims the inbox in the same
transaction. A handler that raises is retried with a growing delay (``Retry``); when the last
delivery fails the server emits a MAX_DELIVERIES advisory and the message becomes a dead letter.
A handler that fails because the database cannot be reached (:func:`palimpsest.core.db.unreachable`)
is not at fault: its delivery is held until the database answers (at most ``outage_hold_s``) and the
handler runs again in the same delivery, so an outage spends none of the ``max_deliver`` attempts.
An event the runtime has no handler for fails the same way, loudly, never acknowledged unapplied
(the start-up check, :func:`palimpsest.core.topology.check_handlers`, makes that unreachable
unless the server-side consumer and the running code disagree).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from opentelemetry import trace
from opentelemetry.trace import SpanKind, Status, StatusCode
from pydantic import ValidationError

from palimpsest.core import inbox, metrics
from palimpsest.core.db import Conn, Pool, ping, system_tx, tenant_tx, unreachable
from palimpsest.core.errors import DuplicateEvent, UnhandledEvent
from palimpsest.core.events import Event, parse_event
from palimpsest.core.telemetry import extract, tracer

log = logging.getLogger(__name__)

Heartbeat = Callable[[], Awaitable[None]]


@dataclass(slots=True)
class HandlerContext:
    """What a handler gets beside its event: the pool, its consumer name and a tenant transaction."""

    consumer: str
    pool: Pool
    event: Event
    deliveries: int = 1
    heartbeat_fn: Heartbeat | None = None
    claimed: bool = False
    retry_delays_s: tuple[float, ...] = ()
    max_deliver: int | None = None

    def retry_in_s(self) -> float | None:
        """Seconds until the event is delivered again if this delivery fails; None when this is its
        last delivery (a failure makes it a dead letter, and the runtime NAKs it without delay so
        the server's MAX_DELIVERIES advisory, and so the dead letter, follows at once)."""
        if self.max_deliver is not None and self.deliveries >= self.max_deliver:
            return None
        if not self.retry_delays_s:
            return 0.0
        return self.retry_delays_s[min(self.deliveries - 1, len(self.retry_delays_s) - 1)]

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[Conn]:
        """The tenant-scoped transaction for this event's writes; claims the inbox inside it.

        Raises DuplicateEvent (handled by the runtime) when the event was already applied.
        Use it once, for the writes that make the event "applied".
        """
        async with tenant_tx(self.pool, self.event.tenant_id) as conn:
            await inbox.claim(conn, self.consumer, self.event)
            yield conn
        self.claimed = True

    async def heartbeat(self) -> None:
        """Tell JetStream the event is still being worked on (resets its ack_wait)."""
        if self.heartbeat_fn is not None:
            await self.heartbeat_fn()


Handler = Callable[[Any, HandlerContext], Awaitable[None]]


class Retry(Exception):
    """Ask the entrypoint to NAK the message with ``delay`` seconds."""

    def __init__(self, delay: float, cause: BaseException) -> None:
        super().__init__(str(cause))
        self.delay = delay
        self.cause = cause


@dataclass(slots=True)
class Outcome:
    status: str  # applied | duplicate | ignored (unreadable)
    event_type: str = ""
    detail: str = ""


@dataclass(slots=True)
class ConsumerRuntime:
    """Dispatch by event type to plain handler functions, with inbox and retry semantics."""

    consumer: str
    pool: Pool
    handlers: Mapping[str, Handler]
    retry_delays_s: tuple[float, ...] = (1.0, 5.0, 30.0, 120.0)
    # how long a delivery waits for an unreachable database before it fails (and counts); see _hold
    outage_hold_s: float = 300.0
    # the consumer's max_deliver: its last failed delivery is NAKed at once (see retry_in_s); None
    # when unknown here (every failure then waits its retry delay)
    max_deliver: int | None = None
    on_applied: list[Callable[[Event], None]] = field(default_factory=list)
    # set where the server applies no subject filter (nats-server < 2.10 with several subjects): the
    # event types this consumer asked for; any other event was never addressed to it (its own
    # consumer receives it) and is acknowledged. None: the server filters, so every event received
    # is addressed to this consumer and one without a handler fails loudly.
    addressed: frozenset[str] | None = None

    async def handle(
        self,
        body: bytes,
        headers: Mapping[str, str] | None,
        deliveries: int = 1,
        heartbeat: Heartbeat | None = None,
    ) -> Outcome:
        try:
            event = parse_event(body)
        except (ValueError, ValidationError) as exc:
            # a message no code version can read: acknowledge it, loudly, instead of looping
            log.error("%s: dropping unreadable message: %s", self.consumer, str(exc)[:300])
            metrics.EVENTS_CONSUMED.labels(self.consumer, "unknown", "unreadable").inc()
            return Outcome("ignored", detail="unreadable")
        handler = self.handlers.get(event.TYPE)
        if handler is None and self.addressed is not None and event.TYPE not in self.addressed:
            metrics.EVENTS_CONSUMED.labels(self.consumer, event.TYPE, "not_addressed").inc()
            return Outcome("ignored", event.TYPE, "not addressed to this consumer")
        parent = extract(headers)
        with tracer.start_as_current_span(
            f"{self.consumer} {event.TYPE}",
            context=parent,
            kind=SpanKind.CONSUMER,
            attributes={
                "messaging.system": "nats",
                "messaging.destination.name": event.subject,
                "messaging.message.id": str(event.id),
                "messaging.consumer.group.name": self.consumer,
                "palimpsest.tenant_id": str(event.tenant_id),
                "palimpsest.deliveries": deliveries,
            },
        ) as span:
            started = time.perf_counter()
            extra = {
                "consumer": self.consumer,
                "event_id": event.id,
                "event_type": event.TYPE,
                "tenant_id": event.tenant_id,
            }
            held = 0.0
            while True:
                ctx = HandlerContext(
                    self.consumer,
                    self.pool,
                    event,
                    deliveries,
                    heartbeat,
                    retry_delays_s=self.retry_delays_s,
                    max_deliver=self.max_deliver,
                )
                try:
                    outcome = await self._apply(handler, ctx)
                    break
                except asyncio.CancelledError:
                    raise
                except Exception as exc:
                    if not unreachable(exc) or held >= self.outage_hold_s:
                        self._failed(span, event, exc)
                        delay = ctx.retry_in_s()
                        log.log(
                            logging.ERROR
                            if isinstance(exc, UnhandledEvent) or delay is None
                            else logging.WARNING,
                            "%s: %s %s failed on delivery %d (%s); %s",
                            self.consumer,
                            event.TYPE,
                            event.id,
                            deliveries,
                            describe_error(exc),
                            "its last: a dead letter" if delay is None else f"retry in {delay:.0f}s",
                            extra=extra,
                        )
                        await self._record_failure(event, exc)
                        raise Retry(delay or 0.0, exc) from exc
                    held += await self._hold(ctx, exc, self.outage_hold_s - held)
            if outcome.status == "duplicate":
                log.info("%s: event %s already applied; acknowledging", self.consumer, event.id, extra=extra)
            span.set_attribute("palimpsest.outcome", outcome.status)
            elapsed = time.perf_counter() - started
            metrics.EVENTS_CONSUMED.labels(self.consumer, event.TYPE, outcome.status).inc()
            metrics.EVENT_HANDLE_SECONDS.labels(self.consumer, event.TYPE).observe(elapsed)
            lag = (datetime.now(UTC) - event.occurred_at).total_seconds()
            metrics.EVENT_LAG_SECONDS.labels(self.consumer, event.TYPE).observe(max(lag, 0.0))
            return outcome

    async def _apply(self, handler: Handler | None, ctx: HandlerContext) -> Outcome:
        event = ctx.event
        if handler is None:
            # retried (a newer replica may handle it), then a dead letter
            raise UnhandledEvent(f"{self.consumer} has no handler for {event.TYPE}")
        try:
            if await self._already(ctx):
                raise DuplicateEvent(str(event.id))
            await handler(event, ctx)
            if not ctx.claimed:
                await self._claim_only(ctx)
        except DuplicateEvent:
            return Outcome("duplicate", event.TYPE)
        for cb in self.on_applied:
            cb(event)
        return Outcome("applied", event.TYPE)

    async def _hold(self, ctx: HandlerContext, exc: BaseException, budget: float) -> float:
        """The database could not be reached: the event is not at fault, so its delivery is held
        (heartbeats keep JetStream from redelivering it) until the database answers again, for at
        most ``budget`` seconds, instead of spending one of its ``max_deliver`` attempts — a
        PostgreSQL restart or a pooler refusing logins never turns work into dead letters. The
        seconds spent are returned; the caller runs the handler again (or, past the budget, fails
        the delivery as any other failure)."""
        started = time.perf_counter()
        log.warning(
            "%s: %s %s: database unreachable (%s); holding delivery %d until it answers (at most %.0fs)",
            self.consumer,
            ctx.event.TYPE,
            ctx.event.id,
            describe_error(exc),
            ctx.deliveries,
            budget,
        )
        metrics.EVENTS_CONSUMED.labels(self.consumer, ctx.event.TYPE, "held").inc()
        step = 0.5
        while (spent := time.perf_counter() - started) < budget:
            await asyncio.sleep(min(step, budget - spent))
            step = min(step * 2, 5.0)
            try:
                await ctx.heartbeat()
            except Exception as beat:  # the bus is away too: JetStream may redeliver; the inbox holds
                log.debug("hold heartbeat failed: %s", describe_error(beat))
            try:
                async with system_tx(self.pool) as conn:
                    await ping(conn)
                break
            except Exception as probe:  # still down: wait on
                if not unreachable(probe):
                    log.debug("hold probe failed: %s", describe_error(probe))
        return max(time.perf_counter() - started, 1e-3)

    def _failed(self, span: trace.Span, event: Event, exc: BaseException) -> None:
        span.record_exception(exc)
        span.set_status(Status(StatusCode.ERROR, exc.__class__.__name__))
        unhandled = isinstance(exc, UnhandledEvent)
        metrics.EVENTS_CONSUMED.labels(
            self.consumer, event.TYPE, "unhandled" if unhandled else "failed"
        ).inc()

    async def _already(self, ctx: HandlerContext) -> bool:
        async with system_tx(self.pool) as conn:
            return await inbox.seen(conn, self.consumer, ctx.event.id)

    async def _claim_only(self, ctx: HandlerContext) -> None:
        async with ctx.transaction():
            pass

    async def _record_failure(self, event: Event, exc: BaseException) -> None:
        # the failures' store records dead letters too, whose outcome marks need this module
        from palimpsest.core.deadletters import record_failure

        try:
            async with system_tx(self.pool) as conn:
                await record_failure(conn, self.consumer, event.id, event.tenant_id, describe_error(exc))
        except Exception as db_exc:  # the database may be the reason the handler failed
            log.debug("could not record failure: %s", db_exc.__class__.__name__)


def describe_error(exc: BaseException) -> str:
    """An error in one line (its class and first line), as logs, ``event_failures`` and dead letters
    keep it."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{exc.__class__.__name__}: {text}" if text else exc.__class__.__name__


def current_span_id() -> int:
    return trace.get_current_span().get_span_context().span_id
