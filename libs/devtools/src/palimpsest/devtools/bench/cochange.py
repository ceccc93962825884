"""Leave-one-out co-change prediction: does the ranking find what a real commit changed together?

A commit touching {A, B, C} is a statement by someone who knew the codebase. Seed on A and ask
whether B and C come back in the top ``k``. Trials are sampled from the newest ``commits``
first-parent commits that touched 2..30 entries, at least two of them files of the snapshot
(the *pool*: every path indexed at REV). The seed is one of the commit's pool files, the
targets the others; recall@k is hits / targets, averaged over trials.

History-based strategies see only commits *older* than the trial commit — never the trial
itself, never anything after it — which is also what the product sees at review time (its
recency tables describe the past). The graph is the snapshot at REV (as in the reference
benchmark); it is the same for every trial.

Strategies (all reported):

* ``random`` — k pool files at random: the floor;
* ``frequency`` — the files changed most often before the trial, ignoring the seed: churn;
* ``cochange`` — files that changed in the same commits as the seed before (2..30-entry
  commits, as the recency scanner counts them), most often first, then most recent (the
  control ranks by the plain count; it ignores the evidence weights ``combined`` uses);
* ``pagerank`` / ``hops1`` / ``hops2`` — the graph alone: personalized PageRank unconfined,
  and confined to one or two file-to-file hops (decayed by depth);
* ``history`` — the product's blend *without* the graph (co-change and recency): the
  ablation that shows what the graph adds;
* ``combined`` — the product's ranking: :func:`~palimpsest.index.graph.rank.rank` with the
  default hops, fed the co-change partners and file dates the recency tables would hold at the
  trial commit, each partner with its size- and age-weighted evidence as the scanner stores it
  (:mod:`palimpsest.index.evidence`).
"""

from __future__ import annotations

import heapq
import random
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from palimpsest.index.evidence import add_evidence, decay
from palimpsest.index.graph.history import Change
from palimpsest.index.graph.model import Graph
from palimpsest.index.graph.rank import Blend, CoChangeSignal, RankOptions, Signals, rank
from palimpsest.index.graph.seeds import Seeds

__all__ = [
    "CONTROLS",
    "STRATEGIES",
    "BenchConfig",
    "BenchRun",
    "Trial",
    "evaluate",
    "sample_trials",
    "summarize",
]

STRATEGIES = ("random", "frequency", "cochange", "pagerank", "hops1", "hops2", "history", "combined")
CONTROLS = ("frequency", "cochange")


@dataclass(frozen=True, slots=True)
class BenchConfig:
    commits: int = 800
    trials: int = 300
    k: int = 10
    min_files: int = 2
    max_files: int = 30
    hops: int | None = 1  # the product's default, used by ``combined`` and ``history``
    options: RankOptions = field(default_factory=RankOptions)
    blend: Blend = field(default_factory=Blend)


@dataclass(frozen=True, slots=True)
class Trial:
    index: int  # position of the commit in oldest-first order
    sha: str
    seed: str
    targets: frozenset[str]


@dataclass(slots=True)
class BenchRun:
    seed: int
    pool: int
    eligible: int
    trials: int
    k: int
    commits: int
    recall: dict[str, float]

    def as_dict(self) -> dict[str, Any]:
        return {
            "seed": self.seed,
            "pool": self.pool,
            "eligible": self.eligible,
            "trials": self.trials,
            "k": self.k,
            "commits": self.commits,
            "recall": {name: round(value, 4) for name, value in self.recall.items()},
        }


def _eligible(
    changes: Sequence[Change], pool: frozenset[str], config: BenchConfig
) -> list[tuple[int, Change]]:
    """(oldest-first index, change) of the window's commits a trial may use."""
    total = len(changes)
    found: list[tuple[int, Change]] = []
    for newest_first, change in enumerate(changes[: config.commits]):
        if change.touched > config.max_files:
            continue
        if sum(1 for p in change.paths if p in pool) >= config.min_files:
            found.append((total - 1 - newest_first, change))
    return found


def sample_trials(
    changes: Sequence[Change], pool: frozenset[str], config: BenchConfig, seed: int
) -> tuple[int, list[Trial]]:
    """The number of eligible commits and the sampled trials (deterministic for ``seed``)."""
    eligible = _eligible(changes, pool, config)
    rng = random.Random(seed)  # noqa: S311 - sampling, not security
    picked = rng.sample(eligible, min(config.trials, len(eligible)))
    trials: list[Trial] = []
    for index, change in picked:
        files = sorted(p for p in change.paths if p in pool)
        chosen = rng.choice(files)
        trials.append(Trial(index, change.sha, chosen, frozenset(files) - {chosen}))
    return len(eligible), trials


class _Past:
    """What the history older than a point in time says: churn, dates, co-change."""

    def __init__(self, oldest_first: Sequence[Change], max_files: int) -> None:
        self._changes = oldest_first
        self._max_files = max_files
        self._position = 0
        self.counts: dict[str, int] = {}
        self.last: dict[str, datetime] = {}
        self._commits_of: dict[str, list[int]] = {}
        for index, change in enumerate(oldest_first):
            if 2 <= change.touched <= max_files:
                for path in change.paths:
                    self._commits_of.setdefault(path, []).append(index)

    def advance(self, index: int) -> None:
        """Include every commit older than ``index``."""
        while self._position < index:
            change = self._changes[self._position]
            for path in change.paths:
                self.counts[path] = self.counts.get(path, 0) + 1
                self.last[path] = change.when
            self._position += 1

    def cochange(self, path: str, before: int, half_life_days: float) -> dict[str, CoChangeSignal]:
        """Partners of ``path`` in the commits before ``before``: count, last date and evidence
        (as the recency scanner accumulates it, then stated as of the signal's ``last_at``)."""
        found: dict[str, tuple[int, datetime, float, datetime]] = {}  # commits, last, evidence, as of
        for index in self._commits_of.get(path, ()):
            if index >= before:
                break
            change = self._changes[index]
            for other in change.paths:
                if other == path:
                    continue
                known = found.get(other)
                if known is None:
                    weight = add_evidence(0.0, None, change.when, change.touched, half_life_days)
                    found[other] = (1, change.when, weight, change.when)
                else:
                    commits, _, evidence, as_of = known
                    evidence = add_evidence(evidence, as_of, change.when, change.touched, half_life_days)
                    found[other] = (commits + 1, change.when, evidence, max(as_of, change.when))
        return {
            other: CoChangeSignal(
                commits, last, evidence / decay((as_of - last).total_seconds() / 86400.0, half_life_days)
            )
            for other, (commits, last, evidence, as_of) in found.items()
        }


def _top(scores: dict[str, tuple[Any, ...]], k: int, exclude: str) -> list[str]:
    best = heapq.nlargest(k + 1, ((value, path) for path, value in scores.items() if path != exclude))
    return [path for _, path in best][:k]


def _frequency(past: _Past, pool: frozenset[str], trial: Trial, k: int) -> list[str]:
    scores = {
        p: (count, past.last[p].timestamp(), _reverse(p)) for p, count in past.counts.items() if p in pool
    }
    return _top(scores, k, trial.seed)


def _reverse(path: str) -> tuple[int, ...]:
    """A sort key that makes ``nlargest`` break ties by path ascending."""
    return tuple(-ord(ch) for ch in path)


def _cochange(partners: dict[str, CoChangeSignal], pool: frozenset[str], trial: Trial, k: int) -> list[str]:
    scores = {
        p: (s.commits, s.last_at.timestamp() if s.last_at else 0.0, _reverse(p))
        for p, s in partners.items()
        if p in pool
    }
    return _top(scores, k, trial.seed)


def evaluate(
    graph: Graph,
    changes: Sequence[Change],
    config: BenchConfig,
    seed: int,
    *,
    progress: Callable[[int, int], None] | None = None,
) -> BenchRun:
    """Every strategy's mean recall@k over the trials of ``seed``."""
    pool = frozenset(graph.paths)
    eligible, trials = sample_trials(changes, pool, config, seed)
    oldest_first = list(reversed(changes))
    past = _Past(oldest_first, config.max_files)
    totals = dict.fromkeys(STRATEGIES, 0.0)
    pool_list = sorted(pool)
    base = config.options
    confined = {hops: RankOptions(hops, base.alpha, base.epsilon, base.weights) for hops in (None, 1, 2)}
    product = RankOptions(config.hops, base.alpha, base.epsilon, base.weights)
    for done, trial in enumerate(sorted(trials, key=lambda t: t.index), start=1):
        past.advance(trial.index)
        owner = graph.path_index[trial.seed]
        seeds = Seeds({graph.path_nodes[owner][0]: 1.0}, frozenset({owner}), {trial.seed: []})
        partners = past.cochange(trial.seed, trial.index, config.blend.half_life_days)
        signals = Signals(cochange=partners, modified={p: d for p, d in past.last.items() if p in pool})
        rng = random.Random(seed * 1_000_003 + trial.index)  # noqa: S311
        ranked: dict[str, list[str]] = {
            "random": rng.sample(
                [p for p in pool_list if p != trial.seed], min(config.k, len(pool_list) - 1)
            ),
            "frequency": _frequency(past, pool, trial, config.k),
            "cochange": _cochange(partners, pool, trial, config.k),
        }
        for name, hops in (("pagerank", None), ("hops1", 1), ("hops2", 2)):
            ranked[name] = [r.path for r in rank(graph, seeds, options=confined[hops])[: config.k]]
        ranked["history"] = [
            r.path
            for r in rank(
                graph, seeds, options=product, signals=signals, blend=config.blend, use_graph=False
            )[: config.k]
        ]
        ranked["combined"] = [
            r.path
            for r in rank(graph, seeds, options=product, signals=signals, blend=config.blend)[: config.k]
        ]
        for name, paths in ranked.items():
            totals[name] += len(trial.targets.intersection(paths)) / len(trial.targets)
        if progress is not None:
            progress(done, len(trials))
    count = max(len(trials), 1)
    return BenchRun(
        seed=seed,
        pool=len(pool),
        eligible=eligible,
        trials=len(trials),
        k=config.k,
        commits=min(config.commits, len(changes)),
        recall={name: totals[name] / count for name in STRATEGIES},
    )


def summarize(runs: Sequence[BenchRun]) -> dict[str, Any]:
    """Mean and spread (max - min) across seeds, and whether ``combined`` beats every control.

    For each control, ``margins[control]`` is mean(combined) - mean(control) and ``noise`` the
    larger seed-to-seed spread of the two; combined beats the controls when every margin
    exceeds its noise and combined is ahead on every seed.
    """
    first = runs[0]
    recall = {name: statistics.fmean(run.recall[name] for run in runs) for name in STRATEGIES}
    spread = {
        name: max(run.recall[name] for run in runs) - min(run.recall[name] for run in runs)
        for name in STRATEGIES
    }
    margins = {control: recall["combined"] - recall[control] for control in CONTROLS}
    noise = {control: max(spread["combined"], spread[control]) for control in CONTROLS}
    per_seed_margin = [run.recall["combined"] - max(run.recall[c] for c in CONTROLS) for run in runs]
    best_control = max(CONTROLS, key=lambda name: recall[name])
    return {
        "pool": first.pool,
        "eligible": first.eligible,
        "trials": first.trials,
        "k": first.k,
        "commits": first.commits,
        "seed": [run.seed for run in runs] if len(runs) > 1 else first.seed,
        "recall": {name: round(value, 4) for name, value in recall.items()},
        "spread": {name: round(value, 4) for name, value in spread.items()},
        "best_control": best_control,
        "margin": round(margins[best_control], 4),
        "margins": {control: round(value, 4) for control, value in margins.items()},
        "noise": {control: round(value, 4) for control, value in noise.items()},
        "min_margin_per_seed": round(min(per_seed_margin), 4),
        "combined_beats_controls": all(margins[c] > noise[c] for c in CONTROLS) and min(per_seed_margin) > 0,
        "runs": [run.as_dict() for run in runs],
    }
