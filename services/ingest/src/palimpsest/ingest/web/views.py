"""What each page shows, read through the /v1 API's own read functions in the tenant transaction.

One function per page; each returns the template's values. The JSON routes that serve the same
data (``bench ui``'s yardsticks) call the same functions of :mod:`palimpsest.ingest.admin` and
:mod:`palimpsest.index`.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, TypedDict
from uuid import UUID

from markupsafe import Markup

from palimpsest.core import bus, outcomes
from palimpsest.index.errors import IndexNotReady, UnknownSeed
from palimpsest.index.graph.query import graph_context
from palimpsest.index.recency import CoChangeNeighbour, cochange_neighbours, last_modified_at
from palimpsest.index.snapshots import (
    FileText,
    Snapshot,
    file_text,
    get_snapshot,
    list_snapshots,
    newest_ready,
)
from palimpsest.index.stored import (
    AnalysisListing,
    AnalysisView,
    ContextItem,
    ReviewAbout,
    ReviewListing,
    analysis_view,
    list_analyses,
    list_reviews,
    review_about,
)
from palimpsest.ingest.admin import index, reviews
from palimpsest.ingest.admin.access import Scope, scoped_tx
from palimpsest.ingest.admin.index import require_repository
from palimpsest.ingest.context import IngestContext
from palimpsest.ingest.read_models import FeedbackItem, Review, SearchResult
from palimpsest.ingest.store import lookups, repositories
from palimpsest.ingest.store.repositories import Repository
from palimpsest.ingest.store.tenants import Tenant
from palimpsest.ingest.web.links import ProviderLinks
from palimpsest.ingest.web.markdown import render_markdown
from palimpsest.ingest.web.plot import FreshnessPoint, freshness_svg
from palimpsest.ingest.web.source import HitLine, Source, cached_source_view, hit_lines

__all__ = ["file_page", "repositories_page", "repository_page", "review_page", "reviews_page", "search_page"]

FILE_NEIGHBOURS = 30
COCHANGE_PARTNERS = 20


# Each page's template values (a TypedDict: the routes pass them to the template as keywords).


class TenantsPage(TypedDict):
    tenants: list[Tenant]


@dataclass(frozen=True, slots=True)
class RepositoryLine:
    """A row of the repositories page."""

    repo: Repository
    snapshot: Snapshot | None  # the default branch's newest, any state
    ready: Snapshot | None  # its newest ready one
    analysis: AnalysisListing | None
    review: ReviewListing | None
    build: outcomes.Outcome | None


class RepositoriesPage(TypedDict):
    rows: list[RepositoryLine]
    lag: dict[str, bus.ConsumerLag | None] | None


class RepositoryPage(TypedDict):
    repo: Repository
    links: ProviderLinks
    snapshots: Sequence[Snapshot]
    analysis: AnalysisView | None
    failing: list[outcomes.Outcome]


@dataclass(frozen=True, slots=True)
class FindingLine:
    """A documentation finding as the analysis shows it, with its commits and their links."""

    f: Any  # the stored finding (AnalysisView.doc_findings)
    doc_url: str | None
    last_seen: Any
    last_seen_at: datetime | None
    last_seen_url: str | None
    removed: Any
    removed_at: datetime | None
    removed_url: str | None
    became: Any


class AnalysisValues(TypedDict):
    analysis: AnalysisView
    analysis_html: Markup
    findings: list[FindingLine]
    plot: Markup
    plot_left_out: int
    undated_docs: list[str]
    facts: Any  # the analysis's facts as stored (jsonb)
    selection: Any  # the analysis's selection as stored (jsonb)
    commit_url: str | None


@dataclass(frozen=True, slots=True)
class Neighbour:
    """A graph neighbour on the file page: the edge that brought it and its score."""

    path: str
    via: str
    reason: str
    score: float


class FilePage(TypedDict):
    repo: Repository
    links: ProviderLinks
    path: str
    commit: str | None
    blob_url: str | None
    last_modified_at: datetime | None
    partners: list[CoChangeNeighbour]
    neighbours: list[Neighbour]
    graph_note: str | None
    indexed: bool
    stored: FileText | None
    source: Source | None


class ReviewsPage(TypedDict):
    repo: Repository
    reviews: list[ReviewListing]
    links: ProviderLinks
    about: Any  # review_about, the template's helper


class ReviewPage(TypedDict):
    repo: Repository
    review: Review
    links: ProviderLinks
    summary_html: Markup
    context: dict[str, list[ContextItem]]  # per source, in prompt order
    feedback: list[FeedbackItem]
    head_url: str | None
    base_url: str | None
    pull_url: str | None
    about: ReviewAbout


@dataclass(frozen=True, slots=True)
class HitView:
    """A search hit on the search page: where it is, its link and its lines with the words marked."""

    path: str
    start_line: int
    end_line: int
    kind: str
    name: str | None
    url: str | None
    lines: list[HitLine]


class SearchPage(TypedDict):
    repo: Repository
    q: str
    mode: str
    result: SearchResult | None
    hits: list[HitView]
    commit: str | None


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


async def tenants_page(ctx: IngestContext) -> TenantsPage:
    return {"tenants": await lookups.tenant_list(ctx.pool)}


async def repositories_page(ctx: IngestContext, scope: Scope) -> RepositoriesPage:
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
                RepositoryLine(
                    repo=repo,
                    snapshot=newest[0] if newest else None,
                    ready=newest[0]
                    if newest and newest[0].state == "ready"
                    else await newest_ready(conn, repo.repository_id),
                    analysis=analysis[0] if analysis else None,
                    review=review[0] if review else None,
                    build=states.get(repo.repository_id, {}).get("build"),
                )
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


async def repository_page(ctx: IngestContext, scope: Scope, repository_id: UUID) -> RepositoryPage:
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


def analysis_values(view: AnalysisView, links: ProviderLinks) -> AnalysisValues:
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
            FindingLine(
                f=f,
                doc_url=links.blob(view.commit, f.doc, f.line),
                last_seen=ev.get("last_seen_commit"),
                last_seen_at=_when(ev.get("last_seen_at")),
                last_seen_url=links.commit(ev.get("last_seen_commit")),
                removed=ev.get("removed_in_commit"),
                removed_at=_when(ev.get("removed_at")),
                removed_url=links.commit(ev.get("removed_in_commit")),
                became=ev.get("renamed_to") or f.nearest,
            )
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


async def file_page(ctx: IngestContext, scope: Scope, repository_id: UUID, path: str) -> FilePage:
    """The path's source at the newest ready snapshot (numbered, highlighted), its recency,
    co-change partners and graph neighbours (with the edge that brought each)."""
    neighbours: list[Neighbour] = []
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
            neighbours = [
                Neighbour(e.path, e.via, e.reason, round(e.score, 6)) for e in found.entries if e.path != path
            ]
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


async def reviews_page(ctx: IngestContext, scope: Scope, repository_id: UUID) -> ReviewsPage:
    async with scoped_tx(ctx, scope) as conn:
        repo = await require_repository(conn, repository_id)
        found = await list_reviews(conn, repository_id, limit=100)
    return {
        "repo": repo,
        "reviews": found,
        "links": ProviderLinks.of(repo.provider, repo.clone_url),
        "about": review_about,
    }


async def review_page(ctx: IngestContext, scope: Scope, review_id: UUID) -> ReviewPage:
    review, stored_context = await reviews.review_with_context(ctx, scope, review_id)
    repository_id = review.repository_id
    async with scoped_tx(ctx, scope) as conn:
        repo = await require_repository(conn, repository_id)
    feedback: list[FeedbackItem] = []
    if review.number is not None:
        found = await reviews.feedback(ctx, scope, repository_id, limit=200, before=None)
        feedback = [f for f in found.items if f.number == review.number and f.provider == review.provider]
    grouped: dict[str, list[ContextItem]] = defaultdict(list)
    for item in stored_context:
        grouped[item.source].append(item)
    links = ProviderLinks.of(repo.provider, repo.clone_url)
    return {
        "repo": repo,
        "review": review,
        "links": links,
        "summary_html": render_markdown(review.summary),
        "context": dict(grouped),
        "feedback": feedback,
        "head_url": links.commit(review.head_sha),
        "base_url": links.commit(review.base_sha),
        "pull_url": links.pull(review.number),
        "about": review_about(review.model_dump()),
    }


async def search_page(
    ctx: IngestContext, scope: Scope, repository_id: UUID, q: str | None, mode: str
) -> SearchPage:
    async with scoped_tx(ctx, scope) as conn:
        repo = await require_repository(conn, repository_id)
        ready = await newest_ready(conn, repository_id) if q else None
    links = ProviderLinks.of(repo.provider, repo.clone_url)
    if not q:
        return {"repo": repo, "q": "", "mode": mode, "result": None, "hits": [], "commit": None}
    result = await index.search(ctx, scope, repository_id, index.SearchQuery(q, limit=20, mode=mode))
    searched = result.snapshot_id
    commit = ready.commit_sha if ready is not None and ready.snapshot_id == searched else None
    if commit is None and searched is not None:  # a newer snapshot became ready in between
        async with scoped_tx(ctx, scope) as conn:
            snap = await get_snapshot(conn, searched)
        commit = snap.commit_sha if snap is not None else None
    hits = [
        HitView(
            path=hit.path,
            start_line=hit.start_line,
            end_line=hit.end_line,
            kind=hit.kind,
            name=hit.name,
            url=links.blob(commit, hit.path, hit.start_line or None),
            lines=hit_lines(hit.content or "", hit.start_line or 1, q),
        )
        for hit in result.hits
    ]
    return {"repo": repo, "q": q, "mode": mode, "result": result, "hits": hits, "commit": commit}
