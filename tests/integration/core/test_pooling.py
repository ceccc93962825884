"""What must hold behind PgBouncer in transaction mode (run with PALIMPSEST_TEST_PGBOUNCER=1, as CI
does; directly, the same tests pin the behaviour): the embedder's repository lock and the migrator's
lock are transaction-scoped, the relay LISTENs only on the direct URL and otherwise polls, and the
pool prepares no statement when a transaction-mode pooler is declared in front (and does, for
speed, when none is: issue 55)."""

from __future__ import annotations

import asyncio
import logging
import uuid

import pytest
from pydantic import SecretStr

from palimpsest.core.db import Pool, open_pool, system_tx, tenant_tx
from palimpsest.core.events import Probe
from palimpsest.core.migrate import migrate
from palimpsest.core.outbox import emit
from palimpsest.core.relay import Relay
from palimpsest.core.service import Infra, close_infra, open_infra
from palimpsest.embedder.locking import repository_lock
from tests.conftest import settings_for
from tests.support.servers import APP_ROLE, ServerSet
from tests.support.tenants import create_tenant


async def _beat() -> None:
    return None


async def test_the_repository_lock_admits_one_run_at_a_time(stack: ServerSet) -> None:
    pool = await open_pool(
        stack.app_url, transaction_pooler=stack.pooler is not None, min_size=1, max_size=6, name="lock-test"
    )
    try:
        repo, other = uuid.uuid4(), uuid.uuid4()
        order: list[str] = []
        first_in = asyncio.Event()
        release = asyncio.Event()

        async def first() -> None:
            async with repository_lock(pool, repo, beat=_beat, poll_s=0.05):
                order.append("first in")
                first_in.set()
                await release.wait()
                order.append("first out")

        async def second() -> None:
            await first_in.wait()
            async with repository_lock(pool, repo, beat=_beat, poll_s=0.05):
                order.append("second in")

        t1 = asyncio.create_task(first())
        t2 = asyncio.create_task(second())
        await first_in.wait()
        async with asyncio.timeout(10):  # another repository is not held up by it
            async with repository_lock(pool, other, beat=_beat, poll_s=0.05):
                order.append("other in")
        for _ in range(10):  # the second run keeps polling, and stays out, while the first holds it
            await asyncio.sleep(0.05)
            # statements on the pool's other connections go through the pooler meanwhile
            async with system_tx(pool) as conn:
                await conn.execute("SELECT 1")
        assert "second in" not in order
        release.set()
        async with asyncio.timeout(10):
            await asyncio.gather(t1, t2)
        assert order == ["first in", "other in", "first out", "second in"]
    finally:
        await pool.close()


async def test_concurrent_migrators_wait_for_each_other(stack: ServerSet) -> None:
    reports = await asyncio.gather(*(migrate(stack.owner_url, app_role=APP_ROLE) for _ in range(3)))
    assert all(r.applied == [] for r in reports)  # the session's schema is current; each one saw it


async def test_the_relay_polls_without_a_direct_url_and_says_so(
    stack: ServerSet, infra: Infra, caplog: pytest.LogCaptureFixture
) -> None:
    tenant = await create_tenant(infra.pool, f"poll-{uuid.uuid4().hex[:8]}")
    relay = Relay(infra.pool, infra.nc, listen_url=None, poll_s=0.1)
    event = Probe(tenant_id=tenant, note="polled")
    stop = asyncio.Event()
    with caplog.at_level(logging.INFO, logger="palimpsest.core.relay"):
        task = asyncio.create_task(relay.run(stop))
        await asyncio.sleep(0.3)
        async with tenant_tx(infra.pool, tenant) as conn:
            await emit(conn, event)
        try:
            async with asyncio.timeout(20):
                while True:
                    async with system_tx(infra.pool) as conn:
                        cur = await conn.execute("SELECT published_at FROM outbox WHERE id = %s", (event.id,))
                        row = await cur.fetchone()
                    if row and row["published_at"] is not None:
                        break
                    await asyncio.sleep(0.1)
        finally:
            stop.set()
            await task
    said = [r.getMessage() for r in caplog.records if r.name == "palimpsest.core.relay"]
    assert any("polling the outbox every 0.1 s" in m for m in said), said
    assert not any("LISTEN" in m and "woken" in m for m in said)


async def test_the_relay_listens_on_the_direct_url(
    stack: ServerSet, infra: Infra, caplog: pytest.LogCaptureFixture
) -> None:
    relay = Relay(infra.pool, infra.nc, listen_url=stack.direct_url, poll_s=30.0)
    stop = asyncio.Event()
    with caplog.at_level(logging.INFO, logger="palimpsest.core.relay"):
        task = asyncio.create_task(relay.run(stop))
        await asyncio.sleep(0.2)
        stop.set()
        await task
    assert any("woken by LISTEN" in r.getMessage() for r in caplog.records)


async def _prepared_after_ten_runs(pool: Pool) -> int:
    """How many copies of one query the pool's connection holds prepared after it ran ten times
    (past psycopg's default threshold of five).

    All of it in one transaction, so a transaction-mode pooler keeps it on one server connection,
    and only the query's own text is counted: behind a pooler that server connection is shared,
    and other clients' prepared statements on it are not this pool's doing."""
    marker = f"prepare-probe-{uuid.uuid4().hex}"
    async with system_tx(pool) as conn:
        for _ in range(10):
            await conn.execute(f"SELECT %s::int AS n -- {marker}", (1,))
        cur = await conn.execute(
            "SELECT count(*) AS n FROM pg_prepared_statements WHERE strpos(statement, %s) > 0",
            (marker,),
        )
        row = await cur.fetchone()
    assert row is not None
    return int(row["n"])


async def test_pool_connections_prepare_where_no_pooler_is_declared(stack: ServerSet) -> None:
    # straight to PostgreSQL (the relay's direct URL): repeated statements skip planning
    pool = await open_pool(
        stack.direct_url, transaction_pooler=False, min_size=1, max_size=1, name="prepare-test"
    )
    try:
        assert await _prepared_after_ten_runs(pool) >= 1
    finally:
        await pool.close()


async def test_services_prepare_only_without_a_declared_pooler(stack: ServerSet) -> None:
    for declared in (False, True):
        settings = settings_for(
            stack, database_url=SecretStr(stack.direct_url), database_transaction_pooler=declared
        )
        infra = await open_infra(settings, "prepare-test")
        try:
            assert (await _prepared_after_ten_runs(infra.pool) >= 1) is not declared
        finally:
            await close_infra(infra)


async def test_pool_connections_never_prepare_behind_a_declared_pooler(stack: ServerSet) -> None:
    pool = await open_pool(
        stack.app_url, transaction_pooler=True, min_size=1, max_size=1, name="prepare-test"
    )
    try:
        assert await _prepared_after_ten_runs(pool) == 0
    finally:
        await pool.close()


async def test_the_app_url_goes_through_the_pooler_when_the_run_uses_one(stack: ServerSet) -> None:
    if stack.pooler is None:
        pytest.skip("this run has no PgBouncer (PALIMPSEST_TEST_PGBOUNCER=1 adds one)")
    assert f"port={stack.pooler.port}" in stack.app_url
    pool = await open_pool(
        stack.app_url, transaction_pooler=stack.pooler is not None, min_size=1, max_size=1, name="pooler-test"
    )
    try:
        async with system_tx(pool) as conn:
            cur = await conn.execute("SELECT inet_server_port() AS port")
            row = await cur.fetchone()
        assert row is not None and row["port"] != stack.pooler.port  # PostgreSQL's own, behind it
    finally:
        await pool.close()
