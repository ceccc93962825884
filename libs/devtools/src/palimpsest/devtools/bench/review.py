"""``palimpsest bench review``: context assembly latency on a generated index, without a model.

The repository is ``bench index``'s generated TypeScript (:func:`palimpsest.devtools.bench.index.make_repository`),
built through the real pipeline on a scratch stack; each synthetic pull request adds one method
calling an identifier of another module to 1, 10 or 50 files.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from uuid import UUID

from palimpsest.core.db import Pool
from palimpsest.devtools.scratch import indexed_scratch

__all__ = ["BENCH_SIZES", "run_bench_review", "synthetic_pr"]

BENCH_SIZES = (1, 10, 50)


async def run_bench_review(settings: Any, *, files: int, total_bytes: int, runs: int) -> dict[str, Any]:
    """Index a generated repository through the real pipeline, then time context assembly."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="palimpsest-bench-review-") as tmp:
        indexed = indexed_scratch(settings, Path(tmp), files=files, total_bytes=total_bytes)
        async with indexed as (scratch, repo_id, built, index_s, idents, corpus):
            if built.state != "ready":
                return {"error": f"build {built.state}: {built.reason}"}
            timings, first_ms, counts = await _time_contexts(
                scratch.infra.pool, scratch.tenant, repo_id, corpus, idents, runs
            )
        return {
            "benchmark": "review",
            "postgres": "embedded" if scratch.stack.embedded_db else "external",
            "files": files,
            "chunks": built.chunks,
            "index_s": round(index_s, 1),
            "runs": runs,
            "first_call_ms": round(first_ms, 1),
            "p50_ms": {str(n): round(_pct(v, 0.5), 1) for n, v in timings.items()},
            "p95_ms": {str(n): round(_pct(v, 0.95), 1) for n, v in timings.items()},
            "context_items": counts,
        }


async def _time_contexts(
    pool: Pool, tenant: UUID, repo_id: UUID, corpus: list[tuple[str, str]], idents: list[str], runs: int
) -> tuple[dict[int, list[float]], float, dict[str, float]]:
    import random
    import time

    from palimpsest.core.db import tenant_tx
    from palimpsest.index.context.assemble import assemble_context

    rng = random.Random(29)  # noqa: S311 - reproducible PRs
    code = [(p, t) for p, t in corpus if p.endswith(".ts")]
    timings: dict[int, list[float]] = {n: [] for n in BENCH_SIZES}
    items: dict[int, list[int]] = {n: [] for n in BENCH_SIZES}
    phases: dict[str, list[float]] = {}
    first_ms = 0.0
    for trial in range(runs + 1):
        for n in BENCH_SIZES:
            diff, at_head = synthetic_pr(rng, code, idents, n)
            t = time.perf_counter()
            async with tenant_tx(pool, tenant) as conn:
                ctx = await assemble_context(conn, repo_id, diff, at_head, 8000)
            ms = (time.perf_counter() - t) * 1000
            if trial == 0:  # the first call loads the snapshot's graph into the cache
                first_ms = max(first_ms, ms)
                continue
            timings[n].append(ms)
            items[n].append(len(ctx.items))
            if n == 10:
                for phase, value in ctx.timings.items():
                    phases.setdefault(phase, []).append(value)
    counts: dict[str, float] = {str(n): round(sum(v) / len(v), 1) for n, v in items.items() if v}
    counts.update({f"10_files_{k}_ms_p50": round(_pct(v, 0.5), 1) for k, v in phases.items()})
    return timings, first_ms, counts


def synthetic_pr(
    rng: Any, code: list[tuple[str, str]], idents: list[str], n: int
) -> tuple[str, dict[str, str | None]]:
    """A PR that adds one method (calling an identifier of another module) to ``n`` modules."""
    import difflib

    parts: list[str] = []
    at_head: dict[str, str | None] = {}
    for path, text in rng.sample(code, n):
        callee = rng.choice(idents)
        lines = text.splitlines(keepends=True)
        added = [
            f"  reviewBench{rng.randint(0, 10**6)}(value: number): number {{\n",
            f"    return {callee}(value);\n",
            "  }\n",
        ]
        new = [*lines[:-1], *added, *lines[-1:]]
        at_head[path] = "".join(new)
        parts.append(f"diff --git a/{path} b/{path}\n")
        parts.extend(difflib.unified_diff(lines, new, f"a/{path}", f"b/{path}"))
    return "".join(parts), at_head


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))] if ordered else 0.0
