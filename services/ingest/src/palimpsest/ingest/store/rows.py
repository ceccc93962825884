"""Reading, changing and deleting one row by its id: the statements every table module shares."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from uuid import UUID

import psycopg
from psycopg import sql

from palimpsest.core.db import Conn, fetch_one
from palimpsest.ingest.errors import Conflict

__all__ = ["delete_row", "get_row", "update_row"]

Taken = Callable[[psycopg.errors.UniqueViolation], Conflict]


async def get_row(
    conn: Conn, table: str, key: str, value: UUID, columns: sql.Composable
) -> dict[str, Any] | None:
    query = sql.SQL("SELECT {} FROM {} WHERE {} = %s").format(
        columns, sql.Identifier(table), sql.Identifier(key)
    )
    row = await fetch_one(conn, query, (value,))
    return None if row is None else dict(row)


async def update_row(
    conn: Conn,
    table: str,
    key: str,
    value: UUID,
    changes: dict[str, Any],
    *,
    columns: sql.Composable,
    updatable: frozenset[str],
    taken: Taken,
) -> dict[str, Any] | None:
    """Set ``changes`` (only ``updatable`` columns) and ``updated_at``; the row after, or None."""
    unknown = set(changes) - updatable
    if unknown:
        raise ValueError(f"not updatable: {sorted(unknown)}")
    assignments: list[sql.Composable] = [sql.SQL("{} = %s").format(sql.Identifier(name)) for name in changes]
    assignments.append(sql.SQL("updated_at = now()"))
    query = sql.SQL("UPDATE {} SET {} WHERE {} = %s RETURNING {}").format(
        sql.Identifier(table), sql.SQL(", ").join(assignments), sql.Identifier(key), columns
    )
    try:
        row = await fetch_one(conn, query, (*changes.values(), value))
    except psycopg.errors.UniqueViolation as exc:
        raise taken(exc) from exc
    return None if row is None else dict(row)


async def delete_row(conn: Conn, table: str, key: str, value: UUID) -> bool:
    query = sql.SQL("DELETE FROM {} WHERE {} = %s").format(sql.Identifier(table), sql.Identifier(key))
    cur = await conn.execute(query, (value,))
    return cur.rowcount > 0
