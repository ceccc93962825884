"""Running services: shared infrastructure, the FastStream consumers, the relay and the ops endpoint.

A service package exposes ``bootstrap(infra) -> ServiceDefinition``: its handlers (plain functions
keyed by event type) and any background tasks (ingest's HTTP server). :func:`run` starts one or more
definitions in this process — one per pod in a cluster, all six under ``palimpsest up`` — with one
pool, one NATS connection, one outbox relay and one ops endpoint, and stops them cleanly.
FastStream appears only here, the entrypoint layer.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import sys
from collections.abc import Awaitable, Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from faststream import AckPolicy
from faststream.exceptions import NackMessage
from faststream.nats import JStream, NatsBroker, NatsMessage, PullSub
from nats.aio.client import Client as NATS

from palimpsest.core import bus, deadletters, metrics, topology
from palimpsest.core.admin import bus_config
from palimpsest.core.consumer import ConsumerRuntime, Handler, Retry
from palimpsest.core.db import Pool, open_pool, ping, system_tx
from palimpsest.core.errors import SettingsError
from palimpsest.core.ops import OpsServer
from palimpsest.core.relay import Relay
from palimpsest.core.settings import BaseServiceSettings

log = logging.getLogger(__name__)

Background = Callable[["Infra", asyncio.Event], Coroutine[Any, Any, None]]


def closed_on_stop(close: Callable[[], Awaitable[None]]) -> Background:
    """A background task that runs ``close`` (e.g. a model gateway's ``aclose``) when the service
    stops, even when the task is cancelled on the way out."""

    async def closer(_: Infra, stop: asyncio.Event) -> None:
        try:
            await stop.wait()
        finally:
            await asyncio.shield(close())

    return closer


@dataclass(slots=True)
class Infra:
    """What every handler and background task may use; built once per process."""

    settings: BaseServiceSettings
    database_url: str
    nats_url: str
    pool: Pool
    nc: NATS
    standalone: bool = False  # started by main_for (``python -m palimpsest.<service>``), not the CLI's runner
    embedded_db: bool = False  # the CLI's runner on its embedded PostgreSQL (a box key may be generated)
    relay: Relay | None = None  # this process's outbox relay, once run() started it
    ingest_url: str | None = None  # the ingest API's URL, once the ingest service bound its socket

    @property
    def bus_config(self) -> bus.BusConfig:
        return bus_config(self.settings)


@dataclass(slots=True)
class ServiceDefinition:
    name: str
    handlers: Mapping[str, Handler] = field(default_factory=dict)
    consumer: bus.ConsumerSpec | None = None
    background: Sequence[Background] = ()
    ready_checks: Mapping[str, Callable[[], Awaitable[bool]]] = field(default_factory=dict)
    on_stop: Sequence[Callable[[], None]] = ()


def urls(settings: BaseServiceSettings) -> tuple[str, str]:
    if settings.database_url is None:
        raise SettingsError("PALIMPSEST_DATABASE_URL is not set (the application role's PostgreSQL URL)")
    if settings.nats_url is None:
        raise SettingsError("PALIMPSEST_NATS_URL is not set")
    return settings.database_url.get_secret_value(), settings.nats_url


async def open_infra(settings: BaseServiceSettings, name: str) -> Infra:
    db_url, nats_url = urls(settings)
    pool = await open_pool(
        db_url,
        transaction_pooler=settings.database_transaction_pooler,
        min_size=settings.db_pool_min,
        max_size=settings.db_pool_max,
        name=name,
    )
    try:
        nc = await bus.connect(nats_url, name=name, creds_file=settings.nats_creds_file)
    except Exception:
        await pool.close()
        raise
    return Infra(settings, db_url, nats_url, pool, nc)


async def close_infra(infra: Infra) -> None:
    try:
        await infra.nc.close()
    except Exception:  # already closed or never connected
        log.debug("nats close failed", exc_info=True)
    await infra.pool.close()


def _subscribe(broker: NatsBroker, runtime: ConsumerRuntime, spec: bus.ConsumerSpec) -> None:
    subscriber = broker.subscriber(
        spec.subjects[0],
        stream=JStream(name=bus.STREAM, declare=False),
        durable=spec.name,
        pull_sub=PullSub(batch_size=spec.batch, timeout=2.0),
        ack_policy=AckPolicy.NACK_ON_ERROR,
    )

    async def on_message(msg: NatsMessage) -> None:
        raw = msg.raw_message
        deliveries = int(raw.metadata.num_delivered or 1)
        try:
            await runtime.handle(msg.body, raw.headers, deliveries, heartbeat=msg.in_progress)
        except Retry as retry:
            raise NackMessage(delay=retry.delay) from retry.cause

    subscriber(on_message)


async def _poll_lag(infra: Infra, specs: list[bus.ConsumerSpec], stop: asyncio.Event) -> None:
    js = infra.nc.jetstream()
    while not stop.is_set():
        for spec in specs:
            try:
                info = await js.consumer_info(bus.STREAM, spec.name)
                metrics.CONSUMER_PENDING.labels(spec.name).set(info.num_pending or 0)
                metrics.CONSUMER_ACK_PENDING.labels(spec.name).set(info.num_ack_pending or 0)
            except Exception:
                log.debug("consumer_info %s failed", spec.name, exc_info=True)
        try:  # the stream's followers, on a JetStream cluster (none on one server)
            for replica in (await bus.stream_cluster(infra.nc)).followers:
                metrics.STREAM_REPLICA_LAG.labels(replica.name).set(replica.lag)
                metrics.STREAM_REPLICA_CURRENT.labels(replica.name).set(
                    1 if replica.current and not replica.offline else 0
                )
        except Exception:
            log.debug("stream_info failed", exc_info=True)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), 10.0)


async def run(
    definitions: Sequence[ServiceDefinition],
    infra: Infra,
    stop: asyncio.Event,
    *,
    ops: OpsServer | None = None,
    relay: bool = True,
    started: asyncio.Event | None = None,
) -> None:
    """Run ``definitions`` until ``stop`` is set; every task is cancelled and awaited on the way out."""
    settings = infra.settings
    for d in definitions:  # a handler map that disagrees with the event map never starts
        topology.check_handlers(d.name, d.handlers, d.consumer.event_types if d.consumer else None)
    specs = [d.consumer for d in definitions if d.consumer is not None]
    unfiltered: frozenset[str] = frozenset()
    if specs:  # a consumer must exist, with our configuration, before we bind to it
        unfiltered = (await bus.declare_when_ready(infra.nc, infra.bus_config, specs)).unfiltered
    broker = _consumer_broker(definitions, infra, unfiltered)
    tasks: list[asyncio.Task[None]] = []
    relay_obj: Relay | None = None
    if relay and settings.relay_enabled:
        relay_obj = Relay(
            infra.pool,
            infra.nc,
            listen_url=settings.database_direct_url.get_secret_value()
            if settings.database_direct_url is not None
            else None,
            batch=settings.relay_batch,
            poll_s=settings.relay_poll_s,
            retention=timedelta(days=settings.stream_max_age_days),
        )
        infra.relay = relay_obj
        tasks.append(asyncio.create_task(relay_obj.run(stop), name="relay"))
    for spec in specs:
        tasks.append(asyncio.create_task(deadletters.run_recorder(infra.pool, infra.nc, spec, stop)))
    if specs:
        tasks.append(asyncio.create_task(_poll_lag(infra, specs, stop), name="lag"))
    for d in definitions:
        for bg in d.background:
            tasks.append(asyncio.create_task(bg(infra, stop), name=f"{d.name}-background"))
    if ops is not None:
        _register_checks(ops, infra, definitions, broker if specs else None)
        ops.bind()
        tasks.append(asyncio.create_task(ops.serve(stop), name="ops"))
    if specs:
        await broker.start()
    if started is not None:
        started.set()
    log.info("running %s", ", ".join(d.name for d in definitions))
    try:
        await stop.wait()
    finally:
        await _wind_down(definitions, tasks, broker if specs else None)


def _consumer_broker(
    definitions: Sequence[ServiceDefinition], infra: Infra, unfiltered: frozenset[str]
) -> NatsBroker:
    """The broker of this process's consumers, each service's subscribed (not started yet);
    ``unfiltered`` names the consumers the server does not filter (:class:`bus.Declared`)."""
    settings = infra.settings
    broker = NatsBroker(
        servers=bus.seeds(infra.nats_url),
        name="palimpsest-consumers",
        user_credentials=str(settings.nats_creds_file) if settings.nats_creds_file else None,
        max_reconnect_attempts=-1,
        reconnect_time_wait=1,
        logger=None,
    )
    for d in definitions:
        if d.consumer is not None:
            addressed = frozenset(d.consumer.event_types) if d.consumer.name in unfiltered else None
            runtime = ConsumerRuntime(
                d.consumer.name,
                infra.pool,
                d.handlers,
                settings.retry_delays_s,
                addressed=addressed,
                max_deliver=settings.max_deliver,
            )
            _subscribe(broker, runtime, d.consumer)
    return broker


async def _wind_down(
    definitions: Sequence[ServiceDefinition], tasks: list[asyncio.Task[None]], broker: NatsBroker | None
) -> None:
    """Stop consuming, cancel every task but the ops server (it ends on ``stop``), await them all,
    run the services' cleanups, and log what a task ended with."""
    if broker is not None:
        await broker.stop()
    for t in tasks:
        if t.get_name() != "ops":
            t.cancel()
    results = await asyncio.gather(*tasks, return_exceptions=True)
    for d in definitions:
        for closer in d.on_stop:
            try:
                closer()
            except Exception:
                log.exception("%s: cleanup failed", d.name)
    for r in results:
        if isinstance(r, BaseException) and not isinstance(r, asyncio.CancelledError):
            log.error("task ended with %s", r.__class__.__name__, exc_info=r)


def _register_checks(
    ops: OpsServer, infra: Infra, definitions: Sequence[ServiceDefinition], broker: NatsBroker | None
) -> None:
    async def database() -> bool:
        async with system_tx(infra.pool) as conn:
            await ping(conn)
        return True

    async def nats_connected() -> bool:
        return bool(infra.nc.is_connected)

    ops.add_check("database", database)
    ops.add_check("nats", nats_connected)
    if broker is not None:

        async def consumers() -> bool:
            return await broker.ping(timeout=2.0)

        ops.add_check("consumers", consumers)
    for d in definitions:
        for name, check in d.ready_checks.items():
            ops.add_check(f"{d.name}.{name}", check)


def install_relay_signals(infra: Infra) -> None:
    """``SIGUSR1`` pauses this process's outbox relay, ``SIGUSR2`` resumes it (operators, the soak).

    While paused, events stay in the outbox (nothing is lost); webhooks are still accepted.
    """
    loop = asyncio.get_running_loop()

    def toggle(paused: bool) -> None:
        relay = infra.relay
        if relay is None:
            return
        if paused:
            relay.paused.set()
        else:
            relay.paused.clear()
        log.warning("outbox relay %s", "paused" if paused else "resumed")

    loop.add_signal_handler(signal.SIGUSR1, toggle, True)
    loop.add_signal_handler(signal.SIGUSR2, toggle, False)


def install_signal_handlers(stop: asyncio.Event) -> None:
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)


def main_for(
    bootstrap: Callable[[Infra], ServiceDefinition], settings_cls: type[BaseServiceSettings]
) -> None:
    """The ``python -m palimpsest.<service>`` entrypoint: one service, its own ops endpoint."""
    from palimpsest.core import telemetry
    from palimpsest.core.settings import load

    for sig in (signal.SIGUSR1, signal.SIGUSR2):  # relay pause/resume: never fatal while starting
        signal.signal(sig, signal.SIG_IGN)
    try:
        settings = load(settings_cls)
    except SettingsError as exc:  # a mistyped or invalid setting: one line, no traceback
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(2)

    async def amain() -> None:
        probe = bootstrap.__module__.split(".")[1]
        telemetry.setup(probe, log_level=settings.log_level, log_format=settings.log_format)
        stop = asyncio.Event()
        install_signal_handlers(stop)
        infra = await open_infra(settings, probe)
        infra.standalone = True
        install_relay_signals(infra)
        try:
            definition = bootstrap(infra)
            await run([definition], infra, stop, ops=OpsServer(settings.ops_host, settings.ops_port))
        finally:
            await close_infra(infra)

    asyncio.run(amain())
