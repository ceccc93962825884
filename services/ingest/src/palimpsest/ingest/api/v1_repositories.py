"""/v1 routes for repositories (register, mode, rebuild, remove) and the delivery record."""

from __future__ import annotations

from typing import Annotated
from uuid import UUID

from fastapi import APIRouter, Query, Response, status

from palimpsest.ingest.admin import repositories
from palimpsest.ingest.admin.access import scoped_tx
from palimpsest.ingest.api.deps import Ctx, ManageScope, ReadScope
from palimpsest.ingest.errors import NotFound
from palimpsest.ingest.schemas import (
    Delivery,
    DeliveryPage,
    IndexRequest,
    Outcome,
    ProviderName,
    RepoProvider,
    Repository,
    RepositoryCreate,
    RepositoryList,
    RepositoryRegistered,
    RepositoryUpdate,
)
from palimpsest.ingest.store import deliveries
from palimpsest.ingest.store.deliveries import DeliveryFilter

router = APIRouter(prefix="/v1/tenants/{tenant_id}")


@router.post("/repositories", status_code=status.HTTP_201_CREATED, tags=["repositories"])
async def register_repository(body: RepositoryCreate, ctx: Ctx, scope: ManageScope) -> RepositoryRegistered:
    """Register a repository by URL; unless index_mode is off this emits index.requested."""
    return await repositories.register_repository(ctx, scope, body)


@router.get("/repositories", tags=["repositories"])
async def list_repositories(
    ctx: Ctx,
    scope: ReadScope,
    provider: RepoProvider | None = None,
    installation_id: UUID | None = None,
) -> RepositoryList:
    rows = await repositories.list_repositories(
        ctx, scope, provider=provider, installation_id=installation_id
    )
    return RepositoryList(items=rows)


@router.get("/repositories/{repository_id}", tags=["repositories"])
async def get_repository(repository_id: UUID, ctx: Ctx, scope: ReadScope) -> Repository:
    return await repositories.get_repository(ctx, scope, repository_id)


@router.patch("/repositories/{repository_id}", tags=["repositories"])
async def update_repository(
    repository_id: UUID, body: RepositoryUpdate, ctx: Ctx, scope: ManageScope
) -> Repository:
    """Change the index mode (off deletes the index data; another mode emits index.requested),
    default branch, visibility."""
    return await repositories.update_repository(ctx, scope, repository_id, body)


@router.post(
    "/repositories/{repository_id}/rebuild", status_code=status.HTTP_202_ACCEPTED, tags=["repositories"]
)
async def rebuild_repository(repository_id: UUID, ctx: Ctx, scope: ManageScope) -> IndexRequest:
    """Request a full index build of the default branch (emits index.requested)."""
    return await repositories.rebuild_repository(ctx, scope, repository_id)


@router.delete("/repositories/{repository_id}", status_code=status.HTTP_204_NO_CONTENT, tags=["repositories"])
async def remove_repository(repository_id: UUID, ctx: Ctx, scope: ManageScope) -> Response:
    """Remove a repository and, by cascade, everything indexed for it."""
    await repositories.remove_repository(ctx, scope, repository_id)
    return Response(status_code=status.HTTP_204_NO_CONTENT)


@router.get("/deliveries", tags=["deliveries"])
async def list_deliveries(
    ctx: Ctx,
    scope: ReadScope,
    provider: ProviderName | None = None,
    outcome: Outcome | None = None,
    event: Annotated[str | None, Query(max_length=255)] = None,
    repository_id: UUID | None = None,
    installation_id: UUID | None = None,
    before: UUID | None = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
) -> DeliveryPage:
    """Webhook deliveries, newest first; filter by provider, outcome, event, repository, installation."""
    where = DeliveryFilter(provider, outcome, event, repository_id, installation_id)
    async with scoped_tx(ctx, scope) as conn:
        rows = await deliveries.list_deliveries(conn, where, limit=limit, before=before)
    items = [Delivery.model_validate(r.to_json()) for r in rows]
    return DeliveryPage(items=items, next_before=items[-1].id if len(items) == limit else None)


@router.get("/deliveries/{delivery_pk}", tags=["deliveries"])
async def get_delivery(delivery_pk: UUID, ctx: Ctx, scope: ReadScope) -> Delivery:
    async with scoped_tx(ctx, scope) as conn:
        found = await deliveries.get_delivery(conn, delivery_pk)
    if found is None:
        raise NotFound("no such delivery")
    return Delivery.model_validate(found.to_json())
