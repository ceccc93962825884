"""Request metrics by route template and status class, as pure ASGI middleware (cheap per request).

Labels are the route's template (``/v1/tenants/{tenant_id}/repositories``), never the raw path,
so unauthenticated callers cannot grow the metric's label set.
"""

from __future__ import annotations

import time

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from palimpsest.core import metrics


class RequestMetrics:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = [500]

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                status[0] = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, sending)
        finally:
            route = getattr(scope.get("route"), "path", None) or "unmatched"
            metrics.HTTP_REQUEST_SECONDS.labels(route, f"{status[0] // 100}xx").observe(
                time.perf_counter() - started
            )
