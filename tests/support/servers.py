"""The servers a test session runs against: embedded by default, external when configured.

``PALIMPSEST_TEST_DATABASE_URL`` (an owner/superuser URL) and ``PALIMPSEST_TEST_NATS_URL`` switch to
external servers. Each session gets a fresh database (dropped at the end) and, on an external NATS,
a clean stream, so runs never see each other's events.

``PALIMPSEST_TEST_PGBOUNCER=1`` puts PgBouncer in transaction mode (:mod:`palimpsest.cli.pgbouncer`)
between the services and PostgreSQL: ``app_url`` goes through it, while ``owner_url`` (migrations,
as the chart's hook Job does) and ``direct_url`` (the relay's LISTEN) stay direct.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import nats
import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from palimpsest.cli.embedded import EmbeddedNats, EmbeddedPostgres
from palimpsest.cli.pgbouncer import PgBouncer
from palimpsest.core import bus
from palimpsest.core.db import with_user

APP_ROLE = "palimpsest_app"


@dataclass(slots=True)
class ServerSet:
    owner_url: str  # owner of the session's database (runs migrations)
    app_url: str  # the application role, subject to RLS (through PgBouncer when the run uses it)
    nats_url: str
    db_mode: str
    nats_mode: str
    home: Path
    pg: EmbeddedPostgres | None = None
    nats_server: EmbeddedNats | None = None
    direct_url: str = ""  # the application role, never through a pooler (the relay LISTENs there)
    pooler: PgBouncer | None = None
    cleanups: list[object] = field(default_factory=list)


def _database_url(base: str, dbname: str) -> str:
    params = conninfo_to_dict(base)
    params["dbname"] = dbname
    return make_conninfo("", **params)


@contextlib.contextmanager
def session_servers() -> Iterator[ServerSet]:
    ext_db = os.environ.get("PALIMPSEST_TEST_DATABASE_URL")
    ext_nats = os.environ.get("PALIMPSEST_TEST_NATS_URL")
    pooled = os.environ.get("PALIMPSEST_TEST_PGBOUNCER", "") not in ("", "0")
    with tempfile.TemporaryDirectory(prefix="palimpsest-test-") as tmp:
        home = Path(tmp)
        pg = None
        nats_srv = None
        pooler = None
        try:
            if ext_db:
                base = ext_db
            else:
                pg = EmbeddedPostgres(home / "postgres", durable=False)
                base = pg.start()
            dbname = f"palimpsest_test_{secrets.token_hex(4)}"
            with psycopg.connect(base, autocommit=True) as conn:
                conn.execute(f'CREATE DATABASE "{dbname}"')
            owner = _database_url(base, dbname)
            if ext_nats:
                nats_url = ext_nats
            else:
                nats_srv = EmbeddedNats(home / "nats")
                nats_url = nats_srv.start()
            direct = with_user(owner, APP_ROLE)
            if pooled:
                owner_user = str(conninfo_to_dict(owner).get("user", "postgres"))
                pooler = PgBouncer(base, users=tuple(sorted({owner_user, APP_ROLE})))
                pooler.start()
            yield ServerSet(
                owner_url=owner,
                app_url=pooler.url(direct) if pooler is not None else direct,
                direct_url=direct,
                pooler=pooler,
                nats_url=nats_url,
                db_mode="external" if ext_db else "embedded",
                nats_mode="external" if ext_nats else "embedded",
                home=home,
                pg=pg,
                nats_server=nats_srv,
            )
            with psycopg.connect(base, autocommit=True) as conn:
                conn.execute(f'DROP DATABASE IF EXISTS "{dbname}" WITH (FORCE)')
        finally:
            if pooler is not None:
                pooler.stop()
            if nats_srv is not None:
                nats_srv.stop()
            if pg is not None:
                pg.stop(quiet=True)


@contextlib.contextmanager
def scratch_database(servers: ServerSet, prefix: str) -> Iterator[str]:
    """A fresh database beside the session's, on the same server (its owner URL), dropped after:
    for a process that migrates and runs a whole stack of its own without touching the session's."""
    dbname = f"{prefix}_{secrets.token_hex(4)}"
    with psycopg.connect(servers.owner_url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{dbname}"')
    try:
        yield _database_url(servers.owner_url, dbname)
    finally:
        with psycopg.connect(servers.owner_url, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{dbname}" WITH (FORCE)')


async def reset_streams(nats_url: str) -> None:
    """Delete Palimpsest's streams on a test NATS so the session starts from nothing."""
    nc = await nats.connect(nats_url)
    try:
        js = nc.jetstream()
        for name in (bus.STREAM, bus.ADVISORY_STREAM):
            with contextlib.suppress(Exception):
                await js.delete_stream(name)
    finally:
        await nc.close()
