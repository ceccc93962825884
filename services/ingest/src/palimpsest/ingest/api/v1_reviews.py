"""/v1 routes for reviews: list, read (by review id or request id), request."""

from __future__ import annotations

from typing import Annotated
from uuid import UUID

from fastapi import APIRouter, Query, status

from palimpsest.ingest.admin import reviews
from palimpsest.ingest.api.deps import Ctx, ReadScope, ReviewScope
from palimpsest.ingest.read_models import (
    FeedbackPage,
    Review,
    ReviewCreate,
    ReviewPage,
    ReviewRequest,
)

router = APIRouter(prefix="/v1/tenants/{tenant_id}", tags=["reviews"])


@router.get("/repositories/{repository_id}/reviews")
async def list_reviews(
    repository_id: UUID,
    ctx: Ctx,
    scope: ReadScope,
    before: UUID | None = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
) -> ReviewPage:
    """Stored reviews of a repository (webhook, CLI and API requests), newest first."""
    items = await reviews.reviews(ctx, scope, repository_id, limit=limit, before=before)
    return ReviewPage(items=items, next_before=items[-1].review_id if len(items) == limit else None)


@router.get("/repositories/{repository_id}/review-feedback")
async def list_feedback(
    repository_id: UUID,
    ctx: Ctx,
    scope: ReadScope,
    before: UUID | None = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
) -> FeedbackPage:
    """What happened to the repository's posted findings (resolved, replied to, reacted to, code
    changed at the anchor), newest first, with acceptance per category."""
    return await reviews.feedback(ctx, scope, repository_id, limit=limit, before=before)


@router.get("/reviews/{review_id}")
async def get_review(review_id: UUID, ctx: Ctx, scope: ReadScope) -> Review:
    """A review with its findings and context sources, by review id or by the request id a POST
    returned: ``pending`` until the reviewer is done, then the review (or the failure's reason)."""
    return await reviews.review(ctx, scope, review_id)


@router.post(
    "/repositories/{repository_id}/reviews",
    status_code=status.HTTP_202_ACCEPTED,
    responses={400: {"description": "The diff is not a unified diff."}},
)
async def request_review(
    repository_id: UUID, body: ReviewCreate, ctx: Ctx, scope: ReviewScope
) -> ReviewRequest:
    """Request a review of ``{base, head}`` or of ``{base, diff}`` (a unified diff against base, at
    most 5 MiB); emits review.requested for the reviewer service and answers with the request id."""
    return await reviews.request_review(ctx, scope, repository_id, body)
