"""/v1 routes for tenants, their API tokens and their installations."""

from __future__ import annotations

from uuid import UUID

from fastapi import APIRouter, Response, status

from palimpsest.ingest.admin import installations, tenants
from palimpsest.ingest.admin.access import require_admin
from palimpsest.ingest.api.deps import Caller, Ctx, TenantScope
from palimpsest.ingest.schemas import (
    Installation,
    InstallationCreate,
    InstallationList,
    InstallationUpdate,
    Tenant,
    TenantCreate,
    TenantCreated,
    Token,
    TokenCreate,
    TokenCreated,
    TokenList,
)

router = APIRouter(prefix="/v1")


@router.post("/tenants", status_code=status.HTTP_201_CREATED, tags=["tenants"])
async def create_tenant(body: TenantCreate, ctx: Ctx, caller: Caller) -> TenantCreated:
    """Create a tenant and its first API token (operator admin token only; the token is shown once)."""
    require_admin(caller)
    return TenantCreated.model_validate(await tenants.create_tenant(ctx, body.name))


@router.get("/tenants/{tenant_id}", tags=["tenants"])
async def get_tenant(ctx: Ctx, scope: TenantScope) -> Tenant:
    return Tenant.model_validate(await tenants.get_tenant(ctx, scope))


@router.post("/tenants/{tenant_id}/tokens", status_code=status.HTTP_201_CREATED, tags=["tenants"])
async def issue_token(body: TokenCreate, ctx: Ctx, scope: TenantScope) -> TokenCreated:
    """Issue another API token for the tenant (shown once)."""
    return TokenCreated.model_validate(await tenants.issue_token(ctx, scope, body.name))


@router.get("/tenants/{tenant_id}/tokens", tags=["tenants"])
async def list_tokens(ctx: Ctx, scope: TenantScope) -> TokenList:
    return TokenList(items=[Token.model_validate(r) for r in await tenants.list_tokens(ctx, scope)])


@router.delete(
    "/tenants/{tenant_id}/tokens/{token_id}", status_code=status.HTTP_204_NO_CONTENT, tags=["tenants"]
)
async def revoke_token(token_id: UUID, ctx: Ctx, scope: TenantScope) -> Response:
    await tenants.revoke_token(ctx, scope, token_id)
    return Response(status_code=status.HTTP_204_NO_CONTENT)


@router.post(
    "/tenants/{tenant_id}/installations", status_code=status.HTTP_201_CREATED, tags=["installations"]
)
async def add_installation(body: InstallationCreate, ctx: Ctx, scope: TenantScope) -> Installation:
    """Register a webhook sender (secret and credentials are encrypted at rest, never returned)."""
    return Installation.model_validate(await installations.add_installation(ctx, scope, body))


@router.get("/tenants/{tenant_id}/installations", tags=["installations"])
async def list_installations(ctx: Ctx, scope: TenantScope) -> InstallationList:
    rows = await installations.list_installations(ctx, scope)
    return InstallationList(items=[Installation.model_validate(r) for r in rows])


@router.get("/tenants/{tenant_id}/installations/{installation_id}", tags=["installations"])
async def get_installation(installation_id: UUID, ctx: Ctx, scope: TenantScope) -> Installation:
    return Installation.model_validate(await installations.get_installation(ctx, scope, installation_id))


@router.patch("/tenants/{tenant_id}/installations/{installation_id}", tags=["installations"])
async def update_installation(
    installation_id: UUID, body: InstallationUpdate, ctx: Ctx, scope: TenantScope
) -> Installation:
    """Rename, rotate the webhook secret, replace or clear the credentials."""
    found = await installations.update_installation(ctx, scope, installation_id, body)
    return Installation.model_validate(found)


@router.delete(
    "/tenants/{tenant_id}/installations/{installation_id}",
    status_code=status.HTTP_204_NO_CONTENT,
    tags=["installations"],
)
async def remove_installation(installation_id: UUID, ctx: Ctx, scope: TenantScope) -> Response:
    """Remove an installation; its repositories stay registered, unlinked."""
    await installations.remove_installation(ctx, scope, installation_id)
    return Response(status_code=status.HTTP_204_NO_CONTENT)
