"""Running real service definitions in a test and waiting for the events they emit."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Sequence
from uuid import UUID

from palimpsest.cli.pipeline import Arrived, wait_for, watching
from palimpsest.core.db import tenant_tx
from palimpsest.core.events import Event
from palimpsest.core.outbox import emit
from palimpsest.core.service import Infra, ServiceDefinition, run


@contextlib.asynccontextmanager
async def services(infra: Infra, definitions: Sequence[ServiceDefinition]) -> AsyncIterator[None]:
    stop = asyncio.Event()
    started = asyncio.Event()
    task = asyncio.create_task(run(list(definitions), infra, stop, started=started))
    waiter = asyncio.ensure_future(started.wait())
    await asyncio.wait({task, waiter}, return_when=asyncio.FIRST_COMPLETED)
    if task.done():
        task.result()
    try:
        yield
    finally:
        stop.set()
        await asyncio.gather(task, return_exceptions=True)


async def request_and_wait(
    infra: Infra, event: Event, wait: tuple[type[Event], ...], *, timeout_s: float = 60.0
) -> Arrived:
    """Emit ``event`` through the outbox and wait for events of ``wait`` with its request id."""
    request_id: UUID = event.request_id  # type: ignore[attr-defined]
    async with watching(infra.nc, request_id, wait) as waiter:
        async with tenant_tx(infra.pool, event.tenant_id) as conn:
            await emit(conn, event)
        return await wait_for(waiter, wait, timeout_s=timeout_s)
