"""``palimpsest bench embed`` end to end on its own scratch stack (embedded PostgreSQL with
pgvector): the pipeline's rate beside its floor measured in the same run, and the HNSW figures."""

from __future__ import annotations

from palimpsest.core.settings import BaseServiceSettings
from palimpsest.devtools.bench.embed import run_bench_embed


async def test_bench_embed_reports_the_rate_beside_its_floor() -> None:
    result = await run_bench_embed(
        BaseServiceSettings(), files=40, total_bytes=40_000, vectors=300, queries=5, latency_ms=1.0
    )
    assert result["embedding_state"] == "ready", result
    assert result["embedded"] == result["chunks"] > 0
    assert result["concurrency"] == 4 and result["provider_latency_ms"] == 1.0
    assert result["chunks_per_s"] > 0
    parts = result["floor_copy_s"] + result["floor_index_s"]
    assert abs(result["floor_s"] - parts) <= 0.02  # each rounded to 10 ms
    assert result["floor_index_s"] > 0 and result["embed_over_floor"] > 0
    assert result["hnsw_queries"] == 5 and result["hnsw_recall_at_10"] >= 0.9
