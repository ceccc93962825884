"""Fixtures of the ingest tests: the ingest app served by uvicorn on 127.0.0.1, and an HTTP client."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import httpx
import pytest

from palimpsest.core.service import Infra
from palimpsest.ingest.api.app import create_app
from palimpsest.ingest.api.server import IngestServer
from palimpsest.ingest.context import build_context
from tests.integration.ingest.support import Served, fake_resolver, ingest_settings
from tests.support.servers import ServerSet


@pytest.fixture(scope="session")
async def served(infra: Infra, stack: ServerSet) -> AsyncIterator[Served]:
    ctx = build_context(ingest_settings(stack), infra.pool, embedded=False, resolver=fake_resolver)
    ctx.nc = infra.nc  # as the service does: the web view reads consumer lag through it
    server = IngestServer.bind(create_app(ctx), "127.0.0.1", 0)
    stop = asyncio.Event()
    task = asyncio.create_task(server.serve(stop))
    while not await server.ready():
        assert not task.done(), task.exception()
        await asyncio.sleep(0.02)
    try:
        yield Served(ctx, server.url, infra)
    finally:
        stop.set()
        await task


@pytest.fixture(scope="session")
async def client(served: Served) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=served.url, timeout=30) as c:
        yield c
