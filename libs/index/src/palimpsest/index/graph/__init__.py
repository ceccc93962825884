"""The code-and-docs graph: per-blob facts resolved into per-snapshot edges, ranked from seeds.

Nodes are ``file:<path>``, ``sym:<path>:<name>`` and ``doc:<path>``; edges are defines,
references, imports, calls, governs and supersedes (:mod:`.build`). Ranking is personalized
PageRank from the seeds, one hop by default, blended with co-change and recency (:mod:`.rank`).
:mod:`.query` asks it of a repository; :mod:`.report` is the negative control that ships with
it; :mod:`.benchmark` is the leave-one-out co-change benchmark that keeps it honest.
"""

from __future__ import annotations

from palimpsest.index.graph.build import GRAPH_LANGUAGES, MAX_DEFINERS, build_graph
from palimpsest.index.graph.cache import GRAPHS, GraphCache
from palimpsest.index.graph.facts import FactRow, FileFacts, SnapshotFacts, SymbolRow
from palimpsest.index.graph.model import EdgeKind, Graph
from palimpsest.index.graph.query import (
    DEFAULT_BUDGET,
    DEFAULT_HOPS,
    ContextResult,
    graph_context,
    graph_report,
    snapshot_graph,
)
from palimpsest.index.graph.rank import Blend, CoChangeSignal, Ranked, RankOptions, Signals, Weights, rank
from palimpsest.index.graph.report import GraphReport
from palimpsest.index.graph.seeds import Seeds, resolve_seeds

__all__ = [
    "DEFAULT_BUDGET",
    "DEFAULT_HOPS",
    "GRAPHS",
    "GRAPH_LANGUAGES",
    "MAX_DEFINERS",
    "Blend",
    "CoChangeSignal",
    "ContextResult",
    "EdgeKind",
    "FactRow",
    "FileFacts",
    "Graph",
    "GraphCache",
    "GraphReport",
    "RankOptions",
    "Ranked",
    "Seeds",
    "Signals",
    "SnapshotFacts",
    "SymbolRow",
    "Weights",
    "build_graph",
    "graph_context",
    "graph_report",
    "rank",
    "resolve_seeds",
    "snapshot_graph",
]
