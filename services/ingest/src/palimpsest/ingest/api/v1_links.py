"""/v1 routes for admin links and organisation-wide pattern repositories (``manage``)."""

from __future__ import annotations

from uuid import UUID

from fastapi import APIRouter, Response, status

from palimpsest.ingest.admin import links
from palimpsest.ingest.api.deps import Ctx, ManageScope
from palimpsest.ingest.schemas import Link, LinkCreate, LinkList

router = APIRouter(prefix="/v1/tenants/{tenant_id}", tags=["links"])


@router.post("/links", status_code=status.HTTP_201_CREATED)
async def add_link(body: LinkCreate, ctx: Ctx, scope: ManageScope) -> Link:
    """Link a repository to another (``linked``, or a ``pattern`` exemplar); a pattern link without
    a source is organisation-wide. The reviewer uses them beside ``.palimpsest/config.yml`` links,
    with the same visibility rules and limits."""
    found = await links.add_link(
        ctx, scope, role=body.role, source_id=body.source_repository_id, target_id=body.target_repository_id
    )
    return Link.model_validate(found)


@router.get("/links")
async def list_links(ctx: Ctx, scope: ManageScope, repository_id: UUID | None = None) -> LinkList:
    """The tenant's admin links; with ``repository_id``, those applying to it or pointing at it."""
    return LinkList(items=[Link.model_validate(r) for r in await links.list_links(ctx, scope, repository_id)])


@router.get("/links/{link_id}")
async def get_link(link_id: UUID, ctx: Ctx, scope: ManageScope) -> Link:
    return Link.model_validate(await links.get_link(ctx, scope, link_id))


@router.delete("/links/{link_id}", status_code=status.HTTP_204_NO_CONTENT)
async def remove_link(link_id: UUID, ctx: Ctx, scope: ManageScope) -> Response:
    await links.remove_link(ctx, scope, link_id)
    return Response(status_code=status.HTTP_204_NO_CONTENT)
