"""Who is calling and which tenant they may act on.

A tenant's API token acts on that tenant only; the operator admin token may create tenants and
act on any tenant. Another tenant's resources look exactly like missing ones (404), so a token
learns nothing about tenants it does not belong to.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from uuid import UUID

from palimpsest.core.db import Conn, tenant_tx
from palimpsest.ingest.context import IngestContext, TokenOwner
from palimpsest.ingest.errors import Forbidden, NotFound, Unauthorized
from palimpsest.ingest.store import lookups, tenants
from palimpsest.ingest.tokens import hash_token, plausible_token, same_token


@dataclass(frozen=True, slots=True)
class Principal:
    admin: bool
    tenant_id: UUID | None = None
    token_id: UUID | None = None


@dataclass(frozen=True, slots=True)
class Scope:
    """A tenant the caller may act on; `verify` when the tenant's existence is not yet known."""

    tenant_id: UUID
    verify: bool


async def authenticate(ctx: IngestContext, authorization: str | None) -> Principal:
    if not authorization:
        raise Unauthorized("missing bearer token (Authorization: Bearer <token>)")
    scheme, _, token = authorization.strip().partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not plausible_token(token):
        raise Unauthorized("expected 'Authorization: Bearer <token>'")
    if same_token(ctx.admin_token, token):
        return Principal(admin=True)
    owner = await _token_owner(ctx, hash_token(token))
    if owner is None:
        raise Unauthorized("invalid or revoked token")
    return Principal(admin=False, tenant_id=owner.tenant_id, token_id=owner.token_id)


async def _token_owner(ctx: IngestContext, token_hash: bytes) -> TokenOwner | None:
    hit, cached = ctx.tokens.get(token_hash)
    if hit:
        return cached
    found = await lookups.token_owner(ctx.pool, token_hash)
    owner = None if found is None else TokenOwner(*found)
    ctx.tokens.put(token_hash, owner)
    return owner


def require_admin(principal: Principal) -> None:
    if not principal.admin:
        raise Forbidden("this needs the operator admin token")


def scope_for(principal: Principal, tenant_id: UUID) -> Scope:
    if principal.admin:
        return Scope(tenant_id, verify=True)
    if principal.tenant_id == tenant_id:
        return Scope(tenant_id, verify=False)
    raise NotFound("no such tenant")


@asynccontextmanager
async def scoped_tx(ctx: IngestContext, scope: Scope) -> AsyncIterator[Conn]:
    """The tenant's transaction; NotFound when an admin names a tenant that does not exist."""
    async with tenant_tx(ctx.pool, scope.tenant_id) as conn:
        if scope.verify and not await tenants.tenant_exists(conn, scope.tenant_id):
            raise NotFound("no such tenant")
        yield conn
