"""Tenants and their API tokens: creation (operator only) and token issue and revocation."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from palimpsest.core.db import tenant_tx
from palimpsest.core.ids import uuid7
from palimpsest.ingest.admin.access import Scope, scoped_tx
from palimpsest.ingest.context import IngestContext
from palimpsest.ingest.errors import NotFound
from palimpsest.ingest.store import tenants
from palimpsest.ingest.tokens import new_api_token


async def create_tenant(ctx: IngestContext, name: str) -> dict[str, Any]:
    """A new tenant and its first API token (returned once)."""
    tenant_id = uuid7()
    token, token_hash = new_api_token()
    async with tenant_tx(ctx.pool, tenant_id) as conn:
        tenant = await tenants.insert_tenant(conn, tenant_id, name)
        issued = await tenants.insert_token(conn, tenant_id, uuid7(), token_hash, "initial")
    return {**tenant, "token_id": issued["token_id"], "api_token": token}


async def get_tenant(ctx: IngestContext, scope: Scope) -> dict[str, Any]:
    async with scoped_tx(ctx, scope) as conn:
        found = await tenants.get_tenant(conn, scope.tenant_id)
    if found is None:
        raise NotFound("no such tenant")
    return found


async def issue_token(ctx: IngestContext, scope: Scope, name: str) -> dict[str, Any]:
    token, token_hash = new_api_token()
    async with scoped_tx(ctx, scope) as conn:
        issued = await tenants.insert_token(conn, scope.tenant_id, uuid7(), token_hash, name)
    return {**issued, "api_token": token}


async def list_tokens(ctx: IngestContext, scope: Scope) -> list[dict[str, Any]]:
    async with scoped_tx(ctx, scope) as conn:
        return await tenants.list_tokens(conn)


async def revoke_token(ctx: IngestContext, scope: Scope, token_id: UUID) -> None:
    async with scoped_tx(ctx, scope) as conn:
        deleted = await tenants.delete_token(conn, token_id)
    if not deleted:
        raise NotFound("no such token")
    ctx.tokens.clear()
