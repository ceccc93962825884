"""The graph's two questions, asked of a repository in the caller's tenant transaction.

* :func:`graph_context` — "given these files or symbols, what else matters?": the ranked,
  budget-truncated paths with the reason each is there (CLI ``palimpsest context``, the
  reviewer's graph neighbourhood, the API);
* :func:`graph_report` — the negative control: what this snapshot's graph cannot see.

Both run against the newest ready snapshot unless one is named, and fail with
:class:`~palimpsest.index.errors.IndexNotReady` when there is none. The co-change and recency
signals are read from the recency tables (:mod:`palimpsest.index.recency`); a repository whose
scan has not run simply ranks by the graph alone.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from uuid import UUID

from palimpsest.core.db import Conn
from palimpsest.index import recency_store
from palimpsest.index.errors import IndexNotReady
from palimpsest.index.evidence import decayed
from palimpsest.index.graph.cache import GRAPHS, GraphCache
from palimpsest.index.graph.load import load_snapshot_facts
from palimpsest.index.graph.model import Graph
from palimpsest.index.graph.persisted import SnapshotGraphStore
from palimpsest.index.graph.rank import (
    Blend,
    CoChangeSignal,
    Ranked,
    RankOptions,
    Signals,
    rank,
    truncate_to_budget,
)
from palimpsest.index.graph.report import GraphReport
from palimpsest.index.graph.seeds import Seeds, resolve_seeds
from palimpsest.index.recency import cochange_neighbours
from palimpsest.index.snapshots import Snapshot, readable

__all__ = [
    "COCHANGE_PARTNERS",
    "DEFAULT_BUDGET",
    "DEFAULT_HOPS",
    "ContextResult",
    "graph_context",
    "graph_report",
    "history_signals",
    "snapshot_graph",
]

DEFAULT_BUDGET = 2000
DEFAULT_HOPS = 1
COCHANGE_PARTNERS = 50


@dataclass(slots=True)
class ContextResult:
    repository_id: UUID
    snapshot_id: UUID
    commit: str
    seeds: dict[str, list[str]]
    hops: int | None
    budget: int
    entries: list[Ranked]
    dropped: int  # ranked paths that did not fit the budget
    signals: dict[str, int] = field(default_factory=dict)
    unmatched: tuple[str, ...] = ()  # seeds absent from the snapshot (``strict=False`` only)

    def as_dict(self) -> dict[str, Any]:
        return {
            "repository_id": str(self.repository_id),
            "snapshot_id": str(self.snapshot_id),
            "commit": self.commit,
            "seeds": self.seeds,
            "hops": self.hops,
            "budget": self.budget,
            "tokens": sum(e.tokens for e in self.entries),
            "dropped": self.dropped,
            "signals": self.signals,
            "unmatched_seeds": list(self.unmatched),
            "results": [e.as_dict() for e in self.entries],
        }

    def text(self) -> str:
        seeds = ", ".join(
            f"{seed} ({len(nodes)} node{'s' if len(nodes) != 1 else ''})"
            for seed, nodes in self.seeds.items()
        )
        lines = [
            f"seeds: {seeds}  ·  snapshot {self.commit[:12]}  ·  hops {self.hops}  ·  budget {self.budget}"
        ]
        width = max((len(e.path) for e in self.entries), default=0)
        lines += [f"{e.score:8.4f}  {e.path:<{width}}  {e.reason}" for e in self.entries]
        if self.unmatched:
            lines.append(f"not in this snapshot (ignored): {', '.join(self.unmatched)}")
        if not self.entries:
            lines.append("(nothing is connected to the seeds)")
        if self.dropped:
            lines.append(f"… {self.dropped} more ranked paths did not fit the budget")
        return "\n".join(lines)


async def snapshot_graph(
    conn: Conn, repository_id: UUID, *, snapshot_id: UUID | None = None, cache: GraphCache = GRAPHS
) -> tuple[Snapshot, Graph, GraphReport]:
    """The snapshot row and its resolved graph: from the cache when this process holds it, else
    the stored one, else resolved from the snapshot's facts (and then stored)."""
    snapshot = await readable(conn, repository_id, snapshot_id)
    if snapshot is None:
        raise IndexNotReady("the repository has no ready snapshot yet (index it first)")
    sid = snapshot.snapshot_id

    async def load() -> Any:
        return await load_snapshot_facts(conn, repository_id, sid)

    store = SnapshotGraphStore(conn, snapshot.tenant_id, sid)
    graph, report = await cache.get(sid, load, store)
    return snapshot, graph, report


async def history_signals(conn: Conn, repository_id: UUID, graph: Graph, seeds: Seeds) -> Signals:
    """Co-change partners of the seed files and the dates of every file, from the recency tables."""
    partners: dict[str, CoChangeSignal] = {}
    for owner in sorted(seeds.paths):
        for neighbour in await cochange_neighbours(
            conn, repository_id, graph.paths[owner], COCHANGE_PARTNERS
        ):
            known = partners.get(neighbour.path)
            commits = neighbour.commits + (known.commits if known else 0)
            last: datetime | None = neighbour.last_at
            if known is not None and known.last_at is not None and (last is None or known.last_at > last):
                last = known.last_at
            evidence = neighbour.evidence
            if known is not None and (evidence is not None or known.evidence is not None):
                # a partner of several seeds: both pairs' evidence, as of the later co-change
                mine = float(neighbour.commits) if evidence is None else evidence
                theirs = float(known.commits) if known.evidence is None else known.evidence
                assert last is not None
                evidence = decayed(mine, neighbour.last_at, last) + decayed(theirs, known.last_at, last)
            partners[neighbour.path] = CoChangeSignal(commits, last, evidence)
    return Signals(cochange=partners, modified=await _dates(conn, repository_id))


_DATES: OrderedDict[tuple[UUID, str], dict[str, datetime]] = OrderedDict()
_DATES_KEPT = 16  # repositories whose dates this process keeps


async def _dates(conn: Conn, repository_id: UUID) -> dict[str, datetime]:
    """Every dated path of the repository, read once per recency scan: the dates change only when
    a scan runs, and a 50 000-file repository's take ~0.5 s to read and decode. The key is the
    scan the tenant's transaction can see (none: nothing is cached); callers never change it."""
    stamp = await recency_store.scan_stamp(conn, repository_id)
    key = (repository_id, f"{stamp.scanned_at}/{stamp.request_id}") if stamp is not None else None
    found = _DATES.get(key) if key is not None else None
    if found is not None and key is not None:
        _DATES.move_to_end(key)
        return found
    found = await recency_store.known_dates(conn, repository_id)
    if key is not None:
        _DATES[key] = found
        while len(_DATES) > _DATES_KEPT:
            _DATES.popitem(last=False)
    return found


async def graph_context(
    conn: Conn,
    repository_id: UUID,
    seeds: Sequence[str],
    *,
    budget: int = DEFAULT_BUDGET,
    hops: int | None = DEFAULT_HOPS,
    snapshot_id: UUID | None = None,
    history: bool = True,
    strict: bool = True,
    options: RankOptions | None = None,
    blend: Blend | None = None,
    cache: GraphCache = GRAPHS,
    limit: int | None = None,
) -> ContextResult:
    """Ranked paths around ``seeds``; raises ``UnknownSeed`` naming a seed that matches nothing
    (with ``strict=False``: only when none matches; the others are listed in ``unmatched``)."""
    snapshot, graph, _ = await snapshot_graph(conn, repository_id, snapshot_id=snapshot_id, cache=cache)
    resolved = resolve_seeds(graph, seeds, strict=strict)
    signals = await history_signals(conn, repository_id, graph, resolved) if history else Signals()
    base = options or RankOptions()
    ranked = rank(
        graph,
        resolved,
        options=RankOptions(hops=hops, alpha=base.alpha, epsilon=base.epsilon, weights=base.weights),
        signals=signals,
        blend=blend,
        limit=limit,
    )
    kept = truncate_to_budget(ranked, budget)
    return ContextResult(
        repository_id=repository_id,
        snapshot_id=snapshot.snapshot_id,
        commit=snapshot.commit_sha,
        seeds=resolved.matched,
        hops=hops,
        budget=budget,
        entries=kept,
        dropped=len(ranked) - len(kept),
        signals={"cochange_partners": len(signals.cochange), "dated_files": len(signals.modified)},
        unmatched=resolved.unmatched,
    )


async def graph_report(
    conn: Conn, repository_id: UUID, *, snapshot_id: UUID | None = None, cache: GraphCache = GRAPHS
) -> tuple[Snapshot, GraphReport]:
    """The snapshot row and the negative-control report of its graph."""
    snapshot, _, report = await snapshot_graph(conn, repository_id, snapshot_id=snapshot_id, cache=cache)
    return snapshot, report
