"""Finding or starting the servers a command needs, migrating them, and declaring the bus.

Resolution order: explicit URLs (``PALIMPSEST_MIGRATION_DATABASE_URL`` / ``PALIMPSEST_DATABASE_URL``,
``PALIMPSEST_NATS_URL``) → a running ``palimpsest up`` recorded in ``$PALIMPSEST_HOME/stack.json`` →
embedded servers started for this command's duration.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from psycopg.conninfo import conninfo_to_dict

from palimpsest.cli.embedded import EmbeddedNats, EmbeddedNatsCluster, EmbeddedPostgres
from palimpsest.cli.pgbouncer import PgBouncer
from palimpsest.core import bus
from palimpsest.core.admin import bus_config
from palimpsest.core.db import with_user
from palimpsest.core.errors import EmbeddedStackError
from palimpsest.core.migrate import migrate
from palimpsest.core.settings import BaseServiceSettings


@dataclass(slots=True)
class StackInfo:
    owner_url: str
    app_url: str
    nats_url: str
    embedded_db: bool
    embedded_nats: bool
    home: str
    pid: int = field(default_factory=os.getpid)
    ingest_url: str | None = None
    ops_url: str | None = None
    timings_s: dict[str, float] = field(default_factory=dict)
    extensions: list[str] = field(default_factory=list)
    processes: dict[str, Any] = field(default_factory=dict)  # `up --processes`: name → pid, ops port, log
    # the application role never through a pooler (the relay LISTENs there); "" when app_url is direct
    direct_url: str = ""
    # a transaction-mode pooler stands in front of app_url (ours, or one the settings declare)
    transaction_pooler: bool = False

    def public(self) -> dict[str, Any]:
        d = asdict(self)
        for key in ("owner_url", "app_url", "direct_url"):
            d[key] = _redact(d[key]) if d[key] else d[key]
        return d


def scratch_settings(
    settings: BaseServiceSettings, home: Path, *, local_sources: bool = True
) -> BaseServiceSettings:
    """A benchmark's settings: its own scratch ``home`` for the embedded servers (configured
    servers are used as they are), and local repositories allowed as sources."""
    s = settings
    if not (settings.database_url or settings.migration_database_url):
        s = settings.model_copy(update={"home": home})
    return s.model_copy(update={"allow_local_sources": True}) if local_sources else s


def _redact(url: str) -> str:
    from palimpsest.core.db import describe

    return describe(url)


def state_file(home: Path) -> Path:
    return home / "stack.json"


def read_running(home: Path) -> StackInfo | None:
    """The stack a live ``palimpsest up`` recorded, or None."""
    path = state_file(home)
    if not path.exists():
        return None
    try:
        info = StackInfo(**json.loads(path.read_text()))
        os.kill(info.pid, 0)
    except (ValueError, TypeError, ProcessLookupError, PermissionError, OSError):
        return None
    return info


def write_state(info: StackInfo) -> None:
    path = state_file(Path(info.home))
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(asdict(info)))
    tmp.chmod(0o600)
    tmp.replace(path)


def clear_state(info: StackInfo) -> None:
    path = state_file(Path(info.home))
    with contextlib.suppress(FileNotFoundError, ValueError):
        if json.loads(path.read_text()).get("pid") == info.pid:
            path.unlink()


@dataclass(slots=True)
class Servers:
    pg: EmbeddedPostgres | None = None
    nats: EmbeddedNats | None = None
    nats_cluster: EmbeddedNatsCluster | None = None
    pooler: PgBouncer | None = None

    def stop(self) -> None:
        if self.pooler is not None:
            self.pooler.stop()
        if self.nats is not None:
            self.nats.stop()
        if self.nats_cluster is not None:
            self.nats_cluster.stop()
        if self.pg is not None:
            self.pg.stop(quiet=True)


@asynccontextmanager
async def open_stack(
    settings: BaseServiceSettings,
    *,
    durable: bool = True,
    servers: Servers | None = None,
    nats_cluster: int = 0,
    pgbouncer: bool = False,
) -> AsyncIterator[StackInfo]:
    """Servers for this command: configured ones, or embedded ones stopped again on exit.

    ``servers`` (optional) receives the embedded servers, for a caller that restarts them (chaos).
    ``nats_cluster`` (≥ 2, with no NATS configured) starts that many nodes of one JetStream cluster
    on loopback instead of one server; the bus is declared with ``settings.stream_replicas``.
    ``pgbouncer`` puts a loopback PgBouncer in transaction mode in front of the database for the
    application role's URL; migrations (the owner) and :attr:`StackInfo.direct_url` stay direct.
    """
    from palimpsest.cli.target import refuse_remote

    refuse_remote()  # with a remote configured, no command starts a local stack
    servers = servers if servers is not None else Servers()
    timings: dict[str, float] = {}
    home = settings.home
    try:
        t0 = time.perf_counter()
        owner = settings.migration_database_url or settings.database_url
        if owner is None:
            servers.pg = EmbeddedPostgres(home / "postgres", durable=durable)
            owner_url = servers.pg.start()
            timings["postgres_start_s"] = round(time.perf_counter() - t0, 3)
        else:
            owner_url = owner.get_secret_value()
        if settings.database_url is not None and settings.migration_database_url is not None:
            app_url = settings.database_url.get_secret_value()
        else:
            app_url = with_user(owner_url, settings.app_role)
        direct_url = ""
        if pgbouncer:
            owner_user = str(conninfo_to_dict(owner_url).get("user") or "postgres")
            servers.pooler = PgBouncer(owner_url, users=tuple(sorted({owner_user, settings.app_role})))
            await asyncio.to_thread(servers.pooler.start)
            direct_url, app_url = app_url, servers.pooler.url(app_url)
        t1 = time.perf_counter()
        if settings.nats_url is None and nats_cluster > 1:
            servers.nats_cluster = EmbeddedNatsCluster(home / "nats-cluster", size=nats_cluster)
            nats_url = await asyncio.to_thread(servers.nats_cluster.start)
            await wait_jetstream(nats_url)
            timings["nats_start_s"] = round(time.perf_counter() - t1, 3)
        elif settings.nats_url is None:
            servers.nats = EmbeddedNats(home / "nats")
            nats_url = servers.nats.start()
            timings["nats_start_s"] = round(time.perf_counter() - t1, 3)
        else:
            nats_url = settings.nats_url
        t2 = time.perf_counter()
        report = await migrate(owner_url, app_role=settings.app_role)
        timings["migrate_s"] = round(time.perf_counter() - t2, 3)
        t3 = time.perf_counter()
        await _declare(nats_url, settings, retry_s=60.0 if servers.nats_cluster is not None else 0.0)
        timings["bus_init_s"] = round(time.perf_counter() - t3, 3)
        timings["total_s"] = round(time.perf_counter() - t0, 3)
        yield StackInfo(
            owner_url=owner_url,
            app_url=app_url,
            nats_url=nats_url,
            embedded_db=servers.pg is not None,
            embedded_nats=servers.nats is not None or servers.nats_cluster is not None,
            home=str(home),
            timings_s=timings,
            extensions=report.extensions,
            direct_url=direct_url,
            transaction_pooler=pgbouncer or settings.database_transaction_pooler,
        )
    finally:
        servers.stop()


async def wait_jetstream(nats_url: str, timeout_s: float = 60.0) -> None:
    """Until the (cluster's) JetStream answers an account query: a fresh cluster first elects its
    meta leader, and declaring the bus before that fails."""
    deadline = time.monotonic() + timeout_s
    last: BaseException | None = None
    while time.monotonic() < deadline:
        try:
            nc = await bus.connect(nats_url, name="jetstream-wait", reconnect=False)
            try:
                await nc.jetstream().account_info()
                return
            finally:
                await nc.close()
        except Exception as exc:  # no meta leader yet
            last = exc
        await asyncio.sleep(0.3)
    raise EmbeddedStackError(
        f"JetStream on {len(bus.seeds(nats_url))} node(s) not ready in {timeout_s:.0f}s: {last!r}"
    )


async def _declare(nats_url: str, settings: BaseServiceSettings, *, retry_s: float = 0.0) -> None:
    """``bus init``; on a cluster just started (``retry_s`` > 0) retried for a while, because until
    every peer has joined, placing a replicated stream fails ("no suitable peers for placement")."""
    deadline = time.monotonic() + retry_s
    while True:
        try:
            await bus.bus_init(nats_url, bus_config(settings), creds_file=settings.nats_creds_file)
            return
        except Exception:
            if time.monotonic() >= deadline:
                raise
            await asyncio.sleep(0.5)
