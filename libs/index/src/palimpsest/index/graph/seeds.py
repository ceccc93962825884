"""Turning what a caller names into graph nodes — or saying plainly that it names nothing.

A seed is a path of the snapshot (``src/billing/invoice.py``), a directory (all files under
it), a node id (``file:…``, ``doc:…``, ``sym:<path>:<name>``), or a bare symbol name
(``compute_total``: every definition of it). A seed that matches none of these raises
:class:`~palimpsest.index.errors.UnknownSeed` naming it: ranking silently falls back to
the global ranking is exactly the failure a caller cannot see.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from palimpsest.index.errors import UnknownSeed
from palimpsest.index.graph.model import Graph

__all__ = ["MAX_DIRECTORY_SEEDS", "Seeds", "resolve_seeds"]

MAX_DIRECTORY_SEEDS = 500


@dataclass(frozen=True, slots=True)
class Seeds:
    """Seed nodes with their share of the restart mass, and the paths they belong to."""

    nodes: dict[int, float]
    paths: frozenset[int]  # owner indexes
    matched: dict[str, list[str]]  # each seed as given -> the node ids it matched
    unmatched: tuple[str, ...] = ()  # seeds that matched nothing (only when not strict)


def _nodes_for(graph: Graph, seed: str) -> list[int]:
    text = seed.strip()
    if text.startswith("sym:"):
        path, _, name = text[4:].rpartition(":")
        owner = graph.path_index.get(path)
        node = graph.symbol_index.get((owner, name)) if owner is not None else None
        return [node] if node is not None else []
    if text.startswith(("file:", "doc:")):
        text = text.split(":", 1)[1]
    path = text.removeprefix("./")
    node = graph.path_node(path)
    if node is not None:
        return [node]
    directory = path.rstrip("/")
    if directory:
        prefix = directory + "/"
        inside = [i for i, p in enumerate(graph.paths) if p.startswith(prefix)]
        if inside:
            return [graph.path_nodes[owner][0] for owner in inside[:MAX_DIRECTORY_SEEDS]]
    return list(graph.names.get(text, ()))


def resolve_seeds(graph: Graph, seeds: Iterable[str], *, strict: bool = True) -> Seeds:
    """Seed nodes for ``seeds``; raises :class:`UnknownSeed` naming the first that matches nothing.

    ``strict=False`` is for callers whose seeds may legitimately be absent from the snapshot
    (a pull request's new files against its base): unmatched seeds are returned in
    ``unmatched`` for the caller to show — still never replaced by anything — and
    :class:`UnknownSeed` is raised only when no seed matches at all.
    """
    wanted = [s for s in dict.fromkeys(seeds) if s.strip()]
    if not wanted:
        raise UnknownSeed("no seed given: name at least one file, directory or symbol")
    matched: dict[str, list[int]] = {}
    unmatched: list[str] = []
    for seed in wanted:
        nodes = _nodes_for(graph, seed)
        if nodes:
            matched[seed] = nodes
        elif strict or len(unmatched) + 1 == len(wanted):
            raise UnknownSeed(
                f"seed {seed!r} matches no file, directory or symbol of this snapshot "
                "(nothing was ranked: a fall-back to the global ranking would hide the mistake)"
            )
        else:
            unmatched.append(seed)
    weights: dict[int, float] = {}
    for nodes in matched.values():
        share = 1.0 / len(matched) / len(nodes)
        for node in nodes:
            weights[node] = weights.get(node, 0.0) + share
    return Seeds(
        nodes=weights,
        paths=frozenset(graph.node_owner[node] for node in weights),
        matched={seed: [graph.node_id(n) for n in nodes] for seed, nodes in matched.items()},
        unmatched=tuple(unmatched),
    )
