"""``palimpsest bench graph``: what the first graph query of a new snapshot costs a process.

The index is ``bench index``'s generated TypeScript repository (50 000 files by default), built
through the real pipeline on a scratch stack by the chunker, with the reviewer running, so the
reviewer stores the new snapshot's graph on ``snapshot.built`` as in production (the bench waits
for that row). The other services stay off: in this one process they would compete for the
interpreter with what is measured (the analyzer starts on every new snapshot).
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
    import asyncio

    from palimpsest.cli.local import local_tenant, register_path
    from palimpsest.cli.pipeline import index_and_wait
    from palimpsest.cli.runner import running_services
    from palimpsest.cli.stack import open_stack, scratch_settings
    from palimpsest.core.db import tenant_tx
    from palimpsest.devtools.bench.index import make_repository
    from palimpsest.index.graph import GraphCache, build_graph, snapshot_graph
    from palimpsest.index.graph.load import load_snapshot_facts
    from palimpsest.index.graph.persisted import RESOLVER, decode_graph, encode_graph, read_graph

    with tempfile.TemporaryDirectory(prefix="palimpsest-bench-graph-") as tmp:
        root = Path(tmp)
        progress(f"generating {files} files…")
        repo, _, _ = make_repository(root, files, total_bytes)
        s = scratch_settings(settings, root / "home")
        async with (
            open_stack(s) as stack,
            running_services(s, stack, services=("chunker", "reviewer")) as infra,
        ):
            tenant = await local_tenant(infra.pool, Path(s.home))
            repo_id = await register_path(infra.pool, tenant, repo)
            progress("indexing through the pipeline…")
            started = time.perf_counter()
            built = (await index_and_wait(infra.pool, infra.nc, tenant, repo_id))["snapshot.built"]
            index_s = time.perf_counter() - started
            if built["state"] != "ready":
                return {"error": f"build {built['state']}: {built.get('reason')}"}
            snapshot = UUID(str(built["snapshot_id"]))
            progress("waiting for the reviewer to store the graph…")
            stored_after_s = None
            for _ in range(1200):
                async with tenant_tx(infra.pool, tenant) as conn:
                    cur = await conn.execute(
                        "SELECT octet_length(payload) AS size FROM code_graphs"
                        " WHERE snapshot_id = %s AND resolver = %s",
                        (snapshot, RESOLVER),
                    )
                    row = await cur.fetchone()
                if row is not None:
                    stored_after_s = time.perf_counter() - started - index_s
                    payload_bytes = int(row["size"])
                    break
                await asyncio.sleep(0.25)
            else:
                return {"error": "the reviewer did not store the graph within 5 minutes"}

            async def resolve() -> Any:
                async with tenant_tx(infra.pool, tenant) as conn:
                    facts = await load_snapshot_facts(conn, repo_id, snapshot)
                return await asyncio.to_thread(build_graph, facts)

            async def load() -> Any:
                async with tenant_tx(infra.pool, tenant) as conn:
                    return await read_graph(conn, snapshot)

            async def first_query() -> Any:
                cache = GraphCache(1)
                async with tenant_tx(infra.pool, tenant) as conn:
                    await snapshot_graph(conn, repo_id, snapshot_id=snapshot, cache=cache)
                return cache

            progress(f"timing {rounds} rounds of resolve / load / first query…")
            load_before = os.getloadavg()
            times: dict[str, list[float]] = {
                "resolve": [],
                "load": [],
                "first_query": [],
                "decode": [],
                "encode": [],
            }
            same = True
            loads = 0
            for _ in range(rounds):
                seconds, resolved = await _timed(resolve)
                times["resolve"].append(seconds)
                seconds, loaded = await _timed(load)
                times["load"].append(seconds)
                same = same and loaded is not None and loaded == resolved
                seconds, cache = await _timed(first_query)
                times["first_query"].append(seconds)
                loads += cache.loads
                started = time.perf_counter()
                payload = encode_graph(*resolved)
                times["encode"].append(time.perf_counter() - started)
                started = time.perf_counter()
                decode_graph(payload)
                times["decode"].append(time.perf_counter() - started)
            load_after = os.getloadavg()
            graph, _ = resolved
    resolve_median = statistics.median(times["resolve"])
    load_median = statistics.median(times["load"])
    return {
        "benchmark": "graph",
        "postgres": "embedded" if stack.embedded_db else "external",
        "files": files,
        "chunks": built["chunks"],
        "nodes": graph.node_count,
        "edges": graph.edge_count,
        "index_s": round(index_s, 1),
        "stored_by_reviewer_after_s": round(stored_after_s or 0.0, 1),
        "payload_bytes": payload_bytes,
        "rounds": rounds,
        "resolve_s": _summary(times["resolve"]),
        "load_s": _summary(times["load"]),
        "first_query_s": _summary(times["first_query"]),
        "decode_s": _summary(times["decode"]),
        "encode_s": _summary(times["encode"]),
        "first_query_loaded_stored_graph": loads == rounds,
        "speedup": round(resolve_median / load_median, 1) if load_median else None,
        "loaded_equals_resolved": same,
        "load_average_1m": {"before": round(load_before[0], 2), "after": round(load_after[0], 2)},
        "cpus": os.cpu_count(),
    }
