"""Stored analyses, reviews and review submissions, as their readers see them.

The analyzer and the reviewer write these rows; the CLI and the ingest service's /v1 API read
them, and the ingest process carries neither service's package — so the read views live here,
beside the index they were computed from. Review submissions (migration 0010) are written by
the API and finished by the reviewer, which reads a submission's diff from here too.

Every function runs in the caller's tenant transaction (row-level security scopes it).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any
from uuid import UUID

from palimpsest.core.db import Conn, JsonRow, Row, columns, fetch_all_as, fetch_one, fetch_one_as
from palimpsest.core.stores import CORE, Owns, Store
from palimpsest.index.cochange import from_stored

# Review submissions: the /v1 API (ingest) takes one, the reviewer finishes it. The analyses and
# reviews read here are written by their services' stores.
STORE = Store(
    owner=CORE,
    writes=(
        Owns("review_submissions", "a submission, taken by the API", by="ingest"),
        Owns("review_submissions", "its result", by="reviewer"),
    ),
    reads=(
        "analyses",
        "analysis_summaries",
        "doc_findings",
        "reviews",
        "review_findings",
        "review_context",
        "repositories",
    ),
)

__all__ = [
    "AnalysisListing",
    "AnalysisView",
    "ContextItem",
    "DocFinding",
    "ReviewListing",
    "ReviewView",
    "StoredFinding",
    "StoredSubmission",
    "Submission",
    "analysis_view",
    "finish_submission",
    "insert_submission",
    "latest_completed_analysis",
    "left_behind_fingerprints",
    "list_analyses",
    "list_reviews",
    "load_review",
    "review_about",
    "review_by_request",
    "submission",
    "submission_by_request",
]


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def _str(value: Any) -> str | None:
    return str(value) if value is not None else None


# ---------------------------------------------------------------------------------- analyses


@dataclass(frozen=True, slots=True)
class DocFinding(JsonRow):
    """A documentation finding of an analysis, as its readers see it."""

    doc: str
    line: int | None
    claim: str
    kind: str
    nearest: str | None
    detail: str | None
    evidence: Any  # jsonb: the proof from history (commits, dates), or null


@dataclass(frozen=True, slots=True)
class AnalysisView:
    """One stored analysis: its Markdown, summary, selection, findings and usage."""

    analysis_id: UUID
    repository_id: UUID
    repository: str
    snapshot_id: UUID | None
    commit: str | None
    request_id: UUID | None
    trigger: str
    state: str
    mode: str
    reason: str | None
    model: str | None
    analysis: str | None
    summary: str
    selection: Any  # jsonb
    median_code: datetime | None
    facts: Any  # jsonb
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float | None
    duration_s: float
    created_at: datetime
    doc_findings: tuple[DocFinding, ...] = ()

    def to_json(self) -> dict[str, Any]:
        """The JSON the CLI's ``--json``, the API and the MCP tools have always shown."""
        return {
            "analysis_id": str(self.analysis_id),
            "repository_id": str(self.repository_id),
            "repository": self.repository,
            "snapshot_id": _str(self.snapshot_id),
            "commit": self.commit,
            "request_id": _str(self.request_id),
            "trigger": self.trigger,
            "state": self.state,
            "mode": self.mode,
            "reason": self.reason,
            "model": self.model,
            "analysis": self.analysis,
            "summary": self.summary,
            "selection": self.selection,
            "median_code": _iso(self.median_code),
            "doc_findings": [f.to_json() for f in self.doc_findings],
            "facts": self.facts,
            "usage": {
                "prompt_tokens": self.prompt_tokens,
                "completion_tokens": self.completion_tokens,
                "cost_usd": self.cost_usd,
            },
            "duration_s": self.duration_s,
            "created_at": self.created_at.isoformat(),
        }


async def analysis_view(conn: Conn, analysis_id: UUID) -> AnalysisView | None:
    """One stored analysis with its documentation findings (in the order they were written)."""
    view = await fetch_one_as(
        conn,
        AnalysisView,
        "SELECT a.analysis_id, a.repository_id, r.full_name AS repository, a.snapshot_id,"
        " a.commit_sha AS commit, a.request_id, a.trigger, a.state, a.mode, a.reason, a.model,"
        " a.markdown AS analysis, coalesce(s.summary, '') AS summary, a.selection, a.median_code, a.facts,"
        " a.prompt_tokens, a.completion_tokens, a.cost_usd::float8 AS cost_usd, a.duration_s, a.created_at"
        " FROM analyses a LEFT JOIN analysis_summaries s ON s.analysis_id = a.analysis_id"
        " JOIN repositories r ON r.repository_id = a.repository_id WHERE a.analysis_id = %s",
        (analysis_id,),
    )
    if view is None:
        return None
    findings = await fetch_all_as(
        conn,
        DocFinding,
        "SELECT doc_path AS doc, line, claim, kind, nearest, detail, evidence FROM doc_findings"
        " WHERE analysis_id = %s ORDER BY ordinal",
        (analysis_id,),
    )
    return replace(view, doc_findings=tuple(findings))


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


@dataclass(frozen=True, slots=True)
class ContextItem(JsonRow):
    """One piece of a review's context, in prompt order."""

    source: str
    repository: str | None
    path: str
    start_line: int
    end_line: int
    last_modified_at: datetime | None
    annotation: str | None
    reason: str | None
    score: float | None
    tokens: int

    def to_json(self) -> dict[str, Any]:
        return {**JsonRow.to_json(self), "last_modified_at": _iso(self.last_modified_at)}


@dataclass(frozen=True, slots=True)
class StoredFinding(JsonRow):
    """A review finding as stored (and as posted, where ``posted_as`` says how)."""

    path: str
    start_line: int
    end_line: int
    side: str
    severity: str
    category: str
    message: str
    suggested_change: str | None
    fingerprint: str | None
    symbol: str | None
    position: Any  # jsonb: where the provider placed it, or null
    posted_as: str | None


@dataclass(frozen=True, slots=True)
class ReviewView:
    """One stored review: its context, what was dropped, its findings, usage and scope."""

    review_id: UUID
    repository_id: UUID
    request_id: UUID | None
    provider: str
    number: int | None
    snapshot_id: UUID | None
    base_sha: str | None
    head_sha: str
    state: str
    mode: str
    reason: str | None
    model: str | None
    dropped: list[Any]  # jsonb
    cochange_missing: list[Any]  # jsonb
    sources: dict[str, Any]  # jsonb
    findings_dropped: int
    summary: str
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float | None
    posted: bool
    scope: str
    commits: list[Any]  # jsonb
    since_sha: str | None
    resolved: list[Any]  # jsonb
    created_at: datetime
    title: str | None  # what it was of (NULL: stored before migration 0051, not recorded)
    author: str | None
    requested_by: str | None
    base_ref: str | None
    head_ref: str | None
    context: tuple[ContextItem, ...] = ()
    findings: tuple[StoredFinding, ...] = ()

    def to_json(self) -> dict[str, Any]:
        """The JSON the CLI's ``--json`` and the API have always shown (context in prompt order)."""
        return {
            "review_id": str(self.review_id),
            "repository_id": str(self.repository_id),
            "request_id": _str(self.request_id),
            "provider": self.provider,
            "number": self.number,
            "snapshot_id": _str(self.snapshot_id),
            "base_sha": self.base_sha,
            "head_sha": self.head_sha,
            "state": self.state,
            "mode": self.mode,
            "reason": self.reason,
            "model": self.model,
            "context": [c.to_json() for c in self.context],
            "dropped": self.dropped,
            "cochange_missing": [from_stored(m) for m in self.cochange_missing],
            "sources": self.sources,
            "findings": [f.to_json() for f in self.findings],
            "findings_dropped": self.findings_dropped,
            "summary": self.summary,
            "tokens": {"prompt": self.prompt_tokens, "completion": self.completion_tokens},
            "cost_usd": self.cost_usd,
            "posted": self.posted,
            "scope": self.scope,
            "commits": self.commits,
            "since_sha": self.since_sha,
            "resolved": self.resolved,
            "created_at": _iso(self.created_at),
            "title": self.title,
            "author": self.author,
            "requested_by": self.requested_by,
            "base_ref": self.base_ref,
            "head_ref": self.head_ref,
        }


_REVIEW_COLUMNS = (
    "review_id, repository_id, request_id, provider, number, snapshot_id, base_sha, head_sha, state, mode,"
    " reason, model, dropped, cochange_missing, sources, findings_dropped, summary, prompt_tokens,"
    " completion_tokens, cost_usd::float8 AS cost_usd, posted, scope, commits, since_sha, resolved, created_at,"
    " title, author, requested_by, base_ref, head_ref"
)


async def load_review(conn: Conn, review_id: UUID) -> ReviewView | None:
    """A stored review with its context (in prompt order) and findings."""
    view = await fetch_one_as(
        conn, ReviewView, f"SELECT {_REVIEW_COLUMNS} FROM reviews WHERE review_id = %s", (review_id,)
    )
    if view is None:
        return None
    context = await fetch_all_as(
        conn,
        ContextItem,
        f"SELECT {columns(ContextItem)} FROM review_context WHERE review_id = %s ORDER BY ordinal",
        (review_id,),
    )
    findings = await fetch_all_as(
        conn,
        StoredFinding,
        f"SELECT {columns(StoredFinding)} FROM review_findings WHERE review_id = %s ORDER BY ordinal",
        (review_id,),
    )
    return replace(view, context=tuple(context), findings=tuple(findings))


async def review_by_request(conn: Conn, request_id: UUID) -> ReviewView | None:
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
    title: str | None  # NULL: stored before migration 0051 (not recorded)
    author: str | None
    requested_by: str | None
    base_ref: str | None
    head_ref: str | None


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
        " (SELECT count(*) FROM review_findings f WHERE f.review_id = r.review_id) AS findings,"
        " r.title, r.author, r.requested_by, r.base_ref, r.head_ref"
        " FROM reviews r",
        repository_id,
        limit,
        before,
    )


NOT_RECORDED = "not recorded (reviewed before titles and authors were stored with reviews)"


@dataclass(frozen=True, slots=True)
class ReviewAbout:
    """What a stored review was of, in words for people (the web view and the CLI say the same):
    the title and the pull request's author (who asked, when the provider did not name the
    author). Plain text: the web view escapes it."""

    pull_request: bool
    title: str
    author: str


def review_about(review: ReviewListing | Mapping[str, Any]) -> ReviewAbout:
    """A stored review's subject (a listing, or a review's JSON from the API or ``to_json``).

    A row stored before migration 0051 has no title (NULL): its title and author are "not
    recorded". A local or API review has no pull request and so no author."""
    get = review.get if isinstance(review, Mapping) else lambda key: getattr(review, key, None)
    title, author, asked = get("title"), get("author"), get("requested_by")
    pull_request = get("number") is not None
    if title is None:
        said_title = said_author = NOT_RECORDED
    else:
        said_title = str(title) or "none given"
        if not pull_request:
            said_author = "none: not a pull request"
        elif author:
            said_author = str(author) + (f" (review asked by {asked})" if asked and asked != author else "")
        else:
            said_author = "not named by the provider's delivery" + (
                f"; review asked by {asked}" if asked else ""
            )
    return ReviewAbout(pull_request, said_title, said_author)


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


async def latest_doc_freshness(conn: Conn, repository_id: UUID) -> Any:
    """The ``doc_freshness`` facts of the repository's newest completed analysis, as stored (a
    list of ``{path, state, ...}`` when the check stored states), or None when there is none."""
    row = await fetch_one(
        conn,
        "SELECT a.facts -> 'doc_freshness' AS docs FROM analyses a"
        " WHERE a.repository_id = %s AND a.state = 'completed'"
        " ORDER BY a.created_at DESC, a.analysis_id DESC LIMIT 1",
        (repository_id,),
    )
    return row["docs"] if row is not None else None


@dataclass(frozen=True, slots=True)
class _Fingerprint:
    fp: str


async def left_behind_fingerprints(
    conn: Conn, repository_id: UUID, provider: str, number: int, head_sha: str
) -> set[str]:
    """The left-behind check's finding fingerprints stored with the pull request's reviews of
    other heads than ``head_sha``."""
    rows = await fetch_all_as(
        conn,
        _Fingerprint,
        "SELECT DISTINCT jsonb_array_elements_text(sources->'left_behind'->'fingerprints') AS fp"
        " FROM reviews WHERE repository_id = %s AND provider = %s AND number = %s AND head_sha <> %s"
        " AND jsonb_typeof(sources->'left_behind'->'fingerprints') = 'array'",
        (repository_id, provider, number, head_sha),
    )
    return {row.fp for row in rows}


@dataclass(frozen=True, slots=True)
class _AnalysisId:
    analysis_id: UUID


async def latest_completed_analysis(conn: Conn, repository_id: UUID) -> UUID | None:
    """The id of the repository's newest completed analysis (ids are UUIDv7), or None."""
    row = await fetch_one_as(
        conn,
        _AnalysisId,
        "SELECT analysis_id FROM analyses WHERE repository_id = %s AND state = 'completed'"
        " ORDER BY analysis_id DESC LIMIT 1",
        (repository_id,),
    )
    return row.analysis_id if row is not None else None
