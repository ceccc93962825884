"""An unreachable database holds a delivery instead of spending it.

A PostgreSQL restart, or a pooler refusing logins, fails every handler at once; were each failure to
cost a ``max_deliver`` attempt, a long enough outage would turn healthy work into dead letters. The
runtime holds the delivery (heartbeats keep JetStream from redelivering it) until the database
answers, then runs the handler again in the same delivery; past its hold it fails as before. A failure
of the work itself is not held.
"""

from __future__ import annotations

import socket
import time
import uuid

import psycopg
import pytest
from psycopg_pool import AsyncConnectionPool

from palimpsest.core.consumer import ConsumerRuntime, HandlerContext, Retry
from palimpsest.core.db import Conn
from palimpsest.core.events import Event, Probe
from palimpsest.core.service import Infra
from tests.support.tenants import create_tenant


class Flaky:
    """Fails its first ``outages`` calls as a lost connection would, then applies the event."""

    def __init__(self, outages: int, error: Exception | None = None) -> None:
        self.outages = outages
        self.error = error or psycopg.OperationalError("server closed the connection unexpectedly")
        self.calls = 0

    async def handle(self, event: Event, ctx: HandlerContext) -> None:
        self.calls += 1
        if self.calls <= self.outages:
            raise self.error
        async with ctx.transaction() as conn:
            await conn.execute("SELECT 1")


async def test_a_lost_connection_is_held_and_the_same_delivery_applies_the_event(infra: Infra) -> None:
    tenant = await create_tenant(infra.pool, "outage")
    flaky = Flaky(outages=2)
    beats: list[float] = []

    async def heartbeat() -> None:
        beats.append(time.monotonic())

    runtime = ConsumerRuntime(f"t-outage-{uuid.uuid4().hex[:8]}", infra.pool, {"probe": flaky.handle})
    outcome = await runtime.handle(Probe(tenant_id=tenant).to_json(), None, 1, heartbeat=heartbeat)
    assert outcome.status == "applied"  # on delivery 1: no NAK, no attempt spent
    assert flaky.calls == 3
    assert len(beats) == 2  # each hold told JetStream the event is still being worked on


async def test_a_failure_of_the_work_itself_is_not_held(infra: Infra) -> None:
    tenant = await create_tenant(infra.pool, "outage-work")
    flaky = Flaky(outages=1, error=psycopg.errors.DeadlockDetected("deadlock detected"))
    runtime = ConsumerRuntime(f"t-outage-{uuid.uuid4().hex[:8]}", infra.pool, {"probe": flaky.handle})
    with pytest.raises(Retry):
        await runtime.handle(Probe(tenant_id=tenant).to_json(), None, 1)
    assert flaky.calls == 1


async def test_a_database_that_stays_away_fails_the_delivery_after_the_hold() -> None:
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    pool: AsyncConnectionPool[Conn] = AsyncConnectionPool(
        f"postgresql://nobody@127.0.0.1:{port}/none?connect_timeout=1", open=False, timeout=0.3
    )
    await pool.open(wait=False)
    try:
        flaky = Flaky(outages=0)
        runtime = ConsumerRuntime("t-outage-away", pool, {"probe": flaky.handle}, outage_hold_s=1.5)
        started = time.monotonic()
        with pytest.raises(Retry) as failed:
            await runtime.handle(Probe(tenant_id=uuid.uuid4()).to_json(), None, 1)
        assert time.monotonic() - started >= 1.5  # held first, then spent the attempt
        assert flaky.calls == 0  # the inbox check could not even run
        assert "PoolTimeout" in type(failed.value.cause).__name__
    finally:
        await pool.close()
