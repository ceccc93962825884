"""FastAPI dependencies: the process context, the caller, and what each route requires of it.

Every API route declares its access with exactly one of these (``create_api`` refuses to build an
app with a route that declares none, and the route-catalog test reads the declaration):

- ``ReadScope`` / ``ReviewScope`` / ``ManageScope`` — the path's ``{tenant_id}``, with that scope;
- ``OperatorOnly`` — the operator admin token;
- ``TokenAccess(scope)`` — a route without a tenant in its path acting on the token's own tenant
  (``Annotated[Principal, Depends(TokenAccess(ApiScope.READ))]``).

Changes through ``manage`` and operator routes (any method but GET/HEAD/OPTIONS) are noted for
the audit log, which `palimpsest.ingest.api.audit.AuditTrail` writes with the answer's status.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated, Any
from uuid import UUID

from fastapi import Depends, Request
from fastapi.dependencies.models import Dependant
from fastapi.routing import APIRoute
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from palimpsest.ingest.admin.access import ApiScope, Principal, Scope, authenticate, scope_for
from palimpsest.ingest.admin.audit import AuditNote
from palimpsest.ingest.context import IngestContext
from palimpsest.ingest.errors import Forbidden, NotFound

_bearer = HTTPBearer(auto_error=False, description="A tenant API token, or the operator admin token.")
_SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
AUDIT_STATE_KEY = "palimpsest_audit"


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


class RouteAccess:
    """Base of the access declarations; ``scope`` None means the operator admin token only."""

    scope: ApiScope | None = None

    def describe(self) -> str:
        return "operator" if self.scope is None else str(self.scope)


class TenantAccess(RouteAccess):
    """The path's tenant with ``scope``: ``Depends(TenantAccess(ApiScope.READ))``."""

    def __init__(self, scope: ApiScope) -> None:
        self.scope = scope

    async def __call__(self, tenant_id: UUID, caller: Caller, request: Request) -> Scope:
        assert self.scope is not None
        if self.scope is ApiScope.MANAGE and (caller.admin or caller.tenant_id == tenant_id):
            note_audit(request, caller, tenant_id)
        return scope_for(caller, tenant_id, self.scope)


class OperatorAccess(RouteAccess):
    """The operator admin token only (tenant creation, listing, suspension, deletion)."""

    async def __call__(self, caller: Caller, request: Request) -> Principal:
        raw = request.path_params.get("tenant_id")
        tenant = _uuid_or_none(raw)  # a malformed id is the route's own 422, not ours to judge
        if caller.admin or (tenant is not None and caller.tenant_id == tenant):
            note_audit(request, caller, caller.tenant_id if raw is None else tenant)
        if not caller.admin:
            if tenant is not None and caller.tenant_id != tenant:
                raise NotFound("no such tenant")  # another tenant looks missing, as everywhere
            raise Forbidden("this needs the operator admin token")
        return caller


def _uuid_or_none(value: object) -> UUID | None:
    try:
        return None if value is None else UUID(str(value))
    except ValueError:
        return None


class TokenAccess(RouteAccess):
    """A route without ``{tenant_id}`` acting on the token's own tenant, with ``scope``."""

    def __init__(self, scope: ApiScope) -> None:
        self.scope = scope

    async def __call__(self, caller: Caller) -> Principal:
        assert self.scope is not None
        if caller.admin or caller.tenant_id is None:
            raise Forbidden("this route acts on the token's own tenant: use a tenant API token")
        if not caller.holds(self.scope):
            raise Forbidden(f"this token lacks the '{self.scope}' scope")
        return caller


ReadScope = Annotated[Scope, Depends(TenantAccess(ApiScope.READ))]
ReviewScope = Annotated[Scope, Depends(TenantAccess(ApiScope.REVIEW))]
ManageScope = Annotated[Scope, Depends(TenantAccess(ApiScope.MANAGE))]
OperatorOnly = Annotated[Principal, Depends(OperatorAccess())]


def note_audit(request: Request, caller: Principal, tenant_id: UUID | None) -> None:
    """Mark a changing request for the audit log (written with the answer's status)."""
    if request.method in _SAFE_METHODS:
        return
    route = request.scope.get("route")
    request.scope.setdefault("state", {})[AUDIT_STATE_KEY] = AuditNote(
        tenant_id=tenant_id,
        actor="operator" if caller.admin else "token",
        token_id=caller.token_id,
        token_name=caller.token_name,
        action=str(getattr(route, "name", "") or request.url.path)[:200],
        method=request.method,
        route=str(getattr(route, "path", ""))[:500],
        target={k: str(v) for k, v in request.path_params.items() if k != "tenant_id"},
    )


def audit_note(request: Request) -> AuditNote | None:
    """The request's audit note, for a handler that learns the tenant only as it acts (creation)."""
    state: dict[str, Any] = request.scope.get("state") or {}
    found = state.get(AUDIT_STATE_KEY)
    return found if isinstance(found, AuditNote) else None


def declared_access(route: APIRoute) -> list[RouteAccess]:
    """The access declarations among a route's dependencies (exactly one on a well-formed route)."""
    found: list[RouteAccess] = []
    for dep in _dependencies(route.dependant):
        if isinstance(dep.call, RouteAccess) and dep.call not in found:
            found.append(dep.call)
    return found


def _dependencies(dependant: Dependant) -> Iterator[Dependant]:
    for dep in dependant.dependencies:
        yield dep
        yield from _dependencies(dep)
