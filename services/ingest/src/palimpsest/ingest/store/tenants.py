"""Tenants and their API tokens (only the sha256 of a token is stored)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any
from uuid import UUID

from palimpsest.core.db import Conn, fetch_all, fetch_one

_TENANT = "tenant_id, name, created_at, suspended_at, deleting_at"
_TOKEN_COLUMNS = "token_id, name, scopes, created_at, expires_at, last_used_at, revoked_at, rotated_at"  # noqa: S105 - column names


async def insert_tenant(conn: Conn, tenant_id: UUID, name: str) -> dict[str, Any]:
    row = await fetch_one(
        conn, f"INSERT INTO tenants (tenant_id, name) VALUES (%s, %s) RETURNING {_TENANT}", (tenant_id, name)
    )
    assert row is not None
    return dict(row)


async def get_tenant(conn: Conn, tenant_id: UUID) -> dict[str, Any] | None:
    row = await fetch_one(conn, f"SELECT {_TENANT} FROM tenants WHERE tenant_id = %s", (tenant_id,))
    return None if row is None else dict(row)


async def tenant_exists(conn: Conn, tenant_id: UUID) -> bool:
    return (
        await fetch_one(
            conn, "SELECT 1 AS found FROM tenants WHERE tenant_id = %s AND deleting_at IS NULL", (tenant_id,)
        )
        is not None
    )


async def tenant_activity(conn: Conn) -> dict[str, Any]:
    """Repositories, bytes of the newest ready snapshot of each, and the newest sign of activity."""
    row = await fetch_one(
        conn,
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
    return dict(row)


async def set_suspended(conn: Conn, tenant_id: UUID, suspended: bool) -> dict[str, Any] | None:
    row = await fetch_one(
        conn,
        "UPDATE tenants SET suspended_at = CASE WHEN %s THEN coalesce(suspended_at, now()) END"
        f" WHERE tenant_id = %s AND deleting_at IS NULL RETURNING {_TENANT}",
        (suspended, tenant_id),
    )
    return None if row is None else dict(row)


async def mark_deleting(conn: Conn, tenant_id: UUID) -> bool:
    """Set the deletion mark (kept when already set); False when there is no such tenant."""
    row = await fetch_one(
        conn,
        "UPDATE tenants SET deleting_at = coalesce(deleting_at, now()) WHERE tenant_id = %s RETURNING 1 AS found",
        (tenant_id,),
    )
    return row is not None


async def insert_token(
    conn: Conn,
    tenant_id: UUID,
    token_id: UUID,
    token_hash: bytes,
    name: str,
    scopes: Sequence[str],
    expires_at: datetime | None = None,
) -> dict[str, Any]:
    row = await fetch_one(
        conn,
        "INSERT INTO api_tokens (tenant_id, token_id, token_hash, name, scopes, expires_at)"
        f" VALUES (%s, %s, %s, %s, %s, %s) RETURNING {_TOKEN_COLUMNS}",
        (tenant_id, token_id, token_hash, name, sorted(scopes), expires_at),
    )
    assert row is not None
    return dict(row)


async def list_tokens(conn: Conn, *, include_revoked: bool = False) -> list[dict[str, Any]]:
    rows = await fetch_all(
        conn,
        f"SELECT {_TOKEN_COLUMNS} FROM api_tokens WHERE %s OR revoked_at IS NULL ORDER BY created_at, token_id",
        (include_revoked,),
    )
    return [dict(r) for r in rows]


async def get_token(conn: Conn, token_id: UUID) -> dict[str, Any] | None:
    row = await fetch_one(conn, f"SELECT {_TOKEN_COLUMNS} FROM api_tokens WHERE token_id = %s", (token_id,))
    return None if row is None else dict(row)


async def revoke_token(conn: Conn, token_id: UUID) -> bytes | None:
    """Revoke (idempotent: the first revocation time stays); the token's hash, None when unknown."""
    row = await fetch_one(
        conn,
        "UPDATE api_tokens SET revoked_at = coalesce(revoked_at, now()) WHERE token_id = %s RETURNING token_hash",
        (token_id,),
    )
    return None if row is None else bytes(row["token_hash"])


async def rotate_token(conn: Conn, token_id: UUID, new_hash: bytes) -> tuple[bytes, dict[str, Any]] | None:
    """Replace a live token's secret (same id, name, scopes, expiry); the old hash and the new row."""
    row = await fetch_one(
        conn,
        "UPDATE api_tokens t SET token_hash = %s, rotated_at = now()"
        " FROM (SELECT token_hash FROM api_tokens WHERE token_id = %s FOR UPDATE) old"
        " WHERE t.token_id = %s AND t.revoked_at IS NULL"
        f" RETURNING old.token_hash AS old_hash, {', '.join('t.' + c.strip() for c in _TOKEN_COLUMNS.split(','))}",
        (new_hash, token_id, token_id),
    )
    if row is None:
        return None
    found = dict(row)
    return bytes(found.pop("old_hash")), found


async def touch_token(conn: Conn, token_id: UUID) -> None:
    await conn.execute(
        "UPDATE api_tokens SET last_used_at = now() WHERE token_id = %s"
        " AND (last_used_at IS NULL OR last_used_at < now() - interval '1 second')",
        (token_id,),
    )
