"""/v1 routes for the code index: snapshots, search, graph context and the index report."""

from __future__ import annotations

from typing import Annotated, Literal
from uuid import UUID

from fastapi import APIRouter, Query

from palimpsest.index.snapshots import Snapshot
from palimpsest.ingest.admin import index
from palimpsest.ingest.api.deps import Ctx, ReadScope
from palimpsest.ingest.read_models import GraphContext, IndexReport, SearchResult, SnapshotPage

router = APIRouter(prefix="/v1/tenants/{tenant_id}", tags=["index"])

Filter = Annotated[str | None, Query(min_length=1, max_length=1024)]


@router.get("/repositories/{repository_id}/snapshots")
async def list_snapshots(
    repository_id: UUID,
    ctx: Ctx,
    scope: ReadScope,
    before: UUID | None = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
) -> SnapshotPage:
    """Index snapshots, newest first: state and reason, commit, counts, what was skipped and why,
    the embedding state, timings (``palimpsest snapshots``)."""
    rows = await index.snapshots(ctx, scope, repository_id, limit=limit, before=before)
    return SnapshotPage(items=rows, next_before=rows[-1].snapshot_id if len(rows) == limit else None)


@router.get("/snapshots/{snapshot_id}")
async def get_snapshot(snapshot_id: UUID, ctx: Ctx, scope: ReadScope) -> Snapshot:
    return await index.snapshot(ctx, scope, snapshot_id)


@router.get("/repositories/{repository_id}/search", responses={409: {"description": "No ready snapshot."}})
async def search(
    repository_id: UUID,
    ctx: Ctx,
    scope: ReadScope,
    q: Annotated[str, Query(min_length=1, max_length=1000, description="Words, identifiers or paths.")],
    limit: Annotated[int, Query(ge=1, le=100)] = 10,
    mode: Literal["lexical", "hybrid"] = "lexical",
    path_prefix: Filter = None,
    language: Filter = None,
    kind: Annotated[
        str | None, Query(min_length=1, max_length=64, description="function, class, window…")
    ] = None,
) -> SearchResult:
    """Search the newest ready snapshot (``palimpsest search``); hybrid fuses lexical and semantic
    rankings (RRF, k = 60) and says why when the semantic half could not run."""
    query = index.SearchQuery(q, limit, mode, path_prefix, language, kind)
    return await index.search(ctx, scope, repository_id, query)


@router.get(
    "/repositories/{repository_id}/context",
    responses={404: {"description": "No such repository, or a seed matches nothing."}, 409: {}},
)
async def graph_context(
    repository_id: UUID,
    ctx: Ctx,
    scope: ReadScope,
    seed: Annotated[
        list[str], Query(min_length=1, max_length=50, description="A path, directory or symbol.")
    ],
    budget: Annotated[int, Query(ge=1, le=200_000, description="Token budget.")] = 2000,
    hops: Annotated[
        str, Query(pattern=r"^([1-9][0-9]?|all)$", description="File-to-file hops, or 'all'.")
    ] = "1",
    history: Annotated[bool, Query(description="Blend in co-change and recency.")] = True,
) -> GraphContext:
    """Ranked paths around the seeds, each with the edge or signal that put it there
    (``palimpsest context``); a seed that matches nothing is a 404 naming it."""
    depth = None if hops == "all" else int(hops)
    return await index.context(ctx, scope, repository_id, seed, budget=budget, hops=depth, history=history)


@router.get(
    "/repositories/{repository_id}/index-report", responses={409: {"description": "No ready snapshot."}}
)
async def index_report(repository_id: UUID, ctx: Ctx, scope: ReadScope) -> IndexReport:
    """What the newest snapshot's graph cannot see (``palimpsest index-report``)."""
    return await index.index_report(ctx, scope, repository_id)
