"""Running the recency-scanner through the bus in a test, and watching what it emits.

The service's own definition is run with :func:`palimpsest.core.service.run`; only two things
differ from production: the durable consumer gets a name of its own and sees only new events
(the stream holds other tests' ``index.requested`` events, which a shared consumer would also
pick up), and the handler skips events of tenants the test did not create. Credentials come from an injected function,
the way the ingest service's decryption will plug in.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any
from uuid import UUID

from nats.aio.msg import Msg

from palimpsest.core.bus import ConsumerSpec
from palimpsest.core.consumer import HandlerContext
from palimpsest.core.db import tenant_tx
from palimpsest.core.events import IndexRequested
from palimpsest.core.ids import uuid7
from palimpsest.core.outbox import emit
from palimpsest.core.service import Infra, ServiceDefinition, run
from palimpsest.recency_scanner.scanner import AuthProvider
from palimpsest.recency_scanner.service import Settings, definition
from palimpsest.recency_scanner.source import no_auth


def scanner_settings(**overrides: Any) -> Settings:
    values: dict[str, Any] = {
        "recency_scan": True,
        "allow_local_sources": False,
        "ack_wait_s": 5.0,
        "private_provider_hosts": ("127.0.0.1",),  # the tests' git servers: an explicit allowance
    }
    values.update(overrides)
    return Settings.model_construct(**{**Settings().model_dump(), **values})


@contextlib.asynccontextmanager
async def running_scanner(
    infra: Infra,
    settings: Settings,
    tenants: set[UUID],
    *,
    auth_provider: AuthProvider = no_auth,
) -> AsyncIterator[None]:
    service = definition(settings, auth_provider=auth_provider)
    handler = service.handlers["index.requested"]

    async def only_ours(event: Any, ctx: HandlerContext) -> None:
        if event.tenant_id in tenants:
            await handler(event, ctx)

    name = f"t-recency-{uuid7().hex[-12:]}"
    test_definition = ServiceDefinition(
        service.name,
        {"index.requested": only_ours},
        ConsumerSpec(name, ("index.requested",), batch=4, deliver_new=True),
    )
    stop = asyncio.Event()
    started = asyncio.Event()
    task = asyncio.create_task(run([test_definition], infra, stop, started=started))
    waiter = asyncio.ensure_future(started.wait())
    await asyncio.wait({task, waiter}, return_when=asyncio.FIRST_COMPLETED)
    if task.done():
        waiter.cancel()
        task.result()
    try:
        yield
    finally:
        stop.set()
        await asyncio.gather(task, return_exceptions=True)
        with contextlib.suppress(Exception):
            from palimpsest.core import bus

            await infra.nc.jetstream().delete_consumer(bus.STREAM, name)


class Scans:
    """Collects ``recency.scanned`` events from the bus by request id."""

    def __init__(self) -> None:
        self.events: dict[str, dict[str, Any]] = {}
        self._arrived = asyncio.Event()

    async def on_msg(self, msg: Msg) -> None:
        data = json.loads(msg.data)
        self.events.setdefault(str(data.get("request_id")), data)
        self._arrived.set()

    async def wait(self, request_id: UUID, timeout: float = 60.0) -> dict[str, Any]:
        async with asyncio.timeout(timeout):
            while str(request_id) not in self.events:
                self._arrived.clear()
                await self._arrived.wait()
        return self.events[str(request_id)]


@contextlib.asynccontextmanager
async def watching_scans(infra: Infra) -> AsyncIterator[Scans]:
    scans = Scans()
    sub = await infra.nc.subscribe("pal.recency.scanned", cb=scans.on_msg)
    try:
        yield scans
    finally:
        await sub.unsubscribe()


async def request_index(infra: Infra, event: IndexRequested) -> None:
    """Publish ``index.requested`` the production way: through the outbox."""
    async with tenant_tx(infra.pool, event.tenant_id) as conn:
        await emit(conn, event)


async def register(
    infra: Infra, tenant: UUID, clone_url: str, *, provider: str = "github", branch: str = "main"
) -> UUID:
    repository_id = uuid7()
    async with tenant_tx(infra.pool, tenant) as conn:
        await conn.execute(
            "INSERT INTO repositories (tenant_id, repository_id, provider, full_name, clone_url, default_branch)"
            " VALUES (%s, %s, %s, %s, %s, %s)",
            (tenant, repository_id, provider, f"team/{repository_id.hex[-6:]}", clone_url, branch),
        )
    return repository_id


async def query(infra: Infra, tenant: UUID, sql: str, *params: Any) -> list[dict[str, Any]]:
    async with tenant_tx(infra.pool, tenant) as conn:
        cur = await conn.execute(sql, params)
        return [dict(r) for r in await cur.fetchall()]


class ArgvWatcher:
    """Polls every process's argv (/proc/*/cmdline) in a thread until stopped."""

    def __init__(self) -> None:
        self.argvs: set[bytes] = set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> ArgvWatcher:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def _run(self) -> None:
        while not self._stop.is_set():
            for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
                with contextlib.suppress(OSError):
                    argv = cmdline.read_bytes()
                    if argv:
                        self.argvs.add(argv)
            self._stop.wait(0.01)

    def saw(self, needle: bytes) -> bool:
        return any(needle in argv for argv in self.argvs)

    def saw_clone(self) -> bool:
        return any(b"clone\0" in argv for argv in self.argvs)
