"""The reviewer's decisions, as pure functions over loaded rows and computed results.

* :func:`decide_request` — what a ``review.requested`` event asks for, given what :mod:`.load`
  read: nothing (the repository is gone), a skip (suspended), the stored review of that head, or a
  review;
* :func:`decide_findings` / :func:`kept_drift` — which of the model's findings and the left-behind
  doc lines a review keeps (the repository rules); :func:`summary_with_drift` and
  :func:`review_reason` — the summary and reason it ends with;
* :func:`completed` / :func:`skipped` / :func:`answered` — the writes that end a request, as
  intents (:mod:`.intents`) that :func:`palimpsest.reviewer.apply.apply` runs in one transaction;
* :func:`should_post` — whether a review of a provider pull request is posted at all.

Nothing here reads or writes: the service loads, calls these, and applies.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from datetime import datetime
from uuid import UUID

from palimpsest.core.events import ReviewRequested
from palimpsest.index.context.assemble import ReviewContext
from palimpsest.index.context.diff import parse_diff
from palimpsest.index.context.finding import Finding
from palimpsest.index.context.rules import RepoRules, severe_enough
from palimpsest.index.context.source import PullRequestDiff
from palimpsest.reviewer.intents import (
    SAVED,
    EmitCompleted,
    FinishSubmission,
    Intent,
    MarkPosted,
    RememberRequest,
    ReviewRef,
    SaveReview,
)
from palimpsest.reviewer.load import Loaded, on_provider
from palimpsest.reviewer.review import Outcome
from palimpsest.reviewer.store import ExistingReview, RepositoryRow, ReviewRecord

# ------------------------------------------------------------------------------------ the request


@dataclass(frozen=True, slots=True)
class Gone:
    """The repository was deleted: nothing to review, nothing to answer."""


@dataclass(frozen=True, slots=True)
class Skip:
    """Not reviewed (a suspended tenant or repository, issue 19): answered, not retried."""

    reason: str


@dataclass(frozen=True, slots=True)
class AnswerExisting:
    """The head was reviewed before: answer with that review. ``post``: the stored review to post
    first (its post failed, or ``repost``: the summary names another head, requested earlier, and
    the newest request wins, so the summary names this head again; nothing already there is
    posted twice). ``remember``: the summary already names this head, and this request is newer."""

    repo: RepositoryRow
    found: ExistingReview
    post: ReviewRecord | None = None
    repost: bool = False
    remember: RememberRequest | None = None


@dataclass(frozen=True, slots=True)
class Review:
    """Review the request."""

    repo: RepositoryRow


Decision = Gone | Skip | AnswerExisting | Review


def decide_request(event: ReviewRequested, loaded: Loaded) -> Decision:
    if loaded.repo is None:
        return Gone()
    if loaded.suspended is not None:
        return Skip(loaded.suspended)
    if loaded.existing is not None:
        return _answer_existing(event, loaded.repo, loaded.existing, loaded.shown, loaded.record)
    return Review(loaded.repo)


def _answer_existing(
    event: ReviewRequested,
    repo: RepositoryRow,
    found: ExistingReview,
    shown: tuple[str, datetime] | None,
    record: ReviewRecord | None,
) -> AnswerExisting:
    if found.state != "completed":
        return AnswerExisting(repo, found)
    repost, remember = False, None
    if found.posted and shown is not None:
        head, requested_at = shown
        repost = head != event.head_sha and requested_at < event.occurred_at
        if head == event.head_sha and requested_at < event.occurred_at:
            remember = RememberRequest(
                event.repository_id, event.provider, event.number or 0, head, event.occurred_at
            )
    post = record if not found.posted or repost else None
    return AnswerExisting(repo, found, post, repost and post is not None, remember)


def pull_ref(event: ReviewRequested) -> str | None:
    """The pull request's head ref on the provider, for a request that names no head (a GitHub
    comment's payload carries no commit): GitHub ``refs/pull/N/head``, GitLab
    ``refs/merge-requests/N/head``."""
    if not event.number:
        return None
    if event.provider == "github":
        return f"refs/pull/{event.number}/head"
    if event.provider == "gitlab":
        return f"refs/merge-requests/{event.number}/head"
    return None


# ------------------------------------------------------------------------------------ findings


@dataclass(frozen=True, slots=True)
class ModelUsage:
    """How a review's findings were made: by the model (its usage) or as the brief without one."""

    mode: str = "brief"  # brief | model
    model: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float | None = None
    reason: str | None = None
    parts: int = 0


@dataclass(frozen=True, slots=True)
class KeptFindings:
    """The model's findings a review keeps (not yet identified), and how many it dropped."""

    found: list[Finding]
    dropped: int  # the model's dropped findings, and those the rules dropped


def decide_findings(outcome: Outcome, rules: RepoRules) -> KeptFindings:
    """The rules applied to the model's findings: ``review.min_severity``, ``review.ignore`` and
    ``review.max_findings``."""
    found = filtered(outcome.findings, rules)
    return KeptFindings(found, outcome.findings_dropped + len(outcome.findings) - len(found))


def kept_drift(left_behind: list[Finding], rules: RepoRules) -> list[Finding]:
    """The left-behind doc lines a review keeps: ``review.min_severity`` and ``review.ignore`` applied."""
    return [
        f for f in left_behind if severe_enough(f.severity, rules.min_severity) and not rules.ignored(f.path)
    ]


def summary_with_drift(summary: str, drift: list[Finding]) -> str:
    return summary + (
        f"\n\nThis change leaves {len(drift)} doc line(s) naming what it removes, renames or"
        " moves (found without a model: the `docs` findings)."
        if drift
        else ""
    )


def review_reason(usage: ModelUsage, context: ReviewContext, rules: RepoRules) -> str | None:
    notes = (usage.reason, config_note(context), rules.note())
    return "; ".join(dict.fromkeys(r for r in notes if r)) or None


def filtered(findings: list[Finding], rules: RepoRules) -> list[Finding]:
    """``review.min_severity`` and ``review.max_findings`` applied (the rest is counted as dropped)."""
    kept = [
        f for f in findings if severe_enough(f.severity, rules.min_severity) and not rules.ignored(f.path)
    ]
    return kept if rules.max_findings is None else kept[: rules.max_findings]


def sections(text: str, paths: set[str]) -> str:
    """The diff's file sections whose (new) path is in ``paths``."""
    keep = []
    for section in re.split(r"(?m)^(?=diff --git )", text):
        files = parse_diff(section)
        if files and files[0].path in paths:
            keep.append(section)
    return "".join(keep)


def without_ignored(pr: PullRequestDiff, rules: RepoRules) -> PullRequestDiff:
    """The pull request without the files ``review.ignore`` names (the model never sees them)."""
    files = [f for f in pr.files if not rules.ignored(f.path)]
    if len(files) == len(pr.files):
        return pr
    paths = {f.path for f in files}
    kept = {p: t for p, t in pr.at_head.items() if p in paths or p in {f.old_path for f in files}}
    return PullRequestDiff(sections(pr.text, paths), files, kept, pr.start)


def cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + "\n… (cut to fit)\n"


def config_note(context: ReviewContext) -> str | None:
    """``config_invalid: …`` when the base commit's .palimpsest/config.yml could not be used."""
    config = context.cross.get("config") or {}
    return f"config_invalid: {config.get('detail')}" if config.get("state") == "invalid" else None


def checked(record: ReviewRecord) -> ReviewRecord:
    if not valid_sha(record.head_sha):
        record.head_sha = ""
    return record


def valid_sha(sha: str) -> bool:
    return 7 <= len(sha) <= 64 and all(ch in "0123456789abcdef" for ch in sha)


# ------------------------------------------------------------------------------------ the writes


def should_post(post: bool, event: ReviewRequested, record: ReviewRecord) -> bool:
    """A completed review of a provider pull request is posted (unless posting is off)."""
    return post and record.state == "completed" and on_provider(event)


def completed(event: ReviewRequested, record: ReviewRecord) -> list[Intent]:
    """The writes that end a reviewed request: the review (when it has a head), the submission's
    outcome, and ``review.completed``."""
    if not record.head_sha:  # nothing to store: the event names the unstored review's id
        return _ended(
            event, None, record.review_id, record.state, record.reason, record.head_sha, record.posted
        )
    ended = _ended(event, SAVED, SAVED, record.state, record.reason, record.head_sha, record.posted)
    return [SaveReview(event.tenant_id, record), *ended]


def skipped(event: ReviewRequested, reason: str, review_id: UUID) -> list[Intent]:
    """The writes that end a request that is not reviewed (``review_id``: the event's, unstored)."""
    return _ended(event, None, review_id, "skipped", reason, event.head_sha, False)


def answered(event: ReviewRequested, answer: AnswerExisting, *, posted: bool = False) -> list[Intent]:
    """The writes that end a request answered with the stored review of its head: remembering the
    request (:class:`AnswerExisting`), the review marked posted when ``posted`` (its failed post
    went through now; not for a repost, which posted an already posted review again), and the end."""
    found = answer.found
    out: list[Intent] = [answer.remember] if answer.remember is not None else []
    if posted and answer.post is not None and not answer.repost:
        out.append(MarkPosted(answer.post))
        found = replace(found, posted=True)
    return [
        *out,
        *_ended(
            event, found.review_id, found.review_id, found.state, found.reason, event.head_sha, found.posted
        ),
    ]


def _ended(
    event: ReviewRequested,
    stored: ReviewRef | None,
    announced: ReviewRef,
    state: str,
    reason: str | None,
    head_sha: str | None,
    posted: bool,
) -> list[Intent]:
    out: list[Intent] = []
    if event.submission_id is not None:
        out.append(FinishSubmission(event.submission_id, stored, state, reason, head_sha))
    out.append(
        EmitCompleted(
            event.tenant_id, event.repository_id, event.request_id, announced, state, reason, posted
        )
    )
    return out
