"""``palimpsest bench search``: lexical search latency by query shape, beside ripgrep and ``git grep``.

The corpus is ``bench index``'s: a generated TypeScript repository of ``files`` modules, or a real
repository's tree at ``rev`` (``--repo``, one commit fetched into a scratch repository). It is
built through the real pipeline on a scratch stack; the search is measured once the snapshot's
follow-up work is done (its graph stored by the reviewer), so the figures are the search's own.

Queries are drawn from the index, per shape:

``identifier``   the name of a definition chunk (``MerchantVendor12Service``, ``KafkaProducer``)
``phrase2/3``    two or three consecutive words of a comment line
``rare``         one of the least frequent tenth of the words of the sampled chunks
``common``       one of the most frequent words of the sampled chunks
``path``         an identifier, filtered to the top two folders of a file that holds it
``language``     a common word, filtered to one of the index's languages

Each query runs, interleaved, through :func:`~palimpsest.index.search.lexical_search` (limit 10,
in a tenant transaction of its own, as the API runs it), ``rg --fixed-strings --ignore-case
--files-with-matches`` and ``git grep -F -i -l`` over a checkout of the same commit, with the
same path or language filter (a language is the file name endings its indexed files have). Our
search folds case, so the yardsticks do too. Reported per shape: p50/p95/p99 of the three, the
yardsticks' p95 over ours, and the top-10 overlap with ripgrep's hit files -- of the first ten
distinct files our search returns (a limit-40 call, not timed), the share that ripgrep also
finds, out of ``min(10, ripgrep's files)``; a query ripgrep finds nothing for is not counted.

Relevance, measured without hand judgement (issue 55): for the shapes whose query is a definition
chunk's name (identifier, path), the rank in our top 10 of the first chunk that defines it, as a
mean reciprocal rank (``definition_mrr``) and hit@1 (``definition_hit1``); for every shape the
share of our top 10 hits that is product code (the shared classifier's kind code, not tooling:
not tests, vendored, generated, example or tooling files), beside the same share among all the
files ripgrep finds (``product_share_top10``, ``product_share_all_matches``).

Cold: the embedded PostgreSQL is restarted ``cold_restarts`` times (the services stopped) and,
after each restart, one query of every shape runs on a new connection, the shapes in a rotated
order so that each is the very first after some restart. The operating system's page cache is
kept (dropping it would need root and slow every other process on the machine). With configured
servers there is nothing to restart and ``cold`` says so.

ripgrep is Debian's ``ripgrep``: installed with apt-get when missing and this runs as root; where
that cannot be done its yardstick is skipped and the reason printed and reported.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import random
import re
import shutil
import subprocess
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any
from uuid import UUID

from palimpsest.cli.local import register_path
from palimpsest.cli.output import progress
from palimpsest.cli.pipeline import index_and_wait
from palimpsest.cli.stack import Servers, StackInfo, open_stack, scratch_settings
from palimpsest.core.db import Pool, open_pool, tenant_tx
from palimpsest.core.events import SnapshotBuilt
from palimpsest.core.git import resolve_ref, run_git
from palimpsest.core.settings import BaseServiceSettings
from palimpsest.devtools.bench.index import _db_bytes, _pct, copy_repository, make_repository, wait_for_graph
from palimpsest.devtools.scratch import scratch_pipeline
from palimpsest.index.codefacts.classify import is_primary_source
from palimpsest.index.search import SearchHit, lexical_search

__all__ = ["SHAPES", "Query", "ensure_ripgrep", "run_bench_search"]

SHAPES = ("identifier", "phrase2", "phrase3", "rare", "common", "path", "language")
_SAMPLE_CHUNKS = 3000
_COMMENT = re.compile(r"^\s*(?://+|#+|/?\*+|--|;+)\s*(.+)$", re.MULTILINE)
_WORD = re.compile(r"[A-Za-z]{3,}")
_LEXWORD = re.compile(r"[A-Z]?[a-z]{4,20}")  # words, and the words of camelCase compounds
_IDENT = re.compile(r"^[A-Za-z_$][A-Za-z0-9_$]{3,80}$")
_DEFINED = ("identifier", "path")  # the shapes whose query is a definition chunk's name
_NOT_DEFINITIONS = ("window", "section")  # chunk kinds that define nothing


@dataclass(frozen=True, slots=True)
class Query:
    shape: str
    text: str
    path_prefix: str | None = None
    language: str | None = None
    globs: tuple[str, ...] = ()  # the language's file name endings, for the yardsticks


def ensure_ripgrep() -> tuple[str | None, str | None]:
    """The path of ``rg``, installing Debian's ``ripgrep`` when missing (as root, with apt-get);
    or (None, why it is not there)."""
    found = shutil.which("rg")
    if found:
        return found, None
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        return (
            None,
            "rg is not installed and cannot be installed here (needs root and apt-get: apt-get install ripgrep)",
        )
    progress("installing Debian's ripgrep (apt-get install ripgrep)…")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    install = ["apt-get", "install", "-y", "-qq", "--no-install-recommends", "ripgrep"]
    done = subprocess.run(install, capture_output=True, env=env, check=False)
    if done.returncode != 0:  # the package lists may be missing on a fresh machine
        subprocess.run(["apt-get", "update", "-qq"], capture_output=True, env=env, check=False)
        done = subprocess.run(install, capture_output=True, env=env, check=False)
    if done.returncode != 0:
        tail = done.stderr.decode(errors="replace").strip().splitlines()[-1:] or ["no output"]
        return None, f"apt-get install ripgrep failed: {tail[0]}"
    found = shutil.which("rg")
    return (found, None) if found else (None, "apt-get installed ripgrep but rg is not on PATH")


def _version(tool: str) -> str:
    out = subprocess.run([tool, "--version"], capture_output=True, text=True, check=False)
    return out.stdout.splitlines()[0] if out.stdout else tool


# ----------------------------------------------------------------------------- the queries


async def draw_queries(
    pool: Pool, tenant: UUID, repo_id: UUID, snapshot_id: UUID, per_shape: int, seed: int = 7
) -> list[Query]:
    """``per_shape`` queries of every shape, drawn from the index (see the module docstring)."""
    rng = random.Random(seed)  # noqa: S311 - a reproducible draw
    params = {"repo": repo_id, "snap": snapshot_id, "n": _SAMPLE_CHUNKS}
    async with tenant_tx(pool, tenant) as conn:
        cur = await conn.execute("SELECT setseed(%s)", (rng.random() * 2 - 1,))
        cur = await conn.execute(
            "SELECT DISTINCT ON (c.name) c.name, f.path FROM code_chunks c"
            " JOIN code_index_files f ON f.snapshot_id = %(snap)s AND f.blob_sha = c.blob_sha"
            " WHERE c.repository_id = %(repo)s AND c.kind NOT IN ('window', 'section') AND c.name IS NOT NULL"
            " ORDER BY c.name, f.path",
            params,
        )
        named = [(r["name"], r["path"]) for r in await cur.fetchall() if _IDENT.match(r["name"])]
        cur = await conn.execute(
            "SELECT c.content FROM code_chunks c WHERE c.repository_id = %(repo)s AND EXISTS ("
            "  SELECT 1 FROM code_index_files f WHERE f.snapshot_id = %(snap)s AND f.blob_sha = c.blob_sha"
            "  AND f.kind = 'code') ORDER BY random() LIMIT %(n)s",
            params,
        )
        contents = [r["content"] for r in await cur.fetchall()]
        cur = await conn.execute(
            "SELECT language, path FROM code_index_files WHERE snapshot_id = %(snap)s"
            " AND language IS NOT NULL AND skip_reason IS NULL",
            params,
        )
        by_language: dict[str, set[str]] = {}
        counts: Counter[str] = Counter()
        for r in await cur.fetchall():
            suffix = PurePosixPath(r["path"]).suffix
            if suffix:
                by_language.setdefault(r["language"], set()).add(f"*{suffix}")
                counts[r["language"]] += 1
    phrases: dict[int, list[str]] = {2: [], 3: []}
    docs: Counter[str] = Counter()
    for text in contents:
        docs.update({w.lower() for w in _LEXWORD.findall(text)})
        for m in _COMMENT.finditer(text):
            words = m.group(1).split()
            for n in (2, 3):
                for i in range(len(words) - n + 1):
                    run = words[i : i + n]
                    if all(_WORD.fullmatch(w) for w in run):
                        phrases[n].append(" ".join(run))
    common = [w for w, _ in docs.most_common(60)]
    # the least frequent tenth of the sampled words (words found once, on a real repository)
    by_rarity = sorted((k, w) for w, k in docs.items() if len(w) >= 5)
    rare = [w for _, w in by_rarity[: max(per_shape, len(by_rarity) // 10)]]
    languages = [lang for lang, _ in counts.most_common(3)]

    def pick(items: Sequence[Any], k: int) -> list[Any]:
        items = list(items)
        return (
            rng.sample(items, k)
            if len(items) >= k
            else [rng.choice(items) for _ in range(k)]
            if items
            else []
        )

    out: list[Query] = []
    out += [Query("identifier", name) for name, _ in pick(named, per_shape)]
    out += [Query("phrase2", p) for p in pick(sorted(set(phrases[2])), per_shape)]
    out += [Query("phrase3", p) for p in pick(sorted(set(phrases[3])), per_shape)]
    out += [Query("rare", w) for w in pick(rare, per_shape)]
    out += [Query("common", w) for w in pick(common, per_shape)]
    for name, path in pick(named, per_shape):
        parts = PurePosixPath(path).parts[:-1][:2]
        out.append(Query("path", name, path_prefix="/".join(parts) + "/" if parts else None))
    for word in pick(common, per_shape):
        if languages:
            lang = rng.choice(languages)
            out.append(Query("language", word, language=lang, globs=tuple(sorted(by_language[lang]))))
    return out


# ----------------------------------------------------------------------------- the yardsticks


def _pathspec(q: Query) -> list[str]:
    if q.path_prefix:
        return [q.path_prefix]
    return list(q.globs)


def run_rg(rg: str, checkout: Path, q: Query) -> tuple[float, set[str]]:
    """ripgrep's wall milliseconds and hit files for ``q``, run from the checkout's root."""
    args = [rg, "--fixed-strings", "--ignore-case", "--files-with-matches", "--no-messages"]
    for glob in q.globs:
        args += ["--glob", glob]
    args += ["--", q.text]
    if q.path_prefix:
        args.append(q.path_prefix)
    t = time.perf_counter()
    out = subprocess.run(args, cwd=checkout, capture_output=True, check=False)
    ms = (time.perf_counter() - t) * 1000
    return ms, {line.removeprefix("./") for line in out.stdout.decode(errors="replace").splitlines() if line}


def run_git_grep(checkout: Path, q: Query) -> tuple[float, int]:
    """``git grep -F -i -l``'s wall milliseconds and number of hit files for ``q``."""
    args = ["git", "-C", str(checkout), "grep", "-F", "-i", "-l", "-e", q.text, "--", *_pathspec(q)]
    t = time.perf_counter()
    out = subprocess.run(args, capture_output=True, check=False)
    ms = (time.perf_counter() - t) * 1000
    return ms, len(out.stdout.splitlines())


async def _ours(
    pool: Pool, tenant: UUID, repo_id: UUID, q: Query, limit: int = 10
) -> tuple[float, list[SearchHit]]:
    t = time.perf_counter()
    async with tenant_tx(pool, tenant) as conn:
        hits = await lexical_search(
            conn, repo_id, q.text, limit=limit, path_prefix=q.path_prefix, language=q.language
        )
    ms = (time.perf_counter() - t) * 1000
    return ms, hits


def definition_rank(q: Query, hits: Sequence[SearchHit], k: int = 10) -> int | None:
    """For a query that names an identifier (shapes identifier and path, drawn from the index's
    definition chunks), the 1-based rank among the first ``k`` hits of the first chunk that
    defines it (a definition chunk of that name, case folded as the search folds it); 0 when none
    of them does; None for the other shapes."""
    if q.shape not in _DEFINED:
        return None
    name = q.text.lower()
    for i, h in enumerate(hits[:k], 1):
        if h.name is not None and h.name.lower() == name and h.kind not in _NOT_DEFINITIONS:
            return i
    return 0


def product_share(paths: Sequence[str] | set[str]) -> float | None:
    """The share of ``paths`` that is product code (``classify``: kind code, not tooling), rather
    than tests, vendored, generated, example or tooling files; None for no paths."""
    paths = list(paths)
    if not paths:
        return None
    return round(sum(is_primary_source(p) for p in paths) / len(paths), 3)


def overlap(ours: list[str], rg_files: set[str], k: int = 10) -> float | None:
    """The share of ``min(k, len(rg_files))`` that our first ``k`` distinct files cover; None
    when ripgrep found nothing."""
    if not rg_files:
        return None
    return round(len(set(ours[:k]) & rg_files) / min(k, len(rg_files)), 3)


def _stats(values: list[float]) -> dict[str, float | int | None]:
    if not values:
        return {"n": 0, "p50": None, "p95": None, "p99": None}
    return {
        "n": len(values),
        "p50": round(_pct(values, 0.5), 2),
        "p95": round(_pct(values, 0.95), 2),
        "p99": round(_pct(values, 0.99), 2),
    }


def _ratio(a: float | int | None, b: float | int | None) -> float | None:
    return round(float(a) / float(b), 1) if a is not None and b else None


# ----------------------------------------------------------------------------- the run


async def _corpus(
    root: Path, source: Path | None, rev: str, files: int, total_bytes: int
) -> tuple[Path, str, dict[str, Any], Path]:
    """The scratch repository under ``root`` (generated, or ``source`` at ``rev``), its commit,
    what the report says of it, and a checkout of that commit for the yardsticks."""
    if source is None:
        progress(f"generating {files} files…")
        repo, _, _ = make_repository(root, files, total_bytes)
        commit = await resolve_ref(repo, "HEAD")
        origin: dict[str, Any] = {"corpus": "generated", "files": files}
    else:
        repo, commit, _, corpus = await copy_repository(root, source, rev)
        origin = {"corpus": "repository", "repository": str(source), "files": len(corpus)}
    checkout = root / "checkout"
    await run_git(["clone", "--quiet", "--", str(repo), str(checkout)], allowed_protocols=("file",))
    return repo, commit, origin, checkout


async def run_bench_search(
    settings: BaseServiceSettings,
    *,
    files: int,
    total_bytes: int,
    queries: int,
    source: Path | None = None,
    rev: str = "HEAD",
    cold_restarts: int = 5,
    keep: Path | None = None,
) -> dict[str, Any]:
    """The figures of one ``bench search`` run; ``queries`` is per shape.

    ``keep``: a directory that holds the corpus, its checkout and the scratch stack after the run;
    a later run given the same directory and corpus reuses its index (the migrations run again, so
    a change of the search's SQL functions is measured on the same rows) instead of building one."""
    rg, rg_skip = ensure_ripgrep()
    if rg_skip:
        progress(f"ripgrep yardstick skipped: {rg_skip}")
    with contextlib.ExitStack() as exits:
        if keep is None:
            root = Path(exits.enter_context(tempfile.TemporaryDirectory(prefix="palimpsest-bench-search-")))
        else:
            root = keep
            root.mkdir(parents=True, exist_ok=True)
        wanted = {
            "source": str(source) if source else None,
            "rev": rev,
            "files": files,
            "total_bytes": total_bytes,
        }
        built_info = _kept(root, wanted)
        if built_info is None:
            built_info = await _build(settings, root, source, rev, files, total_bytes)
            if "error" in built_info:
                return built_info
            if keep is not None:
                (root / _KEPT).write_text(json.dumps({"corpus": wanted, **built_info}))
        else:
            progress(f"reusing the index kept in {root}")
        tenant, repo_id = UUID(built_info["tenant"]), UUID(built_info["repository_id"])
        home, checkout = root / "home", root / "checkout"
        # the services are stopped: the search runs in a quiet process, as an API replica serves it
        servers = Servers()
        cold: dict[str, list[float]] = {shape: [] for shape in SHAPES}
        async with open_stack(scratch_settings(settings, home), servers=servers) as info:
            pool = await open_pool(
                info.app_url, transaction_pooler=info.transaction_pooler, max_size=2, name="bench-search"
            )
            try:
                drawn = await draw_queries(pool, tenant, repo_id, UUID(built_info["snapshot_id"]), queries)
                embedded = info.embedded_db
                if embedded and servers.pg is not None:
                    pool = await _cold(pool, servers, info, tenant, repo_id, drawn, cold_restarts, cold)
                progress(f"{len(drawn)} queries: ours, rg and git grep interleaved…")
                rows = await _measure(pool, tenant, repo_id, drawn, checkout, rg)
            finally:
                await pool.close()
        load = os.getloadavg()
    return {
        "benchmark": "search",
        "postgres": "embedded" if embedded else "external",
        **built_info["origin"],
        "commit": built_info["commit"],
        "chunks": built_info["chunks"],
        "first_build_s": built_info["first_build_s"],
        "db_mb": built_info["db_mb"],
        "graph_wait_s": built_info["graph_wait_s"],
        "chunk_storage": built_info["chunk_storage"],
        "index_reused": built_info.get("reused", False),
        "cold": (
            f"embedded PostgreSQL restarted {cold_restarts} times, one query per shape after each"
            " (the OS page cache kept)"
            if embedded
            else "skipped: PostgreSQL is configured, not embedded (nothing to restart)"
        ),
        "ripgrep": _version(rg) if rg else {"skipped": rg_skip},
        "git": _version("git"),
        "load_avg_at_end": [round(x, 2) for x in load],
        "cores": os.cpu_count(),
        "all_shapes": _all(rows),
        "shapes": _by_shape(rows, cold),
    }


_KEPT = "bench-search.json"


def _kept(root: Path, wanted: dict[str, Any]) -> dict[str, Any] | None:
    """The build a previous run kept under ``root`` for the same corpus, or None."""
    try:
        kept = json.loads((root / _KEPT).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(kept, dict) or kept.get("corpus") != wanted:
        return None
    return {**kept, "reused": True}


async def _build(
    settings: BaseServiceSettings, root: Path, source: Path | None, rev: str, files: int, total_bytes: int
) -> dict[str, Any]:
    """The corpus under ``root`` indexed through the pipeline (home ``root/home``): what the report
    says of the build, or ``{"error": ...}``."""
    if (root / "bench.git").exists() or (root / "checkout").exists():  # a run that did not finish
        shutil.rmtree(root / "bench.git", ignore_errors=True)
        shutil.rmtree(root / "checkout", ignore_errors=True)
        shutil.rmtree(root / "home", ignore_errors=True)
    repo, commit, origin, _checkout = await _corpus(root, source, rev, files, total_bytes)
    progress("indexing through the pipeline…")
    async with scratch_pipeline(settings, root / "home") as (_s, _stack, infra, tenant):
        repo_id = await register_path(infra.pool, tenant, repo)
        built = (await index_and_wait(infra.pool, infra.nc, tenant, repo_id))[SnapshotBuilt]
        if built.state != "ready" or built.snapshot_id is None:
            return {"error": f"build {built.state}: {built.reason}"}
        graph_wait_s = await wait_for_graph(infra.pool, tenant, built.snapshot_id)
        db_bytes = await _db_bytes(infra, tenant)
        storage = await chunk_storage(infra.pool, tenant, repo_id)
    return {
        "tenant": str(tenant),
        "repository_id": str(repo_id),
        "snapshot_id": str(built.snapshot_id),
        "origin": origin,
        "commit": commit,
        "chunks": built.chunks,
        "first_build_s": built.duration_s,
        "db_mb": round(db_bytes / 1e6, 1),
        "graph_wait_s": graph_wait_s,
        "chunk_storage": storage,
    }


async def _cold(
    pool: Pool,
    servers: Servers,
    info: StackInfo,
    tenant: UUID,
    repo_id: UUID,
    drawn: list[Query],
    restarts: int,
    cold: dict[str, list[float]],
) -> Pool:
    """Restart the embedded PostgreSQL ``restarts`` times; after each, one query of every shape on
    a new pool (shapes rotated, so each is the very first once), its milliseconds added to
    ``cold``. Returns the pool open on the last restart."""
    first: dict[str, Query] = {}
    for q in drawn:
        first.setdefault(q.shape, q)
    pg = servers.pg
    if pg is None:
        return pool
    for r in range(restarts):
        await pool.close()
        await asyncio.to_thread(pg.stop)
        await asyncio.to_thread(pg.start)
        pool = await open_pool(
            info.app_url, transaction_pooler=info.transaction_pooler, max_size=2, name="bench-search"
        )
        for shape in [*SHAPES[r % len(SHAPES) :], *SHAPES[: r % len(SHAPES)]]:
            if shape in first:
                ms, _ = await _ours(pool, tenant, repo_id, first[shape])
                cold[shape].append(ms)
    return pool


async def chunk_storage(pool: Pool, tenant: UUID, repo_id: UUID) -> dict[str, int]:
    """How the repository's chunk rows are stored: how many contents and lexical vectors are
    compressed (migration 0039's target) or moved out of line to TOAST, which a search that ranks
    or returns them decompresses or reads back."""
    async with tenant_tx(pool, tenant) as conn:
        cur = await conn.execute(
            "SELECT count(*) AS rows,"
            " count(*) FILTER (WHERE pg_column_compression(content) IS NOT NULL) AS content_compressed,"
            " count(*) FILTER (WHERE pg_column_toast_chunk_id(content) IS NOT NULL) AS content_out_of_line,"
            " count(*) FILTER (WHERE pg_column_compression(lexical) IS NOT NULL) AS lexical_compressed,"
            " count(*) FILTER (WHERE pg_column_toast_chunk_id(lexical) IS NOT NULL) AS lexical_out_of_line"
            " FROM code_chunks WHERE repository_id = %s",
            (repo_id,),
        )
        row = await cur.fetchone()
    return {k: int(v) for k, v in (row or {}).items()}


def _all(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Every shape's queries together: the three tools' percentiles and the ratios of their p95."""
    ours = _stats([r["ours_ms"] for r in rows])
    rg_s = _stats([r["rg_ms"] for r in rows if r["rg_ms"] is not None])
    gg = _stats([r["git_grep_ms"] for r in rows])
    return {
        "ours_ms": ours,
        "rg_ms": rg_s,
        "git_grep_ms": gg,
        "rg_p95_over_ours_p95": _ratio(rg_s["p95"], ours["p95"]),
        "git_grep_p95_over_ours_p95": _ratio(gg["p95"], ours["p95"]),
    }


def _mean(values: Sequence[float | None]) -> float | None:
    kept = [v for v in values if v is not None]
    return round(sum(kept) / len(kept), 3) if kept else None


def relevance(rows: list[dict[str, Any]], ranks: list[int]) -> dict[str, Any]:
    """A shape's relevance, measured without judgement: for identifier queries the mean
    reciprocal rank and hit@1 of the chunk that defines the identifier (:func:`definition_rank`);
    for every shape the mean product share of our top 10 beside that of all ripgrep's matching
    files (:func:`product_share`)."""
    out: dict[str, Any] = {}
    if ranks:
        out["definition_mrr"] = round(sum(1 / r for r in ranks if r) / len(ranks), 3)
        out["definition_hit1"] = round(sum(r == 1 for r in ranks) / len(ranks), 3)
    out["product_share_top10"] = _mean([r["product_top10"] for r in rows])
    out["product_share_all_matches"] = _mean([r["product_all"] for r in rows])
    return out


def _query_of(row: dict[str, Any]) -> dict[str, Any]:
    return {k: row[k] for k in ("q", "path", "language") if row[k]}


def _by_shape(rows: list[dict[str, Any]], cold: dict[str, list[float]]) -> dict[str, Any]:
    """The report's figures of every shape, from :func:`_measure`'s rows and the cold latencies."""
    shapes_out: dict[str, Any] = {}
    for shape in SHAPES:
        mine = [r for r in rows if r["shape"] == shape]
        if not mine:
            continue
        ours = _stats([r["ours_ms"] for r in mine])
        rg_s = _stats([r["rg_ms"] for r in mine if r["rg_ms"] is not None])
        gg = _stats([r["git_grep_ms"] for r in mine])
        overlaps = [r["overlap"] for r in mine if r["overlap"] is not None]
        ranks = [r["definition_rank"] for r in mine if r["definition_rank"] is not None]
        shapes_out[shape] = {
            "queries": len(mine),
            "ours_ms": ours,
            "ours_cold_ms": {
                "n": len(cold[shape]),
                "p50": round(_pct(cold[shape], 0.5), 2) if cold[shape] else None,
                "max": round(max(cold[shape]), 2) if cold[shape] else None,
            },
            "rg_ms": rg_s,
            "git_grep_ms": gg,
            "rg_p95_over_ours_p95": _ratio(rg_s["p95"], ours["p95"]),
            "git_grep_p95_over_ours_p95": _ratio(gg["p95"], ours["p95"]),
            "overlap_top10": round(sum(overlaps) / len(overlaps), 3) if overlaps else None,
            "overlap_queries": len(overlaps),
            **relevance(mine, ranks),
            "examples": [_query_of(r) for r in mine[:3]],
            # what the tail is made of: the slowest queries of the shape, with ripgrep's time beside
            "slowest": [
                {
                    **{
                        k: v
                        for k, v in (("q", r["q"]), ("path", r["path"]), ("language", r["language"]))
                        if v
                    },
                    "ours_ms": round(r["ours_ms"], 2),
                    "rg_ms": None if r["rg_ms"] is None else round(r["rg_ms"], 2),
                }
                for r in sorted(mine, key=lambda r: -r["ours_ms"])[:3]
            ],
        }
    return shapes_out


async def _measure(
    pool: Pool, tenant: UUID, repo_id: UUID, drawn: list[Query], checkout: Path, rg: str | None
) -> list[dict[str, Any]]:
    """Each query through ours, ripgrep and git grep in turn (a slow moment of the machine falls
    on all three), after one untimed warm-up of each."""
    if drawn:
        await _ours(pool, tenant, repo_id, drawn[0])
        if rg:
            await asyncio.to_thread(run_rg, rg, checkout, drawn[0])
        await asyncio.to_thread(run_git_grep, checkout, drawn[0])
    rows = []
    for q in drawn:
        ours_ms, first = await _ours(pool, tenant, repo_id, q)
        rg_ms, rg_files = await asyncio.to_thread(run_rg, rg, checkout, q) if rg else (None, set())
        gg_ms, _ = await asyncio.to_thread(run_git_grep, checkout, q)
        _, more = await _ours(pool, tenant, repo_id, q, limit=40)  # the overlap's files, not timed
        top = list(dict.fromkeys(h.path for h in more))
        rows.append(
            {
                "shape": q.shape,
                "q": q.text,
                "path": q.path_prefix,
                "language": q.language,
                "ours_ms": ours_ms,
                "rg_ms": rg_ms,
                "git_grep_ms": gg_ms,
                "overlap": overlap(top, rg_files) if rg else None,
                "definition_rank": definition_rank(q, first),
                "product_top10": product_share([h.path for h in first]),
                "product_all": product_share(rg_files) if rg else None,
            }
        )
    return rows
