"""The code index, read through the API: snapshots, search, graph context and the index report.

Each function is what the matching CLI command does (``palimpsest snapshots``, ``search``,
``context``, ``index-report``), through the same read functions of :mod:`palimpsest.index`, in
the caller's tenant transaction. Index errors become API errors here: no ready snapshot is a
409, a query with no searchable words a 400, a seed that matches nothing a 404 naming it.

Hybrid search embeds the query through the LLM gateway with the snapshot's embeddings model,
exactly as ``palimpsest search --mode hybrid`` does. When semantic search cannot run (no
pgvector, no embeddings, no model client in this process, the provider failing) the answer says
so (``semantic: unavailable`` with the reason) and carries the lexical ranking — the library's
rule, never a silent substitute.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from uuid import UUID

from palimpsest.core.db import Conn
from palimpsest.core.llm import Gateway, LLMSettings
from palimpsest.core.settings import load
from palimpsest.core.suspension import suspended_reason
from palimpsest.index.errors import IndexNotReady, InvalidQuery, SemanticUnavailable, UnknownSeed
from palimpsest.index.graph.query import graph_context, graph_report
from palimpsest.index.hybrid import HitFilters, QueryEmbedder, hybrid_search
from palimpsest.index.search import lexical_search
from palimpsest.index.snapshots import Snapshot, get_snapshot, list_snapshots, newest_ready
from palimpsest.ingest.admin.access import Scope, scoped_tx
from palimpsest.ingest.context import IngestContext
from palimpsest.ingest.errors import Conflict, InvalidRequest, NotFound
from palimpsest.ingest.read_models import GraphContext, IndexReport, SearchResult
from palimpsest.ingest.store import repositories

__all__ = [
    "SearchQuery",
    "context",
    "index_report",
    "require_repository",
    "search",
    "snapshot",
    "snapshots",
]


async def require_active(conn: Conn, repository_id: UUID) -> None:
    """Conflict when the repository's tenant or installation is suspended (nothing is indexed or reviewed)."""
    reason = await suspended_reason(conn, repository_id)
    if reason is not None:
        raise Conflict(f"{reason}: the repository is neither indexed nor reviewed")


async def require_repository(conn: Conn, repository_id: UUID) -> repositories.Repository:
    """The tenant's repository, or NotFound (another tenant's looks the same)."""
    found = await repositories.get_repository(conn, repository_id)
    if found is None:
        raise NotFound("no such repository")
    return found


async def snapshots(
    ctx: IngestContext, scope: Scope, repository_id: UUID, *, limit: int, before: UUID | None
) -> list[Snapshot]:
    async with scoped_tx(ctx, scope) as conn:
        await require_repository(conn, repository_id)
        found = await list_snapshots(conn, repository_id, limit=limit, before=before)
    return [s.shown() for s in found]


async def snapshot(ctx: IngestContext, scope: Scope, snapshot_id: UUID) -> Snapshot:
    async with scoped_tx(ctx, scope) as conn:
        found = await get_snapshot(conn, snapshot_id)
    if found is None:
        raise NotFound("no such snapshot")
    return found.shown()


@dataclass(frozen=True, slots=True)
class SearchQuery:
    q: str
    limit: int = 10
    mode: str = "lexical"
    path_prefix: str | None = None
    language: str | None = None
    kind: str | None = None

    def filters(self) -> HitFilters:
        return {"path_prefix": self.path_prefix, "language": self.language, "kind": self.kind}


async def search(ctx: IngestContext, scope: Scope, repository_id: UUID, query: SearchQuery) -> SearchResult:
    """The newest ready snapshot's hits for ``query``, as a search result body."""
    embed = _query_embedder(ctx, scope.tenant_id) if query.mode == "hybrid" else None
    try:
        async with scoped_tx(ctx, scope) as conn:
            await require_repository(conn, repository_id)
            if query.mode == "hybrid":
                result = await hybrid_search(
                    conn, repository_id, query.q, embed_query=embed, limit=query.limit, **query.filters()
                )
                return SearchResult.model_validate(result.as_dict())
            snap = await newest_ready(conn, repository_id)
            if snap is None:
                raise IndexNotReady("the repository has no ready snapshot yet")
            hits = await lexical_search(
                conn,
                repository_id,
                query.q,
                snapshot_id=snap.snapshot_id,
                limit=query.limit,
                **query.filters(),
            )
    except IndexNotReady as exc:
        raise Conflict(str(exc)) from exc
    except InvalidQuery as exc:
        raise InvalidRequest(str(exc)) from exc
    return SearchResult.model_validate(
        {
            "mode": "lexical",
            "semantic": "not_requested",
            "reason": None,
            "model": snap.embedding_model,
            "snapshot_id": snap.snapshot_id,
            "embedding_state": snap.embedding_state,
            "counts": {"lexical": len(hits)},
            "hits": [h.as_dict() for h in hits],
        }
    )


def _query_embedder(ctx: IngestContext, tenant_id: UUID) -> QueryEmbedder:
    """The CLI's query embedder (the tenant's embeddings route with the snapshot's model)."""

    async def embed(model: str, text: str) -> Sequence[float]:
        if ctx.gateway is None:
            ctx.gateway = Gateway(ctx.pool, load(LLMSettings))
        route = await ctx.gateway.embeddings_route(tenant_id, model, accounted_as="search")
        try:
            result = await ctx.gateway.embed(tenant_id, [text], route=route, reference="search")
        except ModuleNotFoundError as exc:  # an ingest image carries no model client (litellm)
            raise SemanticUnavailable(
                "no_query_embedder", "this ingest deployment has no model client"
            ) from exc
        return result.vectors[0]

    return embed


async def context(
    ctx: IngestContext,
    scope: Scope,
    repository_id: UUID,
    seeds: Sequence[str],
    *,
    budget: int,
    hops: int | None,
    history: bool,
) -> GraphContext:
    """Ranked paths around ``seeds`` (``palimpsest context``); a seed matching nothing is a 404."""
    try:
        async with scoped_tx(ctx, scope) as conn:
            await require_repository(conn, repository_id)
            result = await graph_context(
                conn, repository_id, list(seeds), budget=budget, hops=hops, history=history
            )
    except IndexNotReady as exc:
        raise Conflict(str(exc)) from exc
    except UnknownSeed as exc:
        raise NotFound(str(exc)) from exc
    return GraphContext.model_validate(result.as_dict())


async def index_report(ctx: IngestContext, scope: Scope, repository_id: UUID) -> IndexReport:
    """The negative control of the newest snapshot's graph (``palimpsest index-report``)."""
    try:
        async with scoped_tx(ctx, scope) as conn:
            await require_repository(conn, repository_id)
            snap, found = await graph_report(conn, repository_id)
    except IndexNotReady as exc:
        raise Conflict(str(exc)) from exc
    return IndexReport.model_validate(
        {
            "repository_id": repository_id,
            "snapshot_id": snap.snapshot_id,
            "commit": snap.commit_sha,
            **found.as_dict(),
        }
    )
