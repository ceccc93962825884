"""The embedder through the bus, against the fake OpenAI-compatible server over real HTTP.

Each failure the provider can produce ends in its embedding state with a reason while the
snapshot stays ready and lexical search keeps working; retries, splitting, truncation, budgets
and idempotent re-embedding are observed from the requests the fake server received. Runs with
pgvector (embedded PostgreSQL 18) and without (PostgreSQL 15: the embedder skips with
``pgvector_missing`` and semantic search reports itself unavailable).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from palimpsest.core.db import tenant_tx
from palimpsest.core.events import SnapshotBuilt, SnapshotEmbedded
from palimpsest.core.service import Infra
from palimpsest.devtools.fakes.llm import FakeLLM
from palimpsest.index.hybrid import hybrid_search
from palimpsest.index.search import lexical_search
from tests.integration.embedder.bus import KEY, MODEL, pipeline
from tests.integration.embedder.corpus import FILES
from tests.integration.embedder.support import has_pgvector, index, make_repo, new_repository, snapshot_row
from tests.integration.embedder.vectors import trigram_vector
from tests.support.gitrepo import commit

BOTH = (SnapshotBuilt, SnapshotEmbedded)


@pytest.fixture
def fake() -> Iterator[FakeLLM]:
    with FakeLLM(dimensions=384, vectorizer=trigram_vector, api_key=KEY, hang_s=3.0) as server:
        yield server


@pytest.fixture
async def pgvector(infra: Infra) -> bool:
    return await has_pgvector(infra)


async def embedded(infra: Infra, tmp_path: Path, *, mode: str = "hybrid", name: str = "r") -> dict[str, Any]:
    repo = make_repo(tmp_path / name, FILES)
    tenant, repo_id = await new_repository(infra, repo, mode=mode)
    found = await index(infra, tenant, repo_id, wait=BOTH)
    built, emb = found[SnapshotBuilt], found[SnapshotEmbedded]
    assert built.state == "ready", built
    snap = await snapshot_row(infra, tenant, built.snapshot_id)
    assert snap["state"] == "ready"  # whatever happened to the embeddings
    return {
        "tenant": tenant,
        "repo_id": repo_id,
        "built": built,
        "event": emb,
        "snapshot": snap,
        "repo": repo,
    }


def embedding_requests(fake: FakeLLM) -> list[Any]:
    return fake.requests("embeddings")


async def lexical_works(infra: Infra, r: dict[str, Any]) -> None:
    async with tenant_tx(infra.pool, r["tenant"]) as conn:
        hits = await lexical_search(conn, r["repo_id"], "compute_invoice_total")
    assert hits and hits[0].name == "compute_invoice_total"


async def test_a_hybrid_repository_is_embedded_through_the_bus(
    infra: Infra, tmp_path: Path, fake: FakeLLM, pgvector: bool
) -> None:
    async with pipeline(infra, fake) as gateway:
        r = await embedded(infra, tmp_path)
    event, snap = r["event"], r["snapshot"]
    if not pgvector:
        assert (event.state, snap["embedding_state"]) == ("skipped", "skipped")
        assert snap["embedding_reason"].startswith("pgvector_missing")
        assert embedding_requests(fake) == []  # nothing paid for vectors nobody can search
    else:
        chunks = r["built"].chunks
        assert (event.state, event.embedded, event.pending) == ("ready", chunks, 0)
        assert (event.model, event.dimension) == (MODEL, 384)
        assert snap["embedding_state"] == "ready" and snap["embedding_model"] == MODEL
        assert (snap["embedded_chunks"], snap["embedding_dimension"]) == (chunks, 384)
        requests = embedding_requests(fake)
        assert len(requests[0].body["input"]) == 1  # the dimension probe
        assert sum(len(q.body["input"]) for q in requests) == chunks
        assert all(q.headers["authorization"] == f"Bearer {KEY}" for q in requests)
        async with tenant_tx(infra.pool, r["tenant"]) as conn:
            cur = await conn.execute(
                "SELECT feature, outcome, count(*) AS n, sum(prompt_tokens) AS tokens FROM llm_usage"
                " WHERE reference = %s GROUP BY 1, 2",
                (f"index snapshot {r['built'].snapshot_id}",),
            )
            usage = await cur.fetchall()
        assert [(u["feature"], u["outcome"], u["n"]) for u in usage] == [("index", "ok", len(requests))]
        assert usage[0]["tokens"] > 0
    await lexical_works(infra, r)

    async def embed_query(model: str, text: str) -> list[float]:
        route = await gateway.embeddings_route(r["tenant"], model)
        assert route is not None
        return (await gateway.embed(r["tenant"], [text], route=route, reference="search")).vectors[0]

    async with tenant_tx(infra.pool, r["tenant"]) as conn:
        result = await hybrid_search(
            conn, r["repo_id"], "hashing passwords with salts", embed_query=embed_query
        )
    if pgvector:
        assert (result.mode, result.semantic, result.model) == ("hybrid", "ok", MODEL), result.reason
        assert result.counts["semantic"] > 0
        assert result.hits[0].name == "hash_password"
    else:
        assert (result.mode, result.semantic) == ("lexical", "unavailable")
        assert result.reason is not None and result.reason.startswith("pgvector_missing")
        assert result.hits  # lexical still answers


async def test_rate_limits_and_timeouts_are_retried(
    infra: Infra, tmp_path: Path, fake: FakeLLM, pgvector: bool
) -> None:
    if not pgvector:
        pytest.skip("without pgvector the embedder makes no requests")
    fake.fail(429, times=2, endpoint="embeddings", retry_after=0)
    fake.fail("timeout", times=1, endpoint="embeddings")
    fake.fail(503, times=1, endpoint="embeddings")
    async with pipeline(infra, fake, embed_request_timeout_s=0.5, embed_max_retries=4):
        r = await embedded(infra, tmp_path)
    assert r["event"].state == "ready", r["event"].reason
    assert r["event"].embedded == r["built"].chunks
    failed = [q.failed for q in embedding_requests(fake) if q.failed]
    assert failed == ["429", "429", "timeout", "503"]


async def test_requests_go_in_parallel_up_to_the_concurrency(
    infra: Infra, tmp_path: Path, fake: FakeLLM, pgvector: bool
) -> None:
    """A provider's latency bounds a run that waits for each reply before the next request: with
    ``embed_concurrency`` requests in flight, a slow provider is kept busy."""
    if not pgvector:
        pytest.skip("without pgvector the embedder makes no requests")
    fake.embeddings_latency_s = 0.05
    async with pipeline(infra, fake, embed_batch_inputs=2, embed_concurrency=3):
        r = await embedded(infra, tmp_path)
    assert r["event"].state == "ready" and r["event"].embedded == r["built"].chunks
    assert fake.peak_embeddings_in_flight == 3
    assert len(embedding_requests(fake)[0].body["input"]) == 1  # the probe went alone first


async def test_a_batch_rejected_as_too_large_is_split(
    infra: Infra, tmp_path: Path, fake: FakeLLM, pgvector: bool
) -> None:
    if not pgvector:
        pytest.skip("without pgvector the embedder makes no requests")
    # one request at a time: the first to arrive is the one refused
    async with pipeline(infra, fake, embed_batch_inputs=8, embed_concurrency=1):
        r = await embedded(infra, tmp_path)
        # new blobs for the same tenant and model: no probe this time, full batches at once
        commit(
            r["repo"],
            "2024-05-01",
            {f"src/extra/mod{i}.py": f"def extra_{i}(x):\n    return x * {i}\n" for i in range(12)},
        )
        fake.reset()
        fake.fail("oversize", times=1, endpoint="embeddings")
        again = await index(infra, r["tenant"], r["repo_id"], wait=BOTH)
    event = again[SnapshotEmbedded]
    assert event.state == "ready" and event.pending == 0 and event.embedded >= 12
    sizes = [(len(q.body["input"]), q.failed) for q in embedding_requests(fake)]
    assert sizes[0] == (8, "oversize") and sizes[1:3] == [(4, None), (4, None)]
    assert sum(n for n, failed in sizes if failed is None) == event.embedded


async def test_a_single_input_still_too_large_is_cut(
    infra: Infra, tmp_path: Path, fake: FakeLLM, pgvector: bool
) -> None:
    if not pgvector:
        pytest.skip("without pgvector the embedder makes no requests")
    fake.fail("oversize", times=2, endpoint="embeddings")  # the probe (one input), then its first half
    async with pipeline(infra, fake):
        r = await embedded(infra, tmp_path)
    assert r["event"].state == "ready" and r["event"].embedded == r["built"].chunks
    sizes = [(len(q.body["input"]), q.failed) for q in embedding_requests(fake)]
    assert sizes[:3] == [(1, "oversize"), (1, "oversize"), (1, None)]
    first = [q.body["input"][0] for q in embedding_requests(fake)[:3]]
    assert len(first[1]) < len(first[0]) and len(first[2]) < len(first[1])
    assert r["event"].truncated >= 1


async def test_an_input_over_the_provider_limit_is_truncated(
    infra: Infra, tmp_path: Path, pgvector: bool
) -> None:
    if not pgvector:
        pytest.skip("without pgvector the embedder makes no requests")
    with FakeLLM(dimensions=384, vectorizer=trigram_vector, max_input_tokens=12) as fake:
        async with pipeline(infra, fake, embed_batch_inputs=4):
            r = await embedded(infra, tmp_path)
    assert r["event"].state == "ready" and r["event"].embedded == r["built"].chunks
    assert r["event"].truncated > 0 and r["snapshot"]["embedding_truncated"] == r["event"].truncated


@pytest.mark.parametrize(
    ("failure", "overrides", "state", "reason"),
    [
        (500, {}, "embedding_failed", "ProviderUnavailable"),
        (401, {}, "embedding_failed", "authentication"),
        ("wrong_dimension", {}, "unsupported_dimensions", "385 dimensions"),
        (None, {"llm_monthly_budget_usd": 0.0}, "budget_exceeded", "spend_budget"),
        (None, {"llm_embeddings_model": None}, "skipped", "no_model"),
    ],
)
async def test_each_failure_has_its_state_and_the_snapshot_stays_ready(
    infra: Infra,
    tmp_path: Path,
    fake: FakeLLM,
    pgvector: bool,
    failure: Any,
    overrides: dict[str, Any],
    state: str,
    reason: str,
) -> None:
    if not pgvector and state != "skipped":
        pytest.skip("without pgvector the embedder makes no requests")
    if failure is not None:
        fake.fail(failure, times=50, endpoint="embeddings")
    async with pipeline(infra, fake, **overrides):
        r = await embedded(infra, tmp_path)
    assert r["event"].state == state and reason in (r["event"].reason or "")
    assert (r["snapshot"]["embedding_state"], r["snapshot"]["embedding_reason"]) == (
        state,
        r["event"].reason,
    )
    assert KEY not in (r["event"].reason or "")
    await lexical_works(infra, r)


async def test_spend_budget_stops_a_run_mid_way(
    infra: Infra, tmp_path: Path, fake: FakeLLM, pgvector: bool
) -> None:
    if not pgvector:
        pytest.skip("without pgvector the embedder makes no requests")
    # $1 per token: the probe (a few tokens) alone spends the $1 budget, so the next request is refused
    async with pipeline(infra, fake, llm_monthly_budget_usd=1.0, llm_input_usd_per_mtok=1_000_000.0):
        r = await embedded(infra, tmp_path)
    async with tenant_tx(infra.pool, r["tenant"]) as conn:
        cur = await conn.execute(
            "SELECT outcome, prompt_tokens, cost_usd, error FROM llm_usage ORDER BY created_at"
        )
        usage = await cur.fetchall()
    assert r["event"].state == "budget_exceeded", usage
    assert "spend_budget" in r["event"].reason
    assert r["event"].embedded == 1 and r["event"].pending == r["built"].chunks - 1
    async with tenant_tx(infra.pool, r["tenant"]) as conn:
        cur = await conn.execute("SELECT outcome, count(*) AS n FROM llm_usage GROUP BY 1 ORDER BY 1")
        assert {row["outcome"]: row["n"] for row in await cur.fetchall()} == {"budget_exceeded": 1, "ok": 1}


async def test_chunk_cap_then_the_next_build_continues_and_nothing_is_embedded_twice(
    infra: Infra, tmp_path: Path, fake: FakeLLM, pgvector: bool
) -> None:
    if not pgvector:
        pytest.skip("without pgvector the embedder makes no requests")
    async with pipeline(infra, fake, embed_max_chunks_per_run=10):
        r = await embedded(infra, tmp_path)
        chunks = r["built"].chunks
        assert r["event"].state == "budget_exceeded" and r["event"].reason.startswith("chunk_cap")
        assert (r["event"].embedded, r["event"].pending) == (10, chunks - 10)
        sent = sum(len(q.body["input"]) for q in embedding_requests(fake))
        assert sent == 10
        runs = [r["event"]]
        for _ in range(5):  # each rebuild embeds the next ten, never one already stored
            again = await index(infra, r["tenant"], r["repo_id"], wait=BOTH, reason="rebuild")
            runs.append(again[SnapshotEmbedded])
            if runs[-1].state == "ready":
                break
    assert runs[-1].state == "ready" and runs[-1].pending == 0
    assert sum(run.embedded for run in runs) == chunks
    assert sum(len(q.body["input"]) for q in embedding_requests(fake)) == chunks


async def test_lexical_repositories_are_not_embedded(infra: Infra, tmp_path: Path, fake: FakeLLM) -> None:
    async with pipeline(infra, fake):
        lexical_repo = make_repo(tmp_path / "lexical", FILES)
        tenant, lexical_id = await new_repository(infra, lexical_repo, mode="lexical")
        built = (await index(infra, tenant, lexical_id))[SnapshotBuilt]
        # a hybrid repository indexed afterwards: its event is handled after the lexical one's
        await embedded(infra, tmp_path, name="hybrid")
    snap = await snapshot_row(infra, tenant, built.snapshot_id)
    assert (snap["embedding_state"], snap["embedding_model"]) == ("none", None)
    async with tenant_tx(infra.pool, tenant) as conn:
        cur = await conn.execute("SELECT count(*) AS n FROM code_chunk_embeddings")
        assert (await cur.fetchone())["n"] == 0  # type: ignore[index]


async def test_the_next_index_request_resumes_a_failed_run(
    infra: Infra, tmp_path: Path, fake: FakeLLM, pgvector: bool
) -> None:
    if not pgvector:
        pytest.skip("without pgvector the embedder makes no requests")
    fake.fail(500, times=4, endpoint="embeddings")  # the first run gives up after 1 + 3 retries
    async with pipeline(infra, fake):
        r = await embedded(infra, tmp_path)
        assert r["event"].state == "embedding_failed" and r["event"].embedded == 0
        # the head is indexed already ("up_to_date"): the embedder resumes its pending chunks
        again = await index(infra, r["tenant"], r["repo_id"], wait=BOTH)
        assert (again[SnapshotBuilt].state, again[SnapshotBuilt].reason) == (
            "skipped",
            "up_to_date",
        )
        event = again[SnapshotEmbedded]
        assert (event.state, event.embedded, event.pending) == ("ready", r["built"].chunks, 0)
        assert event.snapshot_id == r["built"].snapshot_id
    snap = await snapshot_row(infra, r["tenant"], r["built"].snapshot_id)
    assert (snap["embedding_state"], snap["embedding_reason"]) == ("ready", None)
