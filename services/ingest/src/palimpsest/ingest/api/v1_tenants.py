"""/v1 routes for tenants (operator), their API tokens, audit log and installations (``manage``)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Annotated, Literal
from uuid import UUID

from fastapi import APIRouter, Query, Request, Response, status

from palimpsest.ingest import sync
from palimpsest.ingest.admin import audit, deletion, installations, tenants
from palimpsest.ingest.admin.access import Scope, scoped_tx
from palimpsest.ingest.api.deps import Ctx, ManageScope, OperatorOnly, ReadScope, audit_note
from palimpsest.ingest.errors import InvalidRequest
from palimpsest.ingest.schemas import (
    AuditEntry,
    AuditPage,
    Installation,
    InstallationCreate,
    InstallationList,
    InstallationSync,
    InstallationUpdate,
    Tenant,
    TenantCreate,
    TenantCreated,
    TenantDeleted,
    TenantDetail,
    TenantList,
    TokenCreate,
    TokenCreated,
    TokenList,
)

router = APIRouter(prefix="/v1")


@router.post(
    "/tenants",
    status_code=status.HTTP_201_CREATED,
    tags=["tenants"],
    responses={409: {"description": "A tenant of this name exists already (names are unique)."}},
)
async def create_tenant(body: TenantCreate, ctx: Ctx, _: OperatorOnly, request: Request) -> TenantCreated:
    """Create a tenant and its first API token, with every scope (operator; the token is shown once)."""
    created = await tenants.create_tenant(ctx, body.name)
    if (note := audit_note(request)) is not None:
        note.tenant_id = created.tenant_id
        note.target = {"tenant_id": str(created.tenant_id)}
    return created


@router.get("/tenants", tags=["tenants"])
async def list_tenants(ctx: Ctx, _: OperatorOnly) -> TenantList:
    """Every tenant with its state (operator)."""
    return TenantList(items=await tenants.list_tenants(ctx))


@router.get("/tenants/{tenant_id}", tags=["tenants"])
async def get_tenant(ctx: Ctx, scope: ReadScope) -> TenantDetail:
    """The tenant: state, repositories, installations, index bytes and last activity."""
    return await tenants.get_tenant(ctx, scope)


@router.post("/tenants/{tenant_id}/suspend", tags=["tenants"])
async def suspend_tenant(tenant_id: UUID, ctx: Ctx, _: OperatorOnly) -> Tenant:
    """Suspend: nothing of the tenant is indexed or reviewed, nor used as linked context (operator)."""
    return await tenants.set_suspended(ctx, tenant_id, True)


@router.post("/tenants/{tenant_id}/resume", tags=["tenants"])
async def resume_tenant(tenant_id: UUID, ctx: Ctx, _: OperatorOnly) -> Tenant:
    """Lift a suspension (operator)."""
    return await tenants.set_suspended(ctx, tenant_id, False)


@router.delete("/tenants/{tenant_id}", tags=["tenants"])
async def delete_tenant(tenant_id: UUID, ctx: Ctx, _: OperatorOnly, request: Request) -> TenantDeleted:
    """Delete every row of the tenant in every table (operator). Idempotent: retry after a crash or a
    timeout; a tenant already gone answers ``existed: false``."""
    if (note := audit_note(request)) is not None:
        note.tenant_id = None  # the audit log goes with the tenant: the deletion is logged instead
    report = await deletion.delete_tenant(ctx, tenant_id)
    return TenantDeleted.model_validate(report.as_dict())


@router.post("/tenants/{tenant_id}/tokens", status_code=status.HTTP_201_CREATED, tags=["tokens"])
async def issue_token(body: TokenCreate, ctx: Ctx, scope: ManageScope) -> TokenCreated:
    """Issue an API token with scopes and an optional expiry (shown once)."""
    expires_at = body.expires_at
    if body.expires_in_days is not None:
        if expires_at is not None:
            raise InvalidRequest("give expires_at or expires_in_days, not both")
        expires_at = datetime.now(UTC) + timedelta(days=body.expires_in_days)
    if expires_at is not None and expires_at.tzinfo is None:
        raise InvalidRequest("expires_at needs a time zone (e.g. 2027-01-31T00:00:00Z)")
    if expires_at is not None and expires_at <= datetime.now(UTC):
        raise InvalidRequest("expires_at is in the past")
    return await tenants.issue_token(ctx, scope, body.name, body.scopes, expires_at)


@router.get("/tenants/{tenant_id}/tokens", tags=["tokens"])
async def list_tokens(ctx: Ctx, scope: ManageScope, include_revoked: bool = False) -> TokenList:
    """The tenant's tokens (never a secret): scopes, created, expires, last used, revoked."""
    return TokenList(items=await tenants.list_tokens(ctx, scope, include_revoked=include_revoked))


@router.delete(
    "/tenants/{tenant_id}/tokens/{token_id}", status_code=status.HTTP_204_NO_CONTENT, tags=["tokens"]
)
async def revoke_token(token_id: UUID, ctx: Ctx, scope: ManageScope) -> Response:
    """Revoke a token (it stays listed with ?include_revoked=true); revoking twice is fine."""
    await tenants.revoke_token(ctx, scope, token_id)
    return Response(status_code=status.HTTP_204_NO_CONTENT)


@router.post("/tenants/{tenant_id}/tokens/{token_id}/rotate", tags=["tokens"])
async def rotate_token(token_id: UUID, ctx: Ctx, scope: ManageScope) -> TokenCreated:
    """A new secret for the token (same id, name, scopes and expiry); the old secret stops working."""
    return await tenants.rotate_token(ctx, scope, token_id)


@router.get("/tenants/{tenant_id}/audit", tags=["audit"])
async def list_audit(
    ctx: Ctx,
    scope: ManageScope,
    before: UUID | None = None,
    action: Annotated[str | None, Query(max_length=200)] = None,
    outcome: Literal["ok", "denied", "failed"] | None = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
) -> AuditPage:
    """The audit log, newest first: who (token id and name, or the operator), what, when, outcome."""
    return await _audit_page(ctx, scope, before=before, action=action, outcome=outcome, limit=limit)


async def _audit_page(
    ctx: Ctx, scope: Scope, *, before: UUID | None, action: str | None, outcome: str | None, limit: int
) -> AuditPage:
    async with scoped_tx(ctx, scope) as conn:
        rows = await audit.entries(conn, limit=limit, before=before, action=action, outcome=outcome)
    items = [AuditEntry.model_validate(r) for r in rows]
    return AuditPage(items=items, next_before=items[-1].id if len(items) == limit else None)


@router.post(
    "/tenants/{tenant_id}/installations", status_code=status.HTTP_201_CREATED, tags=["installations"]
)
async def add_installation(body: InstallationCreate, ctx: Ctx, scope: ManageScope) -> Installation:
    """Register a webhook sender (secret and credentials are encrypted at rest, never returned)."""
    return await installations.add_installation(ctx, scope, body)


@router.get("/tenants/{tenant_id}/installations", tags=["installations"])
async def list_installations(ctx: Ctx, scope: ManageScope) -> InstallationList:
    return InstallationList(items=await installations.list_installations(ctx, scope))


@router.get("/tenants/{tenant_id}/installations/{installation_id}", tags=["installations"])
async def get_installation(installation_id: UUID, ctx: Ctx, scope: ManageScope) -> Installation:
    return await installations.get_installation(ctx, scope, installation_id)


@router.patch("/tenants/{tenant_id}/installations/{installation_id}", tags=["installations"])
async def update_installation(
    installation_id: UUID, body: InstallationUpdate, ctx: Ctx, scope: ManageScope
) -> Installation:
    """Rename, rotate the webhook secret, replace or clear the credentials."""
    return await installations.update_installation(ctx, scope, installation_id, body)


@router.post("/tenants/{tenant_id}/installations/{installation_id}/suspend", tags=["installations"])
async def suspend_installation(installation_id: UUID, ctx: Ctx, scope: ManageScope) -> Installation:
    """Suspend: its repositories are neither indexed nor reviewed, nor used as linked context, and its
    deliveries are recorded as ignored (GitHub's 'installation suspend' event does the same)."""
    return await installations.set_suspended(ctx, scope, installation_id, True)


@router.post("/tenants/{tenant_id}/installations/{installation_id}/resume", tags=["installations"])
async def resume_installation(installation_id: UUID, ctx: Ctx, scope: ManageScope) -> Installation:
    """Lift a suspension (whoever set it)."""
    return await installations.set_suspended(ctx, scope, installation_id, False)


@router.post("/tenants/{tenant_id}/installations/{installation_id}/sync", tags=["installations"])
async def sync_installation(
    installation_id: UUID, ctx: Ctx, scope: ManageScope, dry_run: bool = False, force: bool = False
) -> InstallationSync:
    """Ask the provider for the installation's repositories (every page): register the missing
    ones, delete the ones it no longer lists, as an installation delivery would; provider errors
    are in ``errors`` with their HTTP status. ``dry_run``: report only. An empty listing while
    repositories are registered changes nothing and is an error unless ``force``."""
    report = await sync.sync_installation(ctx, scope, installation_id, dry_run=dry_run, force=force)
    return report.as_schema()


@router.delete(
    "/tenants/{tenant_id}/installations/{installation_id}",
    status_code=status.HTTP_204_NO_CONTENT,
    tags=["installations"],
)
async def remove_installation(installation_id: UUID, ctx: Ctx, scope: ManageScope) -> Response:
    """Remove an installation; its repositories stay registered, unlinked."""
    await installations.remove_installation(ctx, scope, installation_id)
    return Response(status_code=status.HTTP_204_NO_CONTENT)
