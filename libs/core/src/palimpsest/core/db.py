"""PostgreSQL access: async pools and the one helper that opens a tenant-scoped transaction.

Every unit of work that touches tenant data runs inside :func:`tenant_tx`, which sets
``app.tenant_id`` with ``set_config(..., true)`` (transaction-local) so forced row-level security
filters every statement. ``SET LOCAL`` cannot take a bind parameter under psycopg 3's server-side
binding, hence ``set_config``. Infrastructure tables (outbox, inbox, dead letters) are reached with
:func:`system_tx`, which sets no tenant and therefore sees no tenant rows at all.

Nothing here relies on session state, so every pool works behind a transaction-mode pooler
(PgBouncer ``pool_mode = transaction``): settings are transaction-local and locks are
transaction-scoped. Statements are prepared (psycopg's default: from a query's fifth execution on a
connection), except where ``transaction_pooler`` says such a pooler stands in front
(``PALIMPSEST_DATABASE_TRANSACTION_POOLER``): a pooler may run the next execution on a server
connection that never saw the PREPARE, so there psycopg never prepares (``prepare_threshold=None``).
Not preparing costs every statement its planning: interleaved on one 20 000-file index, lexical
search took p50 51.8 / p95 119.9 ms unprepared against 45.9 / 113.6 ms prepared (issue 55; a
loaded machine, load average 13 on 2 cores).
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, TypeVar, cast
from uuid import UUID

import psycopg
from psycopg import AsyncConnection, sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from psycopg.rows import DictRow, class_row, dict_row
from psycopg_pool import AsyncConnectionPool, PoolTimeout

from palimpsest.core.errors import DatabaseError
from palimpsest.core.stores import CORE, Store

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

Conn = AsyncConnection[DictRow]
# The connection layer: a transaction's tenant and the server's own facts; no table of its own.
STORE = Store(owner=CORE)
Pool = AsyncConnectionPool[Conn]
Row = TypeVar("Row")


UNAVAILABLE_ERRORS: tuple[type[Exception], ...] = (DatabaseError, psycopg.OperationalError, PoolTimeout)
"""What an unavailable database raises (an API answers 503 for these, never 500)."""

# SQLSTATEs that say the server (or the pooler in front of it) could not be talked to: class 08
# (connection exception: refused, lost, a pooler refusing logins) and the shutdown states
_UNREACHABLE_STATES = ("08", "57P01", "57P02", "57P03")


def unreachable(exc: BaseException) -> bool:
    """Whether ``exc``, or an exception it was raised from, says the database could not be
    reached — a refused or lost connection, a server shutting down, no pooled connection in time
    — rather than that the work itself failed (a constraint, a bad query, a deadlock)."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, PoolTimeout):
            return True
        if isinstance(current, psycopg.OperationalError):
            state = current.sqlstate
            if state is None or state.startswith(_UNREACHABLE_STATES):
                return True
        current = current.__cause__ or current.__context__
    return False


def with_user(url: str, user: str) -> str:
    """The same server and database as ``url``, connecting as ``user`` (no password carried over)."""
    params = conninfo_to_dict(url)
    params.pop("password", None)
    params["user"] = user
    return make_conninfo("", **params)


def describe(url: str) -> str:
    """host:port/db of a connection string, for logs and status — never the password."""
    p = conninfo_to_dict(url)
    return f"{p.get('host', 'localhost')}:{p.get('port', 5432)}/{p.get('dbname', '')} as {p.get('user', '')}"


async def open_pool(
    url: str,
    *,
    transaction_pooler: bool,
    min_size: int = 1,
    max_size: int = 8,
    name: str = "palimpsest",
) -> Pool:
    """Open an async pool whose connections return rows as dicts; fails fast with DatabaseError.

    ``transaction_pooler``: a transaction-mode pooler stands between ``url`` and PostgreSQL, so
    statements are never prepared; without one psycopg prepares those it runs repeatedly."""

    async def configure(conn: Conn) -> None:
        await conn.set_autocommit(False)

    pool: Pool = AsyncConnectionPool(
        url,
        min_size=min_size,
        max_size=max_size,
        name=name,
        open=False,
        kwargs=connect_kwargs(name, transaction_pooler=transaction_pooler),
        configure=configure,
        connection_class=AsyncConnection[DictRow],
        reconnect_timeout=30.0,
    )
    try:
        await pool.open(wait=True, timeout=30.0)
    except psycopg.Error as exc:
        await pool.close()
        raise DatabaseError(f"cannot connect to PostgreSQL at {describe(url)}: {exc}") from exc
    except Exception as exc:
        await pool.close()
        raise DatabaseError(f"cannot connect to PostgreSQL at {describe(url)}: {exc}") from exc
    return pool


def connect_kwargs(name: str, *, transaction_pooler: bool) -> dict[str, Any]:
    """psycopg's connection arguments for a pool: dict rows, the process's name, and statement
    preparation unless a transaction-mode pooler is in front (see the module docstring)."""
    kwargs: dict[str, Any] = {"row_factory": dict_row, "application_name": name}
    if transaction_pooler:
        kwargs["prepare_threshold"] = None
    return kwargs


async def set_tenant(conn: Conn, tenant_id: UUID | str) -> None:
    """Admit exactly ``tenant_id``'s rows for the rest of the open transaction (row-level security)."""
    await conn.execute("SELECT set_config('app.tenant_id', %s, true)", (str(tenant_id),))


@asynccontextmanager
async def tenant_tx(pool: Pool, tenant_id: UUID | str) -> AsyncIterator[Conn]:
    """A transaction in which row-level security admits exactly ``tenant_id``'s rows."""
    async with pool.connection() as conn, conn.transaction():
        await set_tenant(conn, tenant_id)
        yield conn


def ensure_database(admin_url: str, name: str) -> None:
    """Create database ``name`` unless the server has it (``admin_url``: a superuser's connection
    to another database of the server — the embedded stack's first start)."""
    with psycopg.connect(admin_url, autocommit=True) as conn:
        if conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone() is None:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))


async def try_xact_lock(conn: Conn, key: str) -> bool:
    """Take the transaction-scoped advisory lock named ``key`` if no one holds it (opening a
    transaction when none is open); whether it was taken. It ends with the transaction."""
    cur = await conn.execute("SELECT pg_try_advisory_xact_lock(hashtextextended(%s, 0)) AS ok", (key,))
    got = await cur.fetchone()
    return bool(got and got["ok"])


async def ping(conn: Conn) -> None:
    """A round trip to the server (a readiness check)."""
    await conn.execute("SELECT 1")


@dataclasses.dataclass(frozen=True, slots=True)
class ServerFacts:
    """What ``palimpsest status`` tells of the database server."""

    version: str | None
    pgvector: bool
    pgvector_available: bool


async def server_facts(conn: psycopg.AsyncConnection[Any]) -> ServerFacts:
    """The server's version and whether pgvector is installed (or only available)."""
    row = await (await conn.execute("SELECT current_setting('server_version')")).fetchone()
    ext = await (
        await conn.execute(
            "SELECT count(*) FILTER (WHERE installed_version IS NOT NULL), count(*)"
            " FROM pg_available_extensions WHERE name = 'vector'"
        )
    ).fetchone()
    return ServerFacts(
        version=row[0] if row else None,
        pgvector=bool(ext and ext[0]),
        pgvector_available=bool(ext and ext[1]),
    )


@asynccontextmanager
async def system_tx(pool: Pool) -> AsyncIterator[Conn]:
    """A transaction with no tenant set: infrastructure tables only; tenant tables read empty."""
    async with pool.connection() as conn, conn.transaction():
        yield conn


async def fetch_one(conn: Conn, sql: Any, params: Any = None) -> DictRow | None:
    cur = await conn.execute(sql, params)
    return await cur.fetchone()


async def fetch_all(conn: Conn, sql: Any, params: Any = None) -> list[DictRow]:
    cur = await conn.execute(sql, params)
    return await cur.fetchall()


class JsonRow:
    """Base of a row dataclass that an API shows as a JSON object of its fields, in field order
    (the caller's encoder writes ids and times, as it did for the dict rows)."""

    __slots__ = ()

    def to_json(self) -> dict[str, Any]:
        row = cast("DataclassInstance", self)
        return {f.name: getattr(row, f.name) for f in dataclasses.fields(row)}


def columns(row_type: type[Any], alias: str = "") -> str:
    """The select list of a row dataclass: its field names in order, each prefixed by ``alias.``."""
    prefix = f"{alias}." if alias else ""
    return ", ".join(prefix + f.name for f in dataclasses.fields(row_type))


async def fetch_one_as(conn: Conn, row_type: type[Row], sql: Any, params: Any = None) -> Row | None:
    """The first row of ``sql`` as a ``row_type`` (a dataclass whose fields are the selected columns)."""
    async with conn.cursor(row_factory=class_row(row_type)) as cur:
        await cur.execute(sql, params)
        return await cur.fetchone()


async def fetch_all_as(conn: Conn, row_type: type[Row], sql: Any, params: Any = None) -> list[Row]:
    """Every row of ``sql`` as a ``row_type`` (a dataclass whose fields are the selected columns)."""
    async with conn.cursor(row_factory=class_row(row_type)) as cur:
        await cur.execute(sql, params)
        return await cur.fetchall()
