"""Hybrid vs lexical on the labelled query set (corpus.py): recall@10 and MRR, reported side by side.

The corpus is embedded through the real pipeline (chunker → embedder → fake server over HTTP)
with the fake's character-trigram vectors; queries are embedded the same way through the
gateway. The figures are printed (run with ``-s`` or see the report line) and the test asserts
only what fusion must guarantee: hybrid finds at least what lexical finds at 10 on this set.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from palimpsest.core.db import tenant_tx
from palimpsest.core.events import SnapshotBuilt, SnapshotEmbedded
from palimpsest.core.service import Infra
from palimpsest.devtools.fakes.llm import FakeLLM
from palimpsest.index.errors import InvalidQuery
from palimpsest.index.hybrid import hybrid_search
from palimpsest.index.search import SearchHit, lexical_search
from tests.integration.embedder.bus import KEY, pipeline
from tests.integration.embedder.corpus import QUERIES, repository_files
from tests.integration.embedder.support import has_pgvector, index, make_repo, new_repository
from tests.integration.embedder.vectors import trigram_vector


@pytest.fixture
def fake() -> Iterator[FakeLLM]:
    with FakeLLM(dimensions=384, vectorizer=trigram_vector, api_key=KEY) as server:
        yield server


def rank_of(hits: Sequence[SearchHit], path: str, name: str) -> int | None:
    for rank, hit in enumerate(hits, start=1):
        if hit.path == path and (hit.name == name or name in hit.content):
            return rank
    return None


def summarise(ranks: list[int | None]) -> dict[str, float]:
    return {
        "recall@10": round(sum(1 for r in ranks if r is not None and r <= 10) / len(ranks), 3),
        "mrr": round(sum(1 / r for r in ranks if r is not None) / len(ranks), 3),
    }


async def test_hybrid_recall_beside_lexical(
    infra: Infra, tmp_path: Path, fake: FakeLLM, capsys: pytest.CaptureFixture[str]
) -> None:
    if not await has_pgvector(infra):
        pytest.skip("needs pgvector (embedded PostgreSQL 18)")
    repo = make_repo(tmp_path / "labelled", repository_files())
    tenant, repo_id = await new_repository(infra, repo, name="recall")
    async with pipeline(infra, fake) as gateway:
        found = await index(infra, tenant, repo_id, wait=(SnapshotBuilt, SnapshotEmbedded))
        assert found[SnapshotEmbedded].state == "ready"

        async def embed_query(model: str, text: str) -> list[float]:
            route = await gateway.embeddings_route(tenant, model)
            assert route is not None
            return (await gateway.embed(tenant, [text], route=route, reference="search")).vectors[0]

        lexical_ranks: list[int | None] = []
        hybrid_ranks: list[int | None] = []
        async with tenant_tx(infra.pool, tenant) as conn:
            for query, path, name in QUERIES:
                try:
                    lexical = await lexical_search(conn, repo_id, query, limit=10)
                except InvalidQuery:
                    lexical = []
                hybrid = await hybrid_search(conn, repo_id, query, embed_query=embed_query, limit=10)
                assert hybrid.mode == "hybrid", hybrid.reason
                lexical_ranks.append(rank_of(lexical, path, name))
                hybrid_ranks.append(rank_of(hybrid.hits, path, name))
    lexical_figures, hybrid_figures = summarise(lexical_ranks), summarise(hybrid_ranks)
    with capsys.disabled():
        print(
            f"\n[embedder] labelled set ({len(QUERIES)} queries, {found[SnapshotBuilt].chunks} chunks):"
            f" lexical {lexical_figures}  hybrid {hybrid_figures}"
        )
    assert hybrid_figures["recall@10"] >= lexical_figures["recall@10"]
    assert hybrid_figures["recall@10"] >= 0.75
