"""A real three-node JetStream cluster on loopback: replicated streams and consumers, the seed list,
the status view of the stream's cluster, and losing the stream leader."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import time
from collections.abc import AsyncIterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from palimpsest.cli.embedded import EmbeddedNatsCluster
from palimpsest.cli.status import cluster_view, collect
from palimpsest.core import bus, metrics
from palimpsest.core.admin import bus_config
from palimpsest.core.service import _poll_lag
from palimpsest.devtools.chaos.cluster import NodeLoss, StallProbe, lose_node
from tests.conftest import settings_for
from tests.support.servers import ServerSet

BOUND_S = 60.0  # every wait on the cluster (forming, electing a leader) gives up after this


async def _until(what: str, check: object, timeout: float = BOUND_S) -> object:
    """Retry the coroutine function ``check`` until it returns a truthy value or ``timeout`` passes."""
    deadline = time.monotonic() + timeout
    last: BaseException | None = None
    while time.monotonic() < deadline:
        try:
            got = await check()  # type: ignore[operator]
            if got:
                return got
        except Exception as exc:  # not formed yet, no leader yet
            last = exc
        await asyncio.sleep(0.3)
    raise AssertionError(f"{what}: not within {timeout} s (last error: {last!r})")


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[EmbeddedNatsCluster]:
    c = EmbeddedNatsCluster(tmp_path / "nats", size=3)
    c.start()
    try:
        nc = await bus.connect(c.url, name="probe", reconnect=False)
        try:
            await _until("JetStream meta leader elected", nc.jetstream().account_info)
        finally:
            await nc.close()
        yield c
    finally:
        c.stop()


async def test_bus_init_replicates_streams_and_consumers(cluster: EmbeddedNatsCluster) -> None:
    assert cluster.url.count(",") == 2  # the seed list a deployment sets as PALIMPSEST_NATS_URL
    status = await bus.bus_init(cluster.url, bus.BusConfig(replicas=1))
    assert status[bus.STREAM] == "created"
    status = await bus.bus_init(cluster.url, bus.BusConfig(replicas=3))  # scaled up in place
    assert status[bus.STREAM] == "updated"
    nc = await bus.connect(cluster.url, name="test")
    try:
        js = nc.jetstream()
        for stream in (bus.STREAM, bus.ADVISORY_STREAM):
            assert (await js.stream_info(stream)).config.num_replicas == 3

        async def consumers_replicated() -> bool:  # each consumer has its stream's three copies
            for spec in bus.CONSUMERS.values():
                for stream, name in (
                    (bus.STREAM, spec.name),
                    (bus.ADVISORY_STREAM, spec.dead_letter_consumer),
                ):
                    ci = await js.consumer_info(stream, name)
                    if ci.cluster is None or len(ci.cluster.replicas or []) != 2 or ci.cluster.leader is None:
                        return False
            return True

        await _until("every consumer on three nodes", consumers_replicated)

        async def caught_up() -> bus.StreamCluster | None:
            c = await bus.stream_cluster(nc)
            ok = c.leader and len(c.followers) == 2 and all(r.current for r in c.followers)
            return c if ok else None

        await js.publish("pal.probe", b"{}", stream=bus.STREAM)
        shown = await _until("both followers current", caught_up)
        assert isinstance(shown, bus.StreamCluster)
        assert shown.cluster == "palimpsest"
        assert shown.leader in {"n0", "n1", "n2"}
        assert {r.name for r in shown.followers} == {"n0", "n1", "n2"} - {shown.leader}
        view = cluster_view(shown)  # what `palimpsest status` prints for the stream
        assert view["ok"] is True and view["leader"] == shown.leader and view["replicas"] == 3
        assert {k for k in view if k.startswith("replica:")} == {f"replica:{r.name}" for r in shown.followers}
        assert all("lag=" in str(view[f"replica:{r.name}"]) for r in shown.followers)

        # every service exports the followers' state, which PalimpsestStreamReplicaBehind alerts on
        stop = asyncio.Event()
        poller = asyncio.create_task(_poll_lag(SimpleNamespace(nc=nc), [], stop))  # type: ignore[arg-type]

        async def exported() -> bool:
            return all(
                metrics.STREAM_REPLICA_CURRENT.labels(r.name)._value.get() == 1 for r in shown.followers
            )

        try:
            await _until("the replica gauges set", exported, timeout=10)
        finally:
            stop.set()
            await poller
    finally:
        await nc.close()


async def test_losing_the_stream_leader_loses_nothing(cluster: EmbeddedNatsCluster) -> None:
    await bus.bus_init(cluster.url, bus.BusConfig(replicas=3))
    nc = await bus.connect(cluster.url, name="test")  # reconnects across the seeds
    try:
        js = nc.jetstream()
        for i in range(20):
            await js.publish("pal.probe", f'{{"i":{i}}}'.encode(), stream=bus.STREAM)
        before = await bus.stream_cluster(nc)
        assert before.leader is not None
        cluster.node(before.leader).kill()  # kill -9 the node that leads the stream

        async def new_leader() -> bus.StreamCluster | None:
            c = await bus.stream_cluster(nc)
            return c if c.leader not in (None, before.leader) else None

        after = await _until("a new stream leader elected", new_leader)
        assert isinstance(after, bus.StreamCluster)
        view = cluster_view(after)
        assert view["ok"] is False and before.leader in str(view.get("behind"))  # status says who is gone
        ack = await _until(
            "a publish acknowledged after the leader's loss",
            lambda: js.publish("pal.probe", b'{"i":20}', stream=bus.STREAM, timeout=2.0),
        )
        assert ack
        info = await js.stream_info(bus.STREAM)
        assert info.state.messages == 21  # nothing lost with the leader

        async def consumers_led() -> bool:  # every durable consumer survived it (re-elected a leader)
            for spec in bus.CONSUMERS.values():
                ci = await js.consumer_info(bus.STREAM, spec.name, timeout=2.0)
                if ci.cluster is None or ci.cluster.leader in (None, before.leader):
                    return False
            return True

        await _until("every consumer led by a surviving node", consumers_led)
        node = cluster.node(before.leader)
        node.start()  # back on its port: it rejoins and catches up
        await _until(
            "the restarted node current again",
            lambda: _current(nc, before.leader or ""),
        )
    finally:
        with contextlib.suppress(Exception):
            await nc.close()


async def test_a_service_starting_without_a_quorum_waits_for_it(cluster: EmbeddedNatsCluster) -> None:
    """Two of three nodes down: JetStream has no quorum and cannot declare anything. A service
    starting now retries its declaration instead of exiting; it completes once a node returns."""
    cluster.node("n1").kill()
    cluster.node("n2").kill()
    nc = await bus.connect(cluster.node("n0").url, name="starting-service")
    try:
        with pytest.raises(bus.BusError):  # what a start without the retry met, and exited on
            await bus.declare(nc, bus.BusConfig(replicas=3), [bus.CONSUMERS["chunker"]])
        declaring = asyncio.create_task(
            bus.declare_when_ready(
                nc, bus.BusConfig(replicas=3), [bus.CONSUMERS["chunker"]], within_s=BOUND_S
            )
        )
        await asyncio.sleep(3)
        assert not declaring.done()  # still waiting, not failed
        cluster.node("n1").start()  # a quorum again (two of three)
        declared = await asyncio.wait_for(declaring, BOUND_S)
        # "updated" when an attempt that timed out on the client was applied by the cluster later
        assert declared.status[bus.STREAM] in ("created", "updated") and "chunker" in declared.status
        js = nc.jetstream()
        assert (await js.stream_info(bus.STREAM)).config.num_replicas == 3
        assert (await js.consumer_info(bus.STREAM, "chunker")).config.durable_name == "chunker"
        with pytest.raises(bus.BusError):  # and it does give up, after its bound
            cluster.node("n1").kill()
            await bus.declare_when_ready(
                nc, bus.BusConfig(replicas=3), [bus.CONSUMERS["chunker"]], within_s=2
            )
    finally:
        with contextlib.suppress(Exception):
            await nc.close()


async def _current(nc: object, name: str) -> bool:
    c = await bus.stream_cluster(nc)  # type: ignore[arg-type]
    return any(r.name == name and r.current and r.lag == 0 for r in c.followers) or c.leader == name


async def test_status_reports_the_stream_cluster(
    cluster: EmbeddedNatsCluster, stack: ServerSet, tmp_path: Path
) -> None:
    """`palimpsest status` against the cluster's seed list: the stream's leader and replicas."""
    settings = settings_for(stack, nats_url=cluster.url, stream_replicas=3, home=tmp_path / "home")
    await bus.bus_init(cluster.url, bus_config(settings))

    async def reported() -> dict[str, Any] | None:
        report = await collect(settings)
        shown = report["components"].get("stream:cluster", {})
        return report if shown.get("ok") else None

    report = await _until("status shows the stream's three replicas current", reported)
    assert isinstance(report, dict) and report["ok"] is True
    shown = report["components"]["stream:cluster"]
    assert shown["replicas"] == 3 and shown["leader"] in {"n0", "n1", "n2"}
    assert len([k for k in shown if k.startswith("replica:")]) == 2
    assert all(report["components"][f"consumer:{name}"]["ok"] for name in bus.CONSUMERS)


async def test_the_soak_loses_each_node_once_and_measures_the_stalls(cluster: EmbeddedNatsCluster) -> None:
    """The clustered soak's NATS faults on a real cluster: the stream leader is lost first, every
    node once, one at a time, each rejoining; the probe measures each loss's publish and consume
    stall against its normal gap, and loses no probe message."""
    await _until(  # every peer joined (placing three replicas needs all three)
        "the stream placed on three nodes", lambda: bus.bus_init(cluster.url, bus.BusConfig(replicas=3))
    )
    probe = StallProbe(cluster.url, interval_s=0.05)
    await probe.start()
    nc = await bus.connect(cluster.url, name="test")
    killed: set[str] = set()
    losses: list[NodeLoss] = []
    try:
        await _until("the probe flowing", lambda: asyncio.sleep(0, len(probe.received) >= 5))
        leader = (await bus.stream_cluster(nc)).leader
        for _ in range(3):
            loss = await lose_node(cluster, nc, killed, down_s=1.0, timeout_s=BOUND_S)
            assert loss is not None and loss.error is None, loss
            losses.append(loss)
        assert await lose_node(cluster, nc, killed, down_s=1.0, timeout_s=BOUND_S) is None  # each once
        await asyncio.sleep(1.0)
    finally:
        await probe.stop()
        await nc.close()
    assert losses[0].node == leader and losses[0].was_leader and losses[0].leader_after_s is not None
    assert {loss.node for loss in losses} == {"n0", "n1", "n2"}
    assert all(loss.rejoined_s is not None and loss.rejoined_s >= 1.0 for loss in losses)
    assert all(a.end <= b.at for a, b in itertools.pairwise(losses))  # never two nodes down at once
    normal = probe.baseline()
    assert normal["publish_gap_median_s"] is not None and normal["publish_gap_median_s"] < 1.0
    first = losses[0].report(losses[0].at, probe)
    # losing the leader stops publishing until a new one is elected: longer than a normal gap
    assert (
        first["publish_stall_s"] is not None and first["publish_stall_s"] > 2 * normal["publish_gap_median_s"]
    )
    assert first["consume_stall_s"] is not None and first["at_s"] == 0.0
    assert len(probe.published_ids) > 0 and probe.lost() == 0  # every acknowledged publish consumed
