"""Outbox and inbox under faults: nothing lost, nothing applied twice — exact counts asserted."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator

import pytest
from pydantic import SecretStr

from palimpsest.cli.embedded import EmbeddedNats
from palimpsest.core import bus
from palimpsest.core.admin import bus_config
from palimpsest.core.db import system_tx, tenant_tx
from palimpsest.core.deadletters import list_dead_letters, replay
from palimpsest.core.events import Probe
from palimpsest.core.outbox import emit
from palimpsest.core.relay import Relay
from palimpsest.core.service import Infra, close_infra, open_infra
from tests.conftest import settings_for
from tests.support.bus import Recorder, consuming
from tests.support.servers import ServerSet
from tests.support.tenants import create_tenant


async def _write(infra: Infra, tenant: uuid.UUID, n: int) -> list[str]:
    events = [Probe(tenant_id=tenant, note=f"e{i}") for i in range(n)]
    async with tenant_tx(infra.pool, tenant) as conn:
        await emit(conn, *events)
    return [str(e.id) for e in events]


async def _unpublished(infra: Infra, ids: list[str]) -> int:
    async with system_tx(infra.pool) as conn:
        cur = await conn.execute(
            "SELECT count(*) AS n FROM outbox WHERE published_at IS NULL AND id = ANY(%s::uuid[])", (ids,)
        )
        row = await cur.fetchone()
        return int(row["n"]) if row else -1


async def test_event_rolls_back_with_its_transaction(infra: Infra) -> None:
    tenant = await create_tenant(infra.pool, "rollback")
    ev = Probe(tenant_id=tenant)
    with pytest.raises(RuntimeError):
        async with tenant_tx(infra.pool, tenant) as conn:
            await emit(conn, ev)
            raise RuntimeError("state change failed")
    async with system_tx(infra.pool) as conn:
        cur = await conn.execute("SELECT count(*) AS n FROM outbox WHERE id = %s", (ev.id,))
        assert (await cur.fetchone())["n"] == 0  # type: ignore[index]


async def test_delivered_once_and_marked(infra: Infra) -> None:
    tenant = await create_tenant(infra.pool, "basic")
    rec = Recorder(tenant)
    async with consuming(infra, "t-basic", rec):
        ids = await _write(infra, tenant, 50)
        await rec.wait_for(50)
    assert set(rec.applied) == set(ids)
    assert all(v == 1 for v in rec.applied.values())
    assert await _unpublished(infra, ids) == 0


async def test_flaky_handler_applied_once(infra: Infra) -> None:
    tenant = await create_tenant(infra.pool, "flaky")
    rec = Recorder(tenant, fail_first=2)
    async with consuming(infra, "t-flaky", rec):
        ids = await _write(infra, tenant, 5)
        await rec.wait_for(5)
    assert {k: rec.attempts[k] for k in ids} == dict.fromkeys(ids, 3)
    assert {k: rec.applied[k] for k in ids} == dict.fromkeys(ids, 1)
    async with system_tx(infra.pool) as conn:
        cur = await conn.execute(
            "SELECT count(*) AS n FROM inbox WHERE consumer = 't-flaky' AND event_id = ANY(%s::uuid[])",
            (ids,),
        )
        assert (await cur.fetchone())["n"] == 5  # type: ignore[index]


async def test_relay_killed_between_publish_and_mark(infra: Infra, stack: ServerSet) -> None:
    """The PubAck arrived but the relay died before marking: republished, deduplicated, applied once."""
    tenant = await create_tenant(infra.pool, "crash")
    rec = Recorder(tenant)
    async with consuming(infra, "t-crash", rec, relay=False):
        ids = await _write(infra, tenant, 20)

        async def crash(_: list[str]) -> None:
            raise SystemExit("relay process killed after PubAck")

        crashing = Relay(infra.pool, infra.nc, listen_url=stack.direct_url, batch=100)
        crashing.after_publish = crash
        with pytest.raises(SystemExit):
            await crashing.publish_pending()
        assert await _unpublished(infra, ids) == 20  # the claim rolled back with the "process"
        await rec.wait_for(20)  # the consumer got the first copies
        restarted = Relay(infra.pool, infra.nc, listen_url=stack.direct_url, batch=100)
        assert await restarted.publish_pending() == 20  # published again, then marked
        await asyncio.sleep(1.0)  # give any duplicate a chance to show up
    assert {k: rec.applied[k] for k in ids} == dict.fromkeys(ids, 1)
    assert await _unpublished(infra, ids) == 0


async def test_redelivered_event_is_not_applied_twice(infra: Infra, stack: ServerSet) -> None:
    """Same envelope published twice under different message ids (outside the dedupe window)."""
    tenant = await create_tenant(infra.pool, "dupe")
    rec = Recorder(tenant)
    ev = Probe(tenant_id=tenant)
    js = infra.nc.jetstream()
    async with consuming(infra, "t-dupe", rec, relay=False):
        for msg_id in ("a", "b", "c"):
            await js.publish(
                ev.subject, ev.to_json(), stream=bus.STREAM, headers={"Nats-Msg-Id": f"{ev.id}{msg_id}"}
            )
        await rec.wait_for(1)
        await asyncio.sleep(1.0)
    assert rec.applied[str(ev.id)] == 1


@pytest.fixture
async def private_nats(stack: ServerSet) -> AsyncIterator[tuple[EmbeddedNats, Infra]]:
    """A NATS server of this test's own, so it can be stopped and started again."""
    server = EmbeddedNats(stack.home / f"nats-{uuid.uuid4().hex[:6]}")
    url = server.start()
    settings = settings_for(stack, nats_url=url, database_url=SecretStr(stack.app_url))
    await bus.bus_init(url, bus_config(settings))
    infra = await open_infra(settings, "faults")
    try:
        yield server, infra
    finally:
        await close_infra(infra)
        server.stop()


async def test_nats_down_while_events_are_written(private_nats: tuple[EmbeddedNats, Infra]) -> None:
    server, infra = private_nats
    tenant = await create_tenant(infra.pool, "nats-down")
    rec = Recorder(tenant)
    async with consuming(infra, "t-natsdown", rec):
        first = await _write(infra, tenant, 10)
        await rec.wait_for(10)
        server.stop()  # NATS goes away; the relay cannot get PubAcks
        during = await _write(infra, tenant, 25)
        await asyncio.sleep(1.5)
        assert await _unpublished(infra, during) == 25  # kept, not lost, not marked
        server.start()  # same port, same JetStream store
        await rec.wait_for(35, timeout=60)
        await asyncio.sleep(0.5)
    assert {k: rec.applied[k] for k in first + during} == dict.fromkeys(first + during, 1)
    assert await _unpublished(infra, during) == 0


async def test_poison_message_dead_lettered_and_replayed(infra: Infra) -> None:
    tenant = await create_tenant(infra.pool, "poison")
    rec = Recorder(tenant, always_fail=True)
    ids = []
    async with consuming(infra, "t-poison", rec):
        ids = await _write(infra, tenant, 1)
        for _ in range(200):
            letters = [d for d in await list_dead_letters(infra.pool) if d.event_id == ids[0]]
            if letters:
                break
            await asyncio.sleep(0.1)
        else:
            raise AssertionError("no dead letter recorded")
    dead = letters[0]
    assert dead.consumer == "t-poison"
    assert dead.deliveries == infra.settings.max_deliver
    assert rec.attempts[ids[0]] == infra.settings.max_deliver
    assert rec.applied[ids[0]] == 0
    assert dead.last_error is not None and "planted failure" in dead.last_error
    # the operator fixes the handler and replays
    rec.always_fail = False
    async with consuming(infra, "t-poison", rec):
        replayed = await replay(infra.pool, infra.nc, dead.id)
        assert replayed.replay_count == 1
        await rec.wait_for(1)
        await asyncio.sleep(0.5)
    assert rec.applied[ids[0]] == 1
    assert [d.id for d in await list_dead_letters(infra.pool) if d.event_id == ids[0]] == []
