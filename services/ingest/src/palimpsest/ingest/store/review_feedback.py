"""Feedback on posted review findings (migration 0026): matching a webhook to a finding, recording
it once, and listing it for the API.

The reviewer records each finding it posts inline in ``review_threads`` (the provider's thread
and first comment ids, by fingerprint); a webhook about a reply, a reaction or a resolution is
matched by those ids, or by the marker's fingerprint when the payload carries the comment's text.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from uuid import UUID

from palimpsest.core import metrics
from palimpsest.core.db import Conn, JsonRow, columns, fetch_all_as, fetch_one_as
from palimpsest.core.ids import uuid7
from palimpsest.core.stores import Owns, Store
from palimpsest.ingest.store.repositories import Repository
from palimpsest.ingest.webhooks import FeedbackIntent, ParsedDelivery

STORE = Store(
    owner="ingest",
    writes=(Owns("review_feedback", "from the provider's webhooks"), Owns("review_threads", "their state")),
)


POSITIVE = frozenset({"thumbsup", "+1", "heart", "tada", "rocket", "white_check_mark", "100", "hooray"})
NEGATIVE = frozenset({"thumbsdown", "-1", "confused", "x"})


@dataclass(frozen=True, slots=True)
class Thread:
    """A finding the reviewer posted inline, as feedback on it is matched."""

    fingerprint: str
    category: str
    severity: str
    state: str  # open | resolved


@dataclass(frozen=True, slots=True)
class Feedback(JsonRow):
    """Feedback on a posted finding, as the API lists it (``path``/``severity``: of its thread)."""

    feedback_id: UUID
    repository_id: UUID
    provider: str
    number: int
    fingerprint: str
    category: str
    kind: str
    detail: str | None
    actor: str | None
    created_at: datetime
    path: str | None
    severity: str | None


@dataclass(frozen=True, slots=True)
class Acceptance(JsonRow):
    """Per category: findings posted inline, and how many were accepted, replied to or rejected."""

    category: str
    posted: int
    accepted: int
    replied: int
    rejected: int


async def find_thread(
    conn: Conn, repository_id: UUID, provider: str, intent: FeedbackIntent
) -> Thread | None:
    """The posted finding the feedback is about (None: not one of the reviewer's)."""
    return await fetch_one_as(
        conn,
        Thread,
        f"SELECT {columns(Thread)} FROM review_threads"
        " WHERE repository_id = %s AND provider = %s AND number = %s"
        " AND (thread_ref = ANY(%s::text[]) OR comment_ref = ANY(%s::text[]) OR fingerprint = %s)"
        " ORDER BY posted_at DESC LIMIT 1",
        (repository_id, provider, intent.number, list(intent.refs), list(intent.refs), intent.fingerprint),
    )


def outcome(intent: FeedbackIntent) -> str:
    """The metric's outcome label for the feedback."""
    if intent.kind != "reaction":
        return intent.kind
    name = (intent.detail or "").strip(":").lower()
    if name in POSITIVE:
        return "reaction_positive"
    if name in NEGATIVE:
        return "reaction_negative"
    return "reaction_other"


async def record(
    conn: Conn,
    tenant_id: UUID,
    repo: Repository,
    parsed: ParsedDelivery,
    intent: FeedbackIntent,
    thread: Thread,
) -> bool:
    """Store the feedback (once per delivery and kind); False when it was already recorded."""
    cur = await conn.execute(
        "INSERT INTO review_feedback (tenant_id, feedback_id, repository_id, provider, number, fingerprint,"
        " category, kind, detail, actor, source) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)"
        " ON CONFLICT (tenant_id, source, fingerprint, kind) DO NOTHING RETURNING feedback_id",
        (
            tenant_id,
            uuid7(),
            repo.repository_id,
            parsed.provider,
            intent.number,
            thread.fingerprint,
            thread.category,
            intent.kind,
            (intent.detail or "")[:200] or None,
            (intent.actor or "")[:200] or None,
            f"delivery:{parsed.delivery_id}"[:300],
        ),
    )
    if await cur.fetchone() is None:
        return False
    if intent.kind in ("resolved", "unresolved"):
        await conn.execute(
            "UPDATE review_threads SET state = %s WHERE repository_id = %s AND provider = %s AND number = %s"
            " AND fingerprint = %s",
            (
                "resolved" if intent.kind == "resolved" else "open",
                repo.repository_id,
                parsed.provider,
                intent.number,
                thread.fingerprint,
            ),
        )
    metrics.REVIEW_FEEDBACK.labels(
        parsed.provider,
        repo.full_name,
        metrics.feedback_category(thread.category),
        outcome(intent),
    ).inc()
    return True


async def list_feedback(
    conn: Conn, repository_id: UUID, *, limit: int, before: UUID | None = None
) -> list[Feedback]:
    """A repository's feedback on posted findings, newest first (ids are UUIDv7)."""
    return await fetch_all_as(
        conn,
        Feedback,
        "SELECT f.feedback_id, f.repository_id, f.provider, f.number, f.fingerprint, f.category, f.kind, f.detail,"
        " f.actor, f.created_at, t.path, t.severity FROM review_feedback f LEFT JOIN review_threads t"
        " ON t.tenant_id = f.tenant_id AND t.repository_id = f.repository_id AND t.provider = f.provider"
        " AND t.number = f.number AND t.fingerprint = f.fingerprint"
        " WHERE f.repository_id = %s AND (%s::uuid IS NULL OR f.feedback_id < %s::uuid)"
        " ORDER BY f.feedback_id DESC LIMIT %s",
        (repository_id, before, before, limit),
    )


async def acceptance(conn: Conn, repository_id: UUID) -> list[Acceptance]:
    """Per category: findings posted inline, and how many were accepted (resolved by a person, the
    code changed at the anchor, or a positive reaction), replied to, or reacted to negatively."""
    return await fetch_all_as(
        conn,
        Acceptance,
        "SELECT t.category, count(*) AS posted,"
        " count(*) FILTER (WHERE EXISTS (SELECT 1 FROM review_feedback f WHERE f.repository_id = t.repository_id"
        "   AND f.provider = t.provider AND f.number = t.number AND f.fingerprint = t.fingerprint"
        "   AND (f.kind IN ('resolved', 'code_changed')"
        "        OR (f.kind = 'reaction' AND lower(f.detail) = ANY(%s::text[]))))) AS accepted,"
        " count(*) FILTER (WHERE EXISTS (SELECT 1 FROM review_feedback f WHERE f.repository_id = t.repository_id"
        "   AND f.provider = t.provider AND f.number = t.number AND f.fingerprint = t.fingerprint"
        "   AND f.kind = 'reply')) AS replied,"
        " count(*) FILTER (WHERE EXISTS (SELECT 1 FROM review_feedback f WHERE f.repository_id = t.repository_id"
        "   AND f.provider = t.provider AND f.number = t.number AND f.fingerprint = t.fingerprint"
        "   AND f.kind = 'reaction' AND lower(f.detail) = ANY(%s::text[]))) AS rejected"
        " FROM review_threads t WHERE t.repository_id = %s GROUP BY t.category ORDER BY posted DESC, t.category",
        (sorted(POSITIVE), sorted(NEGATIVE), repository_id),
    )
