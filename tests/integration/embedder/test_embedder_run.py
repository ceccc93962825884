"""Embedding runs against real PostgreSQL with an in-process provider: content addressing, caps,
failures, dimensions — and semantic/hybrid search over what was stored (pgvector) or its absence.

Snapshots are built by the real chunker through the bus; the runs call ``embed_snapshot`` directly
so each failure mode is set up exactly (the bus path is covered by test_embedder_service).
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from palimpsest.core.db import tenant_tx
from palimpsest.core.events import SnapshotBuilt
from palimpsest.core.service import Infra
from palimpsest.embedder.batching import BatchLimits
from palimpsest.embedder.engine import Embedded, RetryPolicy
from palimpsest.embedder.errors import BatchTooLarge, ProviderError, RateLimited, SpendBudgetExceeded
from palimpsest.embedder.run import RunLimits, embed_snapshot
from palimpsest.embedder.store import Outcome
from palimpsest.index.errors import SemanticUnavailable
from palimpsest.index.hybrid import hybrid_search
from palimpsest.index.search import lexical_search
from palimpsest.index.semantic import semantic_search
from tests.integration.embedder.corpus import FILES
from tests.integration.embedder.support import (
    TrigramProvider,
    always_down,
    chunker_definition,
    has_pgvector,
    index,
    make_repo,
    new_repository,
    vector_count,
)
from tests.integration.embedder.vectors import trigram_vector
from tests.support.gitrepo import commit
from tests.support.pipeline import services

FAST = RetryPolicy(max_retries=2, base_delay_s=0.0, jitter=False)


@pytest.fixture
async def chunker(infra: Infra) -> AsyncIterator[None]:
    async with services(infra, [chunker_definition(f"t-echunk-{uuid.uuid4().hex[:6]}")]):
        yield


async def built(infra: Infra, tmp_path: Path, files: dict[str, str] | None = None) -> dict[str, Any]:
    repo = make_repo(tmp_path / "repo", files or FILES)
    tenant, repo_id = await new_repository(infra, repo)
    snap = (await index(infra, tenant, repo_id))[SnapshotBuilt]
    assert snap.state == "ready", snap
    return {
        "repo": repo,
        "tenant": tenant,
        "repo_id": repo_id,
        "snapshot_id": snap.snapshot_id,
        "chunks": snap.chunks,
    }


async def run(infra: Infra, ctx: dict[str, Any], provider: TrigramProvider, **kw: Any) -> Outcome:
    kw.setdefault("policy", FAST)
    return await embed_snapshot(infra.pool, ctx["tenant"], ctx["repo_id"], ctx["snapshot_id"], provider, **kw)


async def test_content_addressed_and_idempotent(infra: Infra, tmp_path: Path, chunker: None) -> None:
    ctx = await built(infra, tmp_path)
    provider = TrigramProvider()
    first = await run(infra, ctx, provider)
    assert first.state == "ready" and first.reason is None
    assert first.embedded == ctx["chunks"] == first.covered and first.pending == 0
    assert first.dimension == 384 and first.model == provider.model
    assert provider.calls[0] == 1  # the probe: one input until the dimension is known
    # the same snapshot again: nothing to pay for
    again = TrigramProvider()
    second = await run(infra, ctx, again)
    assert (second.state, second.embedded, again.inputs) == ("ready", 0, 0)
    # a new commit that changes one file: only that blob's chunks are embedded
    commit(
        ctx["repo"],
        "2024-04-01",
        {"src/dates/parse.py": FILES["src/dates/parse.py"] + "\n\ndef today():\n    return 1\n"},
    )
    snap = (await index(infra, ctx["tenant"], ctx["repo_id"]))[SnapshotBuilt]
    ctx2 = {**ctx, "snapshot_id": snap.snapshot_id}
    third = TrigramProvider()
    outcome = await run(infra, ctx2, third)
    assert outcome.state == "ready" and 0 < outcome.embedded == third.inputs <= 3
    # another model embeds everything once, beside the first model's vectors
    other = TrigramProvider(model="fake/other-384")
    assert (await run(infra, ctx2, other)).embedded == snap.chunks
    assert await vector_count(infra, ctx["tenant"], provider.model) >= ctx["chunks"]


async def test_chunk_cap_stops_with_budget_exceeded_and_the_next_run_continues(
    infra: Infra, tmp_path: Path, chunker: None
) -> None:
    ctx = await built(infra, tmp_path)
    cap = RunLimits(max_chunks=5, page=2, write_every=3)
    first = await run(infra, ctx, TrigramProvider(), limits=cap)
    assert (
        first.state == "budget_exceeded" and first.reason is not None and first.reason.startswith("chunk_cap")
    )
    assert first.embedded == 5 and first.pending == ctx["chunks"] - 5
    second = await run(infra, ctx, TrigramProvider(), limits=RunLimits(max_chunks=1000))
    assert second.state == "ready" and second.embedded == ctx["chunks"] - 5 and second.pending == 0


async def test_spend_budget_keeps_what_was_paid_for(infra: Infra, tmp_path: Path, chunker: None) -> None:
    ctx = await built(infra, tmp_path)
    limits = BatchLimits(max_inputs=4)

    class Budgeted(TrigramProvider):
        async def embed(self, texts: list[str]) -> Any:
            if len(self.calls) >= 3:
                raise SpendBudgetExceeded("tenant spent 5.00 of 5.00 USD this month")
            return await super().embed(texts)

    provider = Budgeted()
    outcome = await run(infra, ctx, provider, batch_limits=limits)
    assert outcome.state == "budget_exceeded" and "spend_budget" in (outcome.reason or "")
    assert outcome.embedded == 1 + 4 + 4 and outcome.pending == ctx["chunks"] - 9  # probe + two batches


async def test_provider_failures_end_embedding_failed_and_lexical_still_works(
    infra: Infra, tmp_path: Path, chunker: None
) -> None:
    ctx = await built(infra, tmp_path)
    down = TrigramProvider(failures=always_down())
    outcome = await run(infra, ctx, down)
    assert outcome.state == "embedding_failed" and "ProviderUnavailable" in (outcome.reason or "")
    assert outcome.embedded == 0 and len(down.calls) == FAST.max_retries + 1
    refused = TrigramProvider(failures=[ProviderError("401 invalid api key")])
    outcome = await run(infra, ctx, refused)
    assert outcome.state == "embedding_failed" and len(refused.calls) == 1
    async with tenant_tx(infra.pool, ctx["tenant"]) as conn:
        hits = await lexical_search(conn, ctx["repo_id"], "compute_invoice_total")
    assert hits and hits[0].name == "compute_invoice_total"


async def test_retries_and_splits_still_embed_everything(infra: Infra, tmp_path: Path, chunker: None) -> None:
    ctx = await built(infra, tmp_path)
    provider = TrigramProvider(
        failures=[RateLimited("429", retry_after_s=0.0), BatchTooLarge("too many tokens")]
    )
    outcome = await run(infra, ctx, provider, batch_limits=BatchLimits(max_inputs=8))
    assert outcome.state == "ready" and outcome.embedded == ctx["chunks"]


async def test_unsupported_dimensions_store_nothing(infra: Infra, tmp_path: Path, chunker: None) -> None:
    ctx = await built(infra, tmp_path)
    provider = TrigramProvider(model="fake/odd-100", dimension=100)
    outcome = await run(infra, ctx, provider)
    assert outcome.state == "unsupported_dimensions" and "100 dimensions" in (outcome.reason or "")
    assert provider.inputs == 1  # only the probe was paid for
    assert await vector_count(infra, ctx["tenant"], provider.model) == 0


async def test_truncated_inputs_are_counted(infra: Infra, tmp_path: Path, chunker: None) -> None:
    ctx = await built(infra, tmp_path)
    outcome = await run(infra, ctx, TrigramProvider(), batch_limits=BatchLimits(max_input_tokens=20))
    assert outcome.state == "ready" and outcome.truncated > 0
    async with tenant_tx(infra.pool, ctx["tenant"]) as conn:
        cur = await conn.execute("SELECT count(*) AS n FROM code_chunk_embeddings WHERE truncated")
        assert (await cur.fetchone())["n"] == outcome.truncated  # type: ignore[index]


async def test_semantic_search_compares_one_model_only(infra: Infra, tmp_path: Path, chunker: None) -> None:
    if not await has_pgvector(infra):
        pytest.skip("needs pgvector (embedded PostgreSQL 18)")
    ctx = await built(infra, tmp_path)
    await run(infra, ctx, TrigramProvider(model="fake/a"))
    query = trigram_vector("hashing passwords")
    async with tenant_tx(infra.pool, ctx["tenant"]) as conn:
        hits = await semantic_search(
            conn, ctx["repo_id"], query, model="fake/a", snapshot_id=ctx["snapshot_id"]
        )
        assert hits[0].name == "hash_password" and 0 < hits[0].score <= 1
        assert (
            await semantic_search(conn, ctx["repo_id"], query, model="fake/b", snapshot_id=ctx["snapshot_id"])
            == []
        )
        filtered = await semantic_search(
            conn,
            ctx["repo_id"],
            query,
            model="fake/a",
            snapshot_id=ctx["snapshot_id"],
            path_prefix="src/dates/",
        )
        assert filtered and {h.path for h in filtered} == {"src/dates/parse.py"}
        with pytest.raises(SemanticUnavailable, match="unsupported_dimensions"):
            await semantic_search(
                conn, ctx["repo_id"], [0.1] * 100, model="fake/a", snapshot_id=ctx["snapshot_id"]
            )
    # another tenant sees nothing of it
    async with tenant_tx(infra.pool, uuid.uuid4()) as conn:
        assert (
            await semantic_search(conn, ctx["repo_id"], query, model="fake/a", snapshot_id=ctx["snapshot_id"])
            == []
        )


async def test_semantic_candidates_use_the_hnsw_index(
    infra: Infra, stack: Any, tmp_path: Path, chunker: None
) -> None:
    if not await has_pgvector(infra):
        pytest.skip("needs pgvector (embedded PostgreSQL 18)")
    import psycopg

    ctx = await built(infra, tmp_path)
    await run(infra, ctx, TrigramProvider(model="fake/idx"))

    def scans() -> int:
        with psycopg.connect(stack.owner_url) as oc:
            row = oc.execute(
                "SELECT idx_scan FROM pg_stat_user_indexes WHERE indexrelname = %s",
                (f"embeddings_{ctx['repo_id'].hex}_hnsw_384",),
            ).fetchone()
            return int(row[0]) if row else -1

    before = scans()
    async with tenant_tx(infra.pool, ctx["tenant"]) as conn:
        # a handful of rows is cheaper to sort than to walk a graph; on large repositories the
        # planner picks the index by itself, here it is the only way left to it
        for setting in ("enable_seqscan", "enable_bitmapscan", "enable_sort"):
            await conn.execute(f"SET LOCAL {setting} = off")
        hits = await semantic_search(
            conn, ctx["repo_id"], trigram_vector("cache"), model="fake/idx", snapshot_id=ctx["snapshot_id"]
        )
        await conn.execute("SELECT pg_stat_force_next_flush()")
    assert hits
    assert scans() > before


async def test_hybrid_falls_back_to_lexical_with_a_reason(
    infra: Infra, tmp_path: Path, chunker: None
) -> None:
    ctx = await built(infra, tmp_path)

    async def embed_query(model: str, text: str) -> list[float]:
        return trigram_vector(text)

    async with tenant_tx(infra.pool, ctx["tenant"]) as conn:
        result = await hybrid_search(conn, ctx["repo_id"], "compute_invoice_total", embed_query=embed_query)
    assert result.mode == "lexical" and result.semantic == "unavailable"
    expected = "no_embeddings" if await has_pgvector(infra) else "pgvector_missing"
    assert result.reason is not None and result.reason.startswith(expected)
    assert result.hits[0].name == "compute_invoice_total"


async def test_deleting_the_repository_index_deletes_its_vectors(
    infra: Infra, tmp_path: Path, chunker: None
) -> None:
    from palimpsest.devtools.bench.index import delete_repository_index

    ctx = await built(infra, tmp_path)
    await run(infra, ctx, TrigramProvider())
    assert await vector_count(infra, ctx["tenant"]) == ctx["chunks"]
    async with tenant_tx(infra.pool, ctx["tenant"]) as conn:
        await delete_repository_index(conn, ctx["repo_id"])
    assert await vector_count(infra, ctx["tenant"]) == 0


async def test_vectors_are_stored_exactly_as_float4(infra: Infra, tmp_path: Path, chunker: None) -> None:
    """write_vectors packs each vector itself for the binary COPY: what is read back is the
    provider's vector rounded to float4, as psycopg's own dumper sent it."""
    import math
    import struct

    from palimpsest.embedder.store import write_vectors

    ctx = await built(infra, tmp_path)
    vector = [math.sin(i) * 10.0 ** (i % 7 - 3) for i in range(384)]
    vector[:4] = [0.0, -0.0, 1 / 3, -3.4e38]
    async with tenant_tx(infra.pool, ctx["tenant"]) as conn:
        cur = await conn.execute(
            "SELECT blob_sha, ordinal FROM code_chunks ORDER BY blob_sha, ordinal LIMIT 2"
        )
        keys = [(r["blob_sha"], r["ordinal"]) for r in await cur.fetchall()]
        rows = [(sha, ordinal, vector, ordinal % 2 == 0) for sha, ordinal in keys]
        assert await write_vectors(conn, ctx["tenant"], ctx["repo_id"], "fake/exact-384", rows) == 2
        cur = await conn.execute(
            "SELECT blob_sha, ordinal, embedding, truncated, dimension FROM code_chunk_embeddings"
            " WHERE model = 'fake/exact-384' ORDER BY blob_sha, ordinal"
        )
        stored = await cur.fetchall()
    assert [(r["blob_sha"], r["ordinal"], r["truncated"], r["dimension"]) for r in stored] == [
        (sha, ordinal, ordinal % 2 == 0, 384) for sha, ordinal in keys
    ]
    # (read back as text, a float4 prints as its shortest decimal: compare as float4 bits)
    assert all(struct.pack("<384f", *r["embedding"]) == struct.pack("<384f", *vector) for r in stored)


@dataclass
class SlowProvider(TrigramProvider):
    """Answers after a delay, counting the requests in flight."""

    in_flight: int = 0
    peak_in_flight: int = 0

    async def embed(self, texts: list[str]) -> Embedded:
        self.in_flight += 1
        self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
        try:
            await asyncio.sleep(0.02)
            return await super().embed(texts)
        finally:
            self.in_flight -= 1


async def test_requests_stay_in_flight_across_pages(infra: Infra, tmp_path: Path, chunker: None) -> None:
    """Pages of two chunks, one chunk per request, three requests in flight: the next page is read
    while the current one's requests are out, so the slots do not wait for a page to drain."""
    ctx = await built(infra, tmp_path)
    assert ctx["chunks"] >= 8
    provider = SlowProvider()
    outcome = await run(
        infra,
        ctx,
        provider,
        limits=RunLimits(page=2, concurrency=3),
        batch_limits=BatchLimits(max_inputs=1),
    )
    assert outcome.state == "ready" and outcome.embedded == ctx["chunks"] and outcome.pending == 0
    assert provider.peak_in_flight == 3  # more than a page holds
    assert provider.calls == [1] * ctx["chunks"]
