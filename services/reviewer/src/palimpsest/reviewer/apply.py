"""Running the intents that end a review request, in the caller's transaction (one transaction
for all of them: the review, the submission's outcome and the event are written together)."""

from __future__ import annotations

from collections.abc import Sequence
from uuid import UUID

from palimpsest.core.db import Conn
from palimpsest.core.events import ReviewCompleted
from palimpsest.core.outbox import emit
from palimpsest.index.stored import finish_submission
from palimpsest.reviewer.intents import (
    SAVED,
    EmitCompleted,
    FinishSubmission,
    Intent,
    MarkPosted,
    RememberRequest,
    ReviewRef,
    SaveReview,
)
from palimpsest.reviewer.store import mark_posted, remember_request, save_review


async def apply(conn: Conn, intents: Sequence[Intent]) -> None:
    saved: UUID | None = None

    def ref(review_id: ReviewRef) -> UUID:
        if review_id == SAVED:
            if saved is None:
                raise ValueError("an intent names the saved review, but none was saved before it")
            return saved
        assert isinstance(review_id, UUID)
        return review_id

    for intent in intents:
        match intent:
            case RememberRequest(repository_id, provider, number, head_sha, requested_at):
                await remember_request(conn, repository_id, provider, number, head_sha, requested_at)
            case MarkPosted(record):
                await mark_posted(conn, record)
            case SaveReview(tenant_id, record):
                saved = record.review_id = await save_review(conn, tenant_id, record)
            case FinishSubmission(submission_id, review_id, state, reason, head_sha):
                await finish_submission(
                    conn,
                    submission_id,
                    state=state,
                    reason=reason,
                    review_id=ref(review_id) if review_id is not None else None,
                    head_sha=head_sha,
                )
            case EmitCompleted(tenant_id, repository_id, request_id, review_id, state, reason, posted):
                await emit(
                    conn,
                    ReviewCompleted(
                        tenant_id=tenant_id,
                        repository_id=repository_id,
                        request_id=request_id,
                        review_id=ref(review_id),
                        state=state,  # type: ignore[arg-type]
                        reason=reason,
                        posted=posted,
                    ),
                )
