"""Driving the pipeline from the CLI: request work through the bus and wait for its events.

Requests are written to the outbox like any other state change; the results are observed as the
events themselves (a plain NATS subscription sees what the relay publishes to the stream), so the
CLI takes exactly the path a webhook takes — there is no shortcut around the bus.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import TypeVar
from uuid import UUID

from nats.aio.client import Client as NATS
from nats.aio.msg import Msg

from palimpsest.core.db import Pool, tenant_tx
from palimpsest.core.errors import PalimpsestError
from palimpsest.core.events import (
    Event,
    IndexRequested,
    RecencyScanned,
    SnapshotBuilt,
    parse_event,
    subject_of,
)
from palimpsest.core.outbox import emit


class PipelineTimeout(PalimpsestError):
    """The awaited event did not arrive in time."""


E = TypeVar("E", bound=Event)


@dataclass(slots=True)
class Waiter:
    """Collects events of the given types whose ``request_id`` matches, parsed."""

    request_id: UUID
    types: tuple[type[Event], ...]
    found: dict[type[Event], Event] = field(default_factory=dict)
    arrived: asyncio.Event = field(default_factory=asyncio.Event)

    async def on_msg(self, msg: Msg) -> None:
        with contextlib.suppress(ValueError):  # not an event, or not a valid one (pydantic's error is one)
            event = parse_event(msg.data)
            if type(event) in self.types and getattr(event, "request_id", None) == self.request_id:
                self.found[type(event)] = event
                self.arrived.set()


@dataclass(frozen=True, slots=True)
class Arrived:
    """The awaited events, by type: ``arrived[SnapshotBuilt]`` (required) or ``arrived.get(...)``."""

    events: dict[type[Event], Event]

    def get(self, event_type: type[E]) -> E | None:
        found = self.events.get(event_type)
        return found if isinstance(found, event_type) else None

    def __getitem__(self, event_type: type[E]) -> E:
        found = self.get(event_type)
        if found is None:
            raise KeyError(event_type.TYPE)
        return found


@contextlib.asynccontextmanager
async def watching(nc: NATS, request_id: UUID, types: tuple[type[Event], ...]) -> AsyncIterator[Waiter]:
    waiter = Waiter(request_id, types)
    subs = [await nc.subscribe(subject_of(t.TYPE), cb=waiter.on_msg) for t in types]
    try:
        yield waiter
    finally:
        for sub in subs:
            with contextlib.suppress(Exception):
                await sub.unsubscribe()


async def wait_for(
    waiter: Waiter,
    required: tuple[type[Event], ...],
    *,
    timeout_s: float,
    tick: Callable[[], Awaitable[None]] | None = None,
    optional: tuple[type[Event], ...] = (),
    optional_grace_s: float = 30.0,
) -> Arrived:
    """Wait until every ``required`` type arrived (and ``optional`` ones, up to a grace period)."""
    deadline = time.monotonic() + timeout_s
    required_at: float | None = None
    while True:
        have_required = all(t in waiter.found for t in required)
        if have_required:
            required_at = required_at or time.monotonic()
            if all(t in waiter.found for t in optional) or time.monotonic() - required_at > optional_grace_s:
                return Arrived(dict(waiter.found))
        if time.monotonic() > deadline:
            missing = [t.TYPE for t in (*required, *optional) if t not in waiter.found]
            raise PipelineTimeout(f"no {', '.join(missing)} after {timeout_s:.0f}s")
        waiter.arrived.clear()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(waiter.arrived.wait(), 0.5)
        if tick is not None:
            await tick()


async def request(pool: Pool, event: Event) -> None:
    async with tenant_tx(pool, event.tenant_id) as conn:
        await emit(conn, event)


async def index_and_wait(
    pool: Pool,
    nc: NATS,
    tenant: UUID,
    repository_id: UUID,
    *,
    reason: str = "cli",
    timeout_s: float = 3600.0,
    tick: Callable[[UUID], Awaitable[None]] | None = None,
    commit_sha: str | None = None,
    recency_required: bool = False,
) -> Arrived:
    """Request an index build and wait for ``snapshot.built`` and ``recency.scanned`` (for the
    scan, a grace period unless ``recency_required``; not at all for a review base's pinned
    snapshot, which the scanner leaves alone)."""
    event = IndexRequested(
        tenant_id=tenant,
        repository_id=repository_id,
        reason=reason,  # type: ignore[arg-type]
        commit_sha=commit_sha,
    )
    scan: tuple[type[Event], ...] = () if reason == "review" else (RecencyScanned,)
    required: tuple[type[Event], ...] = (SnapshotBuilt, *scan) if recency_required else (SnapshotBuilt,)
    optional: tuple[type[Event], ...] = () if recency_required else scan
    async with watching(nc, event.request_id, (SnapshotBuilt, RecencyScanned)) as waiter:
        await request(pool, event)

        async def on_tick() -> None:
            if tick is not None:
                await tick(event.request_id)

        return await wait_for(waiter, required, timeout_s=timeout_s, tick=on_tick, optional=optional)
