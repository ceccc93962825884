"""Running the analyzer's upstream (chunker, recency-scanner) and the analyzer itself in a test.

Every service is its real definition, run by :func:`palimpsest.core.service.run` on a consumer of
its own (``deliver_new``, a unique name) whose handlers skip other tenants' events, so tests never
see each other's events. Repositories are real git repositories with controlled commit dates.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any
from uuid import UUID

from palimpsest.analyzer.doccheck import Judged, gather_claims
from palimpsest.analyzer.proof import prove_in
from palimpsest.analyzer.service import Settings as AnalyzerSettings
from palimpsest.analyzer.service import definition as analyzer_definition
from palimpsest.analyzer.snapshot import load_snapshot
from palimpsest.chunker.service import Chunker
from palimpsest.chunker.service import Settings as ChunkerSettings
from palimpsest.cli.local import register_path
from palimpsest.cli.pipeline import wait_for, watching
from palimpsest.core.bus import CONSUMERS, ConsumerSpec
from palimpsest.core.consumer import Handler, HandlerContext
from palimpsest.core.db import tenant_tx
from palimpsest.core.events import Event, IndexRequested, RecencyScanned, SnapshotBuilt
from palimpsest.core.llm import Gateway
from palimpsest.core.outbox import emit
from palimpsest.core.service import Infra, ServiceDefinition
from palimpsest.index.snapshots import readable
from palimpsest.recency_scanner.service import Settings as RecencySettings
from palimpsest.recency_scanner.service import definition as recency_definition
from tests.support.pipeline import services
from tests.support.tenants import create_tenant


def _name(prefix: str) -> str:
    return f"t-{prefix}-{uuid.uuid4().hex[:8]}"


def _only(tenants: set[UUID], handler: Handler) -> Handler:
    async def filtered(event: Event, ctx: HandlerContext) -> None:
        if event.tenant_id in tenants:
            await handler(event, ctx)

    return filtered


def _scoped(definition: ServiceDefinition, tenants: set[UUID], prefix: str) -> ServiceDefinition:
    spec = definition.consumer
    assert spec is not None
    return ServiceDefinition(
        definition.name,
        {t: _only(tenants, h) for t, h in definition.handlers.items()},
        ConsumerSpec(_name(prefix), spec.event_types, batch=spec.batch, deliver_new=True),
        background=definition.background,
        on_stop=definition.on_stop,
    )


def indexer_definitions(tenants: set[UUID]) -> list[ServiceDefinition]:
    """The chunker (in-process parsing) and the recency-scanner, reading local paths."""
    chunker = Chunker(
        ChunkerSettings.model_construct(
            **{**ChunkerSettings().model_dump(), "allow_local_sources": True, "parse_workers": 1}
        )
    )
    chunker_def = ServiceDefinition(
        "chunker", {"index.requested": chunker.handle}, CONSUMERS["chunker"], on_stop=[chunker.close]
    )
    recency = recency_definition(
        RecencySettings.model_construct(
            **{
                **RecencySettings().model_dump(),
                "recency_scan": True,
                "allow_local_sources": True,
                "ack_wait_s": 5.0,
            }
        )
    )
    return [_scoped(chunker_def, tenants, "chunker"), _scoped(recency, tenants, "recency")]


def analyzer_settings(**overrides: Any) -> AnalyzerSettings:
    values: dict[str, Any] = {
        "allow_local_sources": True,
        "ack_wait_s": 5.0,
        "llm_model": None,
        "llm_api_base": None,
        "llm_api_key": None,
        "llm_timeout_s": 5.0,
        "llm_retry_base_s": 0.01,
        "llm_retry_max_s": 0.05,
        "analysis_debounce_s": 0.0,
        "analysis_poll_s": 0.1,
    }
    values.update(overrides)
    return AnalyzerSettings.model_construct(**{**AnalyzerSettings().model_dump(), **values})


def analyzer_for(
    infra: Infra, tenants: set[UUID], settings: AnalyzerSettings, gateway: Gateway | None = None
) -> ServiceDefinition:
    return _scoped(analyzer_definition(infra, settings, gateway=gateway), tenants, "analyzer")


@contextlib.asynccontextmanager
async def running(infra: Infra, definitions: Sequence[ServiceDefinition]) -> AsyncIterator[None]:
    async with services(infra, definitions):
        yield
    # the consumers were throw-away: remove them from the stream
    for d in definitions:
        if d.consumer is not None:
            with contextlib.suppress(Exception):
                await infra.nc.jetstream().delete_consumer("PALIMPSEST", d.consumer.name)


async def new_repository(infra: Infra, path: Path, name: str = "analyzer") -> tuple[UUID, UUID]:
    tenant = await create_tenant(infra.pool, name)
    return tenant, await register_path(infra.pool, tenant, path)


async def index(infra: Infra, tenant: UUID, repo_id: UUID, *, timeout_s: float = 120.0) -> SnapshotBuilt:
    """Request an index build; wait for the snapshot *and* the recency scan."""
    event = IndexRequested(tenant_id=tenant, repository_id=repo_id, reason="rebuild")
    async with watching(infra.nc, event.request_id, (SnapshotBuilt, RecencyScanned)) as waiter:
        async with tenant_tx(infra.pool, tenant) as conn:
            await emit(conn, event)
        found = await wait_for(waiter, (SnapshotBuilt, RecencyScanned), timeout_s=timeout_s)
    built = found[SnapshotBuilt]
    assert built.state == "ready", built
    assert found[RecencyScanned].status == "ok", found[RecencyScanned]
    return built


async def query(infra: Infra, tenant: UUID, sql: str, *params: Any) -> list[dict[str, Any]]:
    async with tenant_tx(infra.pool, tenant) as conn:
        cur = await conn.execute(sql, params)
        return [dict(r) for r in await cur.fetchall()]


async def check_doc_claims(infra: Infra, tenant: UUID, repo_id: UUID, repo: Path) -> Judged:
    """The documentation check of the repository's newest readable snapshot, history read whole."""
    async with tenant_tx(infra.pool, tenant) as conn:
        snapshot = await readable(conn, repo_id, None)
        assert snapshot is not None
        snap_index = await load_snapshot(conn, repo_id, snapshot)
        claims = await gather_claims(conn, snap_index)
    result, stats = await prove_in(repo, claims, snap_index.commit_sha, list_unverified=True)
    assert stats["history"] == "read" and stats["complete"], stats
    return result


async def index_and_check(infra: Infra, repo: Path, name: str) -> Judged:
    """Register ``repo`` in a tenant of its own, index it, and check its docs."""
    tenant, repo_id = await new_repository(infra, repo, name)
    async with running(infra, indexer_definitions({tenant})):
        await index(infra, tenant, repo_id)
    return await check_doc_claims(infra, tenant, repo_id, repo)
