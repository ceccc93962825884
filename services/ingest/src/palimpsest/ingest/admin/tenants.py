"""Tenants (create, list, show, suspend, resume: operator) and their API tokens (issue, list,
revoke, rotate: ``manage``)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from uuid import UUID

from palimpsest.core.db import tenant_tx
from palimpsest.core.ids import uuid7
from palimpsest.ingest.admin.access import ALL_SCOPES, Scope, scoped_tx
from palimpsest.ingest.context import IngestContext
from palimpsest.ingest.errors import Conflict, NotFound
from palimpsest.ingest.schemas import Tenant as TenantOut
from palimpsest.ingest.schemas import TenantCreated, TenantDetail, TokenCreated
from palimpsest.ingest.schemas import Token as TokenOut
from palimpsest.ingest.store import lookups, sessions, tenants
from palimpsest.ingest.store.tenants import Tenant
from palimpsest.ingest.tokens import new_api_token


async def create_tenant(ctx: IngestContext, name: str) -> TenantCreated:
    """A new tenant and its first API token (every scope; returned once)."""
    tenant_id = uuid7()
    token, token_hash = new_api_token()
    async with tenant_tx(ctx.pool, tenant_id) as conn:
        tenant = await tenants.insert_tenant(conn, tenant_id, name)
        issued = await tenants.insert_token(
            conn, tenant_id, uuid7(), token_hash, "initial", [str(s) for s in ALL_SCOPES]
        )
    return TenantCreated.model_validate({**tenant.to_json(), "token_id": issued.token_id, "api_token": token})


async def list_tenants(ctx: IngestContext) -> list[TenantOut]:
    return [_state(t) for t in await lookups.tenant_list(ctx.pool)]


async def get_tenant(ctx: IngestContext, scope: Scope) -> TenantDetail:
    """The tenant with its repositories, index bytes and last activity."""
    async with scoped_tx(ctx, scope) as conn:
        found = await tenants.get_tenant(conn, scope.tenant_id)
        if found is None:
            raise NotFound("no such tenant")
        activity = await tenants.tenant_activity(conn)
    return TenantDetail.model_validate({**found.to_json(), "state": found.state, **activity.to_json()})


async def set_suspended(ctx: IngestContext, tenant_id: UUID, suspended: bool) -> TenantOut:
    """Suspend (not indexed, not reviewed, not linked context) or resume; idempotent."""
    async with tenant_tx(ctx.pool, tenant_id) as conn:
        found = await tenants.set_suspended(conn, tenant_id, suspended)
    if found is None:
        raise NotFound("no such tenant")
    ctx.tokens.clear()
    ctx.routes.clear()  # cached webhook routes carry the suspension
    return _state(found)


def _state(tenant: Tenant) -> TenantOut:
    return TenantOut.model_validate({**tenant.to_json(), "state": tenant.state})


async def issue_token(
    ctx: IngestContext, scope: Scope, name: str, scopes: Sequence[str], expires_at: datetime | None
) -> TokenCreated:
    token, token_hash = new_api_token()
    async with scoped_tx(ctx, scope) as conn:
        issued = await tenants.insert_token(
            conn, scope.tenant_id, uuid7(), token_hash, name, sorted(set(scopes)), expires_at
        )
    return TokenCreated.model_validate({**issued.to_json(), "api_token": token})


async def list_tokens(ctx: IngestContext, scope: Scope, *, include_revoked: bool) -> list[TokenOut]:
    async with scoped_tx(ctx, scope) as conn:
        found = await tenants.list_tokens(conn, include_revoked=include_revoked)
    return [TokenOut.model_validate(t.to_json()) for t in found]


async def revoke_token(ctx: IngestContext, scope: Scope, token_id: UUID) -> None:
    async with scoped_tx(ctx, scope) as conn:
        old_hash = await tenants.revoke_token(conn, token_id)
        ended = await sessions.end_for_token(conn, old_hash) if old_hash is not None else []
    if old_hash is None:
        raise NotFound("no such token")
    _forget(ctx, old_hash, ended)


def _forget(ctx: IngestContext, token_hash: bytes, ended: list[UUID]) -> None:
    """This process stops honouring a token and its web sessions at once (others within the cache
    window, PALIMPSEST_LOOKUP_CACHE_S)."""
    ctx.tokens.discard(token_hash)
    for session_id in ended:
        ctx.sessions.discard(session_id)


async def rotate_token(ctx: IngestContext, scope: Scope, token_id: UUID) -> TokenCreated:
    """A new secret for the token (same id, name, scopes, expiry); the old one stops working now."""
    token, token_hash = new_api_token()
    async with scoped_tx(ctx, scope) as conn:
        rotated = await tenants.rotate_token(conn, token_id, token_hash)
        if rotated is None:
            if await tenants.get_token(conn, token_id) is None:
                raise NotFound("no such token")
            raise Conflict("the token is revoked; issue a new one")
        ended = await sessions.end_for_token(conn, rotated[0])
    old_hash, row = rotated
    _forget(ctx, old_hash, ended)
    return TokenCreated.model_validate({**row.to_json(), "api_token": token})
