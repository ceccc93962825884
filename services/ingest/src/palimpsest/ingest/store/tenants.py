"""Tenants and their API tokens (only the sha256 of a token is stored), and a tenant's deletion.

Deleting a tenant empties every table with a ``tenant_id`` column, found in the catalog at run
time (:func:`tenant_tables`, :func:`delete_tenant_batch`), so those statements name no table of
their own: the tables are their owners' (``palimpsest.ingest.admin.deletion`` runs the deletion).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Final
from uuid import UUID

import psycopg
from psycopg import sql

from palimpsest.core.db import Conn, JsonRow, columns, fetch_all_as, fetch_one, fetch_one_as
from palimpsest.core.stores import Owns, Store
from palimpsest.ingest.errors import Conflict

STORE = Store(
    owner="ingest",
    writes=(Owns("tenants"), Owns("api_tokens")),
    reads=("repositories", "deliveries", "installations", "reviews", "code_index_snapshots"),
)


@dataclass(frozen=True, slots=True)
class Tenant(JsonRow):
    tenant_id: UUID
    name: str
    created_at: datetime
    suspended_at: datetime | None
    deleting_at: datetime | None

    @property
    def state(self) -> str:
        return "deleting" if self.deleting_at else "suspended" if self.suspended_at else "active"


@dataclass(frozen=True, slots=True)
class TenantActivity(JsonRow):
    """A tenant's repositories, installations, index bytes and newest sign of activity."""

    repositories: int
    installations: int
    index_bytes: int
    last_activity_at: datetime | None


@dataclass(frozen=True, slots=True)
class Token(JsonRow):
    """An API token as listed (its hash never leaves the store)."""

    token_id: UUID
    name: str
    scopes: list[str]
    created_at: datetime
    expires_at: datetime | None
    last_used_at: datetime | None
    revoked_at: datetime | None
    rotated_at: datetime | None


_TENANT = columns(Tenant)
_TOKEN_COLUMNS = columns(Token)


async def insert_tenant(conn: Conn, tenant_id: UUID, name: str) -> Tenant:
    """The new tenant; a name another tenant has (letter case aside, migration 0050) is a
    :class:`Conflict`."""
    try:
        row = await fetch_one_as(
            conn,
            Tenant,
            f"INSERT INTO tenants (tenant_id, name) VALUES (%s, %s) RETURNING {_TENANT}",
            (tenant_id, name),
        )
    except psycopg.errors.UniqueViolation as exc:
        raise Conflict(
            f"a tenant named {name!r} exists already: tenant names are unique; choose another name"
        ) from exc
    assert row is not None
    return row


async def get_tenant(conn: Conn, tenant_id: UUID) -> Tenant | None:
    return await fetch_one_as(
        conn, Tenant, f"SELECT {_TENANT} FROM tenants WHERE tenant_id = %s", (tenant_id,)
    )


async def tenant_exists(conn: Conn, tenant_id: UUID) -> bool:
    return (
        await fetch_one(
            conn, "SELECT 1 AS found FROM tenants WHERE tenant_id = %s AND deleting_at IS NULL", (tenant_id,)
        )
        is not None
    )


async def tenant_activity(conn: Conn) -> TenantActivity:
    """Repositories, bytes of the newest ready snapshot of each, and the newest sign of activity."""
    row = await fetch_one_as(
        conn,
        TenantActivity,
        """
        SELECT
          (SELECT count(*) FROM repositories) AS repositories,
          (SELECT count(*) FROM installations) AS installations,
          (SELECT coalesce(sum(s.bytes), 0) FROM (
              SELECT DISTINCT ON (repository_id) bytes FROM code_index_snapshots
              WHERE state = 'ready' ORDER BY repository_id, created_at DESC) s) AS index_bytes,
          greatest(
              (SELECT max(received_at) FROM deliveries),
              (SELECT max(index_updated_at) FROM repositories),
              (SELECT max(created_at) FROM code_index_snapshots),
              (SELECT max(created_at) FROM reviews),
              (SELECT max(last_used_at) FROM api_tokens)
          ) AS last_activity_at
        """,
    )
    assert row is not None
    return row


async def set_suspended(conn: Conn, tenant_id: UUID, suspended: bool) -> Tenant | None:
    return await fetch_one_as(
        conn,
        Tenant,
        "UPDATE tenants SET suspended_at = CASE WHEN %s THEN coalesce(suspended_at, now()) END"
        f" WHERE tenant_id = %s AND deleting_at IS NULL RETURNING {_TENANT}",
        (suspended, tenant_id),
    )


async def mark_deleting(conn: Conn, tenant_id: UUID) -> bool:
    """Set the deletion mark (kept when already set); False when there is no such tenant."""
    row = await fetch_one(
        conn,
        "UPDATE tenants SET deleting_at = coalesce(deleting_at, now()) WHERE tenant_id = %s RETURNING 1 AS found",
        (tenant_id,),
    )
    return row is not None


async def delete_tenant(conn: Conn, tenant_id: UUID) -> int:
    """Delete the tenant's row (its other rows are deleted first, table by table); rows deleted."""
    cur = await conn.execute("DELETE FROM tenants WHERE tenant_id = %s", (tenant_id,))
    return cur.rowcount


@dataclass(frozen=True, slots=True)
class _Table:
    name: str


_TENANT_TABLES: Final = """
SELECT c.relname AS name FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE c.relkind IN ('r', 'p') AND n.nspname = current_schema() AND c.relname <> 'tenants'
  AND NOT c.relispartition
  AND EXISTS (SELECT 1 FROM pg_attribute a WHERE a.attrelid = c.oid
              AND a.attname = 'tenant_id' AND NOT a.attisdropped)
ORDER BY 1
"""


async def tenant_tables(conn: Conn) -> list[str]:
    """Every table of the schema with a ``tenant_id`` column (a partitioned table by its parent),
    ``tenants`` excluded (it goes last); read from the catalog, in a system transaction."""
    return [t.name for t in await fetch_all_as(conn, _Table, _TENANT_TABLES)]


async def delete_tenant_batch(conn: Conn, tenant_id: UUID, table: str, batch: int) -> int:
    """Delete up to ``batch`` of the tenant's rows of ``table`` (one of :func:`tenant_tables`);
    how many."""
    statement = sql.SQL(
        "DELETE FROM {t} WHERE ctid = ANY(ARRAY(SELECT ctid FROM {t} WHERE tenant_id = %s LIMIT %s))"
    ).format(t=sql.Identifier(table))
    cur = await conn.execute(statement, (tenant_id, batch))
    return cur.rowcount


async def insert_token(
    conn: Conn,
    tenant_id: UUID,
    token_id: UUID,
    token_hash: bytes,
    name: str,
    scopes: Sequence[str],
    expires_at: datetime | None = None,
) -> Token:
    row = await fetch_one_as(
        conn,
        Token,
        "INSERT INTO api_tokens (tenant_id, token_id, token_hash, name, scopes, expires_at)"
        f" VALUES (%s, %s, %s, %s, %s, %s) RETURNING {_TOKEN_COLUMNS}",
        (tenant_id, token_id, token_hash, name, sorted(scopes), expires_at),
    )
    assert row is not None
    return row


async def list_tokens(conn: Conn, *, include_revoked: bool = False) -> list[Token]:
    return await fetch_all_as(
        conn,
        Token,
        f"SELECT {_TOKEN_COLUMNS} FROM api_tokens WHERE %s OR revoked_at IS NULL ORDER BY created_at, token_id",
        (include_revoked,),
    )


async def get_token(conn: Conn, token_id: UUID) -> Token | None:
    return await fetch_one_as(
        conn, Token, f"SELECT {_TOKEN_COLUMNS} FROM api_tokens WHERE token_id = %s", (token_id,)
    )


async def revoke_token(conn: Conn, token_id: UUID) -> bytes | None:
    """Revoke (idempotent: the first revocation time stays); the token's hash, None when unknown."""
    row = await fetch_one(
        conn,
        "UPDATE api_tokens SET revoked_at = coalesce(revoked_at, now()) WHERE token_id = %s RETURNING token_hash",
        (token_id,),
    )
    return None if row is None else bytes(row["token_hash"])


@dataclass(frozen=True, slots=True)
class _Rotated(Token):
    old_hash: bytes = b""


async def rotate_token(conn: Conn, token_id: UUID, new_hash: bytes) -> tuple[bytes, Token] | None:
    """Replace a live token's secret (same id, name, scopes, expiry); the old hash and the new row."""
    row = await fetch_one_as(
        conn,
        _Rotated,
        "UPDATE api_tokens t SET token_hash = %s, rotated_at = now()"
        " FROM (SELECT token_hash FROM api_tokens WHERE token_id = %s FOR UPDATE) old"
        " WHERE t.token_id = %s AND t.revoked_at IS NULL"
        f" RETURNING old.token_hash AS old_hash, {columns(Token, 't')}",
        (new_hash, token_id, token_id),
    )
    if row is None:
        return None
    return bytes(row.old_hash), Token(**{f.name: getattr(row, f.name) for f in dataclasses.fields(Token)})


async def touch_token(conn: Conn, token_id: UUID) -> None:
    await conn.execute(
        "UPDATE api_tokens SET last_used_at = now() WHERE token_id = %s"
        " AND (last_used_at IS NULL OR last_used_at < now() - interval '1 second')",
        (token_id,),
    )
