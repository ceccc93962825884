"""Finding or starting the servers a command needs, migrating them, and declaring the bus.

Resolution order: explicit URLs (``PALIMPSEST_MIGRATION_DATABASE_URL`` / ``PALIMPSEST_DATABASE_URL``,
``PALIMPSEST_NATS_URL``) → a running ``palimpsest up`` recorded in ``$PALIMPSEST_HOME/stack.json`` →
embedded servers started for this command's duration.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from palimpsest.cli.embedded import EmbeddedNats, EmbeddedPostgres
from palimpsest.core import bus
from palimpsest.core.admin import bus_config
from palimpsest.core.db import with_user
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

    def public(self) -> dict[str, Any]:
        d = asdict(self)
        for key in ("owner_url", "app_url"):
            d[key] = _redact(d[key])
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

    def stop(self) -> None:
        if self.nats is not None:
            self.nats.stop()
        if self.pg is not None:
            self.pg.stop(quiet=True)


@asynccontextmanager
async def open_stack(
    settings: BaseServiceSettings, *, durable: bool = True, servers: Servers | None = None
) -> AsyncIterator[StackInfo]:
    """Servers for this command: configured ones, or embedded ones stopped again on exit.

    ``servers`` (optional) receives the embedded servers, for a caller that restarts them (chaos).
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
        t1 = time.perf_counter()
        if settings.nats_url is None:
            servers.nats = EmbeddedNats(home / "nats")
            nats_url = servers.nats.start()
            timings["nats_start_s"] = round(time.perf_counter() - t1, 3)
        else:
            nats_url = settings.nats_url
        t2 = time.perf_counter()
        report = await migrate(owner_url, app_role=settings.app_role)
        timings["migrate_s"] = round(time.perf_counter() - t2, 3)
        t3 = time.perf_counter()
        await bus.bus_init(nats_url, bus_config(settings), creds_file=settings.nats_creds_file)
        timings["bus_init_s"] = round(time.perf_counter() - t3, 3)
        timings["total_s"] = round(time.perf_counter() - t0, 3)
        yield StackInfo(
            owner_url=owner_url,
            app_url=app_url,
            nats_url=nats_url,
            embedded_db=servers.pg is not None,
            embedded_nats=servers.nats is not None,
            home=str(home),
            timings_s=timings,
            extensions=report.extensions,
        )
    finally:
        servers.stop()
