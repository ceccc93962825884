"""Analyses through the API: list, read one (with its documentation findings), request one.

A request is what ``palimpsest analyze`` sends once the repository is indexed: an
``analysis.requested`` event (with a request id) written to the outbox in the same transaction as
the check that the repository exists; the analyzer service does the work and stores the analysis
with that request id.
"""

from __future__ import annotations

from uuid import UUID

from palimpsest.core.events import AnalysisRequested
from palimpsest.core.outbox import emit
from palimpsest.index.snapshots import get_snapshot, newest_ready
from palimpsest.index.stored import analysis_view, list_analyses
from palimpsest.ingest.admin.access import Scope, scoped_tx
from palimpsest.ingest.admin.index import require_active, require_repository
from palimpsest.ingest.context import IngestContext
from palimpsest.ingest.errors import Conflict, NotFound
from palimpsest.ingest.read_models import Analysis, AnalysisItem, AnalysisRequest

__all__ = ["analyses", "analysis", "request_analysis"]


async def analyses(
    ctx: IngestContext, scope: Scope, repository_id: UUID, *, limit: int, before: UUID | None
) -> list[AnalysisItem]:
    async with scoped_tx(ctx, scope) as conn:
        await require_repository(conn, repository_id)
        found = await list_analyses(conn, repository_id, limit=limit, before=before)
    return [AnalysisItem.model_validate(a.to_json()) for a in found]


async def analysis(ctx: IngestContext, scope: Scope, analysis_id: UUID) -> Analysis:
    async with scoped_tx(ctx, scope) as conn:
        found = await analysis_view(conn, analysis_id)
    if found is None:
        raise NotFound("no such analysis")
    return Analysis.model_validate(found.to_json())


async def request_analysis(
    ctx: IngestContext, scope: Scope, repository_id: UUID, snapshot_id: UUID | None
) -> AnalysisRequest:
    """Emit analysis.requested (of ``snapshot_id``, default the newest ready snapshot)."""
    async with scoped_tx(ctx, scope) as conn:
        await require_repository(conn, repository_id)
        await require_active(conn, repository_id)
        if snapshot_id is not None:
            snap = await get_snapshot(conn, snapshot_id)
            if snap is None or snap.repository_id != repository_id:
                raise NotFound("no such snapshot of this repository")
            if snap.state not in ("ready", "superseded"):
                raise Conflict(f"snapshot {snapshot_id} is {snap.state}, not ready")
        elif await newest_ready(conn, repository_id) is None:
            raise Conflict("the repository has no ready snapshot yet; index it first")
        event = AnalysisRequested(
            tenant_id=scope.tenant_id, repository_id=repository_id, snapshot_id=snapshot_id
        )
        await emit(conn, event)
    return AnalysisRequest(repository_id=repository_id, event_id=event.id, request_id=event.request_id)
