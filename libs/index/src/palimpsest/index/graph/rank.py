"""Personalized PageRank from the seeds, blended with co-change and recency, cut to a budget.

The graph part answers "given that I am here, what else matters": a random walk that restarts
at the seeds with probability ``alpha``, walking edges in both directions with per-kind
weights. It is computed by *forward push* (Andersen, Chung and Lang 2006): only nodes that
receive more than ``epsilon`` of residual mass per edge are ever touched, so a query costs the
same on a 50 000-file repository as on a small one. With ``hops`` set, the walk is confined to
the paths within that many file-to-file steps of the seeds, and an edge that reaches depth
``d`` weighs ``w / (d + 1)²`` — one hop by default (RepoGraph's measured optimum); ``hops=None``
is the unconfined walk.

Two history signals sit beside the graph (they are not edges — they come from the recency
tables, or, in the benchmark, from the history before the trial commit):

* co-change: how often a file changed in the same commits as a seed, and when — as *evidence*
  where it is known (:mod:`palimpsest.index.evidence`: each such commit weighted by how many
  entries it touched and how long ago it was), else as a count of commits;
* recency: how recently a file changed at all.

The blend was measured, not argued (``palimpsest bench cochange``): files that changed with the
seeds come first, ordered by ``count / (m + 1)`` — the count being the pair's evidence decayed
to the present (or its commits where the evidence is unknown), ``m`` the strongest — raised
by up to ``hot``x for a partner that changed in the last days (work in progress touches the
same files again) and by up to ``together``x more when that recent change was one *with the
seeds* (the pair's last co-change, not any change of the partner: the coupling is live, not
just the file). The graph and recency then share a *fill* of ``fill / (m + 1)``, the weight of
``fill`` co-change commits: they order everything co-change does not know (new files, seeds
without history) and break ties among partners with equal evidence — most often the many
partners seen in a single commit. Without history the ranking is the graph's.

Why evidence and not a plain count: sweeping commits (a lint pass, an early refactor across the
tree) pair every file they touch with a full commit each, and years-old couplings count as much
as last month's, so hub files (``README``, the package's central file) pile up counts and crowd
the partners a file really moves with out of the top of the list — on gin, 46 % of the pair
evidence came from commits of 10+ entries, most of them years old. Weighting by size and age
alone each helped some repositories and hurt others; together they helped eight of ten
measured and moved none down by more than its seed-to-seed spread. Every ranked path
carries the reason it is there — the edge that brought most mass to it, or the signal that
dominated.
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, NamedTuple

from palimpsest.index.evidence import HALF_LIFE_DAYS, decay
from palimpsest.index.graph.model import EDGE_KIND_NAMES, EdgeKind, Graph
from palimpsest.index.graph.seeds import Seeds

__all__ = [
    "Blend",
    "CoChangeSignal",
    "RankOptions",
    "Ranked",
    "Signals",
    "Weights",
    "estimate_tokens",
    "rank",
    "truncate_to_budget",
]


@dataclass(frozen=True, slots=True)
class Weights:
    """Per-edge-kind weights; ``backward`` scales walking an edge against its arrow."""

    defines: float = 1.0
    references: float = 1.0
    imports: float = 1.0
    calls: float = 0.5
    governs: float = 1.0
    supersedes: float = 0.5
    mentions: float = 0.5
    backward: float = 1.0

    def table(self) -> list[float]:
        """Effective weight by stored edge code (``kind * 2 + backward``)."""
        out: list[float] = []
        for name in EDGE_KIND_NAMES:
            weight = float(getattr(self, name))
            out += [weight, weight * self.backward]
        return out


@dataclass(frozen=True, slots=True)
class RankOptions:
    hops: int | None = 1
    alpha: float = 0.25
    epsilon: float = 1e-5
    weights: Weights = field(default_factory=Weights)


@dataclass(frozen=True, slots=True)
class Blend:
    """How co-change, the graph and recency combine (defaults measured by the benchmark)."""

    hot: float = 1.0  # extra weight of a co-change partner changed just now ...
    together: float = 1.0  # ... and more if that change was one with the seeds ...
    hot_days: float = 5.0  # ... both decaying with this time constant
    fill: float = 0.5  # the share graph and recency get, relative to one co-change commit
    graph: float = 1.0
    recency: float = 0.1
    recency_days: float = 30.0
    half_life_days: float = HALF_LIFE_DAYS  # co-change evidence halves every three years


class CoChangeSignal(NamedTuple):
    """A file that changed with the seeds: in ``commits`` commits, last at ``last_at``.

    ``evidence``, when known, is those commits weighted by size and age as of ``last_at``
    (:func:`palimpsest.index.evidence.add_evidence`, stored by the recency scanner); ranking
    decays it to the present and uses it in place of the count. ``None``: ranked by the count.
    """

    commits: int
    last_at: datetime | None = None
    evidence: float | None = None


@dataclass(frozen=True, slots=True)
class Signals:
    """History beside the graph: co-change partners of the seeds and file dates."""

    cochange: Mapping[str, CoChangeSignal] = field(default_factory=dict)
    modified: Mapping[str, datetime] = field(default_factory=dict)
    now: datetime | None = None  # reference time for recency (default: the newest date)


@dataclass(slots=True)
class Ranked:
    path: str
    kind: Literal["file", "doc"]
    score: float
    reason: str
    via: str  # edge kind or signal name that explains the entry
    depth: int | None = None  # file-to-file steps from the seeds (bounded walks only)
    parts: dict[str, float] = field(default_factory=dict)
    tokens: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "kind": self.kind,
            "score": round(self.score, 6),
            "reason": self.reason,
            "via": self.via,
            "depth": self.depth,
            "parts": {k: round(v, 6) for k, v in self.parts.items()},
            "tokens": self.tokens,
        }


# ------------------------------------------------------------------------------ the walk


def _depths(graph: Graph, seeds: Seeds, hops: int) -> dict[int, int]:
    """File-to-file distance of every path within ``hops`` of the seed paths."""
    depth = dict.fromkeys(seeds.paths, 0)
    frontier = list(seeds.paths)
    offsets, targets, owner = graph.offsets, graph.targets, graph.node_owner
    for level in range(1, hops + 1):
        following: list[int] = []
        for path in frontier:
            for node in graph.path_nodes[path]:
                for i in range(offsets[node], offsets[node + 1]):
                    other = owner[targets[i]]
                    if other not in depth:
                        depth[other] = level
                        following.append(other)
        frontier = following
    return depth


class _Walk:
    """Forward-push personalized PageRank over the allowed part of the graph."""

    def __init__(self, graph: Graph, options: RankOptions, depth: dict[int, int] | None) -> None:
        self.graph = graph
        self.options = options
        self.depth = depth
        self.table = options.weights.table()
        self._out: dict[int, tuple[list[int], list[float], float]] = {}

    def out(self, node: int) -> tuple[list[int], list[float], float]:
        cached = self._out.get(node)
        if cached is not None:
            return cached
        graph, depth, table = self.graph, self.depth, self.table
        owner = graph.node_owner
        here = depth.get(owner[node], 0) if depth is not None else 0
        nodes: list[int] = []
        weights: list[float] = []
        for i in range(graph.offsets[node], graph.offsets[node + 1]):
            target = graph.targets[i]
            weight = graph.weights[i] * table[graph.codes[i]]
            if depth is not None:
                there = depth.get(owner[target])
                if there is None:
                    continue
                weight /= (max(here, there) + 1) ** 2
            if weight > 0:
                nodes.append(target)
                weights.append(weight)
        cached = (nodes, weights, sum(weights))
        self._out[node] = cached
        return cached

    def run(self, seeds: Mapping[int, float]) -> dict[int, float]:
        alpha, epsilon = self.options.alpha, self.options.epsilon
        offsets = self.graph.offsets
        rank: dict[int, float] = {}
        residual: dict[int, float] = dict(seeds)
        queue = deque(residual)
        queued = set(residual)
        while queue:
            node = queue.popleft()
            queued.discard(node)
            mass = residual.pop(node, 0.0)
            if mass <= 0:
                continue
            targets, weights, total = self.out(node)
            if total <= 0:
                rank[node] = rank.get(node, 0.0) + mass
                continue
            rank[node] = rank.get(node, 0.0) + alpha * mass
            spread = (1 - alpha) * mass / total
            for target, weight in zip(targets, weights, strict=True):
                value = residual.get(target, 0.0) + spread * weight
                residual[target] = value
                if target not in queued and value > epsilon * max(1, offsets[target + 1] - offsets[target]):
                    queued.add(target)
                    queue.append(target)
        return rank


# ------------------------------------------------------------------------------ reasons

_INBOUND = {
    EdgeKind.IMPORTS: "imported by {other}",
    EdgeKind.REFERENCES: "defines {name}, referenced by {other}",
    EdgeKind.CALLS: "{name} is called from {other}",
    EdgeKind.GOVERNS: "governed by {other}",
    EdgeKind.SUPERSEDES: "superseded by {other}",
    EdgeKind.DEFINES: "defines {name}",
    EdgeKind.MENTIONS: "mentioned by {other}",
}
_OUTBOUND = {
    EdgeKind.IMPORTS: "imports {other}",
    EdgeKind.REFERENCES: "references {target} in {other}",
    EdgeKind.CALLS: "{name} calls {target} in {other}",
    EdgeKind.GOVERNS: "governs {other}",
    EdgeKind.SUPERSEDES: "supersedes {other}",
    EdgeKind.DEFINES: "defines {target}",
    EdgeKind.MENTIONS: "mentions {target} in {other}",
}


def _graph_reason(
    graph: Graph, walk: _Walk, scores: Mapping[int, float], owner_index: int
) -> tuple[str, str]:
    """The edge that carried most mass into this path from another path."""
    best: tuple[float, int, int, int] | None = None  # flow, node, neighbour, code
    owner = graph.node_owner
    for node in graph.path_nodes[owner_index]:
        for i in range(graph.offsets[node], graph.offsets[node + 1]):
            neighbour = graph.targets[i]
            if owner[neighbour] == owner_index:
                continue
            source_mass = scores.get(neighbour, 0.0)
            if source_mass <= 0:
                continue
            code = graph.codes[i] ^ 1  # the same edge walked from the neighbour to this node
            _, _, total = walk.out(neighbour)
            if total <= 0:
                continue
            flow = source_mass * graph.weights[i] * walk.table[code] / total
            if best is None or flow > best[0]:
                best = (flow, node, neighbour, code)
    if best is None:
        return "reached through the graph", "graph"
    _, node, neighbour, code = best
    kind, backward = EdgeKind(code >> 1), bool(code & 1)
    # code is the walk neighbour -> node; backward means the arrow points node -> neighbour
    other = graph.paths[owner[neighbour]]
    name = graph.node_names[node] or graph.paths[owner[node]]
    target = graph.node_names[neighbour] or other
    template = _OUTBOUND[kind] if backward else _INBOUND[kind]
    return template.format(other=other, name=name, target=target), EDGE_KIND_NAMES[kind]


# ------------------------------------------------------------------------------ signals


def _normalized(values: Mapping[int, float]) -> dict[int, float]:
    total = sum(values.values())
    return {key: value / total for key, value in values.items()} if total > 0 else {}


def _now(signals: Signals) -> datetime | None:
    """The reference time of every age: ``signals.now``, else the newest change known."""
    return signals.now or max(signals.modified.values(), default=None)


def _days(now: datetime | None, when: datetime | None) -> float:
    if now is None or when is None:
        return math.inf
    return max((now - when).total_seconds(), 0.0) / 86400.0


def _ages(graph: Graph, signals: Signals, excluded: frozenset[int]) -> dict[int, float]:
    """Days since each path last changed, relative to :func:`_now`."""
    now = _now(signals)
    ages: dict[int, float] = {}
    for path, when in signals.modified.items():
        owner = graph.path_index.get(path)
        if owner is not None and owner not in excluded:
            ages[owner] = _days(now, when)
    return ages


@dataclass(slots=True)
class _RecencyTable:
    """Every dated path's age and recency value, computed once per graph and set of dates."""

    ages: dict[int, float]  # owner -> days since it last changed
    values: dict[int, float]  # owner -> exp(-age / recency_days), > 0 only
    total: float
    order: list[int]  # owners by value, highest first (ties by path)

    def part(self, seeds: frozenset[int], top: tuple[Iterable[int], int] | None) -> dict[int, float]:
        """The normalised recency of every non-seed path; with ``top`` = (reached, k), only of the
        reached paths and of the k most recent others — all that can rank among the first k."""
        total = self.total - sum(self.values.get(owner, 0.0) for owner in seeds)
        if total <= 0:
            return {}
        if top is None:
            return {owner: v / total for owner, v in self.values.items() if owner not in seeds}
        reached, k = top
        owners = [o for o in self.order[: k + len(seeds)] if o not in seeds]
        owners += [o for o in reached if o in self.values and o not in seeds]
        return {owner: self.values[owner] / total for owner in owners}


_TABLES: dict[
    tuple[int, int, float, datetime | None], tuple[Graph, Mapping[str, datetime], _RecencyTable]
] = {}
_TABLES_KEPT = 8


def _recency_table(graph: Graph, signals: Signals, blend: Blend) -> _RecencyTable:
    """The recency of every dated path, cached for the graph and dates it was computed from (a
    50 000-file repository's take ~0.1 s; a reviewer ranks against the same ones again and again)."""
    key = (id(graph), id(signals.modified), blend.recency_days, signals.now)
    cached = _TABLES.get(key)
    if cached is not None and cached[0] is graph and cached[1] is signals.modified:
        return cached[2]
    ages = _ages(graph, signals, frozenset())
    values = {owner: v for owner, age in ages.items() if (v := math.exp(-age / blend.recency_days)) > 0}
    order = sorted(values, key=lambda owner: (-values[owner], graph.paths[owner]))
    table = _RecencyTable(ages, values, sum(values.values()), order)
    if len(_TABLES) >= _TABLES_KEPT:
        _TABLES.pop(next(iter(_TABLES)))
    _TABLES[key] = (graph, signals.modified, table)  # the references keep the ids from being reused
    return table


def _cochange(
    graph: Graph, signals: Signals, ages: Mapping[int, float], blend: Blend, excluded: frozenset[int]
) -> tuple[dict[int, float], float]:
    """Co-change score per path, and the scale (``1 / (m + 1)``) the fill is measured in."""
    now = _now(signals)
    found: dict[int, tuple[float, float]] = {}  # owner -> (evidence, days since the last co-change)
    for path, signal in signals.cochange.items():
        owner = graph.path_index.get(path)
        if owner is None or owner in excluded or signal.commits <= 0:
            continue
        together = _days(now, signal.last_at)
        if signal.evidence is None:
            found[owner] = (float(signal.commits), together)
        elif math.isfinite(together) and signal.evidence > 0:
            found[owner] = (signal.evidence * decay(together, blend.half_life_days), together)
        elif signal.evidence > 0:  # no date to decay from
            found[owner] = (signal.evidence, together)
    scale = 1.0 / (max((commits for commits, _ in found.values()), default=0) + 1)
    scores = {
        owner: count
        * scale
        * (
            1
            + blend.hot * math.exp(-ages.get(owner, math.inf) / blend.hot_days)
            + blend.together * math.exp(-together / blend.hot_days)
        )
        for owner, (count, together) in found.items()
    }
    return scores, scale


# ------------------------------------------------------------------------------ ranking


def rank(
    graph: Graph,
    seeds: Seeds,
    *,
    options: RankOptions | None = None,
    signals: Signals | None = None,
    blend: Blend | None = None,
    use_graph: bool = True,
    limit: int | None = None,
) -> list[Ranked]:
    """Every path the seeds lead to, best first (the seed paths themselves excluded); with
    ``limit``, only the first ``limit`` of them (the same ones, in the same order)."""
    options = options or RankOptions()
    blend = blend or Blend()
    signals = signals or Signals()
    depth = _depths(graph, seeds, options.hops) if options.hops is not None else None
    walk = _Walk(graph, options, depth)
    scores = walk.run(seeds.nodes) if use_graph else {}
    by_path: dict[int, float] = {}
    for node, value in scores.items():
        owner = graph.node_owner[node]
        if owner not in seeds.paths:
            by_path[owner] = by_path.get(owner, 0.0) + value
    graph_part = _normalized(by_path)
    table = _recency_table(graph, signals, blend)
    cochange_part, scale = _cochange(graph, signals, table.ages, blend, seeds.paths)
    recency_part = table.part(
        seeds.paths, None if limit is None else (graph_part.keys() | cochange_part.keys(), limit)
    )
    shares = {"graph": blend.graph if graph_part else 0.0, "recency": blend.recency if recency_part else 0.0}
    total_share = sum(shares.values())
    parts: dict[str, dict[int, float]] = {"cochange": cochange_part}
    if total_share > 0:
        for name, values in (("graph", graph_part), ("recency", recency_part)):
            weight = blend.fill * scale * shares[name] / total_share
            parts[name] = {owner: value * weight for owner, value in values.items()}
    combined: dict[int, dict[str, float]] = {}
    for name, values in parts.items():
        for owner, value in values.items():
            if value > 0:
                combined.setdefault(owner, {})[name] = value
    if limit is not None and len(combined) > limit:  # entries only for the best, in the same order
        best = heapq.nsmallest(
            limit, combined, key=lambda owner: (-sum(combined[owner].values()), graph.paths[owner])
        )
        combined = {owner: combined[owner] for owner in best}
    ranked = [
        _entry(graph, walk, scores, signals, depth, owner, contributions)
        for owner, contributions in combined.items()
    ]
    ranked.sort(key=lambda r: (-r.score, r.path))
    return ranked[:limit] if limit is not None else ranked


def _entry(
    graph: Graph,
    walk: _Walk,
    scores: Mapping[int, float],
    signals: Signals,
    depth: dict[int, int] | None,
    owner: int,
    contributions: dict[str, float],
) -> Ranked:
    path = graph.paths[owner]
    strongest = max(contributions, key=lambda name: (contributions[name], name))
    if strongest == "graph":
        reason, via = _graph_reason(graph, walk, scores, owner)
    elif strongest == "cochange":
        signal = signals.cochange[path]
        when = f", last {signal.last_at.date().isoformat()}" if signal.last_at else ""
        reason, via = f"changed together with the seeds in {signal.commits} commits{when}", "cochange"
    else:
        reason, via = f"recently changed ({signals.modified[path].date().isoformat()})", "recency"
    return Ranked(
        path=path,
        kind=graph.path_kinds[owner],
        score=sum(contributions.values()),
        reason=reason,
        via=via,
        depth=depth.get(owner) if depth is not None else None,
        parts=contributions,
    )


# ------------------------------------------------------------------------------ budget


def estimate_tokens(text: str) -> int:
    """A tokenizer-free estimate: about four characters per token, at least one."""
    return max(1, math.ceil(len(text) / 4))


def truncate_to_budget(entries: Iterable[Ranked], budget: int) -> list[Ranked]:
    """The leading entries whose rendered lines (path and reason) fit in ``budget`` tokens."""
    kept: list[Ranked] = []
    used = 0
    for entry in entries:
        entry.tokens = estimate_tokens(f"{entry.path}  {entry.score:.4f}  {entry.reason}")
        if used + entry.tokens > budget:
            break
        used += entry.tokens
        kept.append(entry)
    return kept
