"""An event a consumer receives but cannot handle fails loudly: never acknowledged, a dead letter in the end."""

from __future__ import annotations

import asyncio
import uuid

import pytest

from palimpsest.core import bus, deadletters, metrics
from palimpsest.core.consumer import ConsumerRuntime, Retry
from palimpsest.core.db import system_tx, tenant_tx
from palimpsest.core.events import AnalysisRequested, Event, IndexRequested, Probe
from palimpsest.core.outbox import emit
from palimpsest.core.service import Infra, ServiceDefinition, run
from palimpsest.core.topology import TopologyError
from tests.support.bus import Recorder, consuming
from tests.support.tenants import create_tenant


async def test_a_service_whose_handlers_disagree_with_its_consumer_does_not_start(infra: Infra) -> None:
    name = f"t-mismatch-{uuid.uuid4().hex[:8]}"
    recorder = Recorder(uuid.uuid4())
    spec = bus.ConsumerSpec(name, ("probe", "analysis.requested"), deliver_new=True)
    with pytest.raises(TopologyError, match=r"no handler for 'analysis\.requested'"):
        await run([ServiceDefinition(name, {"probe": recorder.handle}, spec)], infra, asyncio.Event())
    js = infra.nc.jetstream()
    with pytest.raises(Exception, match="consumer not found"):  # refused before declaring anything
        await js.consumer_info(bus.STREAM, name)


async def test_an_undeclared_event_type_is_refused_by_the_outbox(infra: Infra) -> None:
    class Stray(Event):
        TYPE = "stray.happened"

    tenant = await create_tenant(infra.pool, "stray")
    with pytest.raises(TopologyError, match=r"'stray\.happened' is not declared"):
        async with tenant_tx(infra.pool, tenant) as conn:
            await emit(conn, Probe(tenant_id=tenant), Stray(tenant_id=tenant))
    async with system_tx(infra.pool) as conn:
        cur = await conn.execute("SELECT count(*) AS n FROM outbox WHERE tenant_id = %s", (tenant,))
        assert (await cur.fetchone())["n"] == 0  # type: ignore[index]


async def test_an_event_without_a_handler_is_retried_then_dead_lettered(infra: Infra) -> None:
    """The server-side consumer receives more than the running code handles (another version declared
    it): the unhandled event is NAKed on every delivery, recorded as failing and ends a dead letter,
    while the events the code does handle are applied."""
    tenant = await create_tenant(infra.pool, "unhandled")
    name = f"t-unhandled-{uuid.uuid4().hex[:8]}"
    wide = bus.ConsumerSpec(name, ("probe", "analysis.requested"), batch=4, deliver_new=True)
    await bus.declare(infra.nc, infra.bus_config, [wide])
    recorder = Recorder(tenant)
    runtime = ConsumerRuntime(name, infra.pool, {"probe": recorder.handle}, infra.settings.retry_delays_s)
    probe = Probe(tenant_id=tenant)
    stray = AnalysisRequested(tenant_id=tenant, repository_id=uuid.uuid4())
    stop = asyncio.Event()
    recorder_task = asyncio.create_task(deadletters.run_recorder(infra.pool, infra.nc, wide, stop))
    sub = await infra.nc.jetstream().pull_subscribe(wide.subjects[0], durable=name, stream=bus.STREAM)
    outcomes: list[str] = []
    async with consuming(infra, f"{name}-relay-only", Recorder(uuid.uuid4())):  # the relay publishes
        async with tenant_tx(infra.pool, tenant) as conn:
            await emit(conn, probe, stray)
        letters: list[deadletters.DeadLetter] = []
        for _ in range(300):
            try:
                msgs = await sub.fetch(4, timeout=0.2)
            except TimeoutError:
                msgs = []
            for msg in msgs:
                try:
                    outcome = await runtime.handle(msg.data, msg.headers, msg.metadata.num_delivered or 1)
                    outcomes.append(outcome.status)
                    await msg.ack()
                except Retry as retry:
                    outcomes.append("retry")
                    await msg.nak(delay=retry.delay)
            letters = [
                d
                for d in await deadletters.list_dead_letters(infra.pool, limit=10_000)
                if d.event_id == str(stray.id)
            ]
            if letters:
                break
        stop.set()
        await asyncio.gather(recorder_task, return_exceptions=True)
        await sub.unsubscribe()
    assert recorder.applied[str(probe.id)] == 1
    assert outcomes.count("applied") == 1
    assert outcomes.count("retry") == infra.settings.max_deliver
    assert letters, "the unhandled event never became a dead letter"
    assert letters[0].consumer == name and letters[0].deliveries == infra.settings.max_deliver
    assert (
        letters[0].last_error is not None
        and f"{name} has no handler for analysis.requested" in letters[0].last_error
    )
    counted = metrics.REGISTRY.get_sample_value(
        "palimpsest_events_consumed_total",
        {"consumer": name, "type": "analysis.requested", "outcome": "unhandled"},
    )
    assert counted == infra.settings.max_deliver
    async with system_tx(infra.pool) as conn:
        cur = await conn.execute("SELECT count(*) AS n FROM inbox WHERE event_id = %s", (stray.id,))
        assert (await cur.fetchone())["n"] == 0  # type: ignore[index]  # never marked applied


async def test_where_the_server_keeps_no_filter_events_for_other_consumers_are_acknowledged(
    infra: Infra,
) -> None:
    """nats-server < 2.10 drops ``filter_subjects``: such a consumer receives every event of the stream.
    One it never asked for is another consumer's (which gets its own copy) and is acknowledged; one
    it asked for but cannot handle still fails loudly."""
    tenant = await create_tenant(infra.pool, "unfiltered")
    name = f"t-unfiltered-{uuid.uuid4().hex[:8]}"
    recorder = Recorder(tenant)
    runtime = ConsumerRuntime(
        name,
        infra.pool,
        {"probe": recorder.handle},
        infra.settings.retry_delays_s,
        addressed=frozenset({"probe", "analysis.requested"}),
    )
    foreign = IndexRequested(tenant_id=tenant, repository_id=uuid.uuid4())
    outcome = await runtime.handle(foreign.to_json(), None)
    assert (outcome.status, outcome.detail) == ("ignored", "not addressed to this consumer")
    counted = metrics.REGISTRY.get_sample_value(
        "palimpsest_events_consumed_total",
        {"consumer": name, "type": "index.requested", "outcome": "not_addressed"},
    )
    assert counted == 1
    with pytest.raises(Retry):
        await runtime.handle(AnalysisRequested(tenant_id=tenant, repository_id=uuid.uuid4()).to_json(), None)
    probe = Probe(tenant_id=tenant)
    assert (await runtime.handle(probe.to_json(), None)).status == "applied"
    assert recorder.applied[str(probe.id)] == 1


async def test_a_single_subject_consumer_is_filtered_by_every_server(infra: Infra) -> None:
    """One subject is declared as ``filter_subject``, which servers before 2.10 apply too."""
    spec = bus.ConsumerSpec(f"t-single-{uuid.uuid4().hex[:8]}", ("probe",), deliver_new=True)
    declared = await bus.declare(infra.nc, infra.bus_config, [spec])
    assert declared.unfiltered == frozenset()
    info = await infra.nc.jetstream().consumer_info(bus.STREAM, spec.name)
    assert info.config.filter_subject == spec.subjects[0]
    await infra.nc.jetstream().delete_consumer(bus.STREAM, spec.name)
