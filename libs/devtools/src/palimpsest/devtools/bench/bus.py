"""``palimpsest bench bus`` and ``bench stack``: relay throughput, event latency, stack start time."""

from __future__ import annotations

import asyncio
import contextlib
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from pydantic import SecretStr

from palimpsest.cli.stack import open_stack
from palimpsest.cli.tenants import create_tenant
from palimpsest.core import bus
from palimpsest.core.consumer import HandlerContext
from palimpsest.core.db import tenant_tx
from palimpsest.core.events import Probe
from palimpsest.core.ids import uuid7
from palimpsest.core.outbox import emit
from palimpsest.core.relay import Relay
from palimpsest.core.service import ServiceDefinition, close_infra, open_infra, run
from palimpsest.core.settings import BaseServiceSettings
from palimpsest.devtools.scratch import scratch_home

BENCH_CONSUMER = bus.ConsumerSpec("bench-probe", ("probe",), batch=32, deliver_new=True)


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def run_bench_bus(settings: BaseServiceSettings, *, events: int, latency_events: int) -> dict[str, Any]:
    with scratch_home(settings) as s:
        async with open_stack(s) as stack:
            app = s.model_copy(update={"database_url": SecretStr(stack.app_url), "nats_url": stack.nats_url})
            infra = await open_infra(app, "bench")
            try:
                tenant = await create_tenant(infra.pool, f"bench-{uuid7().hex[-8:]}")
                throughput = await _throughput(infra, stack.app_url, tenant, events)
                latency = await _latency(infra, tenant, latency_events)
            finally:
                with contextlib.suppress(Exception):
                    await infra.nc.jetstream().delete_consumer(bus.STREAM, BENCH_CONSUMER.name)
                await close_infra(infra)
            return {
                "benchmark": "bus",
                "postgres": "embedded" if stack.embedded_db else "external",
                "nats": "embedded" if stack.embedded_nats else "external",
                **throughput,
                **latency,
            }


async def _throughput(infra: Any, listen_url: str, tenant: Any, events: int) -> dict[str, Any]:
    written = 0
    while written < events:
        n = min(1000, events - written)
        async with tenant_tx(infra.pool, tenant) as conn:
            await emit(conn, *(Probe(tenant_id=tenant, note="throughput") for _ in range(n)))
        written += n
    relay = Relay(infra.pool, infra.nc, listen_url=listen_url, batch=500)
    t0 = time.perf_counter()
    published = 0
    while published < events:
        n = await relay.publish_pending()
        if n <= 0:
            break
        published += n
    elapsed = time.perf_counter() - t0
    return {
        "relay_events": published,
        "relay_s": round(elapsed, 3),
        "relay_events_per_s": round(published / elapsed, 1) if elapsed else None,
    }


async def _latency(infra: Any, tenant: Any, count: int) -> dict[str, Any]:
    waiting: dict[str, tuple[float, asyncio.Future[float]]] = {}

    async def handle(event: Probe, ctx: HandlerContext) -> None:
        async with ctx.transaction():
            pass
        entry = waiting.get(str(event.id))
        if entry is not None and not entry[1].done():
            entry[1].set_result(time.perf_counter())

    stop = asyncio.Event()
    started = asyncio.Event()
    definition = ServiceDefinition("bench", {"probe": handle}, BENCH_CONSUMER)
    task = asyncio.create_task(run([definition], infra, stop, started=started))
    await started.wait()
    samples: list[float] = []
    try:
        # warm-up: the first events pay for connection and subscription set-up
        for i in range(count + 20):
            ev = Probe(tenant_id=tenant, note="latency")
            fut: asyncio.Future[float] = asyncio.get_running_loop().create_future()
            t0 = time.perf_counter()
            waiting[str(ev.id)] = (t0, fut)
            async with tenant_tx(infra.pool, tenant) as conn:
                await emit(conn, ev)
            done = await asyncio.wait_for(fut, 30)
            if i >= 20:
                samples.append((done - t0) * 1000)
    finally:
        stop.set()
        await asyncio.gather(task, return_exceptions=True)
    return {
        "latency_events": len(samples),
        "latency_p50_ms": round(_pct(samples, 0.50), 2),
        "latency_p99_ms": round(_pct(samples, 0.99), 2),
        "latency_mean_ms": round(statistics.fmean(samples), 2),
    }


async def run_bench_stack(settings: BaseServiceSettings, *, runs: int) -> dict[str, Any]:
    results: dict[str, Any] = {"benchmark": "stack"}
    with tempfile.TemporaryDirectory(prefix="palimpsest-bench-") as tmp:
        s = settings.model_copy(
            update={"home": Path(tmp), "database_url": None, "migration_database_url": None, "nats_url": None}
        )
        t0 = time.perf_counter()
        async with open_stack(s) as stack:
            results["cold_ready_s"] = round(time.perf_counter() - t0, 3)
            results["cold_timings_s"] = stack.timings_s
        warm = []
        for _ in range(runs):
            t0 = time.perf_counter()
            async with open_stack(s) as stack:
                warm.append(time.perf_counter() - t0)
        results["warm_ready_s"] = [round(w, 3) for w in warm]
        results["warm_ready_median_s"] = round(statistics.median(warm), 3)
    return results
