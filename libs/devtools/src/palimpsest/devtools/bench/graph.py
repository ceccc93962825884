"""``palimpsest bench graph``: what the first graph query of a new snapshot costs a process.

The index is ``bench index``'s generated TypeScript repository (50 000 files by default), built
through the real pipeline on a scratch stack by the chunker and the recency scanner (the build
waits for both events), with the reviewer running, so the reviewer stores the new snapshot's graph
on ``snapshot.built`` as in production (the bench waits for that row). The other services stay
off: in this one process they would compete for the interpreter with what is measured (the
analyzer starts on every new snapshot).
Then, in this process, each measured ``rounds`` times and in alternation so that both see the
same machine load:

* ``resolve`` — the yardstick and the *before*: what every process paid for its first query of a
  snapshot (read the facts, resolve them: :func:`load_snapshot_facts` + :func:`build_graph`);
* ``load`` — the *after*: read the stored graph and decode it (:func:`read_graph`);
* ``first_query`` — :func:`snapshot_graph` with an empty cache, as a new replica's first query
  runs it now (snapshot row, stored graph);
* ``decode`` / ``encode`` — the CPU part of ``load`` and of storing: the payload to the graph
  and back, without the database.

The loaded graph and report are checked equal to the resolved ones. Figures are seconds
(median and worst of the rounds); the 1-minute load average is printed before and after.
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar
from uuid import UUID

from palimpsest.cli.output import progress
from palimpsest.core.settings import BaseServiceSettings

__all__ = ["run_bench_graph"]

T = TypeVar("T")


async def _timed(call: Callable[[], Awaitable[T]]) -> tuple[float, T]:
    started = time.perf_counter()
    result = await call()
    return time.perf_counter() - started, result


def _summary(values: list[float]) -> dict[str, float]:
    return {"median": round(statistics.median(values), 3), "max": round(max(values), 3)}


async def run_bench_graph(
    settings: BaseServiceSettings, *, files: int, total_bytes: int, rounds: int
) -> dict[str, Any]:
    """Index a generated repository through the pipeline, then time resolving against loading."""
    from palimpsest.devtools.scratch import indexed_scratch

    with tempfile.TemporaryDirectory(prefix="palimpsest-bench-graph-") as tmp:
        services = ("recency-scanner", "chunker", "reviewer")  # the index waits for both events
        indexed = indexed_scratch(
            settings, Path(tmp), files=files, total_bytes=total_bytes, services=services
        )
        async with indexed as (scratch, repo_id, built, index_s, _, _):
            if built.state != "ready" or built.snapshot_id is None:
                return {"error": f"build {built.state}: {built.reason}"}
            bench = _Bench(scratch.infra.pool, scratch.tenant, repo_id, built.snapshot_id)
            progress("waiting for the reviewer to store the graph…")
            stored = await bench.wait_stored()
            if stored is None:
                return {"error": "the reviewer did not store the graph within 5 minutes"}
            progress(f"timing {rounds} rounds of resolve / load / first query…")
            load_before = os.getloadavg()
            figures = await bench.rounds(rounds)
            load_after = os.getloadavg()
    return {
        "benchmark": "graph",
        "postgres": "embedded" if scratch.stack.embedded_db else "external",
        "files": files,
        "chunks": built.chunks,
        "index_s": round(index_s, 1),
        "stored_by_reviewer_after_s": round(stored[0], 1),
        "payload_bytes": stored[1],
        **figures,
        "load_average_1m": {"before": round(load_before[0], 2), "after": round(load_after[0], 2)},
        "cpus": os.cpu_count(),
    }


class _Bench:
    """One indexed snapshot of the scratch stack, and the ways a process gets its graph."""

    def __init__(self, pool: Any, tenant: UUID, repo_id: UUID, snapshot: UUID) -> None:
        self.pool, self.tenant, self.repo_id, self.snapshot = pool, tenant, repo_id, snapshot

    async def wait_stored(self) -> tuple[float, int] | None:
        """(seconds after the build, payload bytes) once the reviewer stored the graph."""
        import asyncio

        from palimpsest.core.db import tenant_tx
        from palimpsest.index.graph.persisted import RESOLVER

        started = time.perf_counter()
        for _ in range(1200):
            async with tenant_tx(self.pool, self.tenant) as conn:
                cur = await conn.execute(
                    "SELECT octet_length(payload) AS size FROM code_graphs WHERE snapshot_id = %s AND resolver = %s",
                    (self.snapshot, RESOLVER),
                )
                row = await cur.fetchone()
            if row is not None:
                return time.perf_counter() - started, int(row["size"])
            await asyncio.sleep(0.25)
        return None

    async def resolve(self) -> Any:
        import asyncio

        from palimpsest.core.db import tenant_tx
        from palimpsest.index.graph import build_graph
        from palimpsest.index.graph.load import load_snapshot_facts

        async with tenant_tx(self.pool, self.tenant) as conn:
            facts = await load_snapshot_facts(conn, self.repo_id, self.snapshot)
        return await asyncio.to_thread(build_graph, facts)

    async def load(self) -> Any:
        from palimpsest.core.db import tenant_tx
        from palimpsest.index.graph.persisted import read_graph

        async with tenant_tx(self.pool, self.tenant) as conn:
            return await read_graph(conn, self.snapshot)

    async def first_query(self) -> Any:
        from palimpsest.core.db import tenant_tx
        from palimpsest.index.graph import GraphCache, snapshot_graph

        cache = GraphCache(1)
        async with tenant_tx(self.pool, self.tenant) as conn:
            await snapshot_graph(conn, self.repo_id, snapshot_id=self.snapshot, cache=cache)
        return cache

    async def rounds(self, rounds: int) -> dict[str, Any]:
        """Each way ``rounds`` times, alternated so that all see the same machine load."""
        from palimpsest.index.graph.persisted import decode_graph, encode_graph

        times: dict[str, list[float]] = {
            k: [] for k in ("resolve", "load", "first_query", "decode", "encode")
        }
        same, loads = True, 0
        for _ in range(rounds):
            seconds, resolved = await _timed(self.resolve)
            times["resolve"].append(seconds)
            seconds, loaded = await _timed(self.load)
            times["load"].append(seconds)
            same = same and loaded is not None and loaded == resolved
            seconds, cache = await _timed(self.first_query)
            times["first_query"].append(seconds)
            loads += cache.loads
            started = time.perf_counter()
            payload = encode_graph(*resolved)
            times["encode"].append(time.perf_counter() - started)
            started = time.perf_counter()
            decode_graph(payload)
            times["decode"].append(time.perf_counter() - started)
        graph, _ = resolved
        load_median = statistics.median(times["load"])
        return {
            "nodes": graph.node_count,
            "edges": graph.edge_count,
            "rounds": rounds,
            **{f"{name}_s": _summary(values) for name, values in times.items()},
            "first_query_loaded_stored_graph": loads == rounds,
            "speedup": round(statistics.median(times["resolve"]) / load_median, 1) if load_median else None,
            "loaded_equals_resolved": same,
        }
