"""FastAPI dependencies: the process context, the caller, and the tenant scope of a request."""

from __future__ import annotations

from typing import Annotated
from uuid import UUID

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from palimpsest.ingest.admin.access import Principal, Scope, authenticate, scope_for
from palimpsest.ingest.context import IngestContext

_bearer = HTTPBearer(auto_error=False, description="A tenant API token, or the operator admin token.")


def context(request: Request) -> IngestContext:
    ctx: IngestContext = request.app.state.ctx
    return ctx


Ctx = Annotated[IngestContext, Depends(context)]


async def principal(
    ctx: Ctx, credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)], request: Request
) -> Principal:
    header = (
        request.headers.get("authorization") if credentials is None else f"Bearer {credentials.credentials}"
    )
    return await authenticate(ctx, header)


Caller = Annotated[Principal, Depends(principal)]


def tenant_scope(tenant_id: UUID, caller: Caller) -> Scope:
    return scope_for(caller, tenant_id)


TenantScope = Annotated[Scope, Depends(tenant_scope)]
