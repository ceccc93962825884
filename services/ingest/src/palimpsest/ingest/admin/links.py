"""Admin links and organisation-wide pattern repositories (``repository_links``, ADR-0017 D8).

Used by the reviewer beside the links of a repository's ``.palimpsest/config.yml``, with the same
visibility rules and limits (see ``palimpsest.index.context.crossrepo``). Every route needs ``manage``.
"""

from __future__ import annotations

from uuid import UUID

from palimpsest.core.db import Conn
from palimpsest.core.ids import uuid7
from palimpsest.core.repositories import get_repository
from palimpsest.ingest.admin.access import Scope, scoped_tx
from palimpsest.ingest.context import IngestContext
from palimpsest.ingest.errors import InvalidRequest, NotFound
from palimpsest.ingest.store import links
from palimpsest.ingest.store.links import StoredLink


async def add_link(
    ctx: IngestContext, scope: Scope, *, role: str, source_id: UUID | None, target_id: UUID
) -> StoredLink:
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
        await links.insert_link(
            conn, scope.tenant_id, link_id, source_id=source_id, target_id=target_id, role=role
        )
        return await _get(conn, link_id)


async def _get(conn: Conn, link_id: UUID) -> StoredLink:
    found = await links.get_link(conn, link_id)
    if found is None:
        raise NotFound("no such link")
    return found


async def list_links(ctx: IngestContext, scope: Scope, repository_id: UUID | None) -> list[StoredLink]:
    """The tenant's links; with a repository, those that apply to it or point at it."""
    async with scoped_tx(ctx, scope) as conn:
        return await links.list_links(conn, repository_id)


async def get_link(ctx: IngestContext, scope: Scope, link_id: UUID) -> StoredLink:
    async with scoped_tx(ctx, scope) as conn:
        return await _get(conn, link_id)


async def remove_link(ctx: IngestContext, scope: Scope, link_id: UUID) -> None:
    async with scoped_tx(ctx, scope) as conn:
        removed = await links.delete_link(conn, link_id)
    if not removed:
        raise NotFound("no such link")
