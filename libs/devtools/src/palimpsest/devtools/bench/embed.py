"""``palimpsest bench embed``: embedding throughput through the real pipeline, and HNSW latency.

Two figures (issue 7):

* ``chunks_per_s`` — a generated repository (``benchindex.make_repository``) in ``hybrid`` mode is
  indexed through the bus by the real chunker and embedder; the embedder's model is routed to a
  deterministic OpenAI-compatible server on loopback (:mod:`palimpsest.devtools.fakes.llm`, in a child
  process) that answers at once, so the rate measures our overhead — reading chunks, batching, the
  gateway and litellm, HTTP, storing vectors, building or maintaining the repository's HNSW index —
  not a provider's. ``--latency-ms`` makes it answer like a provider, after a delay, which the
  embedder's requests in flight (``PALIMPSEST_EMBED_CONCURRENCY``) are there to hide.
  Measured between the ``snapshot.built`` and ``snapshot.embedded`` events. Its yardstick, measured
  in the same run (``floor_s``, ``embed_over_floor``): the same vectors written by one binary COPY
  into a plain table and indexed once — what the database needs at least.
* ``hnsw_p95_ms`` — ``vectors`` synthetic 384-dimension vectors of one repository (clustered around
  topics) are stored as the embedder stores a bulk load (into the repository's partition, its HNSW
  index built afterwards: ``hnsw_insert_s`` in all, ``hnsw_load_s`` of it the rows), and
  ``queries`` nearest-neighbour searches run through the same path as ``palimpsest search --mode
  hybrid`` (the SECURITY DEFINER candidate function under row-level security, plus the chunk
  join); p50/p95 latency, and recall@10 of the index against an exact scan on a sample.

Runs on a scratch embedded stack (PostgreSQL 18 + pgvector) unless servers are configured.
"""

from __future__ import annotations

import random
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any
from uuid import UUID

import psycopg

from palimpsest.cli.local import register_path
from palimpsest.cli.output import progress
from palimpsest.cli.pipeline import request, wait_for, watching
from palimpsest.core.db import Pool, tenant_tx
from palimpsest.core.events import Event, IndexRequested, SnapshotBuilt, SnapshotEmbedded
from palimpsest.core.ids import uuid7
from palimpsest.core.llm import load_litellm
from palimpsest.core.settings import BaseServiceSettings
from palimpsest.devtools.bench.index import make_repository
from palimpsest.devtools.fakes import llm
from palimpsest.devtools.scratch import scratch_pipeline
from palimpsest.embedder.service import Settings as EmbedderSettings
from palimpsest.embedder.store import pack_float4_array
from palimpsest.index.semantic import semantic_available, semantic_search

BENCH_MODEL = "openai/bench-embed-384"
RANDOM_MODEL = "bench/clustered-384"
DIMENSION = 384
CHUNKS_PER_BLOB = 100
CLUSTERS = 1000  # topics: ~100 vectors each at the default 100 000
NOISE = 0.25  # spread of a vector around its topic (centroid coordinates lie in -0.5..0.5)


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def run_bench_embed(
    settings: BaseServiceSettings,
    *,
    files: int,
    total_bytes: int,
    vectors: int,
    queries: int,
    latency_ms: float = 0.0,
) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="palimpsest-bench-embed-") as tmp:
        root = Path(tmp)
        repo, _, _ = make_repository(root, files, total_bytes)
        with llm.in_child_process(DIMENSION, latency_ms / 1000) as url:
            scratch = scratch_pipeline(settings, root / "home", services=("chunker", "embedder"))
            async with scratch as (_, stack, infra, tenant):
                pool = infra.pool
                async with tenant_tx(pool, tenant) as conn:
                    if not await semantic_available(conn):
                        return {"benchmark": "embed", "error": "pgvector is not available on this PostgreSQL"}
                    await _route(conn, tenant, url)
                repo_id = await register_path(pool, tenant, repo, mode="hybrid")
                t = time.perf_counter()
                await load_litellm()  # once per embedder process; not part of the per-chunk rate
                litellm_import_s = time.perf_counter() - t
                progress(f"indexing and embedding {files} generated files…")
                pipeline = await _index_and_embed(infra, tenant, repo_id)
                progress("the floor: the same vectors copied into a table, then indexed…")
                pipeline.update(await _floor(stack.owner_url, pool, tenant, repo_id, pipeline["embed_s"]))
                progress(f"storing {vectors} synthetic {DIMENSION}-dimension vectors…")
                hnsw = await _hnsw(pool, tenant, vectors, queries)
        return {
            "benchmark": "embed",
            "postgres": "embedded" if stack.embedded_db else "external",
            "files": files,
            "provider_latency_ms": latency_ms,
            "concurrency": EmbedderSettings().embed_concurrency,  # PALIMPSEST_EMBED_CONCURRENCY
            "litellm_import_s": round(litellm_import_s, 2),
            **pipeline,
            **hnsw,
        }


async def _route(conn: Any, tenant: UUID, url: str) -> None:
    await conn.execute(
        "INSERT INTO llm_routes (tenant_id, feature, model, api_base) VALUES (%s, 'embeddings', %s, %s)"
        " ON CONFLICT (tenant_id, feature) DO UPDATE SET model = EXCLUDED.model, api_base = EXCLUDED.api_base",
        (tenant, BENCH_MODEL, url),
    )


async def _index_and_embed(infra: Any, tenant: UUID, repo_id: UUID) -> dict[str, Any]:
    event = IndexRequested(tenant_id=tenant, repository_id=repo_id, reason="cli")
    wanted: tuple[type[Event], ...] = (SnapshotBuilt, SnapshotEmbedded)
    async with watching(infra.nc, event.request_id, wanted) as waiter:
        started = time.perf_counter()
        await request(infra.pool, event)
        found = await wait_for(waiter, wanted, timeout_s=3600.0)
        wall = time.perf_counter() - started
    built, emb = found[SnapshotBuilt], found[SnapshotEmbedded]
    seconds = (emb.occurred_at - built.occurred_at).total_seconds()
    return {
        "chunks": built.chunks,
        "embedding_state": emb.state,
        "embedding_reason": emb.reason,
        "embedded": emb.embedded,
        "embed_s": round(seconds, 2),
        "chunks_per_s": round(emb.embedded / seconds, 1) if seconds > 0 else None,
        "index_and_embed_wall_s": round(wall, 2),
        "build_s": built.duration_s,
    }


async def _floor(owner_url: str, pool: Pool, tenant: UUID, repo_id: UUID, embed_s: float) -> dict[str, Any]:
    """The yardstick measured in the same run: what storing the run's vectors costs the database
    at least — one binary COPY into a plain table, then its HNSW index built once (the partition's
    settings) — with no chunks read, no model, no tenant policy, no batches."""
    async with tenant_tx(pool, tenant) as conn:
        cur = await conn.execute(
            "SELECT embedding FROM code_chunk_embeddings WHERE repository_id = %s AND model = %s",
            (repo_id, BENCH_MODEL),
        )
        packed = [pack_float4_array(r["embedding"]) for r in await cur.fetchall()]
    async with await psycopg.AsyncConnection.connect(owner_url, autocommit=True) as conn:
        await conn.execute(
            "CREATE TABLE bench_embed_floor (embedding real[] NOT NULL,"
            " dimension integer GENERATED ALWAYS AS (cardinality(embedding)) STORED) WITH (parallel_workers = 8)"
        )
        try:
            started = time.perf_counter()
            async with (
                conn.cursor() as writer,
                writer.copy("COPY bench_embed_floor (embedding) FROM STDIN (FORMAT BINARY)") as copy,
            ):
                copy.set_types(["bytea"])  # the packed float4[] as it is: binary COPY carries no types
                for vector in packed:
                    await copy.write_row((vector,))
            copied = time.perf_counter()
            await conn.execute("SET maintenance_work_mem = '256MB'")
            await conn.execute(
                f"CREATE INDEX ON bench_embed_floor USING hnsw ((embedding::vector({DIMENSION}))"
                f" vector_cosine_ops) WHERE dimension = {DIMENSION}"
            )
            done = time.perf_counter()
        finally:
            await conn.execute("DROP TABLE bench_embed_floor")
    floor_s = done - started
    return {
        "floor_s": round(floor_s, 2),
        "floor_copy_s": round(copied - started, 2),
        "floor_index_s": round(done - copied, 2),
        "embed_over_floor": round(embed_s / floor_s, 2) if floor_s > 0 else None,
    }


async def _hnsw(pool: Pool, tenant: UUID, vectors: int, queries: int) -> dict[str, Any]:
    repo_id, snapshot_id = uuid7(), uuid7()
    blobs = (vectors + CHUNKS_PER_BLOB - 1) // CHUNKS_PER_BLOB
    async with tenant_tx(pool, tenant) as conn:
        await conn.execute(
            "INSERT INTO repositories (tenant_id, repository_id, provider, full_name, clone_url, index_mode)"
            " VALUES (%s, %s, 'local', 'bench-vectors', %s, 'hybrid')",
            (tenant, repo_id, f"bench://vectors/{repo_id}"),
        )
        await conn.execute(
            "INSERT INTO code_index_snapshots (tenant_id, repository_id, snapshot_id, commit_sha, state,"
            " embedding_state, embedding_model) VALUES (%s, %s, %s, 'bench', 'ready', 'ready', %s)",
            (tenant, repo_id, snapshot_id, RANDOM_MODEL),
        )
        await conn.execute(
            "INSERT INTO code_blobs (tenant_id, repository_id, blob_sha, chunk_count)"
            " SELECT %s, %s, 'v' || lpad(b::text, 8, '0'), %s FROM generate_series(0, %s - 1) b",
            (tenant, repo_id, CHUNKS_PER_BLOB, blobs),
        )
        await conn.execute(
            "INSERT INTO code_index_files (tenant_id, snapshot_id, path, blob_sha)"
            " SELECT %s, %s, 'src/v' || b || '.txt', 'v' || lpad(b::text, 8, '0') FROM generate_series(0, %s - 1) b",
            (tenant, snapshot_id, blobs),
        )
        await conn.execute(
            "INSERT INTO code_chunks (tenant_id, repository_id, blob_sha, ordinal, content)"
            " SELECT %s, %s, 'v' || lpad((g / %s)::text, 8, '0'), g %% %s, 'chunk ' || g"
            " FROM generate_series(0, %s - 1) g",
            (tenant, repo_id, CHUNKS_PER_BLOB, CHUNKS_PER_BLOB, vectors),
        )
    # Vectors cluster around topics, as embeddings of code do (uniform random vectors in 384
    # dimensions have no neighbourhood structure at all: the worst case for any ANN index).
    rng = random.Random(7)  # noqa: S311 - reproducible vectors
    centroids = [[rng.uniform(-0.5, 0.5) for _ in range(DIMENSION)] for _ in range(CLUSTERS)]
    flat = [x for c in centroids for x in c]
    started = time.perf_counter()
    async with tenant_tx(pool, tenant) as conn:  # the embedder's bulk load: the index is built after it
        await conn.execute("SELECT palimpsest_embedding_partition(%s)", (repo_id,))
    step = 10_000
    for first in range(0, vectors, step):
        async with tenant_tx(pool, tenant) as conn:
            await conn.execute(
                "INSERT INTO code_chunk_embeddings (tenant_id, repository_id, blob_sha, ordinal, model, embedding)"
                " SELECT %(t)s, %(r)s, 'v' || lpad((g / %(per)s)::text, 8, '0'), g %% %(per)s, %(m)s,"
                "   (SELECT array_agg(x + ((random() - 0.5) * %(noise)s)::real)"
                "    FROM unnest((%(c)s::real[])[(g %% %(k)s) * %(d)s + 1 : (g %% %(k)s) * %(d)s + %(d)s]) x)"
                " FROM generate_series(%(a)s::integer, %(b)s::integer) g",
                {
                    "t": tenant,
                    "r": repo_id,
                    "per": CHUNKS_PER_BLOB,
                    "m": RANDOM_MODEL,
                    "noise": NOISE,
                    "c": flat,
                    "k": CLUSTERS,
                    "d": DIMENSION,
                    "a": first,
                    "b": min(first + step, vectors) - 1,
                },
            )
        progress(f"  {min(first + step, vectors)} vectors stored")
    load_s = time.perf_counter() - started
    async with tenant_tx(pool, tenant) as conn:
        await conn.execute("SELECT palimpsest_index_embeddings(%s, true)", (repo_id,))
    insert_s = time.perf_counter() - started
    async with tenant_tx(pool, tenant) as conn:
        await conn.execute("SELECT palimpsest_analyze_code_index()")
    probes = [
        [x + rng.uniform(-NOISE / 2, NOISE / 2) for x in centroids[rng.randrange(CLUSTERS)]]
        for _ in range(queries)
    ]
    latencies: list[float] = []
    for vec in probes:
        async with tenant_tx(pool, tenant) as conn:
            t = time.perf_counter()
            hits = await semantic_search(
                conn, repo_id, vec, model=RANDOM_MODEL, snapshot_id=snapshot_id, limit=10
            )
            latencies.append((time.perf_counter() - t) * 1000)
            assert len(hits) == 10
    recall = await _recall(pool, tenant, repo_id, snapshot_id, probes[:20])
    return {
        "vectors": vectors,
        "dimension": DIMENSION,
        "vector_clusters": CLUSTERS,
        "hnsw_insert_s": round(insert_s, 1),  # the load and the index build after it
        "hnsw_load_s": round(load_s, 1),
        "hnsw_queries": len(latencies),
        "hnsw_p50_ms": round(_pct(latencies, 0.5), 2),
        "hnsw_p95_ms": round(_pct(latencies, 0.95), 2),
        "hnsw_mean_ms": round(statistics.fmean(latencies), 2),
        "hnsw_recall_at_10": recall,
    }


async def _recall(
    pool: Pool, tenant: UUID, repo_id: UUID, snapshot_id: UUID, probes: list[list[float]]
) -> float:
    """Share of the exact top 10 (no index: a full scan) that the HNSW search returned."""
    found = 0
    for vec in probes:
        async with tenant_tx(pool, tenant) as conn:
            approx = await semantic_search(
                conn, repo_id, vec, model=RANDOM_MODEL, snapshot_id=snapshot_id, limit=10
            )
        async with tenant_tx(pool, tenant) as conn:
            await conn.execute("SET LOCAL enable_indexscan = off")
            exact = await semantic_search(
                conn, repo_id, vec, model=RANDOM_MODEL, snapshot_id=snapshot_id, limit=10
            )
        found += len({(h.blob_sha, h.ordinal) for h in approx} & {(h.blob_sha, h.ordinal) for h in exact})
    return round(found / (10 * len(probes)), 3)
