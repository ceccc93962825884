"""Reading, changing and deleting one row by its id: the statements every table module shares."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from uuid import UUID

import psycopg
from psycopg import sql

from palimpsest.core.db import Conn, Row, fetch_one_as
from palimpsest.core.stores import Store
from palimpsest.ingest.errors import Conflict

# The shared statements of the table modules: the table is the caller's.
STORE = Store(owner="ingest")


__all__ = ["delete_row", "get_row", "update_row"]

Taken = Callable[[psycopg.errors.UniqueViolation], Conflict]


async def get_row(
    conn: Conn, row_type: type[Row], table: str, key: str, value: UUID, columns: sql.Composable
) -> Row | None:
    """The row whose ``key`` is ``value``, as a ``row_type`` of the selected ``columns``."""
    query = sql.SQL("SELECT {} FROM {} WHERE {} = %s").format(
        columns, sql.Identifier(table), sql.Identifier(key)
    )
    return await fetch_one_as(conn, row_type, query, (value,))


async def update_row(
    conn: Conn,
    row_type: type[Row],
    table: str,
    key: str,
    value: UUID,
    changes: dict[str, Any],
    *,
    columns: sql.Composable,
    updatable: frozenset[str],
    taken: Taken,
) -> Row | None:
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
        return await fetch_one_as(conn, row_type, query, (*changes.values(), value))
    except psycopg.errors.UniqueViolation as exc:
        raise taken(exc) from exc


async def delete_row(conn: Conn, table: str, key: str, value: UUID) -> bool:
    query = sql.SQL("DELETE FROM {} WHERE {} = %s").format(sql.Identifier(table), sql.Identifier(key))
    cur = await conn.execute(query, (value,))
    return cur.rowcount > 0
