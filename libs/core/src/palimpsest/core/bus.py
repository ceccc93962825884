"""The JetStream topology and the one idempotent command that declares it (``palimpsest bus init``).

One stream ``PALIMPSEST`` on ``pal.>`` with *limits* retention (a consumer that is down loses
nothing until ``max_age``) and a duplicate window that covers the relay's retry horizon, so a row
published twice (relay killed between PubAck and mark) is stored once. One durable pull consumer per
consuming service, named after it, filtered to the subjects it handles, with explicit ``ack_wait``
and ``max_deliver``. Backoff is applied by the consumer: a failed handler NAKs with the next delay of
``retry_delays_s``. (A server-side ``BackOff`` list would override those NAK delays and ``ack_wait``
alike — seen on nats-server 2.15 — so it is deliberately not set; a crashed handler is redelivered
after ``ack_wait``, and a long handler extends it with in-progress heartbeats.) A second stream captures the server's ``MAX_DELIVERIES`` advisories so each service can
record its poison messages as dead letters even if it was restarted in between.

On a JetStream cluster both streams have ``replicas`` copies (``PALIMPSEST_STREAM_REPLICAS``; 3 on the
usual three-node cluster), so losing the node that leads a stream loses neither it nor a durable
consumer: ``bus init`` creates the streams with that count or updates them to it, and each consumer
is declared without a count of its own, so it has its stream's and scales with it. The client is given every seed of the cluster
(``PALIMPSEST_NATS_URL`` as a comma-separated list) and reconnects across them.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from pathlib import Path

import nats
from nats.aio.client import Client as NATS
from nats.js import api
from nats.js.errors import NotFoundError

from palimpsest.core import topology
from palimpsest.core.errors import BusError
from palimpsest.core.events import subject_of

log = logging.getLogger(__name__)

STREAM = "PALIMPSEST"
SUBJECTS = ["pal.>"]
ADVISORY_STREAM = "PALIMPSEST_ADVISORIES"
ADVISORY_PREFIX = f"$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.{STREAM}"


@dataclass(frozen=True, slots=True)
class ConsumerSpec:
    """A service's durable consumer: its name is the service's name."""

    name: str
    event_types: tuple[str, ...]
    batch: int = 8
    # only events published after the consumer is created (throw-away consumers: tests, benchmarks)
    deliver_new: bool = False

    @property
    def subjects(self) -> list[str]:
        return [subject_of(t) for t in self.event_types]

    @property
    def dead_letter_consumer(self) -> str:
        return f"dl-{self.name}"

    @property
    def advisory_subject(self) -> str:
        return f"{ADVISORY_PREFIX}.{self.name}"


# derived from the event map: one durable consumer per consuming service, filtered to its events
CONSUMERS: dict[str, ConsumerSpec] = {
    service: ConsumerSpec(service, topology.consumed_by(service), batch=batch)
    for service, batch in topology.CONSUMER_BATCH.items()
}


@dataclass(frozen=True, slots=True)
class BusConfig:
    ack_wait_s: float = 60.0
    max_deliver: int = 5
    max_age_days: float = 7.0
    duplicate_window_s: float = 3600.0
    max_ack_pending: int = 64
    replicas: int = 1


def seeds(url: str) -> list[str]:
    """The servers of ``PALIMPSEST_NATS_URL``: one URL, or a cluster's comma-separated seed list."""
    found = [u.strip() for u in url.split(",") if u.strip()]
    if not found:
        raise BusError("PALIMPSEST_NATS_URL names no server")
    return found


async def connect(url: str, *, name: str, creds_file: Path | None = None, reconnect: bool = True) -> NATS:
    """Connect to NATS; with ``reconnect`` the client keeps retrying forever after a drop."""
    try:
        return await nats.connect(
            servers=seeds(url),
            name=f"palimpsest-{name}",
            user_credentials=str(creds_file) if creds_file else None,
            allow_reconnect=reconnect,
            max_reconnect_attempts=-1 if reconnect else 0,
            reconnect_time_wait=0.5,
            connect_timeout=5,
        )
    except Exception as exc:
        raise BusError(f"cannot connect to NATS ({exc.__class__.__name__}: {exc})") from exc


def stream_config(cfg: BusConfig) -> api.StreamConfig:
    return api.StreamConfig(
        name=STREAM,
        subjects=SUBJECTS,
        retention=api.RetentionPolicy.LIMITS,
        storage=api.StorageType.FILE,
        max_age=cfg.max_age_days * 86400,
        duplicate_window=cfg.duplicate_window_s,
        discard=api.DiscardPolicy.OLD,
        num_replicas=cfg.replicas,
        description="Palimpsest events (outbox relay → services)",
    )


def advisory_stream_config(cfg: BusConfig) -> api.StreamConfig:
    return api.StreamConfig(
        name=ADVISORY_STREAM,
        subjects=[f"{ADVISORY_PREFIX}.*"],
        retention=api.RetentionPolicy.LIMITS,
        storage=api.StorageType.FILE,
        max_age=cfg.max_age_days * 86400,
        num_replicas=cfg.replicas,
        description="MAX_DELIVERIES advisories of Palimpsest consumers (→ dead_letters)",
    )


def consumer_config(spec: ConsumerSpec, cfg: BusConfig) -> api.ConsumerConfig:
    """No replica count: the consumer inherits its stream's, and follows it when the stream scales."""
    return api.ConsumerConfig(
        name=spec.name,
        durable_name=spec.name,
        description=f"Palimpsest {spec.name}",
        deliver_policy=api.DeliverPolicy.NEW if spec.deliver_new else api.DeliverPolicy.ALL,
        ack_policy=api.AckPolicy.EXPLICIT,
        ack_wait=cfg.ack_wait_s,
        max_deliver=cfg.max_deliver,
        # one subject as filter_subject, which every server applies; several need nats-server 2.10+
        # (an older one ignores filter_subjects: see unfiltered)
        filter_subject=spec.subjects[0] if len(spec.subjects) == 1 else None,
        filter_subjects=spec.subjects if len(spec.subjects) > 1 else None,
        max_ack_pending=cfg.max_ack_pending,
    )


def dead_letter_consumer_config(spec: ConsumerSpec) -> api.ConsumerConfig:
    return api.ConsumerConfig(
        name=spec.dead_letter_consumer,
        durable_name=spec.dead_letter_consumer,
        deliver_policy=api.DeliverPolicy.ALL,
        ack_policy=api.AckPolicy.EXPLICIT,
        ack_wait=30.0,
        filter_subject=spec.advisory_subject,
    )


async def _ensure_stream(js: nats.js.JetStreamContext, config: api.StreamConfig) -> str:
    assert config.name
    try:
        await js.stream_info(config.name)
    except NotFoundError:
        await js.add_stream(config=config)
        return "created"
    await js.update_stream(config=config)  # also scales the replicas up or down, consumers with them
    return "updated"


async def _ensure_consumer(
    js: nats.js.JetStreamContext, stream: str, config: api.ConsumerConfig
) -> tuple[str, api.ConsumerInfo]:
    assert config.durable_name
    try:
        await js.consumer_info(stream, config.durable_name)
        existed = True
    except NotFoundError:
        existed = False
    info = await js.add_consumer(stream, config=config)  # create-or-update, idempotent
    return ("updated" if existed else "created"), info


@dataclass(frozen=True, slots=True)
class Declared:
    """What :func:`declare` did: each stream's and consumer's ``created``/``updated``, and the
    consumers the server keeps no subject filter for although one was asked (a server before
    2.10 drops ``filter_subjects``: such a consumer receives every event)."""

    status: dict[str, str]
    unfiltered: frozenset[str]


async def declare(nc: NATS, cfg: BusConfig, specs: list[ConsumerSpec] | None = None) -> Declared:
    """Declare both streams and the consumers (every service's, or just ``specs``). Idempotent."""
    js = nc.jetstream()
    status: dict[str, str] = {}
    unfiltered: set[str] = set()
    try:
        status[STREAM] = await _ensure_stream(js, stream_config(cfg))
        status[ADVISORY_STREAM] = await _ensure_stream(js, advisory_stream_config(cfg))
        for spec in specs if specs is not None else list(CONSUMERS.values()):
            status[spec.name], info = await _ensure_consumer(js, STREAM, consumer_config(spec, cfg))
            if spec.subjects and not (info.config.filter_subject or info.config.filter_subjects):
                unfiltered.add(spec.name)
                log.warning(
                    "%s: the NATS server keeps no subject filter for this consumer (nats-server < 2.10"
                    " ignores filter_subjects): it receives every event and acknowledges those not"
                    " addressed to it; upgrade NATS to 2.10 or later",
                    spec.name,
                )
            status[spec.dead_letter_consumer], _ = await _ensure_consumer(
                js, ADVISORY_STREAM, dead_letter_consumer_config(spec)
            )
    except BusError:
        raise
    except Exception as exc:
        raise BusError(f"bus declaration failed: {exc}") from exc
    return Declared(status, frozenset(unfiltered))


DECLARE_RETRY_S = 120.0
"""How long a service starting keeps retrying its bus declaration (a JetStream cluster without a
quorum, a node restarting) before it gives up and exits, to be restarted."""


async def declare_when_ready(
    nc: NATS,
    cfg: BusConfig,
    specs: list[ConsumerSpec] | None = None,
    *,
    within_s: float = DECLARE_RETRY_S,
) -> Declared:
    """:func:`declare`, retried with a growing delay (0.5 s up to 5 s) while JetStream cannot answer:
    a service that starts while its cluster has no quorum waits for it instead of exiting at once
    (and crash-looping); after ``within_s`` the last error is raised."""
    deadline = asyncio.get_running_loop().time() + within_s
    delay = 0.5
    while True:
        try:
            return await declare(nc, cfg, specs)
        except BusError as exc:
            left = deadline - asyncio.get_running_loop().time()
            if left <= 0:
                raise
            log.warning("%s; retrying in %.1f s (gives up in %.0f s)", exc, min(delay, left), left)
            await asyncio.sleep(min(delay, left))
            delay = min(delay * 2, 5.0)


async def bus_init(url: str, cfg: BusConfig, *, creds_file: Path | None = None) -> dict[str, str]:
    nc = await connect(url, name="bus-init", creds_file=creds_file, reconnect=False)
    try:
        return (await declare(nc, cfg)).status
    finally:
        await nc.close()


@dataclass(frozen=True, slots=True)
class ConsumerLag:
    """One durable consumer's backlog: messages not yet delivered, and delivered but not acknowledged."""

    pending: int
    ack_pending: int
    redelivered: int


async def consumer_lag(nc: NATS) -> dict[str, ConsumerLag | BaseException]:
    """Every service consumer's backlog on the stream; the error in place of one the server cannot tell."""
    js = nc.jetstream()
    out: dict[str, ConsumerLag | BaseException] = {}
    for name in CONSUMERS:
        try:
            ci = await js.consumer_info(STREAM, name)
        except Exception as exc:  # one consumer's answer never hides the others'
            out[name] = exc
            continue
        out[name] = ConsumerLag(ci.num_pending or 0, ci.num_ack_pending or 0, ci.num_redelivered or 0)
    return out


@dataclass(frozen=True, slots=True)
class Replica:
    """One copy of a stream on a JetStream cluster, as its leader sees it."""

    name: str
    current: bool
    offline: bool
    lag: int  # operations this replica is behind the leader
    active_s: float  # seconds since the leader last heard from it


@dataclass(frozen=True, slots=True)
class StreamCluster:
    """Where a stream lives: the cluster, its leader, and every other replica (none on one server)."""

    cluster: str | None
    leader: str | None
    replicas: int
    followers: tuple[Replica, ...]


async def stream_cluster(nc: NATS, stream: str = STREAM) -> StreamCluster:
    info = await nc.jetstream().stream_info(stream)
    c = info.cluster
    return StreamCluster(
        cluster=c.name if c else None,
        leader=c.leader if c else None,
        replicas=info.config.num_replicas or 1,
        followers=tuple(
            Replica(
                name=p.name or "",
                current=bool(p.current),
                offline=bool(p.offline),
                lag=int(p.lag or 0),
                active_s=round((p.active or 0) / 1e9, 3),
            )
            for p in (c.replicas or [] if c else [])
        ),
    )
