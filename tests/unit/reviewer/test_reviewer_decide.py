"""The reviewer's decisions are data: what a request asks for, and the writes that end it."""

from __future__ import annotations

from uuid import uuid4

from palimpsest.core.events import ReviewRequested
from palimpsest.reviewer.decide import (
    AnswerExisting,
    Gone,
    Review,
    Skip,
    answered,
    completed,
    decide_request,
    skipped,
)
from palimpsest.reviewer.intents import SAVED, EmitCompleted, FinishSubmission, SaveReview
from palimpsest.reviewer.load import Loaded
from palimpsest.reviewer.store import ExistingReview, RepositoryRow, ReviewRecord

REPO = RepositoryRow(
    uuid4(), "https://example.test/acme/payments.git", "main", "lexical", "github", "acme/payments"
)
HEAD = "b" * 40


def _event(*, submission: bool = False) -> ReviewRequested:
    return ReviewRequested(
        tenant_id=uuid4(),
        repository_id=REPO.repository_id,
        provider="github",
        number=7,
        head_sha=HEAD,
        submission_id=uuid4() if submission else None,
    )


def test_the_request_decision_follows_what_was_loaded() -> None:
    event = _event()
    found = ExistingReview(uuid4(), "completed", None, True)
    assert decide_request(event, Loaded(None, None, None)) == Gone()
    assert decide_request(event, Loaded(REPO, "tenant suspended", None)) == Skip("tenant suspended")
    assert decide_request(event, Loaded(REPO, None, found)) == AnswerExisting(REPO, found)
    assert decide_request(event, Loaded(REPO, None, None)) == Review(REPO)


def test_a_reviewed_head_is_saved_and_announced_by_the_saved_id() -> None:
    event = _event(submission=True)
    record = ReviewRecord(uuid4(), REPO.repository_id, event.request_id, "github", HEAD, posted=True)
    save, finish, emit = completed(event, record)
    assert save == SaveReview(event.tenant_id, record)
    assert isinstance(finish, FinishSubmission) and finish.review_id == SAVED and finish.head_sha == HEAD
    assert isinstance(emit, EmitCompleted) and emit.review_id == SAVED and emit.posted


def test_a_review_without_a_head_is_not_stored_and_names_its_own_id() -> None:
    event = _event()
    record = ReviewRecord(
        uuid4(), REPO.repository_id, event.request_id, "github", "", state="failed", reason="x"
    )
    [emit] = completed(event, record)
    assert isinstance(emit, EmitCompleted)
    assert (emit.review_id, emit.state, emit.reason, emit.posted) == (record.review_id, "failed", "x", False)


def test_skipped_and_answered_requests_store_no_review() -> None:
    event = _event(submission=True)
    review_id = uuid4()
    finish, emit = skipped(event, "repository suspended", review_id)
    assert isinstance(finish, FinishSubmission) and finish.review_id is None and finish.state == "skipped"
    assert isinstance(emit, EmitCompleted) and emit.review_id == review_id
    found = ExistingReview(uuid4(), "completed", None, True)
    finish, emit = answered(event, found)
    assert isinstance(finish, FinishSubmission) and finish.review_id == found.review_id
    assert isinstance(emit, EmitCompleted) and (emit.review_id, emit.posted) == (found.review_id, True)
