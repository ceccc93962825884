"""The embedder service: ``snapshot.built`` of a ``hybrid`` repository → vectors → ``snapshot.embedded``.

Embedding never blocks or fails the index: the snapshot is ready before this service sees it, and
whatever happens here (no model routed for the tenant, no pgvector, a budget hit, a provider
failing, a model of an unsupported dimension) ends as an embedding *state* and reason on the
snapshot — shown by ``palimpsest snapshots`` and the API — while lexical search keeps working.
Only infrastructure trouble (the database) raises, so the event is retried.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any
from uuid import UUID

from pydantic import Field

from palimpsest.core import metrics
from palimpsest.core.bus import CONSUMERS
from palimpsest.core.consumer import HandlerContext
from palimpsest.core.db import tenant_tx
from palimpsest.core.events import SnapshotBuilt, SnapshotEmbedded
from palimpsest.core.llm import LLMSettings
from palimpsest.core.outbox import emit
from palimpsest.core.repositories import get_repository
from palimpsest.core.service import Infra, ServiceDefinition
from palimpsest.core.settings import BaseServiceSettings, service_settings
from palimpsest.embedder import store
from palimpsest.embedder.batching import BatchLimits
from palimpsest.embedder.engine import Provider, RetryPolicy
from palimpsest.embedder.errors import NoModel
from palimpsest.embedder.locking import repository_lock
from palimpsest.embedder.run import RunLimits, embed_snapshot
from palimpsest.embedder.store import Outcome
from palimpsest.index.semantic import semantic_available

log = logging.getLogger(__name__)

# (tenant, usage reference) → the tenant's routed embeddings model; raises NoModel when none is
ProviderFactory = Callable[[UUID, str], Awaitable[Provider]]


class Settings(BaseServiceSettings, LLMSettings):
    """Embedding limits (20 000 chunks per run), request shaping, and the model settings."""

    embed_max_chunks_per_run: int = Field(
        default=20_000, ge=1, description="Chunks embedded per snapshot at most; the rest stays lexical-only."
    )
    embed_concurrency: int = Field(
        default=4, ge=1, le=32, description="Embedding requests in flight per run."
    )
    embed_batch_inputs: int = Field(
        default=64, ge=1, le=2048, description="Inputs per embedding request at most."
    )
    embed_batch_tokens: int = Field(
        default=50_000, ge=100, description="Estimated tokens per embedding request at most."
    )
    embed_input_tokens: int = Field(
        default=8_000, ge=16, description="Estimated tokens of one input at most (longer chunks are cut)."
    )
    embed_chars_per_token: float = Field(
        default=3.0, gt=0.5, le=10, description="Characters per token, for the token estimates."
    )
    embed_max_retries: int = Field(
        default=6,
        ge=0,
        le=20,
        description="Retries of an embedding request that failed for a transient reason.",
    )
    embed_retry_base_s: float = Field(
        default=1.0, ge=0, description="First retry delay of an embedding request (doubling each retry)."
    )
    embed_retry_max_s: float = Field(
        default=60.0, ge=0, description="Longest retry delay of an embedding request."
    )
    embed_request_timeout_s: float = Field(
        default=60.0, gt=0, description="Seconds one embedding request may take."
    )

    def run_limits(self) -> RunLimits:
        return RunLimits(max_chunks=self.embed_max_chunks_per_run, concurrency=self.embed_concurrency)

    def batch_limits(self) -> BatchLimits:
        return BatchLimits(
            max_inputs=self.embed_batch_inputs,
            max_tokens=self.embed_batch_tokens,
            max_input_tokens=self.embed_input_tokens,
            chars_per_token=self.embed_chars_per_token,
        )

    def retry_policy(self) -> RetryPolicy:
        return RetryPolicy(
            max_retries=self.embed_max_retries,
            base_delay_s=self.embed_retry_base_s,
            max_delay_s=self.embed_retry_max_s,
        )


class Embedder:
    """Handler state: settings and how to reach a tenant's embeddings model."""

    def __init__(self, settings: Settings, providers: ProviderFactory) -> None:
        self.settings = settings
        self.providers = providers

    async def handle(self, event: SnapshotBuilt, ctx: HandlerContext) -> None:
        # "up_to_date": the head is indexed already (a mode switch to hybrid, a retry after a failed
        # or capped run): its snapshot's pending chunks are embedded all the same
        resume = event.state == "skipped" and event.reason == "up_to_date"
        if (event.state != "ready" and not resume) or event.snapshot_id is None:
            return
        snapshot_id = event.snapshot_id
        async with tenant_tx(ctx.pool, event.tenant_id) as conn:
            repo = await get_repository(conn, event.repository_id)
            snap = await store.snapshot(conn, snapshot_id)
            vectors_ok = await semantic_available(conn)
        if repo is None or repo.index_mode != "hybrid" or snap is None:
            return  # lexical repositories keep embedding state "none"
        if snap["state"] != "ready" and snap["embedding_state"] != "none":
            return  # a late or repeated event of a superseded snapshot: keep what it recorded
        outcome = await self._outcome(event, ctx, snapshot_id, snap, vectors_ok, resume)
        if outcome is None:
            return
        async with ctx.transaction() as conn:
            await store.record_outcome(conn, snapshot_id, outcome)
            await emit(conn, _embedded(event, snapshot_id, outcome))
        metrics.EMBEDDING_RUNS.labels(outcome.state).inc()
        metrics.EMBEDDED_CHUNKS.inc(outcome.embedded)

    async def _outcome(
        self,
        event: SnapshotBuilt,
        ctx: HandlerContext,
        snapshot_id: UUID,
        snap: dict[str, Any],
        vectors_ok: bool,
        resume: bool,
    ) -> Outcome | None:
        """The run's outcome; None when there is nothing to do and nothing to report."""
        if snap["state"] != "ready":
            return Outcome("skipped", f"snapshot_{snap['state']}: a newer snapshot is embedded instead")
        try:
            provider = await self.providers(event.tenant_id, f"index snapshot {snapshot_id}")
        except NoModel as exc:
            return Outcome("skipped", f"no_model: {exc}")
        if resume and snap["embedding_state"] == "ready" and snap["embedding_model"] == provider.model:
            return None  # fully embedded with this model already
        if not vectors_ok:
            return Outcome(
                "skipped",
                "pgvector_missing: the database has no pgvector; semantic search is unavailable",
                model=provider.model,
            )
        async with repository_lock(ctx.pool, event.repository_id, beat=ctx.heartbeat):
            async with tenant_tx(ctx.pool, event.tenant_id) as conn:
                await store.mark_started(conn, snapshot_id, provider.model)
            return await embed_snapshot(
                ctx.pool,
                event.tenant_id,
                event.repository_id,
                snapshot_id,
                provider,
                limits=self.settings.run_limits(),
                batch_limits=self.settings.batch_limits(),
                policy=self.settings.retry_policy(),
                beat=ctx.heartbeat,
            )


def _embedded(event: SnapshotBuilt, snapshot_id: UUID, outcome: Outcome) -> SnapshotEmbedded:
    return SnapshotEmbedded(
        tenant_id=event.tenant_id,
        repository_id=event.repository_id,
        snapshot_id=snapshot_id,
        request_id=event.request_id,
        state=outcome.state,
        reason=outcome.reason,
        embedded=outcome.embedded,
        model=outcome.model,
        dimension=outcome.dimension,
        pending=outcome.pending,
        truncated=outcome.truncated,
        tokens=outcome.tokens,
    )


def bootstrap(infra: Infra) -> ServiceDefinition:
    from palimpsest.embedder.gateway import embedder_gateway, gateway_providers

    settings = service_settings(Settings, infra.settings)
    gateway = embedder_gateway(infra, settings, settings.embed_request_timeout_s)
    embedder = Embedder(settings, gateway_providers(gateway))
    return ServiceDefinition(
        name="embedder",
        handlers={"snapshot.built": embedder.handle},
        consumer=CONSUMERS["embedder"],
    )
