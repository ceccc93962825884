"""Event contracts: one pydantic class per event type, all sharing one envelope.

Every event travels on subject ``pal.<type>`` in the ``PALIMPSEST`` stream. The envelope carries
``id`` (UUIDv7, also the JetStream ``Nats-Msg-Id`` and the inbox key), ``type``, ``tenant_id``,
``occurred_at`` and ``schema_version``; the W3C ``traceparent`` travels in the NATS headers, not here.
A consumer that meets a newer ``schema_version`` than it knows still parses the fields it knows
(extra fields are ignored), so producers can add optional fields without a lock-step deploy.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, ClassVar, Literal
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field

from palimpsest.core.ids import uuid7

SUBJECT_PREFIX = "pal."


def _now() -> datetime:
    return datetime.now(UTC)


class Event(BaseModel):
    """The envelope; subclasses add the payload fields and set ``TYPE``."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    TYPE: ClassVar[str] = ""
    SCHEMA_VERSION: ClassVar[int] = 1

    id: UUID = Field(default_factory=uuid7)
    type: str = ""
    tenant_id: UUID
    occurred_at: datetime = Field(default_factory=_now)
    schema_version: int = 0

    def model_post_init(self, __context: Any) -> None:
        # type and version always reflect the class, whatever the caller passed
        object.__setattr__(self, "type", self.TYPE)
        if not self.schema_version:
            object.__setattr__(self, "schema_version", self.SCHEMA_VERSION)

    @property
    def subject(self) -> str:
        return SUBJECT_PREFIX + self.TYPE

    def to_json(self) -> bytes:
        return self.model_dump_json().encode()


class IndexRequested(Event):
    """Build (or refresh) the index of one repository at one commit of its default branch."""

    TYPE: ClassVar[str] = "index.requested"

    repository_id: UUID
    request_id: UUID = Field(default_factory=uuid7)
    # "review": build ``commit_sha`` (a review's base) as a pinned snapshot beside the branch's
    # "backfill": the maintenance backfill's re-request (built only if the branch head is not indexed)
    reason: Literal["push", "rebuild", "register", "cli", "mode", "review", "backfill"] = "cli"
    branch: str | None = None
    commit_sha: str | None = None  # None: resolve the branch head at build time
    head_commit_at: datetime | None = None  # the pushed head commit's date, when known
    changed_paths: list[str] | None = None  # None: a full index; a list: an incremental push
    paths_complete: bool = True


class RecencyScanned(Event):
    TYPE: ClassVar[str] = "recency.scanned"

    repository_id: UUID
    request_id: UUID
    commit_sha: str | None = None
    status: Literal["ok", "failed", "disabled"]
    reason: str | None = None
    mode: Literal["full", "incremental", "none"] = "full"
    files: int = 0
    pairs: int = 0
    commits: int = 0
    duration_s: float = 0.0


class SnapshotBuilt(Event):
    TYPE: ClassVar[str] = "snapshot.built"

    repository_id: UUID
    request_id: UUID
    snapshot_id: UUID | None = None
    commit_sha: str | None = None
    state: Literal["ready", "failed", "skipped"]
    reason: str | None = None
    files: int = 0
    chunks: int = 0
    symbols: int = 0
    bytes: int = 0
    parsed_blobs: int = 0
    skipped: dict[str, int] = Field(default_factory=dict)
    duration_s: float = 0.0
    timings: dict[str, float] = Field(default_factory=dict)  # phase → seconds, for operators
    pinned: bool = False  # a review base's snapshot beside the branch's (never the newest)


class SnapshotEmbedded(Event):
    TYPE: ClassVar[str] = "snapshot.embedded"

    repository_id: UUID
    snapshot_id: UUID
    state: str
    reason: str | None = None
    embedded: int = 0
    request_id: UUID | None = None  # the index request whose snapshot.built started the run
    model: str | None = None
    dimension: int | None = None
    pending: int = 0  # chunks of the snapshot still without a vector of the model
    truncated: int = 0
    tokens: int = 0


class AnalysisRequested(Event):
    TYPE: ClassVar[str] = "analysis.requested"

    repository_id: UUID
    request_id: UUID = Field(default_factory=uuid7)
    snapshot_id: UUID | None = None


class AnalysisCompleted(Event):
    TYPE: ClassVar[str] = "analysis.completed"

    repository_id: UUID
    request_id: UUID | None = None
    analysis_id: UUID
    snapshot_id: UUID | None = None
    state: Literal["completed", "failed"]
    reason: str | None = None


class ReviewRequested(Event):
    TYPE: ClassVar[str] = "review.requested"

    repository_id: UUID
    request_id: UUID = Field(default_factory=uuid7)
    provider: Literal["github", "gitlab", "bitbucket", "local"]
    number: int | None = None
    base_sha: str | None = None
    head_sha: str | None = None
    base_ref: str | None = None
    head_ref: str | None = None
    title: str = ""
    body: str = ""
    draft: bool = False
    trigger: str = "opened"
    delivery_id: str | None = None
    comment_id: str | None = None  # the comment that asked for the review (trigger "comment")
    requested_by: str | None = None  # the provider login that opened, pushed or asked
    author: str | None = None  # the pull request's author, when the provider's payload names them
    submission_id: UUID | None = None  # an API submission (review_submissions): its diff, its outcome
    full: bool = False  # review the whole pull request, never only the commits since the last review


class ReviewCompleted(Event):
    TYPE: ClassVar[str] = "review.completed"

    repository_id: UUID
    request_id: UUID
    review_id: UUID
    state: Literal["completed", "failed", "skipped"]
    reason: str | None = None
    posted: bool = False


class Probe(Event):
    """A no-op event for the bus benchmark and tests; only their own throw-away consumers receive it."""

    TYPE: ClassVar[str] = "probe"

    note: str = ""
    target: str | None = None  # the consumer expected to handle it (None: all)


EVENT_TYPES: dict[str, type[Event]] = {
    cls.TYPE: cls
    for cls in (
        IndexRequested,
        RecencyScanned,
        SnapshotBuilt,
        SnapshotEmbedded,
        AnalysisRequested,
        AnalysisCompleted,
        ReviewRequested,
        ReviewCompleted,
        Probe,
    )
}


def subject_of(event_type: str) -> str:
    return SUBJECT_PREFIX + event_type


def parse_event(data: bytes | str) -> Event:
    """Decode an envelope into its event class; unknown types raise ValueError."""
    import json

    raw = json.loads(data)
    if not isinstance(raw, dict):
        raise ValueError("event is not a JSON object")
    cls = EVENT_TYPES.get(str(raw.get("type", "")))
    if cls is None:
        raise ValueError(f"unknown event type {raw.get('type')!r}")
    return cls.model_validate(raw)
