"""The clustered soak's NATS faults: losing one node of the JetStream cluster at a time, and how
long each loss stalled publishing and consuming.

:class:`StallProbe` publishes a small probe message to the events stream every ``interval_s``
(on a subject no service consumes) and reads it back through a durable pull consumer of its own,
replicated like the services' consumers. Each acknowledged publish and each received message is
timestamped; :meth:`StallProbe.stalls` gives, for a window, the longest time without an
acknowledged publish and without a received message (the stall), against the probe's median gap
over the whole run (the yardstick: what "no stall" looks like on this loaded machine).

:func:`lose_node` kills one node with SIGKILL, keeps it down, restarts it and waits until its
replica of the stream is current again. :func:`next_victim` chooses the node: the stream's leader
while it has not been killed yet, else a node not killed yet, so that over ``size`` losses every
node, the leader included, is lost once. Losses never overlap (quorum of three survives one), and
each waits until the cluster is whole again before it starts.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from nats.aio.client import Client as NATS
from nats.js import api

from palimpsest.cli.embedded import EmbeddedNatsCluster
from palimpsest.core import bus

PROBE_SUBJECT = "pal.chaos.probe"  # on the events stream; no service consumes it
PROBE_CONSUMER = "chaos-probe"
WHOLE_TIMEOUT_S = 120.0


def next_victim(nodes: Sequence[str], killed: set[str], leader: str | None) -> str | None:
    """The node to lose next: the stream leader if it was not lost yet, else the first node not
    lost yet (None: every node was lost once)."""
    if leader is not None and leader in nodes and leader not in killed:
        return leader
    return next((n for n in nodes if n not in killed), None)


async def _retry(what: str, check: Any, timeout_s: float) -> Any:
    """Call the coroutine function ``check`` until it returns a truthy value (its errors count as
    "not yet"); raise TimeoutError naming ``what`` when ``timeout_s`` passes."""
    deadline = time.monotonic() + timeout_s
    last: BaseException | None = None
    while time.monotonic() < deadline:
        try:
            got = await check()
            if got:
                return got
        except Exception as exc:  # no leader yet, a server still coming back
            last = exc
        await asyncio.sleep(0.25)
    raise TimeoutError(f"{what}: not within {timeout_s:.0f} s (last error: {last!r})")


async def whole(nc: NATS, size: int) -> bus.StreamCluster | None:
    """The stream's cluster when it has a leader and every other replica is current, else None."""
    c = await bus.stream_cluster(nc)
    ok = c.leader is not None and len(c.followers) == size - 1
    return c if ok and all(r.current and not r.offline for r in c.followers) else None


@dataclass(slots=True)
class NodeLoss:
    node: str
    was_leader: bool
    at: float  # monotonic time of the kill
    down_s: float
    leader_after_s: float | None = None  # a new stream leader answered (losses of the leader)
    rejoined_s: float | None = None  # the restarted node's replica current again
    end: float = 0.0  # monotonic: the window the stall figures cover ends here
    error: str | None = None

    def report(self, started: float, probe: StallProbe | None) -> dict[str, Any]:
        out: dict[str, Any] = {
            "node": self.node,
            "was_stream_leader": self.was_leader,
            "at_s": round(self.at - started, 1),
            "down_s": self.down_s,
            "new_leader_after_s": self.leader_after_s,
            "rejoined_after_s": self.rejoined_s,
        }
        if self.error:
            out["error"] = self.error
        if probe is not None:
            out.update(probe.stalls(self.at, self.end or time.monotonic()))
        return out


async def lose_node(
    cluster: EmbeddedNatsCluster,
    nc: NATS,
    killed: set[str],
    *,
    down_s: float = 5.0,
    settle_s: float = 3.0,
    timeout_s: float = WHOLE_TIMEOUT_S,
) -> NodeLoss | None:
    """Wait until the cluster is whole (and ``settle_s`` more), kill -9 :func:`next_victim`, keep
    it down ``down_s``, restart it and wait until its replica is current. None when every node was
    lost already.
    A cluster that does not become whole, or a node that does not rejoin, is an error on the
    returned record (the soak reports it as a discrepancy)."""
    names = [n.server_name or "" for n in cluster.nodes]
    if next_victim(names, killed, None) is None:
        return None

    async def whole_now() -> bus.StreamCluster | None:
        return await whole(nc, len(names))

    try:
        await _retry("the cluster whole before a node loss", whole_now, timeout_s)
        await asyncio.sleep(settle_s)  # a quiet spell between losses: each stall is its own loss's
        before = await _retry("the cluster whole before a node loss", whole_now, timeout_s)
    except TimeoutError as exc:
        victim = next_victim(names, killed, None)
        if victim is None:
            return None
        killed.add(victim)
        return NodeLoss(victim, False, time.monotonic(), 0.0, error=str(exc), end=time.monotonic())
    assert isinstance(before, bus.StreamCluster)
    victim = next_victim(names, killed, before.leader)
    if victim is None:
        return None
    killed.add(victim)
    node = cluster.node(victim)
    loss = NodeLoss(victim, victim == before.leader, time.monotonic(), down_s)
    await asyncio.to_thread(node.kill)
    try:
        if loss.was_leader:

            async def elected() -> bool:
                c = await bus.stream_cluster(nc)
                return c.leader not in (None, victim)

            await _retry("a new stream leader", elected, timeout_s)
            loss.leader_after_s = round(time.monotonic() - loss.at, 2)
        await asyncio.sleep(max(0.0, loss.at + down_s - time.monotonic()))
        await asyncio.to_thread(node.start)

        async def rejoined() -> bool:
            c = await bus.stream_cluster(nc)
            back = any(r.name == victim and r.current and not r.offline for r in c.followers)
            return back or c.leader == victim

        await _retry(f"{victim} current again after its restart", rejoined, timeout_s)
        loss.rejoined_s = round(time.monotonic() - loss.at, 2)
    except TimeoutError as exc:
        loss.error = str(exc)
        if node.proc is None or node.proc.poll() is not None:
            with contextlib.suppress(Exception):
                await asyncio.to_thread(node.start)
    loss.end = time.monotonic()
    return loss


@dataclass(slots=True)
class StallProbe:
    """Publishes to and consumes from the events stream continuously, timestamping each success."""

    nats_url: str
    interval_s: float = 0.1
    publish_timeout_s: float = 1.0
    drain_timeout_s: float = 60.0
    published: list[float] = field(default_factory=list)  # monotonic times of acknowledged publishes
    received: list[float] = field(default_factory=list)  # monotonic times of received probe messages
    published_ids: set[int] = field(default_factory=set)
    received_ids: set[int] = field(default_factory=set)
    errors: int = 0
    _nc: NATS | None = None
    _tasks: list[asyncio.Task[None]] = field(default_factory=list)
    _stop_publishing: asyncio.Event = field(default_factory=asyncio.Event)
    _stop: asyncio.Event = field(default_factory=asyncio.Event)

    async def start(self) -> None:
        self._nc = await bus.connect(self.nats_url, name="chaos-probe")
        js = self._nc.jetstream()
        await js.add_consumer(  # replicas: the stream's, like the services' consumers
            bus.STREAM,
            config=api.ConsumerConfig(
                durable_name=PROBE_CONSUMER,
                deliver_policy=api.DeliverPolicy.NEW,
                ack_policy=api.AckPolicy.EXPLICIT,
                ack_wait=10.0,
                filter_subject=PROBE_SUBJECT,
            ),
        )
        self._tasks = [
            asyncio.create_task(self._publish(), name="probe-publish"),
            asyncio.create_task(self._consume(), name="probe-consume"),
        ]

    async def stop(self) -> None:
        """Stop publishing, let the consumer drain (up to ``drain_timeout_s``), then stop it."""
        self._stop_publishing.set()
        deadline = time.monotonic() + self.drain_timeout_s
        for _ in range(int(self.drain_timeout_s / 0.1)):
            if not self.lost() or time.monotonic() > deadline:
                break
            await asyncio.sleep(0.1)
        self._stop.set()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._nc is not None:
            with contextlib.suppress(Exception):
                await self._nc.jetstream().delete_consumer(bus.STREAM, PROBE_CONSUMER)
            with contextlib.suppress(Exception):
                await self._nc.close()

    async def _publish(self) -> None:
        assert self._nc is not None
        js = self._nc.jetstream()
        n = 0
        while not self._stop_publishing.is_set():
            n += 1
            try:
                body = json.dumps({"probe": n}).encode()
                await js.publish(PROBE_SUBJECT, body, stream=bus.STREAM, timeout=self.publish_timeout_s)
                self.published.append(time.monotonic())
                self.published_ids.add(n)
            except Exception:  # a node gone, no leader yet: a stall, measured by the gap
                self.errors += 1
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stop_publishing.wait(), self.interval_s)

    async def _consume(self) -> None:
        assert self._nc is not None
        js = self._nc.jetstream()
        sub: Any = None
        while not self._stop.is_set():
            try:
                if sub is None:
                    sub = await js.pull_subscribe_bind(PROBE_CONSUMER, stream=bus.STREAM)
                msgs = await sub.fetch(50, timeout=1.0)
                now = time.monotonic()
                for m in msgs:
                    self.received.append(now)
                    with contextlib.suppress(ValueError, TypeError, KeyError):
                        self.received_ids.add(int(json.loads(m.data)["probe"]))
                    with contextlib.suppress(Exception):
                        await m.ack()
            except TimeoutError:
                continue
            except Exception:  # the consumer's leader gone, a reconnect: bind again
                self.errors += 1
                if sub is not None:
                    with contextlib.suppress(Exception):
                        await sub.unsubscribe()
                sub = None
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._stop.wait(), 0.25)

    def lost(self) -> int:
        """Acknowledged publishes the probe's consumer has not received (yet)."""
        return len(self.published_ids - self.received_ids)

    def baseline(self) -> dict[str, float | None]:
        """The median gap between acknowledged publishes and between received messages (the run's
        "no stall" yardstick)."""
        return {
            "publish_gap_median_s": _median_gap(self.published),
            "consume_gap_median_s": _median_gap(self.received),
        }

    def stalls(self, start: float, end: float) -> dict[str, float | None]:
        """The longest time without an acknowledged publish and without a received message that
        overlaps ``[start, end]`` (from the last success before ``start`` to the first after the
        gap). None: no success after ``start`` at all."""
        return {
            "publish_stall_s": longest_gap(self.published, start, end),
            "consume_stall_s": longest_gap(self.received, start, end),
        }


def longest_gap(times: Sequence[float], start: float, end: float) -> float | None:
    """The longest interval between consecutive ``times`` (sorted) that overlaps ``[start, end]``
    (a window with no time before it counts from ``start``; one whose last time comes before
    ``end`` counts an open gap until ``end``). None when no time follows ``start``."""
    prev: float | None = None
    best: float | None = None
    for t in times:
        if t > start and (prev is None or prev < end):
            gap = t - (start if prev is None else prev)
            best = gap if best is None else max(best, gap)
        prev = t
    if best is None:
        return None
    if prev is not None and prev < end:  # nothing since: the stall is still open at ``end``
        best = max(best, end - prev)
    return round(best, 3)


def _median_gap(times: Sequence[float]) -> float | None:
    gaps = [b - a for a, b in itertools.pairwise(times)]
    return round(statistics.median(gaps), 3) if gaps else None
