"""CLI: ``palimpsest review PATH --base REF --head REF`` and ``palimpsest bench review``.

The local flow takes the webhook flow's path: the repository is registered (and indexed when it
has no ready snapshot yet), a ``review.requested`` event goes through the outbox and the bus to
the reviewer service, and the command waits for ``review.completed`` and prints the stored review.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any
from uuid import UUID

import click
from nats.aio.client import Client as NATS

from palimpsest.cli.output import emit, fail, progress
from palimpsest.core.db import Pool

__all__ = ["register", "review_local"]


def register(cli: click.Group) -> None:
    from palimpsest.cli.main import run_async, settings

    @cli.command("review")
    @click.argument("path", type=click.Path(exists=True, file_okay=False, path_type=Path))
    @click.option("--base", required=True, help="The base revision (branch, tag or sha).")
    @click.option("--head", default="HEAD", show_default=True, help="The head revision.")
    @click.option("--tenant", default=None, help="Tenant id (default: the local tenant).")
    @click.option("--timeout", "timeout_s", default=1800.0, show_default=True)
    @click.option("--json", "as_json", is_flag=True)
    @run_async
    async def review_cmd(
        path: Path, base: str, head: str, tenant: str | None, timeout_s: float, as_json: bool
    ) -> None:
        """Review the changes from BASE to HEAD of a local repository through the reviewer service."""
        from palimpsest.cli.local import local_tenant
        from palimpsest.cli.session import session

        s = settings()
        async with session(s) as sess:
            pool = sess.infra.pool
            tid = UUID(tenant) if tenant else await local_tenant(pool, s.home)
            out = await review_local(pool, sess.infra.nc, tid, path, base, head, timeout_s=timeout_s)
        emit(out, as_json=as_json, text=review_text(out))
        if out.get("state") == "failed":
            raise SystemExit(1)

    bench = cli.commands["bench"]
    assert isinstance(bench, click.Group)

    @bench.command("review")
    @click.option("--files", default=50_000, show_default=True)
    @click.option("--total-mb", default=24.7, show_default=True, help="Total size of the generated source.")
    @click.option("--runs", default=20, show_default=True, help="Reviews measured per PR size.")
    @click.option("--json", "as_json", is_flag=True)
    @run_async
    async def bench_review(files: int, total_mb: float, runs: int, as_json: bool) -> None:
        """Context assembly latency (no model) for PRs of 1, 10 and 50 files on a generated index."""
        if files < 100:
            fail("--files must be at least 100")
        result = await run_bench_review(settings(), files=files, total_bytes=int(total_mb * 1e6), runs=runs)
        emit(result, as_json=as_json, text=None)

    @bench.command("replay")
    @click.option(
        "--repo", "repo", required=True, type=click.Path(exists=True, file_okay=False, path_type=Path)
    )
    @click.option("--changes", default=30, show_default=True, help="Changes sampled per seed.")
    @click.option("--seed", "seeds", multiple=True, type=int, help="Sampling seed (repeatable; default 1).")
    @click.option("--budget-tokens", default=8000, show_default=True, help="The reviewer's context budget.")
    @click.option(
        "--report",
        type=click.Path(dir_okay=False, path_type=Path),
        help="Write the missing-context report (Markdown).",
    )
    @click.option(
        "--signals",
        is_flag=True,
        help="Record every candidate file's rank per source and fit each source's precision.",
    )
    @click.option("--json", "as_json", is_flag=True)
    @run_async
    async def bench_replay(
        repo: Path,
        changes: int,
        seeds: tuple[int, ...],
        budget_tokens: int,
        report: Path | None,
        signals: bool,
        as_json: bool,
    ) -> None:
        """Replay merged changes of a local clone as pull requests; recall of the review context
        against git-log/git-grep baselines at the same file count, and why truth files were missing."""
        from palimpsest.cli.benchreplay import markdown_report, run_bench_replay
        from palimpsest.cli.replay import ReplayError

        if changes < 1 or budget_tokens < 100:
            fail("--changes must be at least 1 and --budget-tokens at least 100")
        try:
            result = await run_bench_replay(
                settings(),
                repo=repo,
                changes=changes,
                seeds=seeds or (1,),
                budget=budget_tokens,
                signals=signals,
                say=progress,
            )
        except ReplayError as exc:
            fail(str(exc))
        if report is not None:
            report.write_text(markdown_report(result))
        emit(result, as_json=as_json, text=None)


def _rev_parse(path: Path, rev: str) -> str:
    proc = subprocess.run(
        ["git", "-C", str(path), "rev-parse", "--verify", "--end-of-options", f"{rev}^{{commit}}"],
        capture_output=True,
        text=True,
        check=False,
        timeout=30,
    )
    if proc.returncode != 0:
        fail(f"{rev!r} names no commit of {path}")
    return proc.stdout.strip()


async def review_local(
    pool: Pool,
    nc: NATS,
    tenant: UUID,
    path: Path,
    base: str,
    head: str,
    *,
    timeout_s: float = 1800.0,
    say: Callable[[str], None] = progress,
) -> dict[str, Any]:
    """Register (and if needed index) ``path``, request the review through the bus, return it."""
    from palimpsest.cli.local import register_path
    from palimpsest.cli.pipeline import index_and_wait, request, wait_for, watching
    from palimpsest.core.db import tenant_tx
    from palimpsest.core.events import ReviewRequested
    from palimpsest.index.snapshots import for_commit, newest_ready
    from palimpsest.index.stored import load_review

    base_sha, head_sha = _rev_parse(path, base), _rev_parse(path, head)
    repo_id = await register_path(pool, tenant, path)
    async with tenant_tx(pool, tenant) as conn:
        branch = await newest_ready(conn, repo_id)
        on_base = await for_commit(conn, repo_id, base_sha)
    if branch is None:
        say(f"indexing {path} first (repository {repo_id})…")
        await index_and_wait(pool, nc, tenant, repo_id, timeout_s=timeout_s)
    if on_base is None and (branch is None or branch["commit_sha"] != base_sha):
        say(f"indexing the base {base_sha[:12]} (kept beside the branch's index for reviews of it)…")
        built = await index_and_wait(
            pool, nc, tenant, repo_id, timeout_s=timeout_s, reason="review", commit_sha=base_sha
        )
        if built["snapshot.built"]["state"] == "failed":
            say(
                f"note: the base could not be indexed ({built['snapshot.built'].get('reason')});"
                " the context comes from the newest indexed commit"
            )
    event = ReviewRequested(
        tenant_id=tenant,
        repository_id=repo_id,
        provider="local",
        base_sha=base_sha,
        head_sha=head_sha,
        base_ref=base,
        head_ref=head,
    )
    say(f"reviewing {base_sha[:12]}..{head_sha[:12]}…")
    async with watching(nc, event.request_id, ("review.completed",)) as waiter:
        await request(pool, event)
        found = await wait_for(waiter, ("review.completed",), timeout_s=timeout_s)
    done = found["review.completed"]
    async with tenant_tx(pool, tenant) as conn:
        stored = await load_review(conn, UUID(done["review_id"]))
    if stored is None:  # a failure before the head was known is not stored
        return {
            "state": done["state"],
            "reason": done.get("reason"),
            "snapshot_id": None,
            "context": [],
            "dropped": [],
            "cochange_missing": [],
            "findings": [],
            "summary": "",
        }
    return stored


def snapshot_note(out: dict[str, Any]) -> str:
    """Which snapshot the context came from, and why, in plain words."""
    sources = out.get("sources") or {}
    commit = str(sources.get("snapshot_commit") or "")[:12]
    if sources.get("snapshot_on_base"):
        return f"Context from the index of the base commit {commit}."
    stale = sum(1 for d in out.get("dropped") or [] if d.get("reason") == "stale")
    return (
        f"Context from the index of {commit}, not of the base {str(out.get('base_sha') or '')[:12]}:"
        " the base has no snapshot (the index follows the default branch's head). Candidates whose"
        f" text differs at the head were dropped as stale ({stale})."
    )


def dropped_text(dropped: list[dict[str, Any]]) -> str:
    """What was left out, by reason: the files named (once each), except for the budget, counted."""
    by_reason: dict[str, list[str]] = {}
    for d in dropped:
        by_reason.setdefault(d["reason"], []).append(str(d.get("path") or d.get("repository")))
    parts = []
    for reason, paths in by_reason.items():
        unique = list(dict.fromkeys(paths))
        if reason == "budget":
            parts.append(
                f"{len(paths)} chunks of {len(unique)} files over the budget (--json lists them, ranked)"
            )
        else:
            parts.append(f"{reason}: " + ", ".join(unique))
    return "; ".join(parts)


def review_text(out: dict[str, Any]) -> str:
    if out.get("state") == "failed":
        return f"review failed: {out.get('reason')}"
    lines = [out.get("summary") or "", "", snapshot_note(out), "Context (prompt order):"]
    for c in out.get("context", []):
        note = f"  {c['annotation']}" if c.get("annotation") else ""
        label = f"{c['source']} {c['repository']}" if c.get("repository") else c["source"]
        why = f"  — {c['reason']}" if c.get("reason") else ""
        lines.append(f"  [{label}] {c['path']}:{c['start_line']}-{c['end_line']}{note}{why}")
    if out.get("dropped"):
        lines.append("Dropped: " + dropped_text(out["dropped"]))
    for f in out.get("findings", []):
        lines.append(f"{f['severity']:>8}  {f['path']}:{f['start_line']}-{f['end_line']}  {f['message']}")
    return "\n".join(lines)


# ---------------------------------------------------------------------------------- bench review

BENCH_SIZES = (1, 10, 50)


async def run_bench_review(settings: Any, *, files: int, total_bytes: int, runs: int) -> dict[str, Any]:
    """Index a generated repository through the real pipeline, then time context assembly."""
    import tempfile
    import time

    from palimpsest.cli.benchindex import make_repository
    from palimpsest.cli.local import local_tenant, register_path
    from palimpsest.cli.pipeline import index_and_wait
    from palimpsest.cli.runner import running_services
    from palimpsest.cli.stack import open_stack, scratch_settings

    with tempfile.TemporaryDirectory(prefix="palimpsest-bench-review-") as tmp:
        root = Path(tmp)
        repo, idents, corpus = make_repository(root, files, total_bytes)
        s = scratch_settings(settings, root / "home")
        async with open_stack(s) as stack, running_services(s, stack) as infra:
            tenant = await local_tenant(infra.pool, Path(s.home))
            repo_id = await register_path(infra.pool, tenant, repo)
            t = time.perf_counter()
            built = (await index_and_wait(infra.pool, infra.nc, tenant, repo_id))["snapshot.built"]
            index_s = time.perf_counter() - t
            if built["state"] != "ready":
                return {"error": f"build {built['state']}: {built.get('reason')}"}
            timings, first_ms, counts = await _time_contexts(
                infra.pool, tenant, repo_id, corpus, idents, runs
            )
        return {
            "benchmark": "review",
            "postgres": "embedded" if stack.embedded_db else "external",
            "files": files,
            "chunks": built["chunks"],
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
    from palimpsest.reviewer.context import assemble_context

    rng = random.Random(29)  # noqa: S311 - reproducible PRs
    code = [(p, t) for p, t in corpus if p.endswith(".ts")]
    timings: dict[int, list[float]] = {n: [] for n in BENCH_SIZES}
    items: dict[int, list[int]] = {n: [] for n in BENCH_SIZES}
    phases: dict[str, list[float]] = {}
    first_ms = 0.0
    for trial in range(runs + 1):
        for n in BENCH_SIZES:
            diff, at_head = _synthetic_pr(rng, code, idents, n)
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


def _synthetic_pr(
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
