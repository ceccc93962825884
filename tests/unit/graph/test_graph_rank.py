"""Ranking: hops and depth decay, reasons, seeds, per-kind weights, history signals, budget."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from palimpsest.index.errors import UnknownSeed
from palimpsest.index.evidence import add_evidence, pair_weight
from palimpsest.index.graph import (
    Blend,
    CoChangeSignal,
    RankOptions,
    Signals,
    Weights,
    rank,
    resolve_seeds,
)
from palimpsest.index.graph.rank import estimate_tokens, truncate_to_budget
from tests.unit.graph.support import graph_of, paths, ranked

# a chain a -> b -> c -> d (each imports the next), and an island
CHAIN = {
    "src/a.py": "from src.b import fb\n\n\ndef fa():\n    return fb()\n",
    "src/b.py": "from src.c import fc\n\n\ndef fb():\n    return fc()\n",
    "src/c.py": "from src.d import fd\n\n\ndef fc():\n    return fd()\n",
    "src/d.py": "def fd():\n    return 1\n",
    "src/island.py": "def alone():\n    return 0\n",
    "docs/guide.md": "# Guide\n\nGoverns: src/d.py\n",
}


def test_hops_confine_the_walk_and_depth_decays_it() -> None:
    graph, _ = graph_of(CHAIN)
    one = ranked(graph, ["src/a.py"], hops=1)
    assert paths(one) == ["src/b.py"]
    assert one[0].depth == 1
    two = {r.path: r for r in ranked(graph, ["src/a.py"], hops=2)}
    assert set(two) == {"src/b.py", "src/c.py"}
    assert two["src/b.py"].score > two["src/c.py"].score
    assert two["src/c.py"].depth == 2
    unbounded = paths(ranked(graph, ["src/a.py"], hops=None))
    assert unbounded[:3] == ["src/b.py", "src/c.py", "src/d.py"]
    assert "docs/guide.md" in unbounded
    assert "src/island.py" not in unbounded
    assert "src/a.py" not in unbounded  # seeds are not results


def test_every_result_says_why_it_is_there() -> None:
    graph, _ = graph_of(CHAIN)
    by_path = {r.path: (r.via, r.reason) for r in ranked(graph, ["src/b.py"], hops=1)}
    assert by_path == {
        "src/c.py": ("imports", "imported by src/b.py"),
        "src/a.py": ("imports", "imports src/b.py"),
    }
    doc = {r.path: r for r in ranked(graph, ["src/d.py"], hops=1)}["docs/guide.md"]
    assert (doc.via, doc.reason) == ("governs", "governs src/d.py")


def test_seeds_by_directory_node_id_and_symbol() -> None:
    graph, _ = graph_of(CHAIN)
    assert resolve_seeds(graph, ["src"]).matched["src"][:2] == ["file:src/a.py", "file:src/b.py"]
    assert resolve_seeds(graph, ["sym:src/c.py:fc"]).matched == {"sym:src/c.py:fc": ["sym:src/c.py:fc"]}
    assert resolve_seeds(graph, ["doc:docs/guide.md"]).matched == {"doc:docs/guide.md": ["doc:docs/guide.md"]}
    assert resolve_seeds(graph, ["./src/d.py"]).matched == {"./src/d.py": ["file:src/d.py"]}
    # a symbol seed walks from the symbol: its caller comes first
    assert paths(ranked(graph, ["fc"]))[0] == "src/b.py"


def test_edge_kind_weights_apply_at_query_time() -> None:
    graph, _ = graph_of(CHAIN)
    seeds = resolve_seeds(graph, ["src/d.py"])
    normal = paths(rank(graph, seeds, options=RankOptions(hops=1)))
    assert "docs/guide.md" in normal
    silenced = paths(rank(graph, seeds, options=RankOptions(hops=1, weights=Weights(governs=0.0))))
    assert "docs/guide.md" not in silenced


def test_co_change_leads_and_the_graph_fills_in() -> None:
    graph, _ = graph_of(CHAIN)
    now = datetime(2025, 6, 1, tzinfo=UTC)
    signals = Signals(
        cochange={
            "src/island.py": CoChangeSignal(5, now - timedelta(days=40)),
            "src/d.py": CoChangeSignal(2, now - timedelta(days=40)),
        },
        modified={
            "src/island.py": now - timedelta(days=40),
            "src/d.py": now - timedelta(days=40),
            "src/b.py": now,
        },
    )
    results = ranked(graph, ["src/a.py"], signals=signals)
    assert paths(results)[:3] == ["src/island.py", "src/d.py", "src/b.py"]
    island = results[0]
    assert island.via == "cochange"
    assert island.reason.startswith("changed together with the seeds in 5 commits")
    assert (results[2].via, results[2].reason) == ("imports", "imported by src/a.py")
    # without the graph, the file that is only a graph neighbour falls back to recency
    history_only = {r.path: r for r in ranked(graph, ["src/a.py"], signals=signals, use_graph=False)}
    assert history_only["src/b.py"].via == "recency"


def _equal_partners(recent: str, older: str, *, older_file_changed_now: bool) -> Signals:
    """Two partners of three commits each; only ``recent`` last changed with the seed just now."""
    now = datetime(2025, 6, 1, tzinfo=UTC)
    before = now - timedelta(days=300)
    return Signals(
        cochange={older: CoChangeSignal(3, before), recent: CoChangeSignal(3, now)},
        modified={older: now if older_file_changed_now else before, recent: now},
    )


def test_a_partner_changed_just_now_outranks_an_older_equal_one() -> None:
    graph, _ = graph_of(CHAIN)
    signals = _equal_partners("src/d.py", "src/c.py", older_file_changed_now=False)
    assert paths(ranked(graph, ["src/a.py"], signals=signals))[:2] == ["src/d.py", "src/c.py"]


def test_a_partner_that_just_changed_with_the_seed_outranks_one_that_just_changed_alone() -> None:
    """Both files changed just now, but only the island's last change was one together with the
    seed. Without the ``together`` term the import neighbour ``src/b.py`` wins on the graph fill."""
    graph, _ = graph_of(CHAIN)
    signals = _equal_partners("src/island.py", "src/b.py", older_file_changed_now=True)
    assert paths(ranked(graph, ["src/a.py"], signals=signals))[:2] == ["src/island.py", "src/b.py"]
    apart = rank(graph, resolve_seeds(graph, ["src/a.py"]), signals=signals, blend=Blend(together=0.0))
    assert paths(apart)[:2] == ["src/b.py", "src/island.py"]


def test_budget_keeps_the_leading_entries_that_fit() -> None:
    graph, _ = graph_of(CHAIN)
    results = ranked(graph, ["src/a.py"], hops=None)
    first = estimate_tokens(f"{results[0].path}  {results[0].score:.4f}  {results[0].reason}")
    kept = truncate_to_budget(results, first)
    assert [r.path for r in kept] == [results[0].path]
    assert kept[0].tokens == first
    everything = truncate_to_budget(ranked(graph, ["src/a.py"], hops=None), 10_000)
    assert len(everything) == len(results)
    assert truncate_to_budget(ranked(graph, ["src/a.py"], hops=None), 1) == []


def test_non_strict_seeds_list_what_is_missing_and_still_refuse_nothing() -> None:
    graph, _ = graph_of(CHAIN)
    seeds = resolve_seeds(graph, ["src/a.py", "src/new_in_this_pr.py"], strict=False)
    assert seeds.unmatched == ("src/new_in_this_pr.py",)
    assert list(seeds.matched) == ["src/a.py"]
    with pytest.raises(UnknownSeed, match="only_missing"):
        resolve_seeds(graph, ["only_missing"], strict=False)


def test_co_change_evidence_discounts_sweeping_and_old_commits() -> None:
    """Both partners changed with the seed in two commits, last on the same day: ``src/c.py`` in
    two 2-file commits, ``src/b.py`` in two 30-entry sweeps, the older six years back. By the
    count they tie and the graph neighbour ``src/b.py`` wins on the fill; by the evidence
    ``src/c.py`` leads. Shown to fail with the evidence ignored in ``rank._cochange``."""
    graph, _ = graph_of(CHAIN)
    now = datetime(2025, 6, 1, tzinfo=UTC)
    old = now - timedelta(days=6 * 365)
    half_life = Blend().half_life_days
    sweep = add_evidence(add_evidence(0.0, None, old, 30, half_life), old, now, 30, half_life)
    small = add_evidence(add_evidence(0.0, None, now, 2, half_life), now, now, 2, half_life)
    assert small == 2.0
    assert sweep == pytest.approx(pair_weight(30) * (1 + 0.25), rel=0.01)  # two half-lives back
    assert pair_weight(9) == pytest.approx(0.5)
    signals = Signals(
        cochange={"src/b.py": CoChangeSignal(2, now, sweep), "src/c.py": CoChangeSignal(2, now, small)},
        modified={"src/b.py": now, "src/c.py": now},
    )
    assert paths(ranked(graph, ["src/a.py"], signals=signals))[:2] == ["src/c.py", "src/b.py"]
    counts_only = Signals(
        cochange={"src/b.py": CoChangeSignal(2, now), "src/c.py": CoChangeSignal(2, now)},
        modified=signals.modified,
    )
    assert paths(ranked(graph, ["src/a.py"], signals=counts_only))[:2] == ["src/b.py", "src/c.py"]


def test_evidence_kept_as_of_the_last_co_change_only_decays_to_the_present() -> None:
    """Evidence stored at the pair's last co-change and decayed at query time equals evidence
    computed commit by commit at query time (what makes it storable beside the count)."""
    start = datetime(2020, 1, 1, tzinfo=UTC)
    half_life = 1095.0
    commits = [(start + timedelta(days=d), n) for d, n in ((0, 2), (400, 12), (900, 5))]
    evidence, last = 0.0, None
    for when, touched in commits:
        evidence, last = add_evidence(evidence, last, when, touched, half_life), when
    now = start + timedelta(days=2000)
    assert last is not None
    direct = sum(pair_weight(n) * 0.5 ** ((now - when).days / half_life) for when, n in commits)
    assert evidence * 0.5 ** ((now - last).days / half_life) == pytest.approx(direct)


def test_a_limited_ranking_is_the_same_prefix_of_the_full_one() -> None:
    graph, _ = graph_of(CHAIN)
    now = datetime(2025, 6, 1, tzinfo=UTC)
    signals = Signals(
        cochange={"src/island.py": CoChangeSignal(5, now), "src/d.py": CoChangeSignal(2, now)},
        modified={p: now - timedelta(days=i) for i, p in enumerate(sorted(CHAIN))},
    )
    seeds = resolve_seeds(graph, ["src/a.py"])
    full = rank(graph, seeds, signals=signals)
    assert len(full) > 3
    for limit in (0, 1, 2, 3, len(full), len(full) + 5):
        limited = rank(graph, seeds, signals=signals, limit=limit)
        assert [(r.path, r.score, r.reason) for r in limited] == [
            (r.path, r.score, r.reason) for r in full[:limit]
        ]
