"""Admin links and organisation-wide pattern repositories (``repository_links``, ADR-0017 D8).

Used by the reviewer beside the links of a repository's ``.palimpsest/config.yml``, with the same
visibility rules and limits (see ``palimpsest.index.context.crossrepo``). Every route needs ``manage``.
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

import psycopg

from palimpsest.core.db import Conn, fetch_all, fetch_one
from palimpsest.core.ids import uuid7
from palimpsest.core.repositories import get_repository
from palimpsest.ingest.admin.access import Scope, scoped_tx
from palimpsest.ingest.context import IngestContext
from palimpsest.ingest.errors import Conflict, InvalidRequest, NotFound

_COLUMNS = (
    "l.link_id, l.role, l.source_id AS source_repository_id, s.full_name AS source,"
    " l.target_id AS target_repository_id, t.full_name AS target, l.created_at"
)
_FROM = (
    "repository_links l JOIN repositories t ON t.tenant_id = l.tenant_id AND t.repository_id = l.target_id"
    " LEFT JOIN repositories s ON s.tenant_id = l.tenant_id AND s.repository_id = l.source_id"
)


async def add_link(
    ctx: IngestContext, scope: Scope, *, role: str, source_id: UUID | None, target_id: UUID
) -> dict[str, Any]:
    if role == "linked" and source_id is None:
        raise InvalidRequest(
            "a linked repository needs a source repository (only pattern links are organisation-wide)"
        )
    if source_id == target_id:
        raise InvalidRequest("a repository cannot be linked to itself")
    link_id = uuid7()
    async with scoped_tx(ctx, scope) as conn:
        for rid in {r for r in (source_id, target_id) if r is not None}:
            if await get_repository(conn, rid) is None:
                raise NotFound(f"no such repository {rid}")
        try:
            async with conn.transaction():
                await conn.execute(
                    "INSERT INTO repository_links (tenant_id, link_id, source_id, target_id, role)"
                    " VALUES (%s, %s, %s, %s, %s)",
                    (scope.tenant_id, link_id, source_id, target_id, role),
                )
        except psycopg.errors.UniqueViolation as exc:
            raise Conflict("this link exists already") from exc
        return await _get(conn, link_id)


async def _get(conn: Conn, link_id: UUID) -> dict[str, Any]:
    row = await fetch_one(conn, f"SELECT {_COLUMNS} FROM {_FROM} WHERE l.link_id = %s", (link_id,))
    if row is None:
        raise NotFound("no such link")
    return dict(row)


async def list_links(ctx: IngestContext, scope: Scope, repository_id: UUID | None) -> list[dict[str, Any]]:
    """The tenant's links; with a repository, those that apply to it or point at it."""
    async with scoped_tx(ctx, scope) as conn:
        rows = await fetch_all(
            conn,
            f"SELECT {_COLUMNS} FROM {_FROM} WHERE %(r)s::uuid IS NULL"
            " OR l.source_id = %(r)s::uuid OR l.target_id = %(r)s::uuid OR l.source_id IS NULL"
            " ORDER BY l.created_at, l.link_id",
            {"r": repository_id},
        )
    return [dict(r) for r in rows]


async def get_link(ctx: IngestContext, scope: Scope, link_id: UUID) -> dict[str, Any]:
    async with scoped_tx(ctx, scope) as conn:
        return await _get(conn, link_id)


async def remove_link(ctx: IngestContext, scope: Scope, link_id: UUID) -> None:
    async with scoped_tx(ctx, scope) as conn:
        cur = await conn.execute("DELETE FROM repository_links WHERE link_id = %s", (link_id,))
    if cur.rowcount == 0:
        raise NotFound("no such link")
