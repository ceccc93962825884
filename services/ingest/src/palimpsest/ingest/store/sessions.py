"""Web view sessions (migration 0049): one row per signed-in /ui session, until sign-out.

A tenant's sessions are read and written in that tenant's transaction, the operator's (no tenant)
in a system transaction: row-level security admits nothing else. The cross-tenant prune goes
through the migration's SECURITY DEFINER function.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import datetime
from uuid import UUID

from palimpsest.core.db import Conn, Pool, fetch_all, fetch_one, system_tx, tenant_tx
from palimpsest.core.stores import Owns, Store

STORE = Store(owner="ingest", writes=(Owns("ui_sessions"),))


__all__ = ["alive", "end", "end_for_token", "prune", "start"]


@asynccontextmanager
async def _tx(pool: Pool, tenant_id: UUID | None) -> AsyncIterator[Conn]:
    if tenant_id is None:
        async with system_tx(pool) as conn:
            yield conn
    else:
        async with tenant_tx(pool, tenant_id) as conn:
            yield conn


async def start(
    pool: Pool, session_id: UUID, tenant_id: UUID | None, token_hash: bytes, expires_at: datetime
) -> None:
    async with _tx(pool, tenant_id) as conn:
        await conn.execute(
            "INSERT INTO ui_sessions (session_id, tenant_id, token_hash, expires_at) VALUES (%s, %s, %s, %s)",
            (session_id, tenant_id, token_hash, expires_at),
        )


async def alive(pool: Pool, session_id: UUID, tenant_id: UUID | None, token_hash: bytes) -> bool:
    """The session exists (not signed out, its token not revoked or rotated) and has not expired."""
    async with _tx(pool, tenant_id) as conn:
        row = await fetch_one(
            conn,
            "SELECT 1 AS ok FROM ui_sessions WHERE session_id = %s AND token_hash = %s AND expires_at > now()",
            (session_id, token_hash),
        )
    return row is not None


async def end(pool: Pool, session_id: UUID, tenant_id: UUID | None) -> None:
    async with _tx(pool, tenant_id) as conn:
        await conn.execute("DELETE FROM ui_sessions WHERE session_id = %s", (session_id,))


async def end_for_token(conn: Conn, token_hash: bytes) -> list[UUID]:
    """Delete the sessions of a token (in its tenant's transaction); their ids."""
    rows = await fetch_all(
        conn, "DELETE FROM ui_sessions WHERE token_hash = %s RETURNING session_id", (token_hash,)
    )
    return [UUID(str(r["session_id"])) for r in rows]


async def prune(pool: Pool, operator_hash: bytes | None) -> int:
    """Delete expired sessions everywhere, and operator sessions of any other admin token."""
    async with system_tx(pool) as conn:
        row = await fetch_one(conn, "SELECT palimpsest_prune_ui_sessions(%s) AS n", (operator_hash,))
    return int(row["n"]) if row is not None else 0
