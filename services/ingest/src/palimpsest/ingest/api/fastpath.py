"""An ASGI front for ``POST /webhooks/{provider}``: the documented route's handling, minus FastAPI.

Webhooks are the hot path (hundreds per second from a busy organisation); routing them through
FastAPI's dependency machinery costs a good part of a request's CPU. This front answers them
itself — same body limit, same `answer`, one server span carrying the trace context into the
events, the same request metric — and passes everything else to the FastAPI app, which also keeps
the route for the OpenAPI document.
"""

from __future__ import annotations

import json
import time

from opentelemetry.trace import SpanKind
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Receive, Scope, Send

from palimpsest.core import metrics
from palimpsest.core.telemetry import extract, tracer
from palimpsest.ingest.api.webhooks import answer, too_large
from palimpsest.ingest.context import IngestContext
from palimpsest.ingest.intake import Answer, Intake

PREFIX = "/webhooks/"
ROUTE = "/webhooks/{provider}"


class WebhookFastPath:
    def __init__(self, app: ASGIApp, ctx: IngestContext, intake: Intake) -> None:
        self.app = app
        self.ctx = ctx
        self.intake = intake

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = str(scope.get("path", ""))
        provider = path[len(PREFIX) :]
        if (
            scope["type"] != "http"
            or scope.get("method") != "POST"
            or not path.startswith(PREFIX)
            or "/" in provider
        ):
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        headers = Headers(scope=scope)
        with tracer.start_as_current_span(
            f"POST {ROUTE}",
            context=extract(headers),
            kind=SpanKind.SERVER,
            attributes={"http.request.method": "POST", "http.route": ROUTE, "palimpsest.provider": provider},
        ) as span:
            result = await self._handle(provider, headers, receive)
            span.set_attribute("http.response.status_code", result.status)
            await _send(send, result)
        metrics.HTTP_REQUEST_SECONDS.labels(ROUTE, f"{result.status // 100}xx").observe(
            time.perf_counter() - started
        )

    async def _handle(self, provider: str, headers: Headers, receive: Receive) -> Answer:
        limit = self.ctx.settings.webhook_max_bytes
        declared = headers.get("content-length", "").strip()
        if declared.isdigit() and int(declared) > limit:
            return too_large(limit)
        body = await _read(receive, limit)
        if body is None:
            return too_large(limit)
        return await answer(self.ctx, self.intake, provider, headers, body)


async def _read(receive: Receive, limit: int) -> bytes | None:
    """The request body, or None as soon as it exceeds `limit`."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":  # the client went away
            return b"".join(chunks)
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)


async def _send(send: Send, result: Answer) -> None:
    body = json.dumps(result.body()).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": result.status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
