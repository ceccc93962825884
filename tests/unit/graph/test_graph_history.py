"""Change sets from real git history, the leave-one-out rule, and the per-snapshot cache."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from uuid import uuid4

from palimpsest.devtools.bench.cochange import BenchConfig, evaluate, sample_trials, summarize
from palimpsest.index.graph import GraphCache, SnapshotFacts
from palimpsest.index.graph.facts import FileFacts
from palimpsest.index.graph.history import Change, read_history
from tests.support.gitrepo import checkout, commit, init_repo, merge, move
from tests.unit.graph.support import graph_of


async def test_history_folds_renames_and_ends_dead_lineages(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo")
    first = commit(repo, "2024-01-01", {"a.py": "a = 1\n", "b.py": "b = 1\n" * 20})
    second = commit(repo, "2024-01-02", {"a.py": "a = 2\n", "c.py": "c = 1\n"})
    third = move(repo, "2024-01-03", "b.py", "lib/b.py", append="b = 2\n")
    fourth = commit(repo, "2024-01-04", {"c.py": None})
    checkout(repo, "feature", create=True)
    commit(repo, "2024-01-05", {"x.py": "x = 1\n"})
    commit(repo, "2024-01-06", {"y.py": "y = 1\n"})
    checkout(repo, "main")
    merged = merge(repo, "2024-01-07", "feature")
    fifth = commit(repo, "2024-01-08", {"c.py": "c = 'new'\n", "lib/b.py": "b = 3\n"})

    changes = await read_history(repo, "HEAD")

    assert [c.sha for c in changes] == [fifth, merged, fourth, third, second, first]
    by_sha = {c.sha: c for c in changes}
    assert by_sha[first].paths == ("a.py", "lib/b.py")  # b.py's history follows it to lib/b.py
    assert by_sha[second].paths == ("a.py",)  # the old c.py (deleted, re-added) is another file
    assert by_sha[second].touched == 2
    assert by_sha[fourth].paths == ()
    assert sorted(by_sha[merged].paths) == ["x.py", "y.py"]  # a merge is one change set
    assert by_sha[fifth].when == datetime(2024, 1, 8, tzinfo=UTC)


def test_history_based_strategies_never_see_the_trial_or_later_commits() -> None:
    """Two trials: the older one's pair co-changed nowhere before it, the newer one's once.

    With the trial commit (or later ones) leaking into the history, both trials would find
    their partner and recall would be 1.0 instead of 0.5. Checked against two broken
    versions of ``benchmark``: ``_Past.advance(trial.index + 1)`` (frequency and dates see the
    trial: the frequency assert fails) and ``index > before`` in ``_Past.cochange`` (the
    cochange assert fails).
    """
    graph, _ = graph_of({"x.py": "X = 1\n", "y.py": "Y = 1\n", "z.py": "Z = 1\n"})
    start = datetime(2024, 1, 1, tzinfo=UTC)
    changes = [
        Change("c" * 40, start + timedelta(days=2), 2, ("x.py", "y.py")),
        Change("b" * 40, start + timedelta(days=1), 2, ("x.py", "y.py")),
        Change("a" * 40, start, 1, ("z.py",)),
    ]
    run = evaluate(graph, changes, BenchConfig(commits=10, trials=10, k=2), seed=3)
    assert (run.eligible, run.trials, run.pool) == (2, 2, 3)
    assert run.recall["cochange"] == 0.5
    assert run.recall["frequency"] == 0.5


def test_trials_are_sampled_from_the_window_and_are_deterministic() -> None:
    pool = frozenset({"a", "b", "c", "d"})
    start = datetime(2024, 1, 1, tzinfo=UTC)
    changes = [
        Change(
            f"{n:040x}",
            start + timedelta(days=n),
            2 if n % 3 else 40,
            ("a", "b") if n % 2 else ("c", "d", "x"),
        )
        for n in range(30, 0, -1)
    ]
    config = BenchConfig(commits=12, trials=5, k=2)
    eligible, trials = sample_trials(changes, pool, config, seed=7)
    assert eligible == 8  # 12 newest, minus the four 40-entry commits
    assert trials == sample_trials(changes, pool, config, seed=7)[1]
    assert all(t.index >= 30 - 12 for t in trials)
    assert all(len(t.targets) == 1 and t.seed not in t.targets for t in trials)


def test_summary_requires_the_margin_to_exceed_the_seed_spread() -> None:
    graph, _ = graph_of({"x.py": "X = 1\n", "y.py": "Y = 1\n"})
    start = datetime(2024, 1, 1, tzinfo=UTC)
    changes = [Change(f"{n:040x}", start + timedelta(days=n), 2, ("x.py", "y.py")) for n in range(10, 0, -1)]
    runs = [evaluate(graph, changes, BenchConfig(commits=10, trials=5, k=1), seed=s) for s in (1, 2, 3)]
    summary = summarize(runs)
    assert summary["seed"] == [1, 2, 3]
    assert set(summary["recall"]) >= {
        "random",
        "frequency",
        "cochange",
        "pagerank",
        "hops1",
        "hops2",
        "combined",
    }
    assert summary["combined_beats_controls"] is False  # equal to cochange: no margin at all
    assert {"pool", "eligible", "trials", "k"} <= set(summary)


async def test_graph_cache_resolves_each_snapshot_once() -> None:
    cache = GraphCache(capacity=2)
    loads: list[str] = []

    def loader(name: str) -> Callable[[], Awaitable[SnapshotFacts]]:
        async def load() -> SnapshotFacts:
            loads.append(name)
            await asyncio.sleep(0)
            return SnapshotFacts([FileFacts(f"{name}.py")])

        return load

    first, second, third = uuid4(), uuid4(), uuid4()
    a, b = await asyncio.gather(cache.get(first, loader("a")), cache.get(first, loader("a")))
    assert a is b
    assert loads == ["a"]
    await cache.get(second, loader("b"))
    await cache.get(first, loader("a"))  # a hit refreshes it
    await cache.get(third, loader("c"))  # evicts the least recently used: second
    assert first in cache and third in cache and second not in cache
    assert loads == ["a", "b", "c"]
    assert cache.builds == 3
