"""The writes that end a review request, as data: :mod:`.decide` returns them,
:func:`palimpsest.reviewer.apply.apply` runs them in one transaction (the inbox's)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Literal
from uuid import UUID

from palimpsest.reviewer.store import ReviewRecord

# a review's id as an intent names it: a known id, or the id SaveReview stored in the same
# transaction (a concurrent delivery may have stored that head's review first: then its id)
SAVED: Literal["saved"] = "saved"
ReviewRef = UUID | Literal["saved"]


@dataclass(frozen=True, slots=True)
class SaveReview:
    """Store the review (replacing a failed, or by a completed one a skipped, review of its head)."""

    tenant_id: UUID
    record: ReviewRecord


@dataclass(frozen=True, slots=True)
class FinishSubmission:
    """Record the outcome on the API submission the request came from."""

    submission_id: UUID
    review_id: ReviewRef | None
    state: str
    reason: str | None
    head_sha: str | None


@dataclass(frozen=True, slots=True)
class EmitCompleted:
    """Announce ``review.completed`` (through the outbox)."""

    tenant_id: UUID
    repository_id: UUID
    request_id: UUID
    review_id: ReviewRef
    state: str
    reason: str | None
    posted: bool


@dataclass(frozen=True, slots=True)
class RememberRequest:
    """A newer request for the head the pull request's summary names becomes its request
    (:func:`palimpsest.reviewer.store.remember_request`)."""

    repository_id: UUID
    provider: str
    number: int
    head_sha: str
    requested_at: datetime


@dataclass(frozen=True, slots=True)
class MarkPosted:
    """A stored review whose earlier post failed went through when answered again."""

    record: ReviewRecord


Intent = SaveReview | FinishSubmission | EmitCompleted | RememberRequest | MarkPosted
