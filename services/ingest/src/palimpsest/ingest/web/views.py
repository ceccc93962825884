"""What each page shows, read through the /v1 API's own read functions in the tenant transaction.

One function per page; each returns the template's values. The JSON routes that serve the same
data (``bench ui``'s yardsticks) call the same functions of :mod:`palimpsest.ingest.admin` and
:mod:`palimpsest.index`.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from datetime import UTC, datetime
from typing import Any
from uuid import UUID

from palimpsest.core import bus, outcomes
from palimpsest.index.errors import IndexNotReady, UnknownSeed
from palimpsest.index.graph.query import graph_context
from palimpsest.index.recency import cochange_neighbours, last_modified_at
from palimpsest.index.snapshots import file_text, get_snapshot, list_snapshots, newest_ready
from palimpsest.index.stored import AnalysisView, analysis_view, list_analyses, list_reviews, review_about
from palimpsest.ingest.admin import index, reviews
from palimpsest.ingest.admin.access import Scope, scoped_tx
from palimpsest.ingest.admin.index import require_repository
from palimpsest.ingest.context import IngestContext
from palimpsest.ingest.store import lookups, repositories
from palimpsest.ingest.web.links import ProviderLinks
from palimpsest.ingest.web.markdown import render_markdown
from palimpsest.ingest.web.plot import FreshnessPoint, freshness_svg
from palimpsest.ingest.web.source import cached_source_view, hit_lines

__all__ = ["file_page", "repositories_page", "repository_page", "review_page", "reviews_page", "search_page"]

FILE_NEIGHBOURS = 30
COCHANGE_PARTNERS = 20


def _when(value: Any) -> datetime | None:
    if isinstance(value, datetime):
        return value
    if isinstance(value, str) and value:
        try:
            return datetime.fromisoformat(value)
        except ValueError:
            return None
    return None


def moment(value: Any) -> str:
    """How the web view shows a moment (a datetime or an ISO string): in UTC, to the second, so
    rows made in the same minute still read apart; "—" when unknown. Every page's times go
    through this one helper (the templates' ``moment`` filter)."""
    when = _when(value)
    if when is None:
        return "—"
    if when.tzinfo is not None:
        when = when.astimezone(UTC)
    return when.strftime("%Y-%m-%d %H:%M:%S UTC")


def day(value: Any) -> str:
    """How the web view shows a date (a commit's, a file's last change): ``YYYY-MM-DD`` in UTC."""
    when = _when(value)
    if when is None:
        return "—"
    return (when.astimezone(UTC) if when.tzinfo is not None else when).strftime("%Y-%m-%d")


async def tenants_page(ctx: IngestContext) -> dict[str, Any]:
    return {"tenants": await lookups.tenant_list(ctx.pool)}


async def repositories_page(ctx: IngestContext, scope: Scope) -> dict[str, Any]:
    """Every repository with its default branch's newest snapshot (any state) and newest ready one
    (a review's pinned base, an older commit, is neither), last analysis and review."""
    rows = []
    async with scoped_tx(ctx, scope) as conn:
        states = await outcomes.outcomes_of(conn)
        for repo in await repositories.list_repositories(conn):
            newest = await list_snapshots(conn, repo.repository_id, limit=1, pinned=False)
            analysis = await list_analyses(conn, repo.repository_id, limit=1)
            review = await list_reviews(conn, repo.repository_id, limit=1)
            rows.append(
                {
                    "repo": repo,
                    "snapshot": newest[0] if newest else None,
                    "ready": newest[0]
                    if newest and newest[0].state == "ready"
                    else await newest_ready(conn, repo.repository_id),
                    "analysis": analysis[0] if analysis else None,
                    "review": review[0] if review else None,
                    "build": states.get(repo.repository_id, {}).get("build"),
                }
            )
    return {"rows": rows, "lag": await pipeline_lag(ctx)}


async def pipeline_lag(ctx: IngestContext) -> dict[str, bus.ConsumerLag | None] | None:
    """Each service consumer's backlog (the same figures as ``palimpsest status``), read at most
    once per lookup-cache window; None where this process has no bus connection, None per consumer
    the server could not tell."""
    if ctx.nc is None:
        return None
    found, lag = ctx.lag.get("lag")
    if not found or lag is None:
        lag = await bus.consumer_lag(ctx.nc)
        ctx.lag.put("lag", lag)
    return {name: None if isinstance(v, BaseException) else v for name, v in lag.items()}


async def repository_page(ctx: IngestContext, scope: Scope, repository_id: UUID) -> dict[str, Any]:
    """The repository, its recent snapshots and its newest stored analysis (None before one)."""
    async with scoped_tx(ctx, scope) as conn:
        repo = await require_repository(conn, repository_id)
        snapshots = await list_snapshots(conn, repository_id, limit=10)
        newest = await list_analyses(conn, repository_id, limit=1)
        view = await analysis_view(conn, newest[0].analysis_id) if newest else None
        states = (await outcomes.outcomes_of(conn, [repository_id])).get(repository_id, {})
    links = ProviderLinks.of(repo.provider, repo.clone_url)
    failing = [o for o in (states.get("build"), states.get("analysis")) if o is not None and o.failing]
    return {"repo": repo, "links": links, "snapshots": snapshots, "analysis": view, "failing": failing}


def analysis_values(view: AnalysisView, links: ProviderLinks) -> dict[str, Any]:
    """What the repository page shows of a stored analysis: findings with their commits and links,
    the freshness plot, the selection and its facts, the Markdown rendered safely."""
    facts = view.facts if isinstance(view.facts, dict) else {}
    points, undated = [], []
    for doc in facts.get("doc_freshness") or []:
        when = _when(doc.get("last_modified_at"))
        if when is None:
            undated.append(str(doc.get("path")))
        else:
            state = doc.get("state")
            points.append(
                FreshnessPoint(
                    str(doc.get("path")), when, bool(doc.get("stale")), str(state) if state else None
                )
            )
    plot, left_out = freshness_svg(points, view.median_code)
    findings = []
    for f in view.doc_findings:
        ev = f.evidence if isinstance(f.evidence, dict) else {}
        findings.append(
            {
                "f": f,
                "doc_url": links.blob(view.commit, f.doc, f.line),
                "last_seen": ev.get("last_seen_commit"),
                "last_seen_at": _when(ev.get("last_seen_at")),
                "last_seen_url": links.commit(ev.get("last_seen_commit")),
                "removed": ev.get("removed_in_commit"),
                "removed_at": _when(ev.get("removed_at")),
                "removed_url": links.commit(ev.get("removed_in_commit")),
                "became": ev.get("renamed_to") or f.nearest,
            }
        )
    return {
        "analysis": view,
        "analysis_html": render_markdown(view.analysis),
        "findings": findings,
        "plot": plot,
        "plot_left_out": left_out,
        "undated_docs": undated,
        "facts": facts,
        "selection": view.selection if isinstance(view.selection, list) else [],
        "commit_url": links.commit(view.commit),
    }


async def file_page(ctx: IngestContext, scope: Scope, repository_id: UUID, path: str) -> dict[str, Any]:
    """The path's source at the newest ready snapshot (numbered, highlighted), its recency,
    co-change partners and graph neighbours (with the edge that brought each)."""
    neighbours: list[dict[str, Any]] = []
    graph_note = None
    async with scoped_tx(ctx, scope) as conn:
        repo = await require_repository(conn, repository_id)
        ready = await newest_ready(conn, repository_id)
        stored = await file_text(conn, repository_id, ready.snapshot_id, path) if ready is not None else None
        dated = (await last_modified_at(conn, repository_id, [path]))[path]
        partners = await cochange_neighbours(conn, repository_id, path, limit=COCHANGE_PARTNERS)
        try:
            found = await graph_context(
                conn, repository_id, [path], budget=200_000, hops=1, history=False, limit=FILE_NEIGHBOURS
            )
            neighbours = [e.as_dict() for e in found.entries if e.path != path]
        except IndexNotReady as exc:
            graph_note = str(exc)
        except UnknownSeed:
            graph_note = "this path is not in the newest snapshot's graph"
    links = ProviderLinks.of(repo.provider, repo.clone_url)
    commit = ready.commit_sha if ready is not None else None
    source = None
    if stored is not None and stored.text is not None:  # lexing is CPU: off the event loop
        source = await asyncio.to_thread(cached_source_view, path, stored.blob_sha, stored.text)
    return {
        "repo": repo,
        "links": links,
        "path": path,
        "commit": commit,
        "blob_url": links.blob(commit, path),
        "last_modified_at": dated,
        "partners": partners,
        "neighbours": neighbours,
        "graph_note": graph_note,
        "indexed": ready is not None,
        "stored": stored,
        "source": source,
    }


async def reviews_page(ctx: IngestContext, scope: Scope, repository_id: UUID) -> dict[str, Any]:
    async with scoped_tx(ctx, scope) as conn:
        repo = await require_repository(conn, repository_id)
        found = await list_reviews(conn, repository_id, limit=100)
    return {
        "repo": repo,
        "reviews": found,
        "links": ProviderLinks.of(repo.provider, repo.clone_url),
        "about": review_about,
    }


async def review_page(ctx: IngestContext, scope: Scope, review_id: UUID) -> dict[str, Any]:
    review = await reviews.review(ctx, scope, review_id)
    repository_id = UUID(str(review["repository_id"]))
    async with scoped_tx(ctx, scope) as conn:
        repo = await require_repository(conn, repository_id)
    feedback: list[dict[str, Any]] = []
    if review.get("number") is not None:
        found = await reviews.feedback(ctx, scope, repository_id, limit=200, before=None)
        feedback = [
            f
            for f in found["items"]
            if f["number"] == review["number"] and f["provider"] == review["provider"]
        ]
    grouped: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for item in review.get("context") or []:
        grouped[str(item["source"])].append(item)
    links = ProviderLinks.of(repo.provider, repo.clone_url)
    return {
        "repo": repo,
        "review": review,
        "links": links,
        "summary_html": render_markdown(str(review.get("summary") or "")),
        "context": dict(grouped),
        "feedback": feedback,
        "head_url": links.commit(review.get("head_sha")),
        "base_url": links.commit(review.get("base_sha")),
        "pull_url": links.pull(review.get("number")),
        "about": review_about(review),
    }


async def search_page(
    ctx: IngestContext, scope: Scope, repository_id: UUID, q: str | None, mode: str
) -> dict[str, Any]:
    async with scoped_tx(ctx, scope) as conn:
        repo = await require_repository(conn, repository_id)
        ready = await newest_ready(conn, repository_id) if q else None
    links = ProviderLinks.of(repo.provider, repo.clone_url)
    out: dict[str, Any] = {"repo": repo, "q": q or "", "mode": mode, "result": None, "hits": []}
    if not q:
        return out
    result = await index.search(ctx, scope, repository_id, index.SearchQuery(q, limit=20, mode=mode))
    searched = result.get("snapshot_id")
    commit = ready.commit_sha if ready is not None and str(ready.snapshot_id) == str(searched) else None
    if commit is None and searched is not None:  # a newer snapshot became ready in between
        async with scoped_tx(ctx, scope) as conn:
            snap = await get_snapshot(conn, UUID(str(searched)))
        commit = snap.commit_sha if snap is not None else None
    out["result"] = result
    out["commit"] = commit
    out["hits"] = [
        {
            **hit,
            "url": links.blob(commit, str(hit["path"]), int(hit.get("start_line") or 0) or None),
            "lines": hit_lines(str(hit.get("content") or ""), int(hit.get("start_line") or 1), q),
        }
        for hit in result["hits"]
    ]
    return out
