"""Stored analyses, reviews and review submissions, as their readers see them.

The analyzer and the reviewer write these rows; the CLI and the ingest service's /v1 API read
them, and the ingest process carries neither service's package — so the read views live here,
beside the index they were computed from. Review submissions (migration 0010) are written by
the API and finished by the reviewer, which reads a submission's diff from here too.

Every function runs in the caller's tenant transaction (row-level security scopes it).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

from palimpsest.core.db import Conn, JsonRow, Row, columns, fetch_all_as, fetch_one_as

__all__ = [
    "AnalysisListing",
    "ReviewListing",
    "StoredSubmission",
    "Submission",
    "analysis_view",
    "finish_submission",
    "insert_submission",
    "list_analyses",
    "list_reviews",
    "load_review",
    "review_by_request",
    "submission",
    "submission_by_request",
]


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def _str(value: Any) -> str | None:
    return str(value) if value is not None else None


# ---------------------------------------------------------------------------------- analyses


async def analysis_view(conn: Conn, analysis_id: UUID) -> dict[str, Any] | None:
    """The JSON view of one analysis (the CLI's ``--json``): Markdown, summary, selection, findings."""
    cur = await conn.execute(
        "SELECT a.*, s.summary, s.mode AS summary_mode, r.full_name FROM analyses a"
        " LEFT JOIN analysis_summaries s ON s.analysis_id = a.analysis_id"
        " JOIN repositories r ON r.repository_id = a.repository_id"
        " WHERE a.analysis_id = %s",
        (analysis_id,),
    )
    row = await cur.fetchone()
    if row is None:
        return None
    cur = await conn.execute(
        "SELECT doc_path, line, claim, kind, nearest, detail, evidence FROM doc_findings"
        " WHERE analysis_id = %s ORDER BY ordinal",
        (analysis_id,),
    )
    findings = [
        {
            "doc": f["doc_path"],
            "line": f["line"],
            "claim": f["claim"],
            "kind": f["kind"],
            "nearest": f["nearest"],
            "detail": f["detail"],
            "evidence": f["evidence"],
        }
        for f in await cur.fetchall()
    ]
    return {
        "analysis_id": str(row["analysis_id"]),
        "repository_id": str(row["repository_id"]),
        "repository": row["full_name"],
        "snapshot_id": _str(row["snapshot_id"]),
        "commit": row["commit_sha"],
        "request_id": _str(row["request_id"]),
        "trigger": row["trigger"],
        "state": row["state"],
        "mode": row["mode"],
        "reason": row["reason"],
        "model": row["model"],
        "analysis": row["markdown"],
        "summary": row["summary"] or "",
        "selection": row["selection"],
        "median_code": _iso(row["median_code"]),
        "doc_findings": findings,
        "facts": row["facts"],
        "usage": {
            "prompt_tokens": row["prompt_tokens"],
            "completion_tokens": row["completion_tokens"],
            "cost_usd": float(row["cost_usd"]) if row["cost_usd"] is not None else None,
        },
        "duration_s": row["duration_s"],
        "created_at": row["created_at"].isoformat(),
    }


@dataclass(frozen=True, slots=True)
class AnalysisListing(JsonRow):
    """An analysis as a repository's list shows it (``id`` pages the list)."""

    id: UUID
    analysis_id: UUID
    repository_id: UUID
    snapshot_id: UUID | None
    commit: str | None
    request_id: UUID | None
    trigger: str
    state: str
    mode: str
    reason: str | None
    model: str | None
    duration_s: float
    created_at: datetime
    doc_findings: int


async def list_analyses(
    conn: Conn, repository_id: UUID, *, limit: int, before: UUID | None = None
) -> list[AnalysisListing]:
    """A repository's analyses, newest first (ids are UUIDv7); ``before`` continues a page."""
    return await _page(
        conn,
        AnalysisListing,
        "SELECT a.analysis_id AS id, a.analysis_id, a.repository_id, a.snapshot_id, a.commit_sha AS commit,"
        " a.request_id, a.trigger, a.state, a.mode, a.reason, a.model, a.duration_s, a.created_at,"
        " (SELECT count(*) FROM doc_findings f WHERE f.analysis_id = a.analysis_id) AS doc_findings"
        " FROM analyses a",
        repository_id,
        limit,
        before,
    )


async def _page(
    conn: Conn, row_type: type[Row], select: str, repository_id: UUID, limit: int, before: UUID | None
) -> list[Row]:
    """One page of ``select`` (aliased ``a``, its id selected as ``id``) for a repository."""
    return await fetch_all_as(
        conn,
        row_type,
        f"SELECT * FROM ({select}) a WHERE a.repository_id = %s AND (%s::uuid IS NULL OR a.id < %s)"
        " ORDER BY a.id DESC LIMIT %s",
        (repository_id, before, before, limit),
    )


# ----------------------------------------------------------------------------------- reviews


async def load_review(conn: Conn, review_id: UUID) -> dict[str, Any] | None:
    """A stored review as the CLI and API print it (context in prompt order)."""
    cur = await conn.execute("SELECT * FROM reviews WHERE review_id = %s", (review_id,))
    row = await cur.fetchone()
    if row is None:
        return None
    cur = await conn.execute(
        "SELECT source, repository, path, start_line, end_line, last_modified_at, annotation, reason, score,"
        " tokens FROM review_context WHERE review_id = %s ORDER BY ordinal",
        (review_id,),
    )
    context = [{**dict(c), "last_modified_at": _iso(c["last_modified_at"])} for c in await cur.fetchall()]
    cur = await conn.execute(
        "SELECT path, start_line, end_line, side, severity, category, message, suggested_change, fingerprint,"
        " symbol, position, posted_as FROM review_findings WHERE review_id = %s ORDER BY ordinal",
        (review_id,),
    )
    findings = [dict(f) for f in await cur.fetchall()]
    return {
        "review_id": str(row["review_id"]),
        "repository_id": str(row["repository_id"]),
        "request_id": _str(row["request_id"]),
        "provider": row["provider"],
        "number": row["number"],
        "snapshot_id": _str(row["snapshot_id"]),
        "base_sha": row["base_sha"],
        "head_sha": row["head_sha"],
        "state": row["state"],
        "mode": row["mode"],
        "reason": row["reason"],
        "model": row["model"],
        "context": context,
        "dropped": row["dropped"],
        "cochange_missing": row["cochange_missing"],
        "sources": row["sources"],
        "findings": findings,
        "findings_dropped": row["findings_dropped"],
        "summary": row["summary"],
        "tokens": {"prompt": row["prompt_tokens"], "completion": row["completion_tokens"]},
        "cost_usd": float(row["cost_usd"]) if row["cost_usd"] is not None else None,
        "posted": row["posted"],
        "scope": row["scope"],
        "commits": row["commits"],
        "since_sha": row["since_sha"],
        "resolved": row["resolved"],
        "created_at": _iso(row["created_at"]),
    }


async def review_by_request(conn: Conn, request_id: UUID) -> dict[str, Any] | None:
    """The newest stored review made for ``request_id`` (webhook, CLI or API request)."""
    cur = await conn.execute(
        "SELECT review_id FROM reviews WHERE request_id = %s ORDER BY created_at DESC LIMIT 1", (request_id,)
    )
    row = await cur.fetchone()
    return None if row is None else await load_review(conn, UUID(str(row["review_id"])))


@dataclass(frozen=True, slots=True)
class ReviewListing(JsonRow):
    """A stored review as a repository's list shows it (``id`` pages the list)."""

    id: UUID
    review_id: UUID
    repository_id: UUID
    request_id: UUID | None
    provider: str
    number: int | None
    base_sha: str | None
    head_sha: str
    snapshot_id: UUID | None
    state: str
    mode: str
    reason: str | None
    model: str | None
    posted: bool
    duration_s: float
    created_at: datetime
    scope: str
    findings: int


async def list_reviews(
    conn: Conn, repository_id: UUID, *, limit: int, before: UUID | None = None
) -> list[ReviewListing]:
    """A repository's stored reviews, newest first (ids are UUIDv7); ``before`` continues a page."""
    return await _page(
        conn,
        ReviewListing,
        "SELECT r.review_id AS id, r.review_id, r.repository_id, r.request_id, r.provider, r.number, r.base_sha,"
        " r.head_sha, r.snapshot_id, r.state, r.mode, r.reason, r.model, r.posted, r.duration_s, r.created_at,"
        " r.scope,"
        " (SELECT count(*) FROM review_findings f WHERE f.review_id = r.review_id) AS findings"
        " FROM reviews r",
        repository_id,
        limit,
        before,
    )


# ------------------------------------------------------------------------ review submissions


@dataclass(frozen=True, slots=True)
class Submission:
    """A review the API was asked for: ``base`` and either ``head`` or ``diff`` (never both)."""

    submission_id: UUID
    repository_id: UUID
    request_id: UUID
    base: str
    head: str | None = None
    diff: str | None = None


@dataclass(frozen=True, slots=True)
class StoredSubmission:
    """A review submission as stored, with the reviewer's outcome once it has one."""

    submission_id: UUID
    repository_id: UUID
    request_id: UUID
    base: str
    head: str | None
    diff: str | None
    state: str  # pending | completed | failed | skipped
    reason: str | None
    review_id: UUID | None
    head_sha: str | None
    created_at: datetime
    completed_at: datetime | None


_SUBMISSION = f"SELECT {columns(StoredSubmission)} FROM review_submissions"


async def insert_submission(conn: Conn, tenant_id: UUID, s: Submission) -> None:
    await conn.execute(
        "INSERT INTO review_submissions (tenant_id, submission_id, repository_id, request_id, base, head, diff)"
        " VALUES (%s, %s, %s, %s, %s, %s, %s)",
        (tenant_id, s.submission_id, s.repository_id, s.request_id, s.base, s.head, s.diff),
    )


async def submission(conn: Conn, submission_id: UUID) -> StoredSubmission | None:
    return await fetch_one_as(
        conn, StoredSubmission, _SUBMISSION + " WHERE submission_id = %s", (submission_id,)
    )


async def submission_by_request(conn: Conn, request_id: UUID) -> StoredSubmission | None:
    return await fetch_one_as(conn, StoredSubmission, _SUBMISSION + " WHERE request_id = %s", (request_id,))


async def finish_submission(
    conn: Conn,
    submission_id: UUID,
    *,
    state: str,
    reason: str | None,
    review_id: UUID | None,
    head_sha: str | None,
) -> None:
    """Record the reviewer's outcome on the submission (in the reviewer's inbox transaction)."""
    await conn.execute(
        "UPDATE review_submissions SET state = %s, reason = %s, review_id = %s, head_sha = %s,"
        " completed_at = now() WHERE submission_id = %s",
        (state, (reason or "")[:1000] or None, review_id, head_sha or None, submission_id),
    )
