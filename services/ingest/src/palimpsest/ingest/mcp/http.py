"""``/mcp`` on the ingest API: the MCP server over streamable HTTP, behind the tenant's API token.

Every request is authenticated before the SDK sees it, exactly as the /v1 routes are
(:func:`palimpsest.ingest.admin.access.authenticate`: ``Authorization: Bearer <token>``, the token
looked up by its sha256): no or a wrong token is a 401 with ``WWW-Authenticate: Bearer``, the
operator admin token a 403 (it acts on no tenant of its own). The tenant of the token goes into
the request's ASGI scope, and each tool reads it from there (:func:`tenant_of`) and runs in that
tenant's transaction. :func:`authorize` is where the token's scope is checked: the route needs
:data:`REQUIRED_SCOPE` (``read``); a token without it is refused with 403, like a ``/v1`` route.

The SDK runs stateless (a fresh transport per request, JSON answers, no session to hijack), so
each call stands on its own credential. Its session manager needs a running task group:
:meth:`McpEndpoint.running` wraps the HTTP server's lifetime (see ``palimpsest.ingest.service``).
Tokens never reach a log line, an error or a metric label: only the header is read, and errors
name what is wrong, never the value.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from uuid import UUID

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.datastructures import Headers
from starlette.types import Receive, Scope, Send

from palimpsest.core.llm import Gateway, LLMSettings
from palimpsest.core.settings import load
from palimpsest.ingest.admin.access import ApiScope, Principal, authenticate
from palimpsest.ingest.context import IngestContext
from palimpsest.ingest.errors import Forbidden, IngestError, Unauthorized
from palimpsest.ingest.mcp.tools import Deps, build_server

__all__ = ["PATH", "REQUIRED_SCOPE", "McpEndpoint", "authorize", "tenant_of"]

PATH = "/mcp"
REQUIRED_SCOPE = ApiScope.READ  # the token scope /mcp needs (every tool only reads)
SCOPE_KEY = "palimpsest.mcp.tenant"  # where the authenticated tenant travels in the ASGI scope
MAX_BODY_BYTES = 12 * 1024 * 1024  # review_context takes a diff of up to 5 MiB, JSON-escaped
# The SDK's transport says "Terminating session: None" at INFO after every stateless request;
# its warnings stay (tool failures are logged by mcp.server.mcpserver, which keeps INFO).
QUIET_LOGGERS = ("mcp.server.streamable_http", "mcp.server.streamable_http_manager")


def authorize(principal: Principal, scope: ApiScope = REQUIRED_SCOPE) -> UUID:
    """The tenant a caller may read through /mcp: a tenant API token holding ``scope``; the admin
    token does not qualify (MCP calls name no tenant)."""
    if principal.admin or principal.tenant_id is None:
        raise Forbidden("/mcp needs a tenant API token, not the operator admin token")
    if not principal.holds(scope):
        raise Forbidden(f"this token lacks the '{scope}' scope")
    return principal.tenant_id


def tenant_of(ctx: Context) -> UUID:
    """The tenant the HTTP request was authenticated for (set by :class:`McpEndpoint`)."""
    request = ctx.request_context.request
    asgi: Scope = getattr(request, "scope", None) or {}
    tenant = asgi.get(SCOPE_KEY)
    if not isinstance(tenant, UUID):  # not through McpEndpoint: refuse rather than guess
        raise ToolError("this request carries no authenticated tenant")
    return tenant


class McpEndpoint:
    """The ASGI app mounted at ``/mcp``: authenticate, then hand the request to the SDK."""

    def __init__(self, ctx: IngestContext) -> None:
        self.ctx = ctx
        for name in QUIET_LOGGERS:
            logging.getLogger(name).setLevel(logging.WARNING)
        self.server: MCPServer = build_server(
            Deps(
                pool=ctx.pool,
                tenant_of=tenant_of,
                policy=ctx.policy,
                box=ctx.box,
                github_api_url=ctx.settings.github_api_url,
                gateway=self._gateway,
            )
        )
        # Builds the SDK's session manager (its own Starlette app is not used: auth comes first).
        # No Host/Origin allow-list: the API serves under any host name, and every request must
        # carry a bearer token, which a browser does not add to a cross-site request by itself.
        self.server.streamable_http_app(
            streamable_http_path=PATH,
            json_response=True,
            stateless_http=True,
            max_request_body_size=MAX_BODY_BYTES,
            transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        )
        self.manager: StreamableHTTPSessionManager = self.server.session_manager

    def _gateway(self) -> Gateway:
        if self.ctx.gateway is None:
            self.ctx.gateway = Gateway(self.ctx.pool, load(LLMSettings))
        return self.ctx.gateway

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """The SDK's session manager, for as long as the HTTP server serves."""
        async with self.manager.run():
            yield

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        try:
            principal = await authenticate(self.ctx, Headers(scope=scope).get("authorization"))
            tenant = authorize(principal)
        except IngestError as exc:
            await _refuse(send, exc)
            return
        await self.manager.handle_request({**scope, SCOPE_KEY: tenant}, receive, send)


async def _refuse(send: Send, exc: IngestError) -> None:
    body = json.dumps({"detail": exc.message}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    if isinstance(exc, Unauthorized):
        headers.append((b"www-authenticate", b"Bearer"))
    await send({"type": "http.response.start", "status": exc.status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
