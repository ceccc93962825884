"""/v1 routes for repository analyses: list, read, request."""

from __future__ import annotations

from typing import Annotated
from uuid import UUID

from fastapi import APIRouter, Query, status

from palimpsest.ingest.admin import analyses
from palimpsest.ingest.api.deps import Ctx, ReadScope, ReviewScope
from palimpsest.ingest.read_models import (
    Analysis,
    AnalysisCreate,
    AnalysisPage,
    AnalysisRequest,
)

router = APIRouter(prefix="/v1/tenants/{tenant_id}", tags=["analyses"])


@router.get("/repositories/{repository_id}/analyses")
async def list_analyses(
    repository_id: UUID,
    ctx: Ctx,
    scope: ReadScope,
    before: UUID | None = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
) -> AnalysisPage:
    """Analyses of a repository, newest first."""
    items = await analyses.analyses(ctx, scope, repository_id, limit=limit, before=before)
    return AnalysisPage(items=items, next_before=items[-1].analysis_id if len(items) == limit else None)


@router.get("/analyses/{analysis_id}")
async def get_analysis(analysis_id: UUID, ctx: Ctx, scope: ReadScope) -> Analysis:
    """One analysis: Markdown, summary, chunk selection and the documentation findings."""
    return await analyses.analysis(ctx, scope, analysis_id)


@router.post(
    "/repositories/{repository_id}/analyses",
    status_code=status.HTTP_202_ACCEPTED,
    responses={409: {"description": "No ready snapshot to analyse."}},
)
async def request_analysis(
    repository_id: UUID, ctx: Ctx, scope: ReviewScope, body: AnalysisCreate | None = None
) -> AnalysisRequest:
    """Request an analysis (emits analysis.requested); the stored analysis carries the request id."""
    snapshot_id = body.snapshot_id if body is not None else None
    return await analyses.request_analysis(ctx, scope, repository_id, snapshot_id)
