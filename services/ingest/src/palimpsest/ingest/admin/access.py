"""Who is calling, which tenant they may act on, and with which scope.

A tenant's API token acts on that tenant only, and only through routes whose scope it holds:
``read`` (search, context, snapshots, analyses, reviews, deliveries), ``review`` (request reviews,
analyses and index builds), ``manage`` (installations, repositories, links, tokens, the audit
log). The operator admin token holds every scope on every tenant and alone may create, list,
suspend, resume and delete tenants. Another tenant's resources look exactly like missing ones
(404), so a token learns nothing about tenants it does not belong to; a missing scope on the
token's own tenant is a 403 naming the scope.

An expired or revoked token, or one of a tenant being deleted, is a 401.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from uuid import UUID

from palimpsest.core.db import Conn, tenant_tx
from palimpsest.ingest.context import IngestContext, TokenOwner
from palimpsest.ingest.errors import Forbidden, NotFound, Unauthorized
from palimpsest.ingest.store import lookups, tenants
from palimpsest.ingest.tokens import hash_token, plausible_token, same_token

# last_used_at is written at most once per token per process in this many seconds
LAST_USED_RESOLUTION_S = 60.0


class ApiScope(StrEnum):
    READ = "read"
    REVIEW = "review"
    MANAGE = "manage"


ALL_SCOPES: frozenset[ApiScope] = frozenset(ApiScope)


_SCOPE_NAMES = frozenset(s.value for s in ApiScope)


def parse_scopes(values: Iterable[str]) -> frozenset[ApiScope]:
    """The known scopes among ``values`` (an unknown name grants nothing)."""
    return frozenset(ApiScope(v) for v in values if v in _SCOPE_NAMES)


@dataclass(frozen=True, slots=True)
class Principal:
    admin: bool
    tenant_id: UUID | None = None
    token_id: UUID | None = None
    token_name: str | None = None
    scopes: frozenset[ApiScope] = field(default_factory=frozenset)
    tenant_suspended: bool = False

    def holds(self, scope: ApiScope) -> bool:
        return self.admin or scope in self.scopes


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
    return await authenticate_hash(ctx, hash_token(token))


async def authenticate_hash(ctx: IngestContext, token_hash: bytes) -> Principal:
    """The tenant API token with this sha256, checked through the lookup cache (a revoked or
    expired token is a 401 within the cache's window): what a web session re-checks per request."""
    owner = await _token_owner(ctx, token_hash)
    if owner is None or owner.revoked or owner.tenant_deleting:
        raise Unauthorized("invalid or revoked token")
    if owner.expires_at is not None and owner.expires_at <= datetime.now(UTC):
        raise Unauthorized("token expired")
    await _touch(ctx, owner)
    return Principal(
        admin=False,
        tenant_id=owner.tenant_id,
        token_id=owner.token_id,
        token_name=owner.name,
        scopes=parse_scopes(owner.scopes),
        tenant_suspended=owner.tenant_suspended,
    )


async def _token_owner(ctx: IngestContext, token_hash: bytes) -> TokenOwner | None:
    hit, cached = ctx.tokens.get(token_hash)
    if hit:
        return cached
    found = await lookups.token_owner(ctx.pool, token_hash)
    owner = None
    if found is not None:
        owner = TokenOwner(
            tenant_id=found.tenant_id,
            token_id=found.token_id,
            name=found.name,
            scopes=frozenset(found.scopes),
            expires_at=found.expires_at,
            revoked=found.revoked_at is not None,
            tenant_suspended=found.tenant_suspended,
            tenant_deleting=found.tenant_deleting,
        )
    ctx.tokens.put(token_hash, owner)
    return owner


async def _touch(ctx: IngestContext, owner: TokenOwner) -> None:
    """Record the token's use (at most once a minute per token and process: no write per request)."""
    now = time.monotonic()
    last = ctx.token_touched.get(owner.token_id)
    if last is not None and now - last < LAST_USED_RESOLUTION_S:
        return
    ctx.token_touched[owner.token_id] = now
    if len(ctx.token_touched) > 10_000:
        ctx.token_touched.clear()
    async with tenant_tx(ctx.pool, owner.tenant_id) as conn:
        await tenants.touch_token(conn, owner.token_id)


def require_admin(principal: Principal) -> None:
    if not principal.admin:
        raise Forbidden("this needs the operator admin token")


def scope_for(principal: Principal, tenant_id: UUID, needed: ApiScope) -> Scope:
    """The tenant scope of a request: the operator anywhere, a token on its own tenant with ``needed``."""
    if principal.admin:
        return Scope(tenant_id, verify=True)
    if principal.tenant_id != tenant_id:
        raise NotFound("no such tenant")
    if needed not in principal.scopes:
        raise Forbidden(f"this token lacks the '{needed}' scope")
    return Scope(tenant_id, verify=False)


@asynccontextmanager
async def scoped_tx(ctx: IngestContext, scope: Scope) -> AsyncIterator[Conn]:
    """The tenant's transaction; NotFound when an admin names a tenant that does not exist."""
    async with tenant_tx(ctx.pool, scope.tenant_id) as conn:
        if scope.verify and not await tenants.tenant_exists(conn, scope.tenant_id):
            raise NotFound("no such tenant")
        yield conn
