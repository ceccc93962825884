"""The ASGI application: webhook endpoints, the /v1 API, error mapping and the OpenAPI document.

Errors are answered as ``{"detail": "<one line>"}`` with the status of the `IngestError`;
validation errors list where and what, never the offending input (it may be a secret); an
unavailable database is a 503; anything else is a 500 without details (and a logged traceback).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.routing import APIRoute
from starlette.routing import BaseRoute, Mount, Route
from starlette.types import ASGIApp

from palimpsest.core.db import UNAVAILABLE_ERRORS
from palimpsest.ingest.api import (
    v1_analyses,
    v1_index,
    v1_links,
    v1_models,
    v1_repositories,
    v1_reviews,
    v1_tenants,
    webhooks,
)
from palimpsest.ingest.api.audit import AuditTrail
from palimpsest.ingest.api.deps import declared_access
from palimpsest.ingest.api.fastpath import WebhookFastPath
from palimpsest.ingest.api.middleware import RequestMetrics
from palimpsest.ingest.context import IngestContext
from palimpsest.ingest.errors import IngestError, Unauthorized
from palimpsest.ingest.intake import Intake
from palimpsest.ingest.mcp.http import PATH as MCP_PATH
from palimpsest.ingest.mcp.http import McpEndpoint
from palimpsest.ingest.web.routes import PREFIX as UI_PREFIX
from palimpsest.ingest.web.routes import create_ui

log = logging.getLogger(__name__)

VERSION = "1"
REVIEW_MAX_BYTES = 12 * 1024 * 1024
# routes authenticated by the provider's signature, not a bearer token
SIGNED_PREFIX = "/webhooks/"


def create_app(ctx: IngestContext, *, mcp: McpEndpoint | None = None) -> ASGIApp:
    """The served application: the webhook fast path in front of the FastAPI app; with ``mcp``,
    the MCP server at ``/mcp`` (its session manager must run while the app serves)."""
    api = create_api(ctx, mcp=mcp)
    return WebhookFastPath(api, ctx, api.state.intake)


def create_api(ctx: IngestContext, *, mcp: McpEndpoint | None = None) -> FastAPI:
    """The FastAPI app: every route (webhooks included, for the OpenAPI document)."""
    app = FastAPI(
        title="Palimpsest ingest",
        version=VERSION,
        description="Provider webhooks and the admin/read API of Palimpsest.",
        openapi_url="/openapi.json",
        docs_url=None,
        redoc_url=None,
        # one span per request (its trace context travels with the events it emits); no spans
        # for dependency resolution and serialization, which would triple the tracing cost
        telemetry={"operation_spans": False},
    )
    app.state.ctx = ctx
    app.state.intake = Intake(ctx)
    app.include_router(webhooks.router)
    app.include_router(v1_tenants.router, max_body_size=ctx.settings.api_max_bytes)
    app.include_router(v1_repositories.router, max_body_size=ctx.settings.api_max_bytes)
    app.include_router(v1_index.router, max_body_size=ctx.settings.api_max_bytes)
    app.include_router(v1_analyses.router, max_body_size=ctx.settings.api_max_bytes)
    app.include_router(v1_links.router, max_body_size=ctx.settings.api_max_bytes)
    app.include_router(v1_models.router, max_body_size=ctx.settings.api_max_bytes)
    # a review may carry a diff of up to 5 MiB, JSON-escaped
    app.include_router(v1_reviews.router, max_body_size=max(ctx.settings.api_max_bytes, REVIEW_MAX_BYTES))
    if mcp is not None:  # streamable HTTP: POST (JSON-RPC), GET and DELETE answered by the SDK
        app.router.routes.append(
            Route(MCP_PATH, mcp, methods=["GET", "POST", "DELETE"], include_in_schema=False)
        )
    # the read-only web view (server-rendered HTML, its own session cookie; see docs/web.md)
    app.router.routes.append(Mount(UI_PREFIX, create_ui(ctx)))
    app.add_exception_handler(IngestError, _ingest_error)  # type: ignore[arg-type]
    app.add_exception_handler(RequestValidationError, _validation_error)  # type: ignore[arg-type]
    for unavailable in UNAVAILABLE_ERRORS:
        app.add_exception_handler(unavailable, _unavailable)
    app.add_exception_handler(Exception, _unexpected)
    app.add_middleware(AuditTrail, pool=ctx.pool)
    app.add_middleware(RequestMetrics)
    check_access_declared(app)
    return app


def api_routes(routes: Sequence[BaseRoute]) -> Iterator[APIRoute]:
    """Every APIRoute, included routers walked (FastAPI keeps an included router's routes inside it)."""
    for route in routes:
        if isinstance(route, APIRoute):
            yield route
        elif (included := getattr(route, "original_router", None)) is not None:
            yield from api_routes(included.routes)


def check_access_declared(app: FastAPI) -> None:
    """Every bearer-authenticated route declares exactly one access (a scope or the operator)."""
    wrong = [
        f"{sorted(route.methods or ())} {route.path}"
        for route in api_routes(app.routes)
        if not route.path.startswith(SIGNED_PREFIX) and len(declared_access(route)) != 1
    ]
    if wrong:
        raise RuntimeError(
            "routes must declare exactly one access (ReadScope, ReviewScope, ManageScope, OperatorOnly"
            f" or TokenAccess; see palimpsest.ingest.api.deps): {', '.join(wrong)}"
        )


async def _ingest_error(_: Request, exc: IngestError) -> JSONResponse:
    headers = {"WWW-Authenticate": "Bearer"} if isinstance(exc, Unauthorized) else None
    if exc.status >= 500:
        log.error("request failed: %s", exc.message)
    return JSONResponse({"detail": exc.message}, status_code=exc.status, headers=headers)


async def _validation_error(_: Request, exc: RequestValidationError) -> JSONResponse:
    errors = [
        {
            "loc": list(err.get("loc", ())),
            "msg": str(err.get("msg", "invalid")),
            "type": str(err.get("type", "")),
        }
        for err in exc.errors()
    ]
    return JSONResponse({"detail": errors}, status_code=422)


async def _unavailable(_: Request, exc: Exception) -> JSONResponse:
    log.warning("database unavailable: %s", exc.__class__.__name__)
    return JSONResponse({"detail": "temporarily unavailable; try again"}, status_code=503)


async def _unexpected(_: Request, exc: Exception) -> JSONResponse:
    log.error("unexpected error: %s", exc.__class__.__name__, exc_info=exc)
    return JSONResponse({"detail": "internal error"}, status_code=500)
