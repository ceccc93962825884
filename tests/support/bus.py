"""A test consumer: records what it applied so tests can assert exact counts."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from uuid import UUID

from palimpsest.core.bus import ConsumerSpec
from palimpsest.core.consumer import HandlerContext
from palimpsest.core.events import Event
from palimpsest.core.service import Infra, ServiceDefinition, run


@dataclass
class Recorder:
    """Counts applications per event id (only for events of ``tenant``)."""

    tenant: UUID
    applied: Counter[str] = field(default_factory=Counter)
    attempts: Counter[str] = field(default_factory=Counter)
    fail_first: int = 0  # fail this many deliveries of each event before succeeding
    always_fail: bool = False
    on_apply: Callable[[Event], Awaitable[None]] | None = None

    async def handle(self, event: Event, ctx: HandlerContext) -> None:
        if event.tenant_id != self.tenant:
            return
        key = str(event.id)
        self.attempts[key] += 1
        if self.always_fail or self.attempts[key] <= self.fail_first:
            raise RuntimeError(f"planted failure #{self.attempts[key]}")
        async with ctx.transaction() as conn:
            await conn.execute("SELECT 1")
        self.applied[key] += 1
        if self.on_apply is not None:
            await self.on_apply(event)

    async def wait_for(self, count: int, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while sum(1 for v in self.applied.values() if v) < count:
            if time.monotonic() > deadline:
                raise AssertionError(f"applied {len(self.applied)} of {count} events in {timeout}s")
            await asyncio.sleep(0.05)


@contextlib.asynccontextmanager
async def consuming(
    infra: Infra, name: str, recorder: Recorder, event_types: tuple[str, ...] = ("probe",), relay: bool = True
) -> AsyncIterator[asyncio.Event]:
    """Run a consumer named ``name`` (and the relay) until the block ends."""
    stop = asyncio.Event()
    started = asyncio.Event()
    handlers = dict.fromkeys(event_types, recorder.handle)
    definition = ServiceDefinition(name, handlers, ConsumerSpec(name, event_types, batch=8, deliver_new=True))
    task = asyncio.create_task(run([definition], infra, stop, relay=relay, started=started))
    waiter = asyncio.ensure_future(started.wait())
    await asyncio.wait({task, waiter}, return_when=asyncio.FIRST_COMPLETED)
    if task.done():
        task.result()
    try:
        yield stop
    finally:
        stop.set()
        await asyncio.gather(task, return_exceptions=True)
