"""Reviews through the API: list, read one (by review id or request id), request one.

A request takes the local flow of ``palimpsest review``: a ``review.requested`` event (provider
``local``, so nothing is posted to a provider) goes through the outbox to the reviewer service,
the same core as the webhook flow. ``{base, head}`` names two revisions of the registered
repository; ``{base, diff}`` sends a unified diff, stored in ``review_submissions`` (the event
carries only the submission's id) and turned into a head commit by the reviewer without touching
the repository. Both forms record a submission, on which the reviewer writes the outcome — so
``GET …/reviews/{request_id}`` answers ``pending``, the stored review, or a failure with its
reason (a diff that does not apply fails before any head exists).
"""

from __future__ import annotations

from uuid import UUID

from palimpsest.core.events import ReviewRequested
from palimpsest.core.git import is_object_id
from palimpsest.core.ids import uuid7
from palimpsest.core.outbox import emit
from palimpsest.index.stored import (
    ContextItem,
    Submission,
    insert_submission,
    list_reviews,
    load_review,
    review_by_request,
    submission_by_request,
)
from palimpsest.ingest.admin.access import Scope, scoped_tx
from palimpsest.ingest.admin.index import require_active, require_repository
from palimpsest.ingest.context import IngestContext
from palimpsest.ingest.diffcheck import check_unified_diff
from palimpsest.ingest.errors import NotFound
from palimpsest.ingest.read_models import (
    CategoryAcceptance,
    FeedbackItem,
    FeedbackPage,
    Review,
    ReviewCreate,
    ReviewItem,
    ReviewRequest,
)
from palimpsest.ingest.store import review_feedback

__all__ = ["feedback", "request_review", "review", "review_with_context", "reviews"]


async def reviews(
    ctx: IngestContext, scope: Scope, repository_id: UUID, *, limit: int, before: UUID | None
) -> list[ReviewItem]:
    async with scoped_tx(ctx, scope) as conn:
        await require_repository(conn, repository_id)
        found = await list_reviews(conn, repository_id, limit=limit, before=before)
    return [ReviewItem.model_validate(r.to_json()) for r in found]


async def feedback(
    ctx: IngestContext, scope: Scope, repository_id: UUID, *, limit: int, before: UUID | None
) -> FeedbackPage:
    """What happened to the repository's posted findings: acceptance per category, the events
    (``next_before`` set when the page is full)."""
    async with scoped_tx(ctx, scope) as conn:
        await require_repository(conn, repository_id)
        acceptance = await review_feedback.acceptance(conn, repository_id)
        found = await review_feedback.list_feedback(conn, repository_id, limit=limit, before=before)
    items = [FeedbackItem.model_validate(f.to_json()) for f in found]
    return FeedbackPage(
        acceptance=[CategoryAcceptance.model_validate(a.to_json()) for a in acceptance],
        items=items,
        next_before=items[-1].feedback_id if len(items) == limit else None,
    )


async def review(ctx: IngestContext, scope: Scope, review_or_request_id: UUID) -> Review:
    """A stored review by its id; or by the request id a POST returned (pending until done)."""
    return (await review_with_context(ctx, scope, review_or_request_id))[0]


async def review_with_context(
    ctx: IngestContext, scope: Scope, review_or_request_id: UUID
) -> tuple[Review, tuple[ContextItem, ...]]:
    """:func:`review`, with the stored context items as stored (the web page shows each one's
    repository, which the API's context item does not carry); none before the review is done."""
    async with scoped_tx(ctx, scope) as conn:
        found = await load_review(conn, review_or_request_id)
        if found is not None:
            return Review.model_validate(found.to_json()), found.context
        sub = await submission_by_request(conn, review_or_request_id)
        if sub is None:
            found = await review_by_request(conn, review_or_request_id)
            if found is None:
                raise NotFound("no such review or review request")
            return Review.model_validate(found.to_json()), found.context
        if sub.review_id is not None:
            found = await load_review(conn, sub.review_id)
            if found is not None:
                shown = {**found.to_json(), "request_id": str(sub.request_id)}
                return Review.model_validate(shown), found.context
    pending = Review.model_validate(
        {
            "review_id": None,
            "request_id": sub.request_id,
            "repository_id": sub.repository_id,
            "state": sub.state,
            "reason": sub.reason,
            "head_sha": sub.head_sha,
            "created_at": sub.created_at,
        }
    )
    return pending, ()


def _revision(value: str) -> dict[str, str]:
    return {"sha": value} if is_object_id(value) else {"ref": value}


async def request_review(
    ctx: IngestContext, scope: Scope, repository_id: UUID, body: ReviewCreate
) -> ReviewRequest:
    """Store the submission and emit review.requested in one transaction; 400 for a non-diff."""
    if body.diff is not None:
        check_unified_diff(body.diff)
    base, head = _revision(body.base), _revision(body.head) if body.head is not None else {}
    event = ReviewRequested(
        tenant_id=scope.tenant_id,
        repository_id=repository_id,
        provider="local",
        base_sha=base.get("sha"),
        base_ref=base.get("ref"),
        head_sha=head.get("sha"),
        head_ref=head.get("ref"),
        title=body.title,
        body=body.body,
        trigger="api",
        submission_id=uuid7(),
    )
    assert event.submission_id is not None
    new = Submission(event.submission_id, repository_id, event.request_id, body.base, body.head, body.diff)
    async with scoped_tx(ctx, scope) as conn:
        await require_repository(conn, repository_id)
        await require_active(conn, repository_id)
        await insert_submission(conn, scope.tenant_id, new)
        await emit(conn, event)
    return ReviewRequest(
        repository_id=repository_id,
        event_id=event.id,
        request_id=event.request_id,
        submission_id=event.submission_id,
    )
