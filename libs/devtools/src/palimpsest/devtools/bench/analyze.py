"""``palimpsest bench analyze --repo PATH``: what an analysis costs and finds on a real repository.

The repository is indexed and analysed through the bus, as ``palimpsest analyze`` does. Then the
documentation check is run once more in this process, alone, to measure it: the one pass over
first-parent history (commits walked, old blobs read), the blame of the claimed lines, seconds,
and peak memory — the check's Python heap peak (a second run under ``tracemalloc``), the
process's resident set sampled every 20 ms during the first run (its rise above the level before
it; the embedded stack's services share the process), and the largest finished child process
(git). The JSON also lists
every finding with its evidence (for judging them one by one) and the selection's share of code
chunks from the primary source packages.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import resource
import tempfile
import time
import tracemalloc
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any
from uuid import UUID

from palimpsest.cli.output import progress
from palimpsest.cli.session import Session
from palimpsest.core.db import tenant_tx
from palimpsest.core.settings import BaseServiceSettings

__all__ = ["run_bench_analyze", "run_bench_planted"]

_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


async def run_bench_analyze(
    sess: Session, settings: BaseServiceSettings, repo: Path, *, timeout_s: float = 7200.0
) -> dict[str, Any]:
    """Index and analyse ``repo`` through the bus, then measure the documentation check alone."""
    from palimpsest.cli.commands_analyze import run_analysis

    started = time.monotonic()
    view = await run_analysis(sess, settings, str(repo), reindex=True, timeout_s=timeout_s)
    pipeline_s = time.monotonic() - started
    tenant = await _tenant(sess, settings)
    check = await _measure_check(sess, tenant, UUID(view["repository_id"]), repo)
    return {
        "repository": str(repo),
        "commit": view["commit"],
        "pipeline_s": round(pipeline_s, 2),
        "analysis_duration_s": view["duration_s"],
        **check,
        "selection": selection_share(view),
        "link_check": link_check(
            repo, view["commit"], view["doc_findings"] + unresolved_links(view), check["unverified_listed"]
        ),
        "findings": view["doc_findings"],
        "unresolved_links": unresolved_links(view),
    }


def unresolved_links(view: dict[str, Any]) -> list[dict[str, Any]]:
    """The analysis's unresolved links (shown apart from its findings, in ``facts.doc_check``),
    as findings of kind ``unresolved_link``."""
    check = (view.get("facts") or {}).get("doc_check") or {}
    return [{**u, "kind": "unresolved_link"} for u in check.get("unresolved_links") or []]


def link_check(
    repo: Path, commit: str, findings: list[dict[str, Any]], unverified: list[dict[str, Any]]
) -> dict[str, Any]:
    """The yardstick measured in the same run: a plain link checker's broken relative links at
    ``commit`` (:mod:`palimpsest.devtools.bench.links`), and which of them the check reported (a
    ``missing_path`` finding or ``unresolved_link`` (listed apart) on the same doc line or target (the check reports a
    target once per doc), or the ``versioned_manual`` finding of the manual the doc belongs to); each
    miss says what the check made of it."""
    from palimpsest.devtools.bench.links import broken_links, resolve

    checked, broken = broken_links(repo, commit)
    paths = [f for f in findings if f["kind"] in ("missing_path", "unresolved_link")]
    reported = {(f["doc"], f["line"]) for f in paths} | {
        (f["doc"], resolve(f["doc"], f["claim"].strip("`"))) for f in paths
    }
    manuals = tuple(f["doc"].rstrip("/") + "/" for f in findings if f["kind"] == "versioned_manual")
    why = {(u["doc"], u["line"], u["claim"].strip("`")): u.get("rule") or u["why"] for u in unverified}
    missed = [
        {
            "doc": b.doc,
            "line": b.line,
            "target": b.target,
            "check": why.get((b.doc, b.line, b.target))
            or why.get((b.doc, b.line, b.target.split("#")[0]))
            or "no claim",
        }
        for b in broken
        if (b.doc, b.line) not in reported
        and (b.doc, b.resolved) not in reported
        and not (manuals and b.doc.startswith(manuals))
    ]
    return {
        "links_checked": checked,
        "broken": len(broken),
        "reported_by_check": len(broken) - len(missed),
        "recall": round((len(broken) - len(missed)) / len(broken), 3) if broken else None,
        "missed": missed[:200],
    }


async def run_bench_planted(
    sess: Session,
    settings: BaseServiceSettings,
    repo: Path,
    *,
    names: int,
    paths: int,
    seed: int,
    timeout_s: float = 7200.0,
) -> dict[str, Any]:
    """Plant drift in a scratch clone of ``repo`` (:mod:`palimpsest.devtools.bench.drift`), analyse the clone
    through the bus like any repository, and score the findings against the plants."""
    from palimpsest.cli.commands_analyze import run_analysis
    from palimpsest.devtools.bench.drift import plant, score

    with tempfile.TemporaryDirectory(prefix="palimpsest-drift-") as scratch:
        progress(f"planting {names} renamed definitions and {paths} moved files in a scratch clone…")
        plan = plant(repo, Path(scratch) / repo.name, identifiers=names, paths=paths, seed=seed)
        view = await run_analysis(sess, settings, str(plan.scratch), reindex=True, timeout_s=timeout_s)
    found = [f for f in view["doc_findings"] if f["kind"] != "stale_doc"]
    planted_commits = {p.commit for p in plan.planted}
    other = [f for f in found if (f.get("evidence") or {}).get("removed_in_commit") not in planted_commits]
    return {
        "seed": seed,
        "head": plan.head,
        **score(plan, found),
        "other_findings": len(other),  # the repository's own drift, as in the plain analysis
    }


async def _tenant(sess: Session, settings: BaseServiceSettings) -> UUID:
    from palimpsest.cli.local import local_tenant

    return await local_tenant(sess.infra.pool, settings.home)


async def _measure_check(sess: Session, tenant: UUID, repo_id: UUID, repo: Path) -> dict[str, Any]:
    from palimpsest.analyzer.doccheck import gather_claims
    from palimpsest.analyzer.proof import prove_in
    from palimpsest.analyzer.snapshot import load_snapshot
    from palimpsest.index.snapshots import readable

    async with tenant_tx(sess.infra.pool, tenant) as conn:
        snapshot = await readable(conn, repo_id, None)
        assert snapshot is not None
        index = await load_snapshot(conn, repo_id, snapshot)
        claims = await gather_claims(conn, index)
    progress(f"documentation check alone: {len(claims.claims)} claims against the history…")
    async with _peak_rss() as peak:
        judged, stats = await prove_in(repo, claims, index.commit_sha, list_unverified=True)
    progress("documentation check again, under tracemalloc, for its Python heap peak…")
    tracemalloc.start()
    try:
        await prove_in(repo, claims, index.commit_sha)
        _, heap_peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    kinds = Counter(f.kind for f in judged.findings)
    return {
        "files": len(index.files),
        "claims": len(claims.claims),
        "findings_count": len(judged.findings),
        "findings_by_kind": dict(sorted(kinds.items())),
        "unverified": judged.unverified_count,
        "history": {k: v for k, v in stats.items() if k != "unverified"},
        "unverified_listed": judged.unverified,
        "check_heap_peak_mb": round(heap_peak / 2**20, 1),
        "check_peak_rss_mb": round(peak["delta"] / 2**20, 1),
        "process_peak_rss_mb": round(peak["peak"] / 2**20, 1),
        "git_peak_rss_mb": round(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024, 1),
    }


@contextlib.asynccontextmanager
async def _peak_rss(every_s: float = 0.02) -> AsyncIterator[dict[str, int]]:
    """The highest resident set while the block runs, and its rise over the level before."""
    base = _rss()
    seen = {"peak": base, "delta": 0}
    stop = asyncio.Event()

    async def sample() -> None:
        while not stop.is_set():
            seen["peak"] = max(seen["peak"], _rss())
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), every_s)

    task = asyncio.create_task(sample())
    try:
        yield seen
    finally:
        stop.set()
        await task
        seen["peak"] = max(seen["peak"], _rss())
        seen["delta"] = seen["peak"] - base


def _rss() -> int:
    try:
        with open("/proc/self/statm", "rb") as handle:
            return int(handle.read().split()[1]) * _PAGE
    except (OSError, ValueError, IndexError):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def selection_share(view: dict[str, Any]) -> dict[str, Any]:
    """How many selected code chunks come from the primary source packages the analysis named."""
    facts = view.get("facts") or {}
    code = [c for c in view.get("selection") or [] if c.get("kind") == "code"]
    inside = [c for c in code if c.get("primary")]
    reasons = Counter(str(c.get("why") or "").split(" (")[0] for c in code)
    return {
        "primary_packages": facts.get("primary_packages") or [],
        "code_chunks": len(code),
        "from_primary": len(inside),
        "primary_share": round(len(inside) / len(code), 3) if code else None,
        "reasons": dict(reasons.most_common()),
        "files": list(dict.fromkeys(f"{c['path']} — {c.get('why')}" for c in code)),
    }
