"""``palimpsest bench index``: ADR-0017's figure, measured through the real pipeline.

A TypeScript repository of ``files`` modules (imports, interfaces, classes, functions, comments,
a few docs; ``total_bytes`` in all) is written with ``git fast-import`` into a bare repository,
registered, and indexed through the bus by the in-process services on a scratch embedded stack
(or the configured servers). Measured: first build, an incremental build after one changed file,
the index's size in PostgreSQL, lexical search p95 over identifier and phrase queries, the
repository's cascade delete, and the peak RSS of the process and its parse workers. The first
build is read against yardsticks measured in the same run on the same files (``bench.floor``).

With ``source`` (``--repo PATH``) the corpus is a real repository's tree at ``rev`` instead: its
head commit alone is fetched into the scratch repository (``--depth 1``, so the recency scan that
runs beside the build in this process has one commit to read, as for the generated corpus), the
yardsticks see the files the build indexes (those its screen accepts), search queries are
identifiers found in those files, and the incremental build follows a one-line change to one of them.

``rounds`` repeats the first build of the same commit, each round read against the yardsticks
measured on either side of it, and reports the median: one build on a noisy moment of a shared
machine no longer sets the ratio.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import re
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from uuid import UUID

import psutil

from palimpsest.cli.local import register_path
from palimpsest.cli.pipeline import index_and_wait
from palimpsest.core.db import Conn, tenant_tx
from palimpsest.core.events import SnapshotBuilt
from palimpsest.core.git import resolve_ref, run_git
from palimpsest.core.settings import BaseServiceSettings
from palimpsest.devtools.bench.cpu import CpuMeter, role_of
from palimpsest.devtools.bench.floor import QUIET_TIMEOUT_S, round_ratios, yardsticks
from palimpsest.devtools.scratch import scratch_pipeline
from palimpsest.index.search import lexical_search

WORDS = [
    "account",
    "address",
    "amount",
    "audit",
    "balance",
    "batch",
    "billing",
    "cache",
    "cart",
    "catalog",
    "channel",
    "charge",
    "client",
    "config",
    "context",
    "coupon",
    "currency",
    "customer",
    "delivery",
    "discount",
    "document",
    "entry",
    "event",
    "feature",
    "filter",
    "handler",
    "history",
    "inventory",
    "invoice",
    "item",
    "ledger",
    "limit",
    "line",
    "merchant",
    "message",
    "metric",
    "order",
    "payment",
    "payout",
    "plan",
    "policy",
    "price",
    "product",
    "profile",
    "queue",
    "quota",
    "rate",
    "receipt",
    "refund",
    "region",
    "report",
    "request",
    "route",
    "schedule",
    "session",
    "shipment",
    "sku",
    "stock",
    "subscription",
    "tax",
    "tenant",
    "token",
    "transfer",
    "user",
    "vendor",
    "wallet",
    "warehouse",
    "webhook",
]
# every table of the code index (symbols and facts are columns of code_blobs since migration 0015;
# code_chunk_embeddings is empty in lexical mode, counted so that nothing is left out)
INDEX_TABLES = (
    "code_chunks",
    "code_chunk_embeddings",
    "code_blobs",
    "code_index_files",
    "code_index_snapshots",
)


def _pascal(rng: random.Random, n: int = 2) -> str:
    return "".join(rng.choice(WORDS).capitalize() for _ in range(n))


def _module(rng: random.Random, index: int, target: int) -> tuple[str, str, list[str]]:
    """One TypeScript module of about ``target`` bytes; returns (path, text, identifiers)."""
    area, sub = rng.choice(WORDS), rng.choice(WORDS)
    name = _pascal(rng)
    path = f"src/{area}/{sub}/{name[0].lower()}{name[1:]}{index}.ts"
    lines = [f"import {{ {_pascal(rng)} }} from '../{rng.choice(WORDS)}/{rng.choice(WORDS)}';"]
    idents = []
    kind = rng.random()
    if kind < 0.4:
        iface = f"{name}{index}Options"
        idents.append(iface)
        lines += [
            f"/** Options for {name.lower()} {rng.choice(WORDS)} handling. */",
            f"export interface {iface} {{",
        ]
        for _ in range(rng.randint(2, 5)):
            lines.append(
                f"  {rng.choice(WORDS)}{_pascal(rng, 1)}: {rng.choice(['string', 'number', 'boolean'])};"
            )
        lines.append("}")
    cls = f"{name}{index}Service"
    idents.append(cls)
    lines += [
        "",
        f"export class {cls} {{",
        f"  private readonly {rng.choice(WORDS)}Cache = new Map<string, number>();",
    ]
    while sum(len(x) + 1 for x in lines) < target - 60:
        method = f"{rng.choice(WORDS)}{_pascal(rng, 1)}"
        idents.append(method)
        lines += [
            f"  // {rng.choice(WORDS)} the {rng.choice(WORDS)} before {rng.choice(WORDS)}",
            f"  {method}(value: number): number {{",
            f"    return value * {rng.randint(2, 99)} + this.{rng.choice(WORDS)}Cache.size;",
            "  }",
        ]
    lines.append("}")
    return path, "\n".join(lines) + "\n", idents


def generate(files: int, total_bytes: int, seed: int = 17) -> Iterator[tuple[str, str, list[str]]]:
    rng = random.Random(seed)  # noqa: S311 - a reproducible corpus
    docs = max(1, files // 2000)
    avg = total_bytes / files
    for i in range(files - docs):
        target = max(120, int(rng.lognormvariate(0, 0.5) * avg * 0.88))
        yield _module(rng, i, target)
    for i in range(docs):
        area = rng.choice(WORDS)
        text = (
            f"# The {area} module\n\nGoverns: src/{area}\n\n"
            + "\n".join(f"- `{_pascal(rng)}` handles {rng.choice(WORDS)}." for _ in range(12))
            + "\n"
        )
        yield f"docs/{area}-{i}.md", text, []


def _fast_import(repo: Path, files: list[tuple[str, str]], *, parent: bool, message: str) -> None:
    chunks: list[bytes] = []
    for mark, (_, text) in enumerate(files, 1):
        data = text.encode()
        chunks.append(b"blob\nmark :%d\ndata %d\n%s\n" % (mark, len(data), data))
    msg = message.encode()
    commit = [
        b"commit refs/heads/main\n",
        b"committer Bench <bench@example.invalid> 1700000000 +0000\n",
        b"data %d\n%s\n" % (len(msg), msg),
    ]
    if parent:
        commit.append(b"from refs/heads/main^0\n")
    for mark, (path, _) in enumerate(files, 1):
        commit.append(b"M 100644 :%d %s\n" % (mark, path.encode()))
    stream = b"".join(chunks) + b"".join(commit) + b"done\n"
    subprocess.run(["git", "-C", str(repo), "fast-import", "--quiet", "--done"], input=stream, check=True)


def make_repository(
    root: Path, files: int, total_bytes: int
) -> tuple[Path, list[str], list[tuple[str, str]]]:
    repo = root / "bench.git"
    subprocess.run(["git", "init", "--quiet", "--bare", "-b", "main", str(repo)], check=True)
    generated = list(generate(files, total_bytes))
    _fast_import(repo, [(p, t) for p, t, _ in generated], parent=False, message="initial import")
    idents = [i for _, _, ids in generated for i in ids]
    return repo, idents, [(p, t) for p, t, _ in generated]


class RssSampler:
    """Peak resident memory of this process plus the workers below it (the parse workers; the
    servers and git left out, by the same roles as :class:`~palimpsest.devtools.bench.cpu.CpuMeter`)."""

    def __init__(self) -> None:
        self.peak = 0
        self._task: asyncio.Task[None] | None = None

    def sample(self) -> None:
        me = psutil.Process()
        total = me.memory_info().rss
        for child in me.children(recursive=True):
            with contextlib.suppress(psutil.Error):
                if role_of(child.name(), own=False, below=True) != "workers":
                    continue
                total += child.memory_info().rss
        self.peak = max(self.peak, total)

    async def _run(self) -> None:
        while True:
            self.sample()
            await asyncio.sleep(0.1)

    def __enter__(self) -> RssSampler:
        self._task = asyncio.get_running_loop().create_task(self._run())
        return self

    def __exit__(self, *exc: object) -> None:
        if self._task is not None:
            self._task.cancel()


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


_IDENTIFIER = re.compile(r"\b[A-Za-z_][A-Za-z0-9_]{5,40}\b")
# the snapshot's graph is stored within this (4.6 s for 50 000 files), or search is measured anyway
GRAPH_WAIT_S = 60.0


async def wait_for_graph(
    pool: Any, tenant: UUID, snapshot_id: UUID | None, timeout_s: float = GRAPH_WAIT_S
) -> float:
    """Seconds until the reviewer stored ``snapshot_id``'s graph, the work that follows a build in
    this process (resolving 50 000 files' graph takes seconds of CPU): search measured meanwhile
    measures that work's contention, not the search (it took bench index's p95 from ~12 to 60+ ms)."""
    started = time.perf_counter()
    while snapshot_id is not None and time.perf_counter() - started < timeout_s:
        async with tenant_tx(pool, tenant) as conn:
            cur = await conn.execute(
                "SELECT 1 FROM code_graphs WHERE snapshot_id = %s LIMIT 1", (snapshot_id,)
            )
            if await cur.fetchone() is not None:
                break
        await asyncio.sleep(0.2)
    return round(time.perf_counter() - started, 2)


async def copy_repository(
    root: Path, source: Path, rev: str
) -> tuple[Path, str, list[str], list[tuple[str, str]]]:
    """``rev`` of the repository at ``source`` as a one-commit bare repository under ``root``: the
    repository, the commit, identifiers for search queries, and the files its build indexes."""
    from palimpsest.chunker.parsing import Screened, screen
    from palimpsest.chunker.service import Settings as ChunkerSettings
    from palimpsest.core.git import ls_tree, read_blobs
    from palimpsest.core.settings import load

    commit = await resolve_ref(source, rev)
    repo = root / "bench.git"
    await run_git(["init", "--quiet", "--bare", "-b", "main", str(repo)])
    fetch = ["fetch", "--quiet", "--no-tags", "--depth", "1", "--", str(source), f"{commit}:refs/heads/main"]
    await run_git(fetch, cwd=repo, allowed_protocols=("file",))
    paths: dict[str, str] = {}  # each blob once, at its first path (as the build parses them)
    for entry in await ls_tree(repo, commit):
        if entry.mode in ("100644", "100755"):  # regular files (no links, no submodules)
            paths.setdefault(entry.sha, entry.path)
    max_bytes = load(ChunkerSettings).limits().max_file_bytes
    corpus: list[tuple[str, str]] = []
    async for sha, data in read_blobs(repo, paths):
        verdict = screen(paths[sha], data, max_bytes)
        if isinstance(verdict, Screened):
            corpus.append((paths[sha], verdict.text))
    corpus.sort()
    idents = sorted({m for _, text in corpus for m in _IDENTIFIER.findall(text[:20_000])})
    return repo, commit, idents, corpus


async def run_bench_index(
    settings: BaseServiceSettings,
    *,
    files: int,
    total_bytes: int,
    queries: int,
    source: Path | None = None,
    rev: str = "HEAD",
    rounds: int = 1,
    pgbouncer: bool = False,
    quiet_timeout_s: float = QUIET_TIMEOUT_S,
) -> dict[str, Any]:
    """The figures of one bench run. With ``rounds`` > 1 the first build is repeated that many times
    on the same commit (the repository deleted and registered again between rounds), each build
    followed by a yardstick measurement, so one slow moment of a shared machine moves one round,
    not the figure: ``first_build_s`` is the median of the rounds' builds and each ratio the median
    of the rounds' ratios (``floor.round_ratios``). Incremental, size, search and delete are
    measured once, after the first round, on a database nothing was deleted from yet, and so is the
    peak RSS (this process keeps what its in-process reviewer cached in earlier rounds).
    ``quiet_timeout_s`` bounds each wait for a quiet machine before the yardsticks."""
    with tempfile.TemporaryDirectory(prefix="palimpsest-bench-index-") as tmp:
        root = Path(tmp)
        t0 = time.perf_counter()
        if source is None:
            repo, idents, corpus = make_repository(root, files, total_bytes)
            origin: dict[str, Any] = {"corpus": "generated", "files": files}
            change = "// changed\nexport const benchChanged = 1;\n"
        else:
            repo, commit, idents, corpus = await copy_repository(root, source, rev)
            origin = {
                "corpus": "repository",
                "repository": str(source),
                "commit": commit,
                "files": len(corpus),
            }
            change = "\n"
        generate_s = time.perf_counter() - t0
        async with scratch_pipeline(settings, root / "home", pgbouncer=pgbouncer) as (
            _,
            stack,
            infra,
            tenant,
        ):
            pool, nc = infra.pool, infra.nc

            cpus: list[dict[str, Any]] = []  # each round's CPU by role (CpuMeter.report)

            async def first_build(
                marks: dict[str, Any],
            ) -> tuple[UUID, SnapshotBuilt, float, int, dict[str, Any]]:
                repo_id = await register_path(pool, tenant, repo)
                built, wall, peak, cpu = await _measured_build(pool, nc, tenant, repo_id)
                cpus.append(cpu)
                marks = await asyncio.to_thread(  # and just after
                    yardsticks, corpus, root, marks, quiet_timeout_s=quiet_timeout_s
                )
                return repo_id, built, wall, peak, marks

            marks = await asyncio.to_thread(  # the same files, just before
                yardsticks, corpus, root, quiet_timeout_s=quiet_timeout_s
            )
            repo_id, built, first_wall, peak, marks = await first_build(marks)
            if built.state != "ready":
                return {"error": f"first build {built.state}: {built.reason}"}
            db_bytes_first = await _db_bytes(infra, tenant)
            path, text = corpus[len(corpus) // 2]
            built_commit = await resolve_ref(repo, "HEAD")
            _fast_import(
                repo,
                [(path, text + change)],
                parent=True,
                message="one change",
            )
            t = time.perf_counter()
            incr = await index_and_wait(pool, nc, tenant, repo_id)
            incr_wall = time.perf_counter() - t
            db_bytes = await _db_bytes(infra, tenant)
            tables = await _table_mb(infra, tenant)
            graph_wait_s = await wait_for_graph(pool, tenant, incr[SnapshotBuilt].snapshot_id)
            search_load = os.getloadavg()
            latencies = await _search(infra, tenant, repo_id, idents, queries)
            t = time.perf_counter()
            await _delete_repository(pool, tenant, repo_id)
            delete_s = time.perf_counter() - t
            leftover = await _rows_left(infra, tenant, repo_id)
            builds, walls = [built], [first_wall]
            if rounds > 1:
                # the later rounds build the first round's commit
                await run_git(["update-ref", "HEAD", built_commit], cwd=repo)
            for _ in range(rounds - 1):
                repo_id, again, wall, _, marks = await first_build(marks)
                if again.state != "ready":
                    return {"error": f"first build {again.state}: {again.reason}"}
                builds.append(again)
                walls.append(wall)
                await _delete_repository(pool, tenant, repo_id)
        median = sorted(range(rounds), key=lambda i: builds[i].duration_s)[rounds // 2]
        ib = incr[SnapshotBuilt]
        return {
            "benchmark": "index",
            "postgres": "embedded" if stack.embedded_db else "external",
            "transaction_pooler": stack.transaction_pooler,  # statements not prepared (--pgbouncer)
            **origin,
            "source_bytes": sum(len(t.encode()) for _, t in corpus),
            "generate_s": round(generate_s, 2),
            "rounds": rounds,
            "first_build_s": builds[median].duration_s,
            "first_build_wall_s": round(walls[median], 2),
            "first_build_runs_s": [b.duration_s for b in builds],
            **marks,
            **round_ratios([b.duration_s for b in builds], marks),
            **cpu_figures(cpus[median], marks),
            "incremental_s": ib.duration_s,
            "incremental_wall_s": round(incr_wall, 2),
            "incremental_parsed_blobs": ib.parsed_blobs,
            "chunks": built.chunks,  # (the first round's: the others build the same commit)
            "symbols": built.symbols,
            "db_bytes_first": db_bytes_first,
            "db_bytes": db_bytes,
            "db_mb": round(db_bytes / 1e6, 1),
            "table_mb": tables,
            "first_timings": builds[median].timings,
            "incremental_timings": ib.timings,
            "delete_s": round(delete_s, 3),
            "rows_left_after_delete": leftover,
            "peak_rss_mb": round(peak / 1e6, 1),
            "search_queries": len(latencies),
            "search_after_graph_wait_s": graph_wait_s,
            "search_p50_ms": round(_pct(latencies, 0.5), 2),
            "search_p95_ms": round(_pct(latencies, 0.95), 2),
            "search_load_avg": [round(x, 2) for x in search_load],
        }


async def _measured_build(
    pool: Any, nc: Any, tenant: UUID, repo_id: UUID
) -> tuple[SnapshotBuilt, float, int, dict[str, Any]]:
    """Build ``repo_id`` through the pipeline: its ``snapshot.built``, the wall seconds until it
    arrived, the peak RSS meanwhile and where the machine's CPU went (``CpuMeter.report``)."""
    with RssSampler() as rss, CpuMeter() as cpu:
        t = time.perf_counter()
        built = (await index_and_wait(pool, nc, tenant, repo_id))[SnapshotBuilt]
        wall = time.perf_counter() - t
    return built, wall, rss.peak, cpu.report()


def cpu_figures(cpu: dict[str, Any], marks: dict[str, Any]) -> dict[str, Any]:
    """Where the reported round's CPU went (``cpu``: its ``CpuMeter.report``) against the floor's:
    the whole machine's CPU seconds from the build's request to its ``snapshot.built``, by role,
    beside the CPU the floor's workers spent on the same files, and the CPU seconds that a build of
    twice the floor's wall time has on this machine's cores (issue 23's target) -- what every part
    of the build together must fit in."""
    floor_cpu = marks.get("floor_cpu_s") or 0.0
    cores = psutil.cpu_count() or 1
    return {
        "first_build_cpu_s": cpu,
        "first_build_cpu_over_floor_cpu": round(cpu["total"] / floor_cpu, 2) if floor_cpu > 0 else None,
        "cpu_budget_at_2x_floor_s": round(2 * float(marks.get("floor_s") or 0.0) * cores, 2),
        "cores": cores,
    }


async def delete_repository_index(conn: Conn, repository_id: UUID) -> None:
    """Delete a repository's index in a few set-based statements, before the repository row goes
    (the bench's and the tests' reset between builds; no service deletes an index this way).

    Statement-level triggers (migration 0013) do the rest: deleting the snapshots deletes their
    file rows, deleting the blobs deletes their chunks, symbols, facts and embeddings (by
    repository, since no blob of it is left).
    """
    await conn.execute("DELETE FROM code_index_snapshots WHERE repository_id = %s", (repository_id,))
    await conn.execute("DELETE FROM code_blobs WHERE repository_id = %s", (repository_id,))


async def _delete_repository(pool: Any, tenant: UUID, repo_id: UUID) -> None:
    async with tenant_tx(pool, tenant) as conn:
        await delete_repository_index(conn, repo_id)
        await conn.execute("DELETE FROM repositories WHERE repository_id = %s", (repo_id,))


# each index table with its partitions, if any (code_chunk_embeddings has one per repository):
# a partitioned table's size is the sum of its partitions'
_TABLES = (
    " FROM pg_class p JOIN pg_class c"
    "   ON c.oid = p.oid OR c.oid IN (SELECT i.inhrelid FROM pg_inherits i WHERE i.inhparent = p.oid)"
    " WHERE p.relname = ANY(%s) AND p.relkind IN ('r', 'p') AND c.relkind = 'r'"
)


async def _db_bytes(infra: Any, tenant: UUID) -> int:
    async with tenant_tx(infra.pool, tenant) as conn:
        cur = await conn.execute(
            "SELECT sum(pg_total_relation_size(c.oid))::bigint AS n" + _TABLES, (list(INDEX_TABLES),)
        )
        row = await cur.fetchone()
        return int(row["n"] or 0) if row else 0


async def _table_mb(infra: Any, tenant: UUID) -> dict[str, float]:
    async with tenant_tx(infra.pool, tenant) as conn:
        cur = await conn.execute(
            "SELECT p.relname, sum(pg_table_size(c.oid)) AS t, sum(pg_indexes_size(c.oid)) AS i"
            + _TABLES
            + " GROUP BY p.relname",
            (list(INDEX_TABLES),),
        )
        out: dict[str, float] = {}
        for r in await cur.fetchall():
            out[f"{r['relname']}"] = round(int(r["t"]) / 1e6, 1)
            out[f"{r['relname']}_indexes"] = round(int(r["i"]) / 1e6, 1)
        return out


async def _rows_left(infra: Any, tenant: UUID, repo_id: UUID) -> int:
    total = 0
    async with tenant_tx(infra.pool, tenant) as conn:
        for table in ("code_chunks", "code_symbols", "code_facts", "code_blobs", "code_index_snapshots"):
            cur = await conn.execute(
                f"SELECT count(*) AS n FROM {table} WHERE repository_id = %s", (repo_id,)
            )
            row = await cur.fetchone()
            total += int(row["n"]) if row else 0
    return total


async def _search(infra: Any, tenant: UUID, repo_id: UUID, idents: list[str], n: int) -> list[float]:
    rng = random.Random(7)  # noqa: S311
    queries = [rng.choice(idents) for _ in range(n // 2)]
    queries += [f"{rng.choice(WORDS)} {rng.choice(WORDS)}" for _ in range(n - len(queries))]
    latencies = []
    async with tenant_tx(infra.pool, tenant) as conn:
        await lexical_search(conn, repo_id, "warm up cache", limit=10)
        for q in queries:
            t = time.perf_counter()
            await lexical_search(conn, repo_id, q, limit=10)
            latencies.append((time.perf_counter() - t) * 1000)
    return latencies


__all__ = ["copy_repository", "generate", "make_repository", "run_bench_index", "wait_for_graph"]
