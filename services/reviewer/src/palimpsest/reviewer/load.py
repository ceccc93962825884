"""What a review request needs from the database before anything else, as typed rows."""

from __future__ import annotations

from dataclasses import dataclass

from palimpsest.core.db import Pool, tenant_tx
from palimpsest.core.events import ReviewRequested
from palimpsest.core.suspension import suspended_reason
from palimpsest.reviewer.store import ExistingReview, RepositoryRow, existing_review, repository


@dataclass(frozen=True, slots=True)
class Loaded:
    repo: RepositoryRow | None  # None: the repository is gone
    suspended: str | None  # why the tenant or repository is suspended (None: it is not)
    existing: ExistingReview | None  # the stored review that answers a repeated request


async def load(pool: Pool, event: ReviewRequested) -> Loaded:
    """The repository, its suspension and the stored review of the head (one transaction); a
    ``full`` request (``@bot review full``) reviews a head again, so it has none."""
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
    return Loaded(repo, None, existing)
