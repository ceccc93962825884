"""The ingest service's bootstrap: its settings, its HTTP server and its background tasks.

Ingest consumes no events: it is the door into Palimpsest (webhooks and the /v1 API) and emits
through the outbox. `bootstrap` loads the keys and binds the listening socket at once, so a
missing encryption key or a busy port stops the start-up with one clear line, and records the
API's URL in ``infra.ingest_url`` for the CLI. The API serves the MCP server at ``/mcp``
(:mod:`palimpsest.ingest.mcp`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Collection
from dataclasses import dataclass
from uuid import UUID

from palimpsest.core.service import Infra, ServiceDefinition
from palimpsest.ingest.api.app import create_app
from palimpsest.ingest.api.server import IngestServer
from palimpsest.ingest.backfill import backfill_forever
from palimpsest.ingest.context import IngestContext, build_context
from palimpsest.ingest.failing import measure_forever
from palimpsest.ingest.mcp.http import McpEndpoint
from palimpsest.ingest.retention import prune_forever
from palimpsest.ingest.settings import Settings, backfill_policy, ingest_settings
from palimpsest.ingest.sync import sync_slice
from palimpsest.ingest.tokens import hash_token

__all__ = ["Ingest", "Settings", "bootstrap", "is_embedded", "prepare"]


def is_embedded(infra: Infra) -> bool:
    """True under the CLI's runner; `python -m palimpsest.ingest` (main_for) marks the infra standalone."""
    return not infra.standalone


@dataclass(frozen=True, slots=True)
class Ingest:
    """The ingest service as bootstrapped: its bound server, its context and its definition."""

    server: IngestServer
    context: IngestContext
    definition: ServiceDefinition


def bootstrap(infra: Infra) -> ServiceDefinition:
    return prepare(infra).definition


def prepare(infra: Infra) -> Ingest:
    embedded = is_embedded(infra)
    settings = ingest_settings(infra.settings)
    ctx = build_context(settings, infra.pool, embedded=embedded)
    ctx.nc = infra.nc
    mcp = McpEndpoint(ctx)
    server = IngestServer.bind(
        create_app(ctx, mcp=mcp),
        settings.ingest_host,
        settings.ingest_port,
        fallback_to_free_port=embedded and "ingest_port" not in settings.model_fields_set,
        reuse_port=settings.ingest_reuse_port,
    )
    infra.ingest_url = server.url

    async def serve(_: Infra, stop: asyncio.Event) -> None:
        try:
            async with mcp.running():  # /mcp: the MCP SDK's session manager
                await server.serve(stop)
        finally:
            if ctx.gateway is not None:
                await asyncio.shield(ctx.gateway.aclose())

    async def retention(_: Infra, stop: asyncio.Event) -> None:
        operator_hash = hash_token(ctx.admin_token) if ctx.admin_token else None
        await prune_forever(
            ctx.pool,
            settings.delivery_retention_days,
            stop,
            operator_hash=operator_hash,
            audit_days=settings.audit_retention_days,
        )

    async def sync(slice_no: int, slices: int, tenants: Collection[UUID] | None) -> None:
        await sync_slice(ctx, slice_no, slices, tenants)

    async def backfill(_: Infra, stop: asyncio.Event) -> None:
        await backfill_forever(
            ctx.pool, backfill_policy(settings, local_sources=ctx.policy.allow_local), stop, sync=sync
        )

    async def failing(_: Infra, stop: asyncio.Event) -> None:
        await measure_forever(ctx.pool, stop)

    definition = ServiceDefinition(
        name="ingest",
        background=[serve, retention, backfill, failing],
        ready_checks={"ingest_http": server.ready},
    )
    return Ingest(server, ctx, definition)
