"""POST /webhooks/{github,gitlab,bitbucket}: read the body within its limit and hand it to `Intake`.

Bad input never gets a 5xx: the body limit answers 413 as soon as it is crossed (at once when
Content-Length announces it), every refusal is a one-line reason, and anything unexpected while
handling a delivery is logged and answered 400. Only an unavailable database (or a handling time
beyond ``PALIMPSEST_WEBHOOK_TIMEOUT_S``) answers 503, so the provider delivers again later.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException

from palimpsest.core.db import UNAVAILABLE_ERRORS
from palimpsest.ingest.context import IngestContext
from palimpsest.ingest.errors import IngestError
from palimpsest.ingest.intake import Answer, Intake
from palimpsest.ingest.schemas import WebhookAnswer

log = logging.getLogger(__name__)

router = APIRouter()


class BodyTooLarge(Exception):
    """The request body crossed the limit."""


async def read_limited(request: Request, limit: int) -> bytes:
    """The whole body, or BodyTooLarge as soon as it (or its Content-Length) exceeds `limit`."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.strip().isdigit() and int(declared) > limit:
        raise BodyTooLarge
    chunks: list[bytes] = []
    size = 0
    try:
        async for chunk in request.stream():
            size += len(chunk)
            if size > limit:
                raise BodyTooLarge
            chunks.append(chunk)
    except HTTPException as exc:  # a body limit of an enclosing router
        if exc.status_code == 413:
            raise BodyTooLarge from exc
        raise
    return b"".join(chunks)


def _json(answer: Answer) -> JSONResponse:
    return JSONResponse(answer.body(), status_code=answer.status)


@router.post(
    "/webhooks/{provider}",
    tags=["webhooks"],
    response_model=WebhookAnswer,
    responses={
        200: {"description": "ping, or a redelivery (nothing new emitted)"},
        202: {"description": "accepted (event emitted) or ignored (reason says why)"},
        400: {"description": "malformed payload"},
        401: {"description": "missing or wrong signature / token"},
        413: {"description": "body larger than the limit (25 MiB)"},
    },
)
async def receive_webhook(provider: str, request: Request) -> JSONResponse:
    """Receive one delivery from `github`, `gitlab` or `bitbucket`, verified with its installation's secret."""
    ctx: IngestContext = request.app.state.ctx
    intake: Intake = request.app.state.intake
    limit = ctx.settings.webhook_max_bytes
    try:
        body = await read_limited(request, limit)
    except BodyTooLarge:
        return _json(too_large(limit))
    return _json(await answer(ctx, intake, provider, request.headers, body))


def too_large(limit: int) -> Answer:
    return Answer(413, "rejected", f"payload larger than {limit // (1024 * 1024)} MiB")


async def answer(
    ctx: IngestContext, intake: Intake, provider: str, headers: Mapping[str, str], body: bytes
) -> Answer:
    """`Intake.receive` within the time limit, with every failure mapped to a 4xx (or a 503)."""
    try:
        async with asyncio.timeout(ctx.settings.webhook_timeout_s):
            return await intake.receive(provider, headers, body)
    except TimeoutError:
        log.warning("webhook %s: not handled within %.1f s", provider, ctx.settings.webhook_timeout_s)
        return Answer(503, "rejected", "not handled in time; deliver again later")
    except UNAVAILABLE_ERRORS as exc:
        log.warning("webhook %s: database unavailable (%s)", provider, exc.__class__.__name__)
        return Answer(503, "rejected", "temporarily unavailable; deliver again later")
    except IngestError as exc:
        log.error("webhook %s: %s", provider, exc.message)
        return Answer(exc.status, "rejected", exc.message)
    except Exception:
        log.exception("webhook %s: unexpected error", provider)
        return Answer(400, "rejected", "the delivery could not be processed")
