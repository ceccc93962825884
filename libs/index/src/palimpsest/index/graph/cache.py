"""Resolved graphs cached by snapshot id, in the process that queries them.

A snapshot never changes once ready, so its graph is a pure function of its id: resolving it
once per process and keeping the few most recently used ones is both correct and what makes a
query cost milliseconds. Concurrent requests for the same snapshot share one resolution (a
per-snapshot lock); the CPU-bound resolution runs in a worker thread so the event loop keeps
serving. Tenancy is not weakened: a caller must first read the snapshot in its own tenant
transaction, and snapshot ids are random UUIDs that never repeat across tenants.

A process that does not hold a snapshot's graph first asks the index for the stored one
(:mod:`.persisted`: well under a second where resolving takes seconds); only when none is stored
(an older snapshot, another resolver) does it resolve the facts, and then stores what it resolved
for every other process.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import Protocol
from uuid import UUID

from palimpsest.index.graph.build import build_graph
from palimpsest.index.graph.facts import SnapshotFacts
from palimpsest.index.graph.model import Graph
from palimpsest.index.graph.report import GraphReport

__all__ = ["GRAPHS", "GraphCache", "GraphStore"]

Loader = Callable[[], Awaitable[SnapshotFacts]]
Resolved = tuple[Graph, GraphReport]


class GraphStore(Protocol):
    """Where a snapshot's resolved graph is kept between processes."""

    async def read(self) -> Resolved | None: ...

    async def write(self, graph: Graph, report: GraphReport) -> object: ...


class GraphCache:
    """An LRU of ``snapshot id -> (graph, report)``."""

    def __init__(self, capacity: int = 4) -> None:
        self.capacity = max(1, capacity)
        self._entries: OrderedDict[UUID, Resolved] = OrderedDict()
        self._locks: dict[UUID, asyncio.Lock] = {}
        self.builds = 0  # resolutions performed (observability and tests)
        self.loads = 0  # stored graphs read instead

    def __contains__(self, snapshot_id: object) -> bool:
        return snapshot_id in self._entries

    def clear(self) -> None:
        self._entries.clear()

    async def get(self, snapshot_id: UUID, load: Loader, store: GraphStore | None = None) -> Resolved:
        cached = self._hit(snapshot_id)
        if cached is not None:
            return cached
        lock = self._locks.setdefault(snapshot_id, asyncio.Lock())
        async with lock:
            cached = self._hit(snapshot_id)
            if cached is not None:
                return cached
            built = await store.read() if store is not None else None
            if built is not None:
                self.loads += 1
            else:
                facts = await load()
                built = await asyncio.to_thread(build_graph, facts)
                self.builds += 1
                if store is not None:
                    await store.write(*built)
            self._entries[snapshot_id] = built
            while len(self._entries) > self.capacity:
                self._entries.popitem(last=False)
        self._locks.pop(snapshot_id, None)
        return built

    def _hit(self, snapshot_id: UUID) -> Resolved | None:
        found = self._entries.get(snapshot_id)
        if found is not None:
            self._entries.move_to_end(snapshot_id)
        return found


GRAPHS = GraphCache()
"""The process-wide cache the API functions use unless given another."""
