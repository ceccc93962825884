"""The co-change benchmark end to end on a generated repository: real commits, the real chunker.

CI has no clones of public repositories, so the repository is planted: packages whose modules
import each other, and a history whose commits stay inside one package. The graph must find
that structure and every strategy must be reported.
"""

from __future__ import annotations

from pathlib import Path

from palimpsest.core.service import Infra
from palimpsest.devtools.bench.cochange import STRATEGIES, BenchConfig
from palimpsest.devtools.bench.cochange_run import index_revision, score_history
from tests.integration.graph.support import (
    COMMITS,
    MODULES,
    PACKAGES,
    index_with,
    planted_repository,
    running_chunker,
)
from tests.support.tenants import create_tenant


async def test_bench_cochange_through_the_pipeline(infra: Infra, tmp_path: Path) -> None:
    repo = tmp_path / "planted"
    head = planted_repository(repo)
    tenant = await create_tenant(infra.pool, "graph-bench")
    async with running_chunker(infra):
        graph = await index_revision(infra, tenant, repo, head, index=index_with(infra))
    assert len(graph.paths) == PACKAGES * MODULES + 1

    result = await score_history(graph, repo, head, BenchConfig(commits=COMMITS, trials=30, k=4), [1, 2, 3])

    assert result["history_commits"] == COMMITS + 1
    assert (result["pool"], result["eligible"], result["trials"], result["k"]) == (21, COMMITS, 30, 4)
    assert result["seed"] == [1, 2, 3]
    assert set(result["recall"]) == set(STRATEGIES)
    recall = result["recall"]
    assert recall["hops1"] > 3 * recall["random"]
    assert recall["pagerank"] > 3 * recall["random"]
    assert recall["combined"] >= recall["cochange"]
    assert [run["seed"] for run in result["runs"]] == [1, 2, 3]
