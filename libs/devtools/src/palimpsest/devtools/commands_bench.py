"""CLI: ``palimpsest bench …`` — every benchmark; each prints JSON figures.

The commands only parse options and print; the measurements live in :mod:`palimpsest.devtools.bench`
and are imported when a command runs. :mod:`palimpsest.cli.main` adds :data:`bench` to the CLI.
"""

from __future__ import annotations

from pathlib import Path

import click

from palimpsest.cli.output import emit, fail, progress
from palimpsest.cli.runtime import run_async, settings

__all__ = ["bench"]

_json_option = click.option("--json", "as_json", is_flag=True)
_files_option = click.option("--files", default=50_000, show_default=True)
_total_mb_option = click.option(
    "--total-mb", default=24.7, show_default=True, help="Total size of the generated source."
)
_repo_option = click.option(
    "--repo", "repo", required=True, type=click.Path(exists=True, file_okay=False, path_type=Path)
)


@click.group()
def bench() -> None:
    """Benchmarks: each prints JSON figures."""


# ------------------------------------------------------------------------------- the stack and bus


@bench.command("bus")
@click.option("--events", default=5000, show_default=True, help="Events for the relay throughput run.")
@click.option("--latency-events", default=300, show_default=True, help="Events for the latency run.")
@_json_option
@run_async
async def bench_bus(events: int, latency_events: int, as_json: bool) -> None:
    """Relay throughput (events/s with PubAck) and end-to-end latency (outbox write → handler done)."""
    from palimpsest.devtools.bench.bus import run_bench_bus

    result = await run_bench_bus(settings(), events=events, latency_events=latency_events)
    emit(result, as_json=True)


@bench.command("stack")
@click.option("--runs", default=3, show_default=True)
@_json_option
@run_async
async def bench_stack(runs: int, as_json: bool) -> None:
    """Embedded stack start time: PostgreSQL + NATS up, migrated, bus declared (fresh and warm)."""
    from palimpsest.devtools.bench.bus import run_bench_stack

    result = await run_bench_stack(settings(), runs=runs)
    emit(result, as_json=True)


@bench.command("fleet")
@click.option("--repos", default=24, show_default=True, type=click.IntRange(2, 5000))
@click.option("--tenants", default=4, show_default=True, type=click.IntRange(1, 500))
@click.option(
    "--replicas",
    multiple=True,
    default=(1,),
    show_default=True,
    type=click.IntRange(1, 4),
    help="Processes of every service; repeat (--replicas 1 --replicas 2) for one run each and the speed-up.",
)
@click.option(
    "--large-files", default=2000, show_default=True, help="Files of each large repository (about 5 %)."
)
@click.option(
    "--day-seconds",
    default=180.0,
    show_default=True,
    type=click.FloatRange(5.0),
    help="The simulated day of pushes and pull requests, compressed into this many seconds.",
)
@click.option(
    "--onboarding-timeout",
    default=3600.0,
    show_default=True,
    type=click.FloatRange(10.0),
    help="Seconds to wait for every repository to be ready; past it the run reports what was and skips the day.",
)
@click.option("--seed", default=1, show_default=True)
@_json_option
@run_async
async def bench_fleet(
    repos: int,
    tenants: int,
    replicas: tuple[int, ...],
    large_files: int,
    day_seconds: float,
    onboarding_timeout: float,
    seed: int,
    as_json: bool,
) -> None:
    """A fleet installed through signed webhooks, then a simulated day of pushes and reviewed pull
    requests: time until all are ready against a linear one-repository yardstick, fairness between
    tenants, review and push latency, per-consumer lag, peak RSS and CPU per service, database growth
    per repository and file, and the issue's targets met or not."""
    from palimpsest.devtools.bench.fleet import run_bench_fleet

    result = await run_bench_fleet(
        settings(),
        repos=repos,
        tenants=tenants,
        replicas=replicas,
        large_files=large_files,
        seed=seed,
        day_s=day_seconds,
        onboarding_timeout_s=onboarding_timeout,
    )
    emit(result, as_json=True)


@bench.command("ingest")
@click.option("--deliveries", "count", default=5000, show_default=True, help="Measured deliveries.")
@click.option("--concurrency", default=12, show_default=True, help="Requests in flight.")
@click.option("--warmup", default=300, show_default=True)
@click.option("--replicas", default=1, show_default=True, help="Ingest processes sharing the port.")
@click.option(
    "--client", "client_kind", type=click.Choice(["raw", "httpx"]), default="raw", show_default=True
)
@_json_option
@run_async
async def bench_ingest(
    count: int, concurrency: int, warmup: int, replicas: int, client_kind: str, as_json: bool
) -> None:
    """Signed webhook deliveries/s through the real HTTP server into the outbox, latency, events == accepted."""
    from palimpsest.devtools.bench.ingest import run_bench_ingest

    result = await run_bench_ingest(
        settings(),
        deliveries=count,
        concurrency=concurrency,
        warmup=warmup,
        replicas=replicas,
        client_kind=client_kind,
    )
    emit(result, as_json=True)


@bench.command("tenant-delete")
@click.option("--files", default=5_000, show_default=True, help="Files of the generated repository.")
@click.option("--total-mb", default=2.5, show_default=True)
@click.option("--batch", default=5_000, show_default=True, help="Rows per deleting transaction.")
@_json_option
@run_async
async def bench_tenant_delete(files: int, total_mb: float, batch: int, as_json: bool) -> None:
    """Delete a tenant holding an indexed repository (and switch an index off); print the figures."""
    from palimpsest.devtools.bench.delete import run_bench_delete

    if files < 10:
        fail("--files must be at least 10")
    emit(
        await run_bench_delete(settings(), files=files, total_bytes=int(total_mb * 1e6), batch=batch),
        as_json=True,
    )


# ------------------------------------------------------------------------------- index and search


@bench.command("index")
@_files_option
@_total_mb_option
@click.option("--queries", default=200, show_default=True)
@click.option(
    "--repo",
    "source",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="Build this git repository's tree at --rev instead of a generated one (--files and --total-mb are then unused).",
)
@click.option("--rev", default="HEAD", show_default=True, help="The commit of --repo to build.")
@click.option(
    "--rounds",
    default=1,
    show_default=True,
    type=click.IntRange(min=1),
    help="First builds of the same commit, each followed by its yardsticks; the median round is reported.",
)
@click.option(
    "--pgbouncer",
    is_flag=True,
    help="The services' and the search's database URL through a loopback PgBouncer in transaction mode"
    " (Debian's pgbouncer), where statements are never prepared.",
)
@click.option(
    "--quiet-timeout",
    type=click.FloatRange(min=0),
    help="Seconds to wait, before each yardstick measurement, for the machine to be quiet; then it"
    " measures anyway and reports quiet: false (0: never wait; default: bench.floor.QUIET_TIMEOUT_S).",
)
@_json_option
@run_async
async def bench_index(
    files: int,
    total_mb: float,
    queries: int,
    source: Path | None,
    rev: str,
    rounds: int,
    pgbouncer: bool,
    quiet_timeout: float | None,
    as_json: bool,
) -> None:
    """Build a generated TypeScript repository (or --repo's tree) through the real pipeline; print the figures."""
    from palimpsest.devtools.bench.floor import QUIET_TIMEOUT_S
    from palimpsest.devtools.bench.index import run_bench_index

    if files < 10:
        fail("--files must be at least 10")
    result = await run_bench_index(
        settings(),
        files=files,
        total_bytes=int(total_mb * 1e6),
        queries=queries,
        source=source,
        rev=rev,
        rounds=rounds,
        pgbouncer=pgbouncer,
        quiet_timeout_s=QUIET_TIMEOUT_S if quiet_timeout is None else quiet_timeout,
    )
    emit(result, as_json=True)


@bench.command("search")
@_files_option
@_total_mb_option
@click.option("--queries", default=40, show_default=True, help="Queries per shape.")
@click.option(
    "--repo",
    "source",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="Index this git repository's tree at --rev instead of a generated one (--files and --total-mb are then unused).",
)
@click.option("--rev", default="HEAD", show_default=True, help="The commit of --repo to index.")
@click.option(
    "--cold-restarts",
    default=5,
    show_default=True,
    type=click.IntRange(min=0),
    help="Restarts of the embedded PostgreSQL, each followed by one cold query per shape.",
)
@click.option(
    "--keep",
    type=click.Path(file_okay=False, path_type=Path),
    help="Keep the corpus, its checkout and the index in this directory; a later run with the same"
    " directory and corpus reuses the index (migrations run again) instead of building it.",
)
@_json_option
@run_async
async def bench_search(
    files: int,
    total_mb: float,
    queries: int,
    source: Path | None,
    rev: str,
    cold_restarts: int,
    keep: Path | None,
    as_json: bool,
) -> None:
    """Lexical search p50/p95/p99 per query shape, cold and warm, beside rg and git grep on a checkout of the same commit."""
    from palimpsest.devtools.bench.search import run_bench_search

    if files < 10 or queries < 1:
        fail("--files must be at least 10 and --queries at least 1")
    result = await run_bench_search(
        settings(),
        files=files,
        total_bytes=int(total_mb * 1e6),
        queries=queries,
        source=source,
        rev=rev,
        cold_restarts=cold_restarts,
        keep=keep,
    )
    emit(result, as_json=True)


@bench.command("recency")
@click.option("--commits", default=100_000, show_default=True, help="Commits of the generated history.")
@click.option("--files", default=20_000, show_default=True, help="Files in the generated tree.")
@click.option("--seed", default=0, show_default=True)
@click.option(
    "--repo",
    "repo",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    default=None,
    help="Scan this existing repository (served over HTTP) instead of a generated one.",
)
@_json_option
@run_async
async def bench_recency(commits: int, files: int, seed: int, repo: Path | None, as_json: bool) -> None:
    """Time a full recency scan (clone + log + parse + write) through the real handler."""
    from palimpsest.devtools.bench.recency import run_bench_recency

    if repo is None and (commits < 1 or files < 1):
        fail("--commits and --files must be positive")
    result = await run_bench_recency(settings(), commits=commits, files=files, seed=seed, repo=repo)
    emit(result, as_json=True)


@bench.command("embed")
@click.option("--files", default=2000, show_default=True, help="Files of the generated repository.")
@click.option("--total-mb", default=1.0, show_default=True, help="Total size of the generated source.")
@click.option("--vectors", default=100_000, show_default=True, help="Vectors for the HNSW latency run.")
@click.option("--queries", default=200, show_default=True)
@click.option("--latency-ms", default=0.0, show_default=True, help="The fake provider's latency per request.")
@_json_option
@run_async
async def bench_embed(
    files: int, total_mb: float, vectors: int, queries: int, latency_ms: float, as_json: bool
) -> None:
    """Embedding chunks/s through the real pipeline (fake provider) and HNSW query p95."""
    from palimpsest.devtools.bench.embed import run_bench_embed

    if files < 10 or vectors < 100 or queries < 1 or latency_ms < 0:
        fail("--files ≥ 10, --vectors ≥ 100, --queries ≥ 1 and --latency-ms ≥ 0")
    result = await run_bench_embed(
        settings(),
        files=files,
        total_bytes=int(total_mb * 1e6),
        vectors=vectors,
        queries=queries,
        latency_ms=latency_ms,
    )
    emit(result, as_json=True)


@bench.command("mcp")
@_files_option
@_total_mb_option
@click.option("--calls", default=30, show_default=True, help="Measured calls per tool.")
@_json_option
@run_async
async def bench_mcp(files: int, total_mb: float, calls: int, as_json: bool) -> None:
    """Tool-call latency (p50/p95) through the SDK's client over HTTP on a generated index."""
    from palimpsest.devtools.bench.mcp import run_bench_mcp

    if files < 100 or calls < 1:
        fail("--files must be at least 100 and --calls at least 1")
    result = await run_bench_mcp(settings(), files=files, total_bytes=int(total_mb * 1e6), calls=calls)
    emit(result, as_json=True)


@bench.command("ui")
@_files_option
@_total_mb_option
@click.option("--findings", default=200, show_default=True, help="Documentation findings of the analysis.")
@click.option("--reviews", default=100, show_default=True, help="Stored reviews of the repository.")
@click.option("--calls", default=30, show_default=True, help="Measured calls per page and per route.")
@_json_option
@run_async
async def bench_ui(
    files: int, total_mb: float, findings: int, reviews: int, calls: int, as_json: bool
) -> None:
    """Server time (p50/p95) of each /ui page against the JSON route serving the same data."""
    from palimpsest.devtools.bench.ui import run_bench_ui

    if files < 100 or calls < 1 or findings < 1 or reviews < 1:
        fail("--files must be at least 100, and --calls, --findings and --reviews at least 1")
    result = await run_bench_ui(
        settings(),
        files=files,
        total_bytes=int(total_mb * 1e6),
        findings=findings,
        reviews=reviews,
        calls=calls,
    )
    emit(result, as_json=True)


@bench.command("graph")
@_files_option
@_total_mb_option
@click.option("--rounds", default=3, show_default=True, type=click.IntRange(min=1))
@_json_option
@run_async
async def bench_graph(files: int, total_mb: float, rounds: int, as_json: bool) -> None:
    """First graph query of a new snapshot: resolving it (before) against loading it stored."""
    from palimpsest.devtools.bench.graph import run_bench_graph

    if files < 100:
        fail("--files must be at least 100")
    result = await run_bench_graph(settings(), files=files, total_bytes=int(total_mb * 1e6), rounds=rounds)
    emit(result, as_json=True)


@bench.command("cochange")
@_repo_option
@click.option("--rev", default="HEAD", show_default=True, help="Index and history head.")
@click.option("--commits", default=800, show_default=True, type=click.IntRange(min=1))
@click.option("--trials", default=300, show_default=True, type=click.IntRange(min=1))
@click.option("--k", "k", default=10, show_default=True, type=click.IntRange(min=1))
@click.option("--seed", "seeds", multiple=True, type=int, help="Sampling seed; repeat for several runs.")
@_json_option
@run_async
async def bench_cochange(
    repo: Path, rev: str, commits: int, trials: int, k: int, seeds: tuple[int, ...], as_json: bool
) -> None:
    """Leave-one-out co-change prediction against the repository's own history."""
    from palimpsest.devtools.bench.cochange import BenchConfig
    from palimpsest.devtools.bench.cochange_run import bench_text, run_bench_cochange

    config = BenchConfig(commits=commits, trials=trials, k=k)
    result = await run_bench_cochange(settings(), repo.resolve(), rev, config, list(seeds) or [1])
    emit(result, as_json=as_json, text=bench_text(result))


@bench.command("edges")
@_repo_option
@click.option("--rev", default="HEAD", show_default=True, help="The revision whose graph is checked.")
@click.option("--sample", default=400, show_default=True, type=click.IntRange(min=1))
@click.option("--seed", default=1, show_default=True)
@_json_option
def bench_edges(repo: Path, rev: str, sample: int, seed: int, as_json: bool) -> None:
    """Precision of reference edges: the share of a sample whose target file the source reaches
    through its imports (re-exports followed), checked by a reader independent of the graph code."""
    from palimpsest.devtools.bench.edges import run_bench_edges

    emit(run_bench_edges(repo.resolve(), rev, sample=sample, seed=seed), as_json=True)


# ------------------------------------------------------------------------------- review and analysis


@bench.command("review")
@_files_option
@_total_mb_option
@click.option("--runs", default=20, show_default=True, help="Reviews measured per PR size.")
@_json_option
@run_async
async def bench_review(files: int, total_mb: float, runs: int, as_json: bool) -> None:
    """Context assembly latency (no model) for PRs of 1, 10 and 50 files on a generated index."""
    from palimpsest.devtools.bench.review import run_bench_review

    if files < 100:
        fail("--files must be at least 100")
    result = await run_bench_review(settings(), files=files, total_bytes=int(total_mb * 1e6), runs=runs)
    emit(result, as_json=as_json, text=None)


@bench.command("replay")
@_repo_option
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
@_json_option
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
    from palimpsest.devtools.bench.history import ReplayError
    from palimpsest.devtools.bench.replay import markdown_report, run_bench_replay

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


@bench.command("cochange-warning")
@_repo_option
@click.option("--changes", default=16, show_default=True, help="Changes sampled per seed.")
@click.option("--seed", "seeds", multiple=True, type=int, help="Sampling seed (repeatable; default 1).")
@click.option("--less-two", is_flag=True, help="Also replay each change less two of its files.")
@_json_option
@run_async
async def bench_cochange_warning(
    repo: Path, changes: int, seeds: tuple[int, ...], less_two: bool, as_json: bool
) -> None:
    """The co-change warning on merged changes replayed through the real reviewer: each change
    less one file (the file expected) and complete (nothing expected); precision, recall, silence
    and two baselines at the same list length."""
    from palimpsest.devtools.bench.cochange_warning import run_bench_cochange_warning
    from palimpsest.devtools.bench.history import ReplayError

    if changes < 1:
        fail("--changes must be at least 1")
    try:
        result = await run_bench_cochange_warning(
            settings(), repo=repo, changes=changes, seeds=seeds or (1,), less_two=less_two, say=progress
        )
    except ReplayError as exc:
        fail(str(exc))
    emit(result, as_json=as_json, text=None)


@bench.command("drift-history")
@_repo_option
@click.option(
    "--commits", default=2000, show_default=True, help="First-parent commits mined for drift windows."
)
@click.option(
    "--at", "at", default=3, show_default=True, help="Commits analysed (those covering the most windows)."
)
@click.option(
    "--report",
    "report",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Also write the JSON here.",
)
@click.option("--timeout", "timeout_s", default=7200.0, show_default=True, help="Seconds per analysis.")
@_json_option
@run_async
async def bench_drift_history(
    repo: Path, commits: int, at: int, report: Path | None, timeout_s: float, as_json: bool
) -> None:
    """Recall on the repository's own history: drift its maintainers fixed (truth from git alone),
    analysed at the commits inside the drift windows."""
    import json

    from palimpsest.cli.session import session
    from palimpsest.devtools.bench.drift_history import run_bench_drift_history

    s = settings()
    async with session(s) as sess:
        result = await run_bench_drift_history(
            sess, s, repo.resolve(), commits=commits, at=at, timeout_s=timeout_s
        )
    if report is not None:
        report.write_text(json.dumps(result, indent=2, default=str))
    emit(result, as_json=as_json)


@bench.command("drift-future")
@_repo_option
@click.option(
    "--at-months-ago",
    "months",
    type=click.IntRange(1, 600),
    default=12,
    show_default=True,
    help="Analyse the repository as it was this many months before its head.",
)
@click.option("--timeout", "timeout_s", default=7200.0, show_default=True, help="Seconds for the analysis.")
@_json_option
@run_async
async def bench_drift_future(repo: Path, months: int, timeout_s: float, as_json: bool) -> None:
    """Generalisation without hand judgement: the doc lines the check flagged N months ago, the
    share of them the maintainers changed or removed by now, the base rate of all lines of the
    same docs, and the lift (the first over the second)."""
    from palimpsest.cli.session import session
    from palimpsest.devtools.bench.drift_future import run_bench_drift_future

    s = settings()
    async with session(s) as sess:
        try:
            result = await run_bench_drift_future(sess, s, repo.resolve(), months=months, timeout_s=timeout_s)
        except RuntimeError as exc:
            fail(str(exc))
    emit(result, as_json=as_json)


@bench.command("drift-prevent")
@_repo_option
@click.option(
    "--commits", default=2000, show_default=True, help="First-parent commits mined for drift windows."
)
@click.option(
    "--sample", default=20, show_default=True, help="Ordinary merged changes replayed for precision."
)
@click.option("--seed", type=int, default=1, show_default=True, help="Which ordinary changes are sampled.")
@click.option(
    "--taking",
    default=0,
    show_default=True,
    help="Of the sample, how many are drawn among changes that take something away (delete or rename "
    "a code file, remove a definition line).",
)
@click.option(
    "--max-removing", default=100, show_default=True, help="Removing commits (truth) replayed at most."
)
@_json_option
@run_async
async def bench_drift_prevent(
    repo: Path, commits: int, sample: int, seed: int, taking: int, max_removing: int, as_json: bool
) -> None:
    """Would the review of the change that caused drift have said so? Each drift-history window's
    removing commit replayed as a pull request through the reviewer (recall), and ordinary merged
    changes (precision of the left-behind doc findings, judged against git)."""
    from palimpsest.devtools.bench.drift_prevent import run_bench_drift_prevent

    result = await run_bench_drift_prevent(
        settings(),
        repo=repo,
        commits=commits,
        sample=sample,
        seed=seed,
        max_removing=max_removing,
        taking=taking,
        say=progress,
    )
    emit(result, as_json=as_json)


@bench.command("analyze")
@_repo_option
@click.option("--timeout", "timeout_s", default=7200.0, show_default=True, help="Seconds.")
@click.option(
    "--plant",
    "plant_names",
    type=click.IntRange(0, 200),
    default=0,
    help="Also analyse a scratch clone with this many doc-named definitions renamed (one commit "
    "each) and report the check's recall of them.",
)
@click.option(
    "--plant-paths",
    type=click.IntRange(0, 200),
    default=0,
    help="… and this many doc-named code files moved into a new folder.",
)
@click.option("--seed", type=int, default=1, show_default=True, help="Which names and files are planted.")
@_json_option
@run_async
async def bench_analyze(
    repo: Path, timeout_s: float, plant_names: int, plant_paths: int, seed: int, as_json: bool
) -> None:
    """One analysis of a real repository: commits walked, findings, seconds, peak memory; with
    --plant, the recall of drift planted in a scratch clone of it."""
    from palimpsest.cli.session import session
    from palimpsest.devtools.bench.analyze import run_bench_analyze, run_bench_planted

    s = settings()
    async with session(s) as sess:
        result = await run_bench_analyze(sess, s, repo.resolve(), timeout_s=timeout_s)
        if plant_names or plant_paths:
            result["planted"] = await run_bench_planted(
                sess,
                s,
                repo.resolve(),
                names=plant_names,
                paths=plant_paths,
                seed=seed,
                timeout_s=timeout_s,
            )
    emit(result, as_json=True)
