"""``palimpsest bench cochange``: index REV through the real pipeline, then score the rankings.

The scoring itself (trials, strategies, summaries) is :mod:`palimpsest.devtools.bench.cochange`;
this module builds the graph it scores on a scratch stack and reads the history.
"""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
import tempfile
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any
from uuid import UUID

from nats.aio.client import Client as NATS

from palimpsest.cli.output import progress
from palimpsest.core.db import Pool
from palimpsest.core.errors import PalimpsestError
from palimpsest.core.settings import BaseServiceSettings
from palimpsest.devtools.scratch import scratch_pipeline

if TYPE_CHECKING:
    from palimpsest.cli.pipeline import Arrived
    from palimpsest.core.service import Infra
    from palimpsest.devtools.bench.cochange import BenchConfig
    from palimpsest.index.graph.model import Graph

__all__ = [
    "BenchmarkFailed",
    "bench_text",
    "index_revision",
    "pinned_clone",
    "run_bench_cochange",
    "score_history",
]

_BENCH_BRANCH = "palimpsest-bench"


def _git(*args: str) -> str:
    proc = subprocess.run(["git", *args], capture_output=True, text=True, check=False, timeout=600)
    if proc.returncode != 0:
        raise BenchmarkFailed(
            f"git {args[0] if args[0] != '-C' else args[2]} failed: {proc.stderr.strip()[:300]}"
        )
    return proc.stdout.strip()


@contextlib.contextmanager
def pinned_clone(repo: Path, sha: str) -> Iterator[Path]:
    """A throw-away bare clone (sharing objects with ``repo``) whose default branch is ``sha``.

    The chunker indexes a repository's default branch head; pointing a scratch clone's branch
    at REV indexes REV without touching the user's repository.
    """
    with tempfile.TemporaryDirectory(prefix="palimpsest-bench-cochange-") as tmp:
        clone = Path(tmp) / "repo.git"
        _git("clone", "--quiet", "--bare", "--shared", "--no-tags", str(repo), str(clone))
        _git("-C", str(clone), "update-ref", f"refs/heads/{_BENCH_BRANCH}", sha)
        _git("-C", str(clone), "symbolic-ref", "HEAD", f"refs/heads/{_BENCH_BRANCH}")
        yield clone


class BenchmarkFailed(PalimpsestError):
    """The benchmark could not run (the index build did not produce a ready snapshot)."""


IndexAndWait = Callable[[Pool, NATS, UUID, UUID], Awaitable["Arrived"]]


async def _index_and_wait(pool: Pool, nc: NATS, tenant: UUID, repository_id: UUID) -> Arrived:
    from palimpsest.cli.pipeline import index_and_wait

    return await index_and_wait(pool, nc, tenant, repository_id, reason="rebuild")


async def index_revision(
    infra: Infra, tenant: UUID, repo: Path, sha: str, *, index: IndexAndWait = _index_and_wait
) -> Graph:
    """Index ``sha`` of ``repo`` through the running pipeline and resolve its graph."""
    from palimpsest.cli.local import register_path
    from palimpsest.core.db import tenant_tx
    from palimpsest.core.events import SnapshotBuilt
    from palimpsest.index.graph.cache import GraphCache
    from palimpsest.index.graph.query import snapshot_graph

    with pinned_clone(repo, sha) as clone:
        repo_id = await register_path(infra.pool, tenant, clone)
        built = (await index(infra.pool, infra.nc, tenant, repo_id))[SnapshotBuilt]
        if built.state != "ready":
            raise BenchmarkFailed(f"the index build ended {built.state}: {built.reason}")
        async with tenant_tx(infra.pool, tenant) as conn:
            _, graph, _ = await snapshot_graph(conn, repo_id, cache=GraphCache(1))
    return graph


async def score_history(
    graph: Graph, repo: Path, sha: str, config: BenchConfig, seeds: list[int]
) -> dict[str, Any]:
    """Every seed's trials against the first-parent history of ``sha``, summarised."""
    from palimpsest.devtools.bench.cochange import evaluate, summarize
    from palimpsest.index.graph.history import read_history

    progress(f"reading the history of {repo}…")
    changes = await read_history(repo, sha)
    runs = []
    for seed in seeds:
        progress(f"seed {seed}: running the trials…")
        runs.append(await asyncio.to_thread(evaluate, graph, changes, config, seed))
    return {"history_commits": len(changes), **summarize(runs)}


async def run_bench_cochange(
    settings: BaseServiceSettings, repo: Path, rev: str, config: BenchConfig, seeds: list[int]
) -> dict[str, Any]:
    """Index REV through the real pipeline on a scratch stack (or the configured servers), then
    run every seed against the repository's history."""

    sha = _git("-C", str(repo), "rev-parse", "--verify", "--end-of-options", f"{rev}^{{commit}}")
    with tempfile.TemporaryDirectory(prefix="palimpsest-home-") as home:
        progress(f"indexing {repo} at {sha[:12]} through the pipeline…")
        async with scratch_pipeline(settings, Path(home)) as (_, _, infra, tenant):
            graph = await index_revision(infra, tenant, repo, sha)
    result = await score_history(graph, repo, sha, config, seeds)
    return {"repository": str(repo), "rev": rev, "commit": sha, **result}


def bench_text(result: dict[str, Any]) -> str:
    seeds = result["seed"] if isinstance(result["seed"], list) else [result["seed"]]
    lines = [
        f"repository {result['repository']}  commit {result['commit'][:12]}  (rev {result['rev']})",
        f"pool {result['pool']}  eligible {result['eligible']}  trials {result['trials']}  k {result['k']}"
        f"  window {result['commits']} commits  seeds {', '.join(map(str, seeds))}",
        "",
        f"{'strategy':<10} "
        + " ".join(f"{'seed ' + str(s):>9}" for s in seeds)
        + f" {'mean':>8} {'spread':>8}",
    ]
    for name, value in result["recall"].items():
        per_seed = " ".join(f"{run['recall'][name]:>9.4f}" for run in result["runs"])
        lines.append(f"{name:<10} {per_seed} {value:>8.4f} {result['spread'][name]:>8.4f}")
    margins = ", ".join(
        f"{control} {value:+.4f} (spread {result['noise'][control]:.4f})"
        for control, value in result["margins"].items()
    )
    lines += [
        "",
        f"combined minus controls: {margins}; smallest per-seed margin {result['min_margin_per_seed']:+.4f}",
        "combined beats every control by more than the seed-to-seed spread: "
        + ("yes" if result["combined_beats_controls"] else "no"),
    ]
    return "\n".join(lines)
