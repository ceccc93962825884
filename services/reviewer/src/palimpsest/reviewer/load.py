"""What a review request needs from the database before anything else, as typed rows."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from palimpsest.core.db import Pool, tenant_tx
from palimpsest.core.events import ReviewRequested
from palimpsest.core.suspension import suspended_reason
from palimpsest.reviewer.store import (
    ExistingReview,
    RepositoryRow,
    ReviewRecord,
    existing_review,
    pull_request_head,
    repository,
    stored_record,
)


def on_provider(event: ReviewRequested) -> bool:
    """A pull request of a provider (not a local or API review): rules, identity, increments apply."""
    return event.provider != "local" and bool(event.number)


@dataclass(frozen=True, slots=True)
class Loaded:
    repo: RepositoryRow | None  # None: the repository is gone
    suspended: str | None  # why the tenant or repository is suspended (None: it is not)
    existing: ExistingReview | None  # the stored review that answers a repeated request
    # for a completed stored review: the head the pull request's summary names and when it was
    # requested (a posted review of a provider's pull request), and the stored review as it would
    # be posted again (its post failed, or the summary names another head)
    shown: tuple[str, datetime] | None = None
    record: ReviewRecord | None = None


async def load(pool: Pool, event: ReviewRequested) -> Loaded:
    """The repository, its suspension and the stored review of the head (one transaction); a
    ``full`` request (``@bot review full``) reviews a head again, so it has none. For a completed
    stored review, also what answering with it may post (see :class:`Loaded`)."""
    async with tenant_tx(pool, event.tenant_id) as conn:
        repo = await repository(conn, event.repository_id)
        if repo is None:
            return Loaded(None, None, None)
        suspended = await suspended_reason(conn, event.repository_id)
        if suspended is not None or not event.head_sha or event.full:
            return Loaded(repo, suspended, None)
        existing = await existing_review(
            conn, event.repository_id, event.head_sha, completed_only=event.trigger == "comment"
        )
        if existing is None or existing.state != "completed":
            return Loaded(repo, None, existing)
        shown = None
        if existing.posted and on_provider(event):
            shown = await pull_request_head(conn, event.repository_id, event.provider, event.number or 0)
        # what decide.decide_request may post: read whenever a post is possible, decided there
        record = await stored_record(conn, existing.review_id) if not existing.posted or shown else None
    return Loaded(repo, None, existing, shown, record)
