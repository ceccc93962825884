"""The reviewer's decisions are data: what a request asks for, and the writes that end it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
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
from palimpsest.reviewer.intents import (
    SAVED,
    EmitCompleted,
    FinishSubmission,
    MarkPosted,
    RememberRequest,
    SaveReview,
)
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
    finish, emit = answered(event, AnswerExisting(REPO, found))
    assert isinstance(finish, FinishSubmission) and finish.review_id == found.review_id
    assert isinstance(emit, EmitCompleted) and (emit.review_id, emit.posted) == (found.review_id, True)


def _stored(event: ReviewRequested, review_id: object) -> ReviewRecord:
    return ReviewRecord(review_id, REPO.repository_id, event.request_id, "github", HEAD)  # type: ignore[arg-type]


def test_a_stored_review_whose_post_failed_is_posted_then_marked_in_the_answer() -> None:
    """Loaded with the stored review (its post failed): decided to post it; once the post went
    through, the answer marks it posted in the same transaction and announces it posted."""
    event = _event()
    found = ExistingReview(uuid4(), "completed", "post failed", False)
    record = _stored(event, found.review_id)
    answer = decide_request(event, Loaded(REPO, None, found, None, record))
    assert answer == AnswerExisting(REPO, found, post=record)
    mark, emit = answered(event, answer, posted=True)
    assert mark == MarkPosted(record)
    assert isinstance(emit, EmitCompleted) and emit.posted
    [emit] = answered(event, answer, posted=False)  # the post failed again: nothing marked
    assert isinstance(emit, EmitCompleted) and not emit.posted


def test_a_posted_head_asked_again_after_another_heads_post_is_reposted_not_marked() -> None:
    """The summary names another head, requested before this request: the newest request wins, so
    the stored review is posted again; it was posted before, so nothing is marked."""
    event = _event()
    found = ExistingReview(uuid4(), "completed", None, True)
    record = _stored(event, found.review_id)
    earlier = event.occurred_at - timedelta(minutes=5)
    answer = decide_request(event, Loaded(REPO, None, found, ("c" * 40, earlier), record))
    assert answer == AnswerExisting(REPO, found, post=record, repost=True)
    [emit] = answered(event, answer, posted=True)
    assert isinstance(emit, EmitCompleted) and emit.posted
    later = event.occurred_at + timedelta(minutes=5)  # another head's newer request: leave it
    assert decide_request(event, Loaded(REPO, None, found, ("c" * 40, later), record)).post is None  # type: ignore[union-attr]


def test_a_newer_request_for_the_head_the_summary_names_is_remembered() -> None:
    event = _event()
    found = ExistingReview(uuid4(), "completed", None, True)
    earlier = datetime(2020, 1, 1, tzinfo=UTC)
    answer = decide_request(event, Loaded(REPO, None, found, (HEAD, earlier)))
    assert isinstance(answer, AnswerExisting) and answer.post is None and not answer.repost
    remember = RememberRequest(REPO.repository_id, "github", 7, HEAD, event.occurred_at)
    assert answer.remember == remember
    assert answered(event, answer)[0] == remember
    newer = event.occurred_at + timedelta(seconds=1)  # the summary's request is newer: nothing to remember
    assert decide_request(event, Loaded(REPO, None, found, (HEAD, newer))).remember is None  # type: ignore[union-attr]
