"""``palimpsest bench mcp``: tool-call latency of the MCP server on a generated index.

The index is ``bench index``'s generated TypeScript repository (50 000 files by default), built
through the real pipeline on a scratch stack, as ``bench review`` does. A tenant API token is
issued, and the SDK's own client calls every tool over streamable HTTP at the ingest API's
``/mcp`` — the path an agent in CI takes: HTTP, bearer authentication, JSON-RPC, the tool, the
index. Each tool is called once to warm up (the first call resolves the snapshot's graph) and
then ``calls`` times with varied arguments (identifiers and files of the generated code, a
one-file change for ``review_context``); the figures are per tool, in milliseconds.
"""

from __future__ import annotations

import os
import random
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from uuid import UUID

from palimpsest.cli.output import progress
from palimpsest.core.settings import BaseServiceSettings
from palimpsest.devtools.scratch import indexed_scratch

__all__ = ["run_bench_mcp"]


async def run_bench_mcp(
    settings: BaseServiceSettings, *, files: int, total_bytes: int, calls: int
) -> dict[str, Any]:
    """Index a generated repository through the real pipeline, then time every tool's calls."""
    from palimpsest.core.db import tenant_tx
    from palimpsest.core.ids import uuid7
    from palimpsest.ingest.store.tenants import insert_token
    from palimpsest.ingest.tokens import new_api_token

    with tempfile.TemporaryDirectory(prefix="palimpsest-bench-mcp-") as tmp:
        indexed = indexed_scratch(settings, Path(tmp), files=files, total_bytes=total_bytes)
        async with indexed as (scratch, repo_id, built, index_s, idents, corpus):
            infra, tenant = scratch.infra, scratch.tenant
            if built.state != "ready":
                return {"error": f"build {built.state}: {built.reason}"}
            token, token_hash = new_api_token()
            async with tenant_tx(infra.pool, tenant) as conn:
                await insert_token(conn, tenant, uuid7(), token_hash, "bench-mcp", ["read"])
            url = f"{infra.ingest_url}/mcp"
            progress(f"calling every tool {calls + 1} times over {url}…")
            load_before = os.getloadavg()
            timings, first, errors = await _time_tools(url, token, repo_id, corpus, idents, calls)
            load_after = os.getloadavg()
        return {
            "benchmark": "mcp",
            "transport": "streamable-http",
            "postgres": "embedded" if scratch.stack.embedded_db else "external",
            "files": files,
            "chunks": built.chunks,
            "index_s": round(index_s, 1),
            "calls_per_tool": calls,
            "first_call_ms": {k: round(v, 1) for k, v in first.items()},
            "p50_ms": {k: round(_pct(v, 0.5), 1) for k, v in timings.items()},
            "p95_ms": {k: round(_pct(v, 0.95), 1) for k, v in timings.items()},
            "all_calls_p50_ms": round(_pct([x for v in timings.values() for x in v], 0.5), 1),
            "all_calls_p95_ms": round(_pct([x for v in timings.values() for x in v], 0.95), 1),
            "tool_errors": errors,
            "load_average_1m": {"before": round(load_before[0], 2), "after": round(load_after[0], 2)},
            "cpus": os.cpu_count(),
        }


async def _time_tools(
    url: str, token: str, repo_id: UUID, corpus: list[tuple[str, str]], idents: list[str], calls: int
) -> tuple[dict[str, list[float]], dict[str, float], dict[str, int]]:
    from mcp.client.session import ClientSession
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    from palimpsest.devtools.bench.review import synthetic_pr

    rng = random.Random(20)  # noqa: S311 - reproducible arguments
    code = [(p, t) for p, t in corpus if p.endswith(".ts")]
    repository = str(repo_id)

    def review_args() -> dict[str, Any]:
        diff, _ = synthetic_pr(rng, code, idents, 1)
        return {"repository": repository, "diff": diff}

    arguments: dict[str, Callable[[], dict[str, Any]]] = {
        "repositories": lambda: {},
        "snapshots": lambda: {"repository": repository},
        "search": lambda: {"repository": repository, "query": rng.choice(idents)},
        "definitions": lambda: {"repository": repository, "symbol": rng.choice(idents)},
        "references": lambda: {"repository": repository, "symbol": rng.choice(idents)},
        "context": lambda: {"repository": repository, "seeds": [rng.choice(code)[0]]},
        "review_context": review_args,
        "recency": lambda: {"repository": repository, "stale_only": rng.random() < 0.5},
        "doc_findings": lambda: {"repository": repository},
    }
    timings: dict[str, list[float]] = {name: [] for name in arguments}
    first: dict[str, float] = {}
    errors: dict[str, int] = dict.fromkeys(arguments, 0)
    client = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
    async with (
        client,
        streamable_http_client(url, http_client=client) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        for trial in range(calls + 1):
            for name, make in arguments.items():
                args = make()
                t = time.perf_counter()
                result = await session.call_tool(name, args)
                ms = (time.perf_counter() - t) * 1000
                errors[name] += int(bool(result.is_error))
                if trial == 0:
                    first[name] = ms
                else:
                    timings[name].append(ms)
    return timings, first, errors


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))] if ordered else 0.0
