"""Storing and reading reviews (migration 0009): one per (repository, head sha).

A completed or skipped review makes later requests for the same head answer with it instead of
reviewing (and posting) again; a failed one is replaced by the next attempt.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any
from uuid import UUID

from palimpsest.core.db import Conn, columns, fetch_all_as, fetch_one_as
from palimpsest.core.ids import uuid7
from palimpsest.core.stores import Owns, Store
from palimpsest.index.context.finding import Finding

# A submission's result is written through palimpsest.index.stored. The graph cache (code_graphs),
# which the reviewer fills when a snapshot is built, is no one service's: palimpsest.index.graph.store.
STORE = Store(
    owner="reviewer",
    writes=(
        Owns("reviews"),
        Owns("review_findings"),
        Owns("review_context"),
        Owns("review_pull_requests"),
        Owns("review_threads", "the threads it opens"),
        Owns("review_feedback", "its own"),
    ),
)


@dataclass(slots=True)
class ReviewRecord:
    review_id: UUID
    repository_id: UUID
    request_id: UUID | None
    provider: str
    head_sha: str
    base_sha: str | None = None
    number: int | None = None
    snapshot_id: UUID | None = None
    state: str = "completed"
    mode: str = "brief"
    reason: str | None = None
    model: str | None = None
    summary: str = ""
    context: list[dict[str, Any]] = field(default_factory=list)
    dropped: list[dict[str, Any]] = field(default_factory=list)
    cochange_missing: list[dict[str, Any]] = field(default_factory=list)  # MissingPartner.as_dict()
    sources: dict[str, Any] = field(default_factory=dict)
    findings: list[Finding] = field(default_factory=list)
    findings_dropped: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float | None = None
    duration_s: float = 0.0
    posted: bool = False
    scope: str = "full"  # full | incremental
    commits: list[str] = field(default_factory=list)  # incremental: the commits reviewed
    since_sha: str | None = None  # incremental: the last reviewed head it started from
    merge_base: str | None = None
    resolved: list[str] = field(default_factory=list)  # earlier findings' fingerprints, anchor gone
    requested_at: datetime | None = None
    replaces: bool = False  # a full review asked for: it replaces a completed review of the same head
    title: str = ""  # what the review was of (migration 0051): the pull request's title,
    author: str | None = None  # its author (when the provider named them),
    requested_by: str | None = None  # who asked,
    base_ref: str | None = None  # and the branches the request named
    head_ref: str | None = None


@dataclass(frozen=True, slots=True)
class RepositoryRow:
    """The repository a review request is about, as the reviewer reads it."""

    repository_id: UUID
    clone_url: str
    default_branch: str
    index_mode: str  # lexical | hybrid
    provider: str
    full_name: str  # owner/repo, group/project, workspace/slug: where a review is posted


async def repository(conn: Conn, repository_id: UUID) -> RepositoryRow | None:
    """The repository of a request (None: it is gone)."""
    return await fetch_one_as(
        conn,
        RepositoryRow,
        f"SELECT {columns(RepositoryRow)} FROM repositories WHERE repository_id = %s",
        (repository_id,),
    )


async def reviewed_within(conn: Conn, repository_id: UUID, days: float) -> bool:
    """Whether the repository has a review created within the last ``days`` days."""
    cur = await conn.execute(
        "SELECT 1 FROM reviews WHERE repository_id = %s AND created_at > now() - %s::interval LIMIT 1",
        (repository_id, f"{days} days"),
    )
    return await cur.fetchone() is not None


@dataclass(frozen=True, slots=True)
class ExistingReview:
    """A stored review of a head, as a repeated request for that head is answered with."""

    review_id: UUID
    state: str  # completed | skipped
    reason: str | None
    posted: bool


async def existing_review(
    conn: Conn, repository_id: UUID, head_sha: str, *, completed_only: bool = False
) -> ExistingReview | None:
    """The stored, not failed, review of this head (idempotency); ``completed_only``: a skipped
    one does not count (a comment asking for a review overrides ``review.auto``)."""
    states = ["completed"] if completed_only else ["completed", "skipped"]
    return await fetch_one_as(
        conn,
        ExistingReview,
        f"SELECT {columns(ExistingReview)} FROM reviews"
        " WHERE repository_id = %s AND head_sha = %s AND state = ANY(%s::text[])",
        (repository_id, head_sha, states),
    )


async def save_review(conn: Conn, tenant_id: UUID, r: ReviewRecord) -> UUID:
    """Insert the review (replacing a failed — or, by a completed one, a skipped — one of the same
    head); returns the stored id."""
    replaced = ["failed", "skipped"] if r.state == "completed" else ["failed"]
    if r.state == "completed" and r.replaces:
        replaced.append("completed")
    await conn.execute(
        "DELETE FROM reviews WHERE repository_id = %s AND head_sha = %s AND state = ANY(%s::text[])",
        (r.repository_id, r.head_sha, replaced),
    )
    cur = await conn.execute(
        "INSERT INTO reviews (tenant_id, review_id, repository_id, request_id, provider, number, base_sha,"
        " head_sha, snapshot_id, state, mode, reason, model, summary, dropped, cochange_missing, sources,"
        " findings_dropped, prompt_tokens, completion_tokens, cost_usd, duration_s, posted, scope, commits,"
        " since_sha, merge_base, resolved, title, author, requested_by, base_ref, head_ref)"
        " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s,"
        " %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)"
        " ON CONFLICT (tenant_id, repository_id, head_sha) DO NOTHING RETURNING review_id",
        (
            tenant_id,
            r.review_id,
            r.repository_id,
            r.request_id,
            r.provider,
            r.number,
            r.base_sha,
            r.head_sha,
            r.snapshot_id,
            r.state,
            r.mode,
            (r.reason or "")[:1000] or None,
            r.model,
            r.summary,
            json.dumps(r.dropped),
            json.dumps(r.cochange_missing),
            json.dumps(r.sources),
            r.findings_dropped,
            r.prompt_tokens,
            r.completion_tokens,
            r.cost_usd,
            r.duration_s,
            r.posted,
            r.scope,
            json.dumps(r.commits),
            r.since_sha,
            r.merge_base,
            json.dumps(r.resolved),
            r.title[:1000],
            (r.author or "")[:200] or None,
            (r.requested_by or "")[:200] or None,
            (r.base_ref or "")[:1000] or None,
            (r.head_ref or "")[:1000] or None,
        ),
    )
    if await cur.fetchone() is None:  # a concurrent delivery stored it first
        found = await existing_review(conn, r.repository_id, r.head_sha)
        return found.review_id if found else r.review_id
    await _children(conn, tenant_id, r)
    return r.review_id


async def _children(conn: Conn, tenant_id: UUID, r: ReviewRecord) -> None:
    async with conn.cursor() as cur:
        await cur.executemany(
            "INSERT INTO review_findings (tenant_id, review_id, ordinal, path, start_line, end_line, severity,"
            " category, message, suggested_change, fingerprint, anchor_hash, anchor_lines, symbol, side,"
            " position, posted_as)"
            " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
            [
                (
                    tenant_id,
                    r.review_id,
                    i,
                    f.path,
                    f.start_line,
                    f.end_line,
                    f.severity,
                    f.category,
                    f.message,
                    f.suggested_change,
                    f.fingerprint,
                    f.anchor_hash,
                    f.anchor_lines,
                    f.symbol,
                    f.side,
                    json.dumps(f.position) if f.position is not None else None,
                    f.posted_as,
                )
                for i, f in enumerate(r.findings)
            ],
        )
        await cur.executemany(
            "INSERT INTO review_context (tenant_id, review_id, ordinal, source, repository, path, start_line,"
            " end_line, tokens, score, last_modified_at, annotation, reason)"
            " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
            [
                (
                    tenant_id,
                    r.review_id,
                    i,
                    c["source"],
                    c.get("repository"),
                    c["path"],
                    c["start_line"],
                    c["end_line"],
                    c["tokens"],
                    c["score"],
                    c["last_modified_at"],
                    c["annotation"],
                    (c.get("reason") or "")[:2000] or None,
                )
                for i, c in enumerate(r.context)
            ],
        )


async def stored_record(conn: Conn, review_id: UUID) -> ReviewRecord | None:
    """Enough of a stored review to post it again (summary, findings, head, what to resolve)."""
    row = await fetch_one_as(
        conn,
        _PostedReview,
        f"SELECT {columns(_PostedReview)} FROM reviews WHERE review_id = %s",
        (review_id,),
    )
    if row is None:
        return None
    findings = await fetch_all_as(
        conn,
        Finding,
        f"SELECT {columns(Finding)} FROM review_findings WHERE review_id = %s ORDER BY ordinal",
        (review_id,),
    )
    return ReviewRecord(
        review_id=review_id,
        repository_id=row.repository_id,
        request_id=row.request_id,
        provider=row.provider,
        head_sha=row.head_sha,
        base_sha=row.base_sha,
        number=row.number,
        merge_base=row.merge_base,
        summary=row.summary,
        findings=findings,
        resolved=list(row.resolved),
    )


@dataclass(frozen=True, slots=True)
class _PostedReview:
    repository_id: UUID
    request_id: UUID | None
    provider: str
    number: int | None
    base_sha: str | None
    head_sha: str
    merge_base: str | None
    summary: str
    resolved: list[str]  # jsonb: fingerprints


async def mark_posted(conn: Conn, record: ReviewRecord) -> None:
    """A retried post went through: the review is posted, and where each finding went."""
    await conn.execute(
        "UPDATE reviews SET posted = true, reason = NULL, resolved = %s WHERE review_id = %s",
        (json.dumps(record.resolved), record.review_id),
    )
    async with conn.cursor() as cur:
        await cur.executemany(
            "UPDATE review_findings SET posted_as = %s WHERE review_id = %s AND ordinal = %s",
            [(f.posted_as, record.review_id, i) for i, f in enumerate(record.findings)],
        )


def with_outcome(
    findings: list[Finding], inline: set[str], existing: set[str], in_summary: set[str]
) -> list[Finding]:
    """The findings marked with where the post put them."""
    out = []
    for f in findings:
        fp = f.fingerprint or ""
        where = (
            "inline"
            if fp in inline
            else "existing"
            if fp in existing
            else "summary"
            if fp in in_summary or not fp
            else None
        )
        out.append(replace(f, posted_as=where))
    return out


# ------------------------------------------------------------------ one pull request across pushes


async def last_reviewed_head(
    conn: Conn, repository_id: UUID, provider: str, number: int, head_sha: str
) -> str | None:
    """The head of this pull request's newest completed review of another head (None: none yet)."""
    cur = await conn.execute(
        "SELECT head_sha FROM reviews WHERE repository_id = %s AND provider = %s AND number = %s"
        " AND state = 'completed' AND head_sha <> %s ORDER BY created_at DESC LIMIT 1",
        (repository_id, provider, number, head_sha),
    )
    row = await cur.fetchone()
    return str(row["head_sha"]) if row else None


@dataclass(frozen=True, slots=True)
class PriorFinding:
    """A finding of an earlier head of the pull request: where its anchor was."""

    fingerprint: str
    path: str
    side: str  # new | old
    anchor_hash: str
    anchor_lines: int
    category: str


async def prior_findings(
    conn: Conn, repository_id: UUID, provider: str, number: int, head_sha: str
) -> list[PriorFinding]:
    """This pull request's findings of earlier heads, one per fingerprint (the newest), not yet resolved."""
    return await fetch_all_as(
        conn,
        PriorFinding,
        "SELECT DISTINCT ON (f.fingerprint) f.fingerprint, f.path, f.side, f.anchor_hash, f.anchor_lines,"
        " f.category FROM review_findings f JOIN reviews r ON r.review_id = f.review_id"
        " WHERE r.repository_id = %s AND r.provider = %s AND r.number = %s AND r.head_sha <> %s"
        " AND f.fingerprint IS NOT NULL AND f.anchor_hash IS NOT NULL AND f.anchor_lines > 0"
        " AND NOT EXISTS (SELECT 1 FROM reviews x WHERE x.repository_id = r.repository_id"
        " AND x.provider = r.provider AND x.number = r.number AND x.resolved ? f.fingerprint)"
        " ORDER BY f.fingerprint, r.created_at DESC",
        (repository_id, provider, number, head_sha),
    )


async def _serialise_posts(conn: Conn, repository_id: UUID, provider: str, number: int) -> None:
    """Posts to one pull request, and what they remember, one at a time (for the rest of the transaction)."""
    await conn.execute(
        "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))",
        (f"review-post:{repository_id}:{provider}:{number}",),
    )


async def newer_posted(conn: Conn, r: ReviewRecord, number: int, requested_at: datetime) -> str | None:
    """Serialise posts to one pull request (for the rest of the transaction) and answer the head
    of an already posted review that was requested later than this one (None: go ahead)."""
    await _serialise_posts(conn, r.repository_id, r.provider, number)
    cur = await conn.execute(
        "SELECT head_sha, requested_at FROM review_pull_requests"
        " WHERE repository_id = %s AND provider = %s AND number = %s",
        (r.repository_id, r.provider, number),
    )
    row = await cur.fetchone()
    if row is None or row["head_sha"] == r.head_sha or row["requested_at"] <= requested_at:
        return None
    return str(row["head_sha"])


async def pull_request_head(
    conn: Conn, repository_id: UUID, provider: str, number: int
) -> tuple[str, datetime] | None:
    """The head the pull request's summary names, and when its review was requested (None: no
    review of it was posted)."""
    cur = await conn.execute(
        "SELECT head_sha, requested_at FROM review_pull_requests"
        " WHERE repository_id = %s AND provider = %s AND number = %s",
        (repository_id, provider, number),
    )
    row = await cur.fetchone()
    return None if row is None else (str(row["head_sha"]), row["requested_at"])


async def remember_request(
    conn: Conn, repository_id: UUID, provider: str, number: int, head_sha: str, requested_at: datetime
) -> None:
    """A newer request for the head the summary already names becomes the summary's request: a
    late request for another head from before it then posts nothing (:func:`newer_posted`), as it
    would had this one been reviewed. Serialised with the pull request's posts; never moves back."""
    await _serialise_posts(conn, repository_id, provider, number)
    await conn.execute(
        "UPDATE review_pull_requests SET requested_at = %s"
        " WHERE repository_id = %s AND provider = %s AND number = %s AND head_sha = %s AND requested_at < %s",
        (requested_at, repository_id, provider, number, head_sha, requested_at),
    )


async def remember_posted(
    conn: Conn, tenant_id: UUID, r: ReviewRecord, number: int, requested_at: datetime, summary_ref: str | None
) -> None:
    await conn.execute(
        "INSERT INTO review_pull_requests (tenant_id, repository_id, provider, number, review_id, head_sha,"
        " requested_at, summary_ref) VALUES (%s, %s, %s, %s, %s, %s, %s, %s)"
        " ON CONFLICT (tenant_id, repository_id, provider, number) DO UPDATE SET review_id = excluded.review_id,"
        " head_sha = excluded.head_sha, requested_at = excluded.requested_at,"
        " summary_ref = coalesce(excluded.summary_ref, review_pull_requests.summary_ref), posted_at = now()"
        " WHERE review_pull_requests.requested_at <= excluded.requested_at",
        (tenant_id, r.repository_id, r.provider, number, r.review_id, r.head_sha, requested_at, summary_ref),
    )


# ------------------------------------------------------------------------------------ feedback


async def remember_threads(
    conn: Conn, tenant_id: UUID, r: ReviewRecord, number: int, threads: dict[str, tuple[str, str | None]]
) -> None:
    """Where each inline finding lives on the provider (webhooks about it find it by these refs)."""
    by_fp = {f.fingerprint: f for f in r.findings if f.fingerprint}
    rows = [
        (
            tenant_id,
            r.repository_id,
            r.provider,
            number,
            fp,
            thread,
            comment,
            r.review_id,
            f.path,
            f.category,
            f.severity,
        )
        for fp, (thread, comment) in threads.items()
        if (f := by_fp.get(fp)) is not None
    ]
    async with conn.cursor() as cur:
        await cur.executemany(
            "INSERT INTO review_threads (tenant_id, repository_id, provider, number, fingerprint, thread_ref,"
            " comment_ref, review_id, path, category, severity) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)"
            " ON CONFLICT (tenant_id, repository_id, provider, number, fingerprint) DO UPDATE SET"
            " thread_ref = excluded.thread_ref,"
            " comment_ref = coalesce(excluded.comment_ref, review_threads.comment_ref)",
            rows,
        )


async def record_code_changed(conn: Conn, tenant_id: UUID, r: ReviewRecord, number: int) -> list[str]:
    """Feedback ``code_changed`` for the posted findings this review resolved (their anchor changed
    or vanished); answers their categories (once per finding, however often this runs)."""
    if not r.resolved:
        return []
    cur = await conn.execute(
        "UPDATE review_threads SET state = 'resolved' WHERE repository_id = %s AND provider = %s AND number = %s"
        " AND fingerprint = ANY(%s::text[]) AND state = 'open' RETURNING fingerprint, category",
        (r.repository_id, r.provider, number, r.resolved),
    )
    changed = [(str(row["fingerprint"]), str(row["category"])) for row in await cur.fetchall()]
    async with conn.cursor() as c:
        await c.executemany(
            "INSERT INTO review_feedback (tenant_id, feedback_id, repository_id, provider, number, fingerprint,"
            " category, kind, source) VALUES (%s, %s, %s, %s, %s, %s, %s, 'code_changed', %s)"
            " ON CONFLICT (tenant_id, source, fingerprint, kind) DO NOTHING",
            [
                (
                    tenant_id,
                    uuid7(),
                    r.repository_id,
                    r.provider,
                    number,
                    fp,
                    category,
                    f"review:{r.review_id}",
                )
                for fp, category in changed
            ],
        )
    return [category for _, category in changed]
