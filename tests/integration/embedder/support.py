"""Shared pieces of the embedder tests: a chunker to build snapshots, fake providers, helpers."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from palimpsest.chunker.service import Chunker
from palimpsest.chunker.service import Settings as ChunkerSettings
from palimpsest.cli.local import register_path
from palimpsest.cli.pipeline import Arrived
from palimpsest.core.bus import CONSUMERS, ConsumerSpec
from palimpsest.core.db import tenant_tx
from palimpsest.core.events import Event, IndexRequested, SnapshotBuilt
from palimpsest.core.service import Infra, ServiceDefinition
from palimpsest.embedder.engine import Embedded
from palimpsest.embedder.errors import ProviderUnavailable
from palimpsest.index.semantic import semantic_available
from tests.integration.embedder.vectors import trigram_vector
from tests.support.gitrepo import commit, init_repo
from tests.support.pipeline import request_and_wait
from tests.support.tenants import create_tenant


def chunker_definition(name: str) -> ServiceDefinition:
    settings = ChunkerSettings.model_construct(
        **{**ChunkerSettings().model_dump(), "allow_local_sources": True, "parse_workers": 1}
    )
    chunker = Chunker(settings)
    spec = ConsumerSpec(name, CONSUMERS["chunker"].event_types, batch=2, deliver_new=True)
    return ServiceDefinition(name, {"index.requested": chunker.handle}, spec, on_stop=[chunker.close])


@dataclass
class TrigramProvider:
    """In-process Provider: trigram vectors; planted failures raised in order, one per request."""

    model: str = "fake/trigram-384"
    dimension: int = 384
    failures: list[Exception] = field(default_factory=list)
    calls: list[int] = field(default_factory=list)

    async def embed(self, texts: list[str]) -> Embedded:
        self.calls.append(len(texts))
        if self.failures:
            raise self.failures.pop(0)
        return Embedded(
            [trigram_vector(t, self.dimension) for t in texts], tokens=sum(len(t) // 3 for t in texts)
        )

    @property
    def inputs(self) -> int:
        return sum(self.calls)


def always_down(n: int = 50) -> list[Exception]:
    return [ProviderUnavailable("HTTP 500") for _ in range(n)]


def make_repo(path: Path, files: dict[str, str], date: str = "2024-03-01") -> Path:
    repo = init_repo(path)
    commit(repo, date, files)
    return repo


async def new_repository(
    infra: Infra, repo: Path, *, mode: str = "hybrid", name: str = "embed"
) -> tuple[uuid.UUID, uuid.UUID]:
    tenant = await create_tenant(infra.pool, name)
    return tenant, await register_path(infra.pool, tenant, repo, mode=mode)


async def index(
    infra: Infra,
    tenant: uuid.UUID,
    repo_id: uuid.UUID,
    *,
    wait: tuple[type[Event], ...] = (SnapshotBuilt,),
    timeout_s: float = 90.0,
    reason: str = "cli",
) -> Arrived:
    event = IndexRequested(tenant_id=tenant, repository_id=repo_id, reason=reason)  # type: ignore[arg-type]
    return await request_and_wait(infra, event, wait, timeout_s=timeout_s)


async def has_pgvector(infra: Infra) -> bool:
    async with tenant_tx(infra.pool, uuid.uuid4()) as conn:
        return await semantic_available(conn)


async def snapshot_row(infra: Infra, tenant: uuid.UUID, snapshot_id: Any) -> dict[str, Any]:
    async with tenant_tx(infra.pool, tenant) as conn:
        cur = await conn.execute("SELECT * FROM code_index_snapshots WHERE snapshot_id = %s", (snapshot_id,))
        row = await cur.fetchone()
    assert row is not None
    return dict(row)


async def vector_count(infra: Infra, tenant: uuid.UUID, model: str | None = None) -> int:
    async with tenant_tx(infra.pool, tenant) as conn:
        cur = await conn.execute(
            "SELECT count(*) AS n FROM code_chunk_embeddings WHERE %s::text IS NULL OR model = %s",
            (model, model),
        )
        row = await cur.fetchone()
    return int(row["n"]) if row else 0
