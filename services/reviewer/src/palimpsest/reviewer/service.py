"""The reviewer service: ``review.requested`` → a stored review and ``review.completed``.

Both callers — the webhook flow (GitHub, GitLab, Bitbucket pull/merge requests through ingest) and
the local flow (``palimpsest review``) — arrive here as the same event and go through the same
core (:func:`palimpsest.index.context.assemble.assemble_context`). Slow work (git, the index, the model)
runs first; the review and its event are written in the inbox transaction. Idempotent per
(repository, head sha): a redelivered or repeated request answers with the stored review (a
``full`` request — ``@bot review full`` — reviews the head again and replaces it).

For a provider pull request the base's repository rules apply (:mod:`palimpsest.index.context.rules`),
a push is reviewed incrementally when it can be (:mod:`palimpsest.reviewer.incremental`), each
finding gets its fingerprint and its position on the diff (:mod:`palimpsest.reviewer.identity`,
:mod:`palimpsest.reviewer.positions`), earlier findings whose anchor is gone are resolved, and the
post adds only what is new (:mod:`palimpsest.reviewer.posting`).

Settings: the fields of :class:`Settings` (``palimpsest settings --service reviewer``, docs/settings.md).
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any
from uuid import UUID

from pydantic import Field

from palimpsest.core import metrics
from palimpsest.core.bus import CONSUMERS, ConsumerSpec
from palimpsest.core.consumer import HandlerContext
from palimpsest.core.credentials import Credential, credential_token, git_auth_for
from palimpsest.core.db import Conn, Pool, tenant_tx
from palimpsest.core.errors import PalimpsestError
from palimpsest.core.events import ReviewCompleted, ReviewRequested, SnapshotBuilt
from palimpsest.core.git import GitAuth
from palimpsest.core.git_errors import GitError, source_reason
from palimpsest.core.github_app import InstallationTokens
from palimpsest.core.ids import uuid7
from palimpsest.core.llm import ChatResult, Gateway, LLMSettings
from palimpsest.core.outbox import emit
from palimpsest.core.secretbox import KEY_FILE, SecretBox, load_box
from palimpsest.core.service import Background, Infra, ServiceDefinition, closed_on_stop
from palimpsest.core.settings import BaseServiceSettings, service_settings
from palimpsest.core.suspension import suspended_reason
from palimpsest.index.context.assemble import (
    COCHANGE_DEPTH,
    NEIGHBOURHOOD_DEPTH,
    ContextOptions,
    Reranker,
    ReviewContext,
    assemble_context,
)
from palimpsest.index.context.candidates import QueryEmbedder
from palimpsest.index.context.change import opened_change
from palimpsest.index.context.crossrepo import LinkConfig
from palimpsest.index.context.diff import parse_diff
from palimpsest.index.context.errors import ReviewFailed
from palimpsest.index.context.finding import Finding
from palimpsest.index.context.leftbehind import LeftBehind, earlier_fingerprints, left_behind
from palimpsest.index.context.preview import query_embedder, reranker
from palimpsest.index.context.rules import RepoRules, read_rules, severe_enough
from palimpsest.index.context.source import (
    GitHead,
    PullRequestDiff,
    files_at,
)
from palimpsest.index.errors import IndexNotReady
from palimpsest.index.graph import snapshot_graph
from palimpsest.index.graph.persisted import store_snapshot_graph
from palimpsest.index.stored import finish_submission, submission
from palimpsest.reviewer.identity import anchor_present, identify
from palimpsest.reviewer.incremental import Increment, increment
from palimpsest.reviewer.parts import plan_parts, review_in_parts
from palimpsest.reviewer.positions import diff_map, locate
from palimpsest.reviewer.posting import Shown, installation_target, post_review
from palimpsest.reviewer.review import Framing, Outcome, brief, messages
from palimpsest.reviewer.store import (
    ExistingReview,
    ReviewRecord,
    existing_review,
    last_reviewed_head,
    mark_posted,
    newer_posted,
    posted_head,
    prior_findings,
    record_code_changed,
    remember_posted,
    remember_threads,
    save_review,
    stored_record,
    with_outcome,
)

__all__ = ["ReviewerService", "Settings", "bootstrap", "definition"]

log = logging.getLogger(__name__)


class Settings(BaseServiceSettings, LLMSettings):
    """Settings of the reviewer service (PALIMPSEST_* variables)."""

    review_budget_tokens: int = Field(
        default=8000,
        ge=100,
        le=1_000_000,
        description="Context budget of a review in tokens, split across the sources.",
    )
    review_max_findings: int = Field(default=20, ge=0, le=500, description="Findings kept per review.")
    review_max_diff_chars: int = Field(
        default=120_000,
        ge=1000,
        description="Larger diffs are reviewed in parts of at most this many characters.",
    )
    review_max_diff_parts: int = Field(
        default=4,
        ge=1,
        le=50,
        description="Parts (model calls) per review at most; the rest is left out and reported.",
    )
    review_max_tokens: int = Field(
        default=2048, ge=64, le=200_000, description="Output token limit of the review model."
    )
    review_per_source: int = Field(
        default=12,
        ge=1,
        le=200,
        description=f"Candidates each context source is asked for (the graph neighbourhood {NEIGHBOURHOOD_DEPTH}"
        f" times as many, co-change {COCHANGE_DEPTH} times); the ranking and the token budget decide what is shown.",
    )
    review_post: bool = Field(
        default=True, description="Post reviews of provider pull requests back to the provider."
    )
    review_github_api_url: str | None = Field(
        default=None,
        description="GitHub REST API for posting reviews (default: https://api.github.com, or the GHES host's /api/v3).",
    )
    review_gitlab_api_url: str | None = Field(
        default=None, description="GitLab REST API for posting reviews (default: https://<host>/api/v4)."
    )
    review_bitbucket_api_url: str | None = Field(
        default=None,
        description="Bitbucket REST API for posting reviews (default: https://api.bitbucket.org/2.0).",
    )
    review_warm_graph_days: float = Field(
        default=14.0,
        ge=0,
        description="Resolve a new snapshot's graph when it is built for repositories reviewed within this many days; 0: off.",
    )
    review_incremental_max_lines: int = Field(
        default=400,
        ge=0,
        description="A push changing at most this many lines since the last reviewed head is reviewed incrementally; 0: always the whole PR.",
    )


class ReviewerService:
    def __init__(self, pool: Pool, gateway: Gateway, settings: Settings) -> None:
        self.pool = pool
        self.gateway = gateway
        self.settings = settings
        # GitHub App installation tokens, for fetching and for posting (one REST API for both)
        self.tokens = InstallationTokens(api_url=settings.github_api_url or settings.review_github_api_url)

    async def on_requested(self, event: ReviewRequested, ctx: HandlerContext) -> None:
        started = time.monotonic()
        repo = await self._repository(event)
        if repo is None:
            log.info("review request %s: repository %s is gone", event.request_id, event.repository_id)
            return
        async with tenant_tx(self.pool, event.tenant_id) as conn:
            suspended = await suspended_reason(conn, event.repository_id)
        if suspended is not None:  # not reviewed (issue 19); the request is answered, not retried
            async with ctx.transaction() as conn:
                await _finish_submission(conn, event, None, "skipped", suspended, event.head_sha)
                await emit(conn, _completed(event, uuid7(), "skipped", suspended))
            log.info("review request %s skipped: %s", event.request_id, suspended)
            return
        if event.head_sha and not event.full:  # "review full" reviews a head again, in full
            async with tenant_tx(self.pool, event.tenant_id) as conn:
                found = await existing_review(
                    conn, event.repository_id, event.head_sha, completed_only=event.trigger == "comment"
                )
            if found is not None:
                await self._answer_existing(event, ctx, found)
                return
        record = await self.review(event, repo, heartbeat=ctx.heartbeat)
        await self._post(event, record)
        record.duration_s = round(time.monotonic() - started, 3)
        async with ctx.transaction() as conn:
            if record.head_sha:
                record.review_id = await save_review(conn, event.tenant_id, record)
            stored = record.review_id if record.head_sha else None
            await _finish_submission(conn, event, stored, record.state, record.reason, record.head_sha)
            await emit(
                conn, _completed(event, record.review_id, record.state, record.reason, posted=record.posted)
            )
        metrics.REVIEW_SECONDS.labels(record.state).observe(record.duration_s)
        log.info(
            "review %s of %s@%s: %s (%s)",
            record.review_id,
            event.repository_id,
            record.head_sha[:12],
            record.state,
            record.mode,
        )

    async def on_snapshot_built(self, event: SnapshotBuilt, ctx: HandlerContext) -> None:
        """Store a new snapshot's resolved graph for every process, and warm this one's cache
        when the repository is under review.

        Resolving a large snapshot's graph takes seconds (4.6 s for 50 000 files); without the
        warm-up the first review after every push to the default branch paid it, on every replica
        but the one that received the event. The graph is stored in the index (code_graphs), so
        any replica, the MCP server and the analyzer load it instead (well under a second).
        Repositories without recent reviews are not kept in this process's cache (it holds a few
        graphs).
        """
        if event.state != "ready" or event.snapshot_id is None:
            return
        days = self.settings.review_warm_graph_days
        started = time.monotonic()
        async with tenant_tx(self.pool, event.tenant_id) as conn:
            recent = False
            if days > 0:
                cur = await conn.execute(
                    "SELECT 1 FROM reviews WHERE repository_id = %s AND created_at > now() - %s::interval LIMIT 1",
                    (event.repository_id, f"{days} days"),
                )
                recent = await cur.fetchone() is not None
            try:
                if recent:
                    await snapshot_graph(conn, event.repository_id, snapshot_id=event.snapshot_id)
                elif not await store_snapshot_graph(
                    conn, event.tenant_id, event.repository_id, event.snapshot_id
                ):
                    return
            except IndexNotReady:  # superseded and pruned meanwhile: nothing to warm
                return
        log.info(
            "graph of snapshot %s %s in %.1fs",
            event.snapshot_id,
            "warmed" if recent else "stored",
            time.monotonic() - started,
        )

    async def _post(self, event: ReviewRequested, record: ReviewRecord) -> None:
        """Post a completed review of a provider pull request: new findings inline, earlier ones
        whose anchor is gone resolved, the summary edited in place (see posting).

        Posts for one pull request are serialised (a transaction-scoped advisory lock), and a
        request older than the one whose review is already posted posts nothing: a late or
        redelivered request for an earlier head never overwrites a newer head's summary.
        """
        s = self.settings
        if not s.review_post or record.state != "completed" or not _on_provider(event):
            return
        urls = {
            "github": s.review_github_api_url or s.github_api_url,
            "gitlab": s.review_gitlab_api_url or s.gitlab_api_url,
            "bitbucket": s.review_bitbucket_api_url or s.bitbucket_api_url,
        }
        number = event.number or 0
        async with tenant_tx(self.pool, event.tenant_id) as conn:
            found = await installation_target(conn, event.repository_id, number, record.head_sha, urls)
        box = self._box()
        if found is None or box is None:
            metrics.REVIEWS_POSTED.labels(event.provider, "no_credentials").inc()
            return
        place, credential = found
        target = replace(place, base_sha=record.base_sha, merge_base=record.merge_base)
        try:
            token = await self._posting_token(credential, box)
            if token is None:  # App credentials of a provider other than GitHub
                metrics.REVIEWS_POSTED.labels(event.provider, "no_credentials").inc()
                return
            async with tenant_tx(self.pool, event.tenant_id) as conn:
                newer = await newer_posted(conn, record, number, event.occurred_at)
                if newer is not None:
                    record.reason = f"not posted: superseded by the review of {newer[:12]}, requested later"
                    metrics.REVIEWS_POSTED.labels(event.provider, "superseded").inc()
                    return
                shown = Shown(record.context, record.dropped, record.cochange_missing)
                result = await post_review(
                    target,
                    token,
                    record.summary,
                    record.findings,
                    resolve=record.resolved,
                    again=event.full,
                    shown=shown,
                )
                await remember_posted(
                    conn, event.tenant_id, record, number, event.occurred_at, result.summary_ref
                )
                await remember_threads(conn, event.tenant_id, record, number, result.threads)
                changed = await record_code_changed(conn, event.tenant_id, record, number)
        except ReviewFailed as exc:
            metrics.REVIEWS_POSTED.labels(event.provider, "failed").inc()
            record.reason = str(exc)
            log.warning("review %s not posted: %s", record.review_id, exc)
            return
        record.posted = True
        if result.fresh:
            record.findings = with_outcome(
                record.findings, set(result.inline), set(result.existing), set(result.in_summary)
            )
        for outcome, fps in (
            ("inline", result.inline),
            ("existing", result.existing),
            ("summary", result.in_summary),
            ("resolved", result.resolved),
        ):
            if fps:
                metrics.REVIEW_FINDINGS_POSTED.labels(event.provider, outcome).inc(len(fps))
        metrics.REVIEWS_POSTED.labels(event.provider, "posted" if result.fresh else "already_posted").inc()
        categories = {f.fingerprint: f.category for f in record.findings}
        for outcome, labels in (
            ("posted", [categories[fp] for fp in result.inline]),
            ("code_changed", changed),
        ):
            for category in labels:
                label = metrics.feedback_category(category)
                metrics.REVIEW_FEEDBACK.labels(event.provider, target.full_name, label, outcome).inc()

    async def _posting_token(self, credential: Credential, box: SecretBox) -> str | None:
        """The installation's token (opened, or minted for a GitHub App); None: none for posting."""
        try:
            return await credential_token(credential, box, self.tokens)
        except GitError as exc:
            raise ReviewFailed(f"credentials_{exc.reason.value}", str(exc)) from exc
        except PalimpsestError as exc:  # the sealed value does not open with the configured keys
            raise ReviewFailed("credentials_unreadable", str(exc)) from exc

    def _box(self) -> SecretBox | None:
        key = self.settings.encryption_key
        if key is not None:
            return load_box(key.get_secret_value(), home=self.settings.home, generate=False)
        if (self.settings.home / KEY_FILE).exists():  # embedded: the key ingest generated
            return load_box(None, home=self.settings.home, generate=True)
        return None

    async def _answer_existing(
        self, event: ReviewRequested, ctx: HandlerContext, found: ExistingReview
    ) -> None:
        repost = False
        if found.posted and found.state == "completed" and _on_provider(event):
            # asked again for a head whose review was posted, after another head's was: the newest
            # request wins, so the summary names this head again (nothing already there is reposted)
            async with tenant_tx(self.pool, event.tenant_id) as conn:
                shown = await posted_head(
                    conn,
                    event.repository_id,
                    event.provider,
                    event.number or 0,
                    asked=(event.head_sha or "", event.occurred_at),
                )
            repost = shown is not None and shown[0] != event.head_sha and shown[1] < event.occurred_at
        if (not found.posted or repost) and found.state == "completed":  # an earlier post failed
            async with tenant_tx(self.pool, event.tenant_id) as conn:
                record = await stored_record(conn, found.review_id)
            if record is not None:
                await self._post(event, record)
                if record.posted and not repost:
                    async with tenant_tx(self.pool, event.tenant_id) as conn:
                        await mark_posted(conn, record)
                    found = replace(found, posted=True)
        async with ctx.transaction() as conn:
            review_id = found.review_id
            await _finish_submission(conn, event, review_id, found.state, found.reason, event.head_sha)
            await emit(
                conn,
                _completed(
                    event,
                    review_id,
                    found.state,
                    found.reason,
                    posted=found.posted,
                ),
            )
        log.info("review request %s: head %s was reviewed before", event.request_id, event.head_sha)

    async def _repository(self, event: ReviewRequested) -> dict[str, Any] | None:
        async with tenant_tx(self.pool, event.tenant_id) as conn:
            cur = await conn.execute(
                "SELECT repository_id, clone_url, default_branch, index_mode, provider FROM repositories"
                " WHERE repository_id = %s",
                (event.repository_id,),
            )
            row = await cur.fetchone()
        return dict(row) if row else None

    async def review(
        self, event: ReviewRequested, repo: dict[str, Any], *, heartbeat: Any = None
    ) -> ReviewRecord:
        """The whole review of one request (no writes): git, the index, the model."""
        record = ReviewRecord(
            uuid7(),
            event.repository_id,
            event.request_id,
            event.provider,
            event.head_sha or "",
            event.base_sha,
            event.number,
            replaces=event.full,
            title=event.title,
            author=event.author,
            requested_by=event.requested_by,
            base_ref=event.base_ref or (None if event.base_sha else repo["default_branch"]),
            head_ref=event.head_ref,
        )
        try:
            base = event.base_sha or event.base_ref or repo["default_branch"]
            head = event.head_sha or event.head_ref or _pull_ref(event)
            diff = await self._submitted_diff(event)

            def resolved(base_sha: str, head_sha: str) -> None:  # a later failure is stored with them
                record.base_sha, record.head_sha = base_sha, head_sha

            async with opened_change(
                repo["clone_url"],
                base,
                head,
                diff,
                auth=await self._auth(event, repo),
                policy=self.settings.source_policy(),
                resolved=resolved,
            ) as change:
                work_dir = change.head.git_dir
                rules = await read_rules(work_dir, change.base_sha)  # the base's, never the head's
                skip = rules.skip_reason(event.trigger, event.draft) if _on_provider(event) else None
                if skip is not None:
                    record.state, record.reason = "skipped", skip
                    record.sources = {"rules": rules.summary()}
                    return _checked(record)
                whole = change.pr
                record.merge_base = whole.start
                pr = _without_ignored(whole, rules)
                if heartbeat is not None:
                    await heartbeat()
                context = await self._context(
                    event, repo, pr, change.head, change.base_sha, change.links, rules
                )
                _fill_context(record, context)
                step = await self._scope(event, work_dir, record, pr)
                outcome, usage = await self._findings(event, context, pr, rules, step)
                found = _filtered(outcome.findings, rules)
                record.findings_dropped = outcome.findings_dropped + len(outcome.findings) - len(found)
                behind = await self._left_behind(event, change.head, change.base_sha, pr)
                drift = [
                    f
                    for f in behind.findings
                    if severe_enough(f.severity, rules.min_severity) and not rules.ignored(f.path)
                ]
                record.findings = await _identified(work_dir, whole, found) + await _identified(
                    work_dir, whole, drift, behind.head_texts
                )
                record.sources["left_behind"] = {
                    **behind.summary(),
                    "fingerprints": [f.fingerprint for f in record.findings[len(found) :]],
                }
                record.resolved = await self._resolved(event, work_dir, record, whole, behind.ran)
            record.summary = outcome.summary + (
                f"\n\nThis change leaves {len(drift)} doc line(s) naming what it removes, renames or"
                " moves (found without a model: the `docs` findings)."
                if drift
                else ""
            )
            record.sources["rules"] = rules.summary()
            record.mode, record.model = usage.get("mode", "brief"), usage.get("model")
            notes = (usage.get("reason"), _config_note(context), rules.note())
            record.reason = "; ".join(dict.fromkeys(r for r in notes if r)) or None
            record.prompt_tokens = usage.get("prompt_tokens", 0)
            record.completion_tokens = usage.get("completion_tokens", 0)
            record.cost_usd = usage.get("cost_usd")
        except ReviewFailed as exc:
            record.state, record.reason = "failed", str(exc)
        except IndexNotReady as exc:
            record.state, record.reason = "failed", f"index_not_ready: {exc}"
        return _checked(record)

    async def _scope(
        self, event: ReviewRequested, git_dir: Path, record: ReviewRecord, pr: PullRequestDiff
    ) -> Increment | None:
        """The change to review incrementally, or None (full); the record says which and why."""
        record.sources["scope"] = {"scope": "full", "why": "first review of this pull request"}
        if not _on_provider(event) or self.settings.review_incremental_max_lines <= 0:
            record.sources["scope"]["why"] = "not a pull request of a provider"
            return None
        if event.full:
            record.sources["scope"]["why"] = "a full review was asked for"
            return None
        async with tenant_tx(self.pool, event.tenant_id) as conn:
            since = await last_reviewed_head(
                conn, event.repository_id, event.provider, event.number or 0, record.head_sha
            )
        if since is None:
            return None
        found = await increment(git_dir, since, record.head_sha)
        if isinstance(found, str):
            record.sources["scope"]["why"] = found
            return None
        limit = self.settings.review_incremental_max_lines
        if found.changed_lines > limit:
            record.sources["scope"]["why"] = (
                f"{found.changed_lines} lines changed since the last reviewed head {since[:12]} (more than {limit})"
            )
            return None
        paths = {g.path for g in pr.files}  # ignored files (review.ignore) stay out of the increment too
        files = [f for f in found.files if f.path in paths]
        text = found.text if len(files) == len(found.files) else _sections(found.text, paths)
        record.scope, record.commits, record.since_sha = "incremental", found.commits, since
        record.sources["scope"] = {
            "scope": "incremental",
            "since": since,
            "commits": len(found.commits),
            "changed_lines": found.changed_lines,
        }
        return Increment(since, found.commits, text, files)

    async def _resolved(
        self,
        event: ReviewRequested,
        git_dir: Path,
        record: ReviewRecord,
        pr: PullRequestDiff,
        left_behind_ran: bool = False,
    ) -> list[str]:
        """Fingerprints of this pull request's earlier findings whose anchor changed or vanished,
        and of earlier left-behind doc lines this head no longer leaves behind (the line was fixed
        or the name restored: :mod:`palimpsest.index.context.leftbehind`)."""
        if not _on_provider(event):
            return []
        async with tenant_tx(self.pool, event.tenant_id) as conn:
            prior = await prior_findings(
                conn, event.repository_id, event.provider, event.number or 0, record.head_sha
            )
            mechanical = (
                await earlier_fingerprints(
                    conn, event.repository_id, event.provider, event.number or 0, record.head_sha
                )
                if left_behind_ran
                else set()
            )
        current = {f.fingerprint for f in record.findings}
        gone = [
            str(p.fingerprint) for p in prior if p.fingerprint not in current and p.fingerprint in mechanical
        ]
        todo = [p for p in prior if p.fingerprint not in current and p.fingerprint not in mechanical]
        if not todo:
            return gone
        renamed = {f.old_path: f.path for f in pr.files if f.old_path}
        texts = dict(pr.at_head)
        missing = list({renamed.get(p.path, p.path) for p in todo} - set(texts))
        try:
            texts.update(await files_at(git_dir, record.head_sha, missing))
        except GitError as exc:
            log.warning("review %s: reading earlier findings' files failed: %s", record.review_id, exc)
            return gone
        out: list[str] = gone
        for p in todo:
            text = texts.get(renamed.get(p.path, p.path))
            present = anchor_present(text, p.anchor_hash, p.anchor_lines)
            # a new-side anchor that is gone was changed; a removed-lines anchor back at head was restored
            if present == (p.side == "old"):
                out.append(str(p.fingerprint))
        return out

    async def _submitted_diff(self, event: ReviewRequested) -> str | None:
        """The diff of an API submission of ``{base, diff}`` (None: the request names a head)."""
        if event.submission_id is None:
            return None
        async with tenant_tx(self.pool, event.tenant_id) as conn:
            found = await submission(conn, event.submission_id)
        if found is None:
            raise ReviewFailed("submission_missing", "the submitted review request is gone")
        return found.diff

    async def _auth(self, event: ReviewRequested, repo: dict[str, Any]) -> GitAuth | None:
        """The installation's token for fetching the PR's head (decrypted, or minted for a GitHub
        App, in core); a refused mint fails the review as a refused fetch would."""
        try:
            async with tenant_tx(self.pool, event.tenant_id) as conn:
                return await git_auth_for(conn, repo["repository_id"], self._box(), tokens=self.tokens)
        except GitError as exc:
            raise ReviewFailed(source_reason(exc.reason), str(exc)) from exc

    async def _context(
        self,
        event: ReviewRequested,
        repo: dict[str, Any],
        pr: PullRequestDiff,
        head: GitHead,
        base: str,
        links: LinkConfig | None = None,
        rules: RepoRules | None = None,
    ) -> ReviewContext:
        s = self.settings
        rules = rules or RepoRules()
        rerank = await self._reranker(event.tenant_id)
        embed = await self._query_embedder(event.tenant_id) if repo["index_mode"] == "hybrid" else None
        async with tenant_tx(self.pool, event.tenant_id) as conn:
            return await assemble_context(
                conn,
                event.repository_id,
                pr.files,
                pr.at_head,
                s.review_budget_tokens,
                base_sha=base,
                head=head,
                rerank=rerank,
                embed_query=embed,
                options=ContextOptions(
                    per_source=s.review_per_source,
                    cochange_max=rules.cochange_max,
                    cochange_include=rules.cochange_include,
                ),
                links=links,
            )

    async def _left_behind(
        self,
        event: ReviewRequested,
        head: GitHead,
        base_sha: str,
        pr: PullRequestDiff,
    ) -> LeftBehind:
        """The doc lines this change leaves behind (no model); a failure leaves the review without them."""
        try:
            async with tenant_tx(self.pool, event.tenant_id) as conn:
                return await left_behind(
                    conn,
                    event.repository_id,
                    head.git_dir,
                    pr.start or base_sha,
                    head.head,
                    pr.files,
                    pr.text,
                )
        except (GitError, PalimpsestError) as exc:
            log.warning("review of %s: the left-behind docs check failed: %s", event.repository_id, exc)
            return LeftBehind()

    async def _reranker(self, tenant_id: UUID) -> Reranker | None:
        return await reranker(self.gateway, tenant_id, reference="review")

    async def _query_embedder(self, tenant_id: UUID) -> QueryEmbedder | None:
        return query_embedder(self.gateway, tenant_id, accounted_as="review")

    async def _findings(
        self,
        event: ReviewRequested,
        context: ReviewContext,
        pr: PullRequestDiff,
        rules: RepoRules | None = None,
        step: Increment | None = None,
    ) -> tuple[Outcome, dict[str, Any]]:
        s = self.settings
        rules = rules or RepoRules()
        route = await self.gateway.route(event.tenant_id, "review")
        if route is None:
            return Outcome(brief(context, pr.files)), {"mode": "brief"}
        shown, files = (step.text, step.files) if step is not None else (pr.text, pr.files)
        plan = plan_parts(shown, s.review_max_diff_chars, s.review_max_diff_parts)
        framing = Framing(
            whole=_cut(pr.text, s.review_max_diff_chars) if step is not None else None,
            since=step.since_sha if step is not None else None,
            commits=len(step.commits) if step is not None else 0,
            instructions=rules.instructions_for([f.path for f in pr.files]),
        )

        async def chat(diff: str, part: tuple[int, int]) -> ChatResult:
            return await self.gateway.chat(
                event.tenant_id,
                "review",
                messages(context, diff, event.title, event.body, part=part, framing=framing),
                max_tokens=s.review_max_tokens,
                route=route,
                reference=str(event.request_id),
            )

        if step is not None:  # removed lines of an increment are not on the PR diff's old side
            files = [replace(f, removed_ranges=[]) for f in files]
        done = await review_in_parts(plan, chat, files, max_findings=s.review_max_findings)
        if not done.reviewed:  # every call failed
            error = done.failures[0].split(": ", 1)[-1]
            summary = brief(context, pr.files, f"The model call failed ({error}); no findings.")
            return Outcome(summary), {"mode": "brief", "reason": f"model_failed: {error}"}
        return done.outcome, {
            "mode": "model",
            "model": done.model,
            "prompt_tokens": done.prompt_tokens,
            "completion_tokens": done.completion_tokens,
            "cost_usd": done.cost_usd,
            "reason": done.reason,
            "parts": len(plan.parts),
        }

    def background(self) -> list[Background]:
        return [closed_on_stop(self.gateway.aclose)]


def _pull_ref(event: ReviewRequested) -> str | None:
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


def _on_provider(event: ReviewRequested) -> bool:
    """A pull request of a provider (not a local or API review): rules, identity, increments apply."""
    return event.provider != "local" and bool(event.number)


def _checked(record: ReviewRecord) -> ReviewRecord:
    if not _valid_sha(record.head_sha):
        record.head_sha = ""
    return record


def _sections(text: str, paths: set[str]) -> str:
    """The diff's file sections whose (new) path is in ``paths``."""
    keep = []
    for section in re.split(r"(?m)^(?=diff --git )", text):
        files = parse_diff(section)
        if files and files[0].path in paths:
            keep.append(section)
    return "".join(keep)


def _without_ignored(pr: PullRequestDiff, rules: RepoRules) -> PullRequestDiff:
    """The pull request without the files ``review.ignore`` names (the model never sees them)."""
    files = [f for f in pr.files if not rules.ignored(f.path)]
    if len(files) == len(pr.files):
        return pr
    paths = {f.path for f in files}
    kept = {p: t for p, t in pr.at_head.items() if p in paths or p in {f.old_path for f in files}}
    return PullRequestDiff(_sections(pr.text, paths), files, kept, pr.start)


def _filtered(findings: list[Finding], rules: RepoRules) -> list[Finding]:
    """``review.min_severity`` and ``review.max_findings`` applied (the rest is counted as dropped)."""
    kept = [
        f for f in findings if severe_enough(f.severity, rules.min_severity) and not rules.ignored(f.path)
    ]
    return kept if rules.max_findings is None else kept[: rules.max_findings]


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + "\n… (cut to fit)\n"


async def _identified(
    git_dir: Path,
    pr: PullRequestDiff,
    findings: list[Finding],
    texts: Mapping[str, str | None] | None = None,
) -> list[Finding]:
    """Each finding with its fingerprint (anchored on its side's text) and its position on the
    diff; ``texts``: head texts of files outside the diff that findings point at."""
    files = diff_map(pr.text)
    olds = {
        f.path: (files[f.path].old_path if f.path in files else f.path) for f in findings if f.side == "old"
    }
    base_texts: dict[str, str | None] = {}
    if olds and pr.start:
        try:
            base_texts = await files_at(git_dir, pr.start, sorted(set(olds.values())))
        except GitError as exc:
            log.warning("reading removed lines' files at %s failed: %s", pr.start[:12], exc)
    out = []
    for f in findings:
        head_text = pr.at_head[f.path] if f.path in pr.at_head else (texts or {}).get(f.path)
        text = base_texts.get(olds[f.path]) if f.side == "old" else head_text
        known = identify(f, text)
        out.append(replace(known, position=locate(files, known)))
    return out


def _fill_context(record: ReviewRecord, context: ReviewContext) -> None:
    record.snapshot_id = context.snapshot_id
    record.context = context.context_dicts()
    record.dropped = context.dropped
    record.cochange_missing = context.cochange_missing
    record.sources = {
        **context.sources(),
        "ranking": context.ranking,
        "budget": context.budget,
        "snapshot_on_base": context.on_base,
        "snapshot_commit": context.snapshot_commit,
        "timings": context.timings,
        **({"cross_repo": context.cross} if context.cross else {}),
    }


async def _finish_submission(
    conn: Conn,
    event: ReviewRequested,
    review_id: UUID | None,
    state: str,
    reason: str | None,
    head_sha: str | None,
) -> None:
    """Record the outcome on the API submission the request came from (if it came from one)."""
    if event.submission_id is not None:
        await finish_submission(
            conn, event.submission_id, state=state, reason=reason, review_id=review_id, head_sha=head_sha
        )


def _config_note(context: ReviewContext) -> str | None:
    """``config_invalid: …`` when the base commit's .palimpsest/config.yml could not be used."""
    config = context.cross.get("config") or {}
    return f"config_invalid: {config.get('detail')}" if config.get("state") == "invalid" else None


def _valid_sha(sha: str) -> bool:
    return 7 <= len(sha) <= 64 and all(ch in "0123456789abcdef" for ch in sha)


def _completed(
    event: ReviewRequested, review_id: UUID, state: str, reason: str | None, *, posted: bool = False
) -> ReviewCompleted:
    return ReviewCompleted(
        tenant_id=event.tenant_id,
        repository_id=event.repository_id,
        request_id=event.request_id,
        review_id=review_id,
        state=state,  # type: ignore[arg-type]
        reason=reason,
        posted=posted,
    )


def definition(
    infra: Infra, settings: Settings, *, consumer: ConsumerSpec | None = None, gateway: Gateway | None = None
) -> ServiceDefinition:
    """The service with explicit settings (tests pass their own consumer and gateway)."""
    gateway = gateway or Gateway(infra.pool, settings)
    service = ReviewerService(infra.pool, gateway, settings)
    return ServiceDefinition(
        name="reviewer",
        handlers={"review.requested": service.on_requested, "snapshot.built": service.on_snapshot_built},
        consumer=consumer or CONSUMERS["reviewer"],
        background=service.background(),
    )


def bootstrap(infra: Infra) -> ServiceDefinition:
    settings = service_settings(Settings, infra.settings)
    return definition(infra, settings)
