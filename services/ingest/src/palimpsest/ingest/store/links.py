"""Admin links and organisation-wide pattern repositories (``repository_links``, ADR-0017 D8).

The ingest service's admin API adds, lists and removes them (:mod:`palimpsest.ingest.admin.links`);
the reviewer reads them beside a repository's ``.palimpsest/config.yml`` links. Every function runs
in the caller's tenant transaction (row-level security scopes it).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Final
from uuid import UUID

import psycopg

from palimpsest.core.db import Conn, JsonRow, fetch_all_as, fetch_one_as
from palimpsest.core.stores import Owns, Store
from palimpsest.ingest.errors import Conflict

STORE = Store(owner="ingest", writes=(Owns("repository_links"),), reads=("repositories",))

__all__ = ["StoredLink", "delete_link", "get_link", "insert_link", "list_links"]


@dataclass(frozen=True, slots=True)
class StoredLink(JsonRow):
    """A link with its repositories' names (``source`` None: every repository of the tenant)."""

    link_id: UUID
    role: str  # linked | pattern
    source_repository_id: UUID | None
    source: str | None
    target_repository_id: UUID
    target: str
    created_at: datetime


_SELECT: Final = (
    "SELECT l.link_id, l.role, l.source_id AS source_repository_id, s.full_name AS source,"
    " l.target_id AS target_repository_id, t.full_name AS target, l.created_at"
    " FROM repository_links l JOIN repositories t ON t.tenant_id = l.tenant_id AND t.repository_id = l.target_id"
    " LEFT JOIN repositories s ON s.tenant_id = l.tenant_id AND s.repository_id = l.source_id"
)


async def insert_link(
    conn: Conn, tenant_id: UUID, link_id: UUID, *, source_id: UUID | None, target_id: UUID, role: str
) -> None:
    """Store a link; :class:`Conflict` when the same link exists already."""
    try:
        async with conn.transaction():
            await conn.execute(
                "INSERT INTO repository_links (tenant_id, link_id, source_id, target_id, role)"
                " VALUES (%s, %s, %s, %s, %s)",
                (tenant_id, link_id, source_id, target_id, role),
            )
    except psycopg.errors.UniqueViolation as exc:
        raise Conflict("this link exists already") from exc


async def get_link(conn: Conn, link_id: UUID) -> StoredLink | None:
    return await fetch_one_as(conn, StoredLink, _SELECT + " WHERE l.link_id = %s", (link_id,))


async def list_links(conn: Conn, repository_id: UUID | None) -> list[StoredLink]:
    """The tenant's links (``repository_id`` None); with a repository, those that apply to it
    (its own and the organisation-wide ones) or point at it."""
    return await fetch_all_as(
        conn,
        StoredLink,
        _SELECT + " WHERE %(r)s::uuid IS NULL"
        " OR l.source_id = %(r)s::uuid OR l.target_id = %(r)s::uuid OR l.source_id IS NULL"
        " ORDER BY l.created_at, l.link_id",
        {"r": repository_id},
    )


async def delete_link(conn: Conn, link_id: UUID) -> bool:
    """Delete the link; whether there was one."""
    cur = await conn.execute("DELETE FROM repository_links WHERE link_id = %s", (link_id,))
    return cur.rowcount > 0
