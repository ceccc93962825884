"""Tenants and their API tokens (only the sha256 of a token is stored)."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from palimpsest.core.db import Conn, fetch_all, fetch_one


async def insert_tenant(conn: Conn, tenant_id: UUID, name: str) -> dict[str, Any]:
    row = await fetch_one(
        conn,
        "INSERT INTO tenants (tenant_id, name) VALUES (%s, %s) RETURNING tenant_id, name, created_at",
        (tenant_id, name),
    )
    assert row is not None
    return dict(row)


async def get_tenant(conn: Conn, tenant_id: UUID) -> dict[str, Any] | None:
    row = await fetch_one(
        conn, "SELECT tenant_id, name, created_at FROM tenants WHERE tenant_id = %s", (tenant_id,)
    )
    return None if row is None else dict(row)


async def tenant_exists(conn: Conn, tenant_id: UUID) -> bool:
    return (
        await fetch_one(conn, "SELECT 1 AS found FROM tenants WHERE tenant_id = %s", (tenant_id,)) is not None
    )


async def insert_token(
    conn: Conn, tenant_id: UUID, token_id: UUID, token_hash: bytes, name: str
) -> dict[str, Any]:
    row = await fetch_one(
        conn,
        "INSERT INTO api_tokens (tenant_id, token_id, token_hash, name) VALUES (%s, %s, %s, %s)"
        " RETURNING token_id, name, created_at",
        (tenant_id, token_id, token_hash, name),
    )
    assert row is not None
    return dict(row)


async def list_tokens(conn: Conn) -> list[dict[str, Any]]:
    rows = await fetch_all(
        conn, "SELECT token_id, name, created_at FROM api_tokens ORDER BY created_at, token_id"
    )
    return [dict(r) for r in rows]


async def delete_token(conn: Conn, token_id: UUID) -> bool:
    cur = await conn.execute("DELETE FROM api_tokens WHERE token_id = %s", (token_id,))
    return cur.rowcount > 0
