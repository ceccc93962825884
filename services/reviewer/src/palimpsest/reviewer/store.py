"""Storing and reading reviews (migration 0009): one per (repository, head sha).

A completed or skipped review makes later requests for the same head answer with it instead of
reviewing (and posting) again; a failed one is replaced by the next attempt.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

from palimpsest.core.db import Conn
from palimpsest.reviewer.review import Finding


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
    cochange_missing: list[str] = field(default_factory=list)
    sources: dict[str, Any] = field(default_factory=dict)
    findings: list[Finding] = field(default_factory=list)
    findings_dropped: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float | None = None
    duration_s: float = 0.0
    posted: bool = False


async def existing_review(conn: Conn, repository_id: UUID, head_sha: str) -> dict[str, Any] | None:
    """The stored, not failed, review of this head (idempotency)."""
    cur = await conn.execute(
        "SELECT review_id, state, reason, posted FROM reviews"
        " WHERE repository_id = %s AND head_sha = %s AND state <> 'failed'",
        (repository_id, head_sha),
    )
    row = await cur.fetchone()
    return dict(row) if row else None


async def save_review(conn: Conn, tenant_id: UUID, r: ReviewRecord) -> UUID:
    """Insert the review (replacing a failed one of the same head); returns the stored id."""
    await conn.execute(
        "DELETE FROM reviews WHERE repository_id = %s AND head_sha = %s AND state = 'failed'",
        (r.repository_id, r.head_sha),
    )
    cur = await conn.execute(
        "INSERT INTO reviews (tenant_id, review_id, repository_id, request_id, provider, number, base_sha,"
        " head_sha, snapshot_id, state, mode, reason, model, summary, dropped, cochange_missing, sources,"
        " findings_dropped, prompt_tokens, completion_tokens, cost_usd, duration_s, posted)"
        " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)"
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
        ),
    )
    if await cur.fetchone() is None:  # a concurrent delivery stored it first
        found = await existing_review(conn, r.repository_id, r.head_sha)
        return UUID(str(found["review_id"])) if found else r.review_id
    await _children(conn, tenant_id, r)
    return r.review_id


async def _children(conn: Conn, tenant_id: UUID, r: ReviewRecord) -> None:
    async with conn.cursor() as cur:
        await cur.executemany(
            "INSERT INTO review_findings (tenant_id, review_id, ordinal, path, start_line, end_line, severity,"
            " category, message, suggested_change) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
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
    """Enough of a stored review to post it again (summary, findings, head)."""
    cur = await conn.execute(
        "SELECT review_id, repository_id, request_id, provider, head_sha, summary FROM reviews WHERE review_id = %s",
        (review_id,),
    )
    row = await cur.fetchone()
    if row is None:
        return None
    cur = await conn.execute(
        "SELECT path, start_line, end_line, severity, category, message, suggested_change"
        " FROM review_findings WHERE review_id = %s ORDER BY ordinal",
        (review_id,),
    )
    findings = [Finding(**dict(f)) for f in await cur.fetchall()]
    return ReviewRecord(
        review_id=review_id,
        repository_id=UUID(str(row["repository_id"])),
        request_id=row["request_id"],
        provider=row["provider"],
        head_sha=row["head_sha"],
        summary=row["summary"],
        findings=findings,
    )


async def mark_posted(conn: Conn, review_id: UUID) -> None:
    await conn.execute("UPDATE reviews SET posted = true, reason = NULL WHERE review_id = %s", (review_id,))
