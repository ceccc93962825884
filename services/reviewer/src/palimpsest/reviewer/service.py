"""The reviewer service: ``review.requested`` → a stored review and ``review.completed``.

Both callers — the webhook flow (GitHub, GitLab, Bitbucket pull/merge requests through ingest) and
the local flow (``palimpsest review``) — arrive here as the same event and go through the same
core (:func:`palimpsest.reviewer.context.assemble_context`). Slow work (git, the index, the model)
runs first; the review and its event are written in the inbox transaction. Idempotent per
(repository, head sha): a redelivered or repeated request answers with the stored review.

Settings (``PALIMPSEST_*``), beside the shared ones and the LLM gateway's ``PALIMPSEST_LLM_*``:

=====================================  ===========================================================
``PALIMPSEST_REVIEW_BUDGET_TOKENS``    context budget in tokens, split across the sources (8000)
``PALIMPSEST_REVIEW_MAX_FINDINGS``     findings kept per review (20)
``PALIMPSEST_REVIEW_MAX_DIFF_CHARS``   larger diffs are reviewed in parts of at most this size (120000)
``PALIMPSEST_REVIEW_MAX_DIFF_PARTS``   at most this many parts (model calls) per review; the rest is
                                       left out and reported (4)
``PALIMPSEST_REVIEW_MAX_TOKENS``       the model's output token limit (2048)
=====================================  ===========================================================
"""

from __future__ import annotations

import asyncio
import logging
import time
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
from palimpsest.core.service import Background, Infra, ServiceDefinition
from palimpsest.core.settings import BaseServiceSettings, load
from palimpsest.core.suspension import suspended_reason
from palimpsest.index.errors import IndexNotReady
from palimpsest.index.graph import snapshot_graph
from palimpsest.index.stored import finish_submission, submission
from palimpsest.reviewer.candidates import QueryEmbedder
from palimpsest.reviewer.change import opened_change
from palimpsest.reviewer.context import ContextOptions, Reranker, ReviewContext, assemble_context
from palimpsest.reviewer.crossrepo import LinkConfig
from palimpsest.reviewer.errors import ReviewFailed
from palimpsest.reviewer.parts import plan_parts, review_in_parts
from palimpsest.reviewer.posting import installation_target, post_review
from palimpsest.reviewer.preview import query_embedder, reranker
from palimpsest.reviewer.review import Outcome, brief, messages
from palimpsest.reviewer.source import GitHead, PullRequestDiff
from palimpsest.reviewer.store import ReviewRecord, existing_review, mark_posted, save_review, stored_record

__all__ = ["ReviewerService", "Settings", "bootstrap", "definition"]

log = logging.getLogger(__name__)


class Settings(BaseServiceSettings, LLMSettings):
    """Settings of the reviewer service (PALIMPSEST_* variables)."""

    review_budget_tokens: int = Field(default=8000, ge=100, le=1_000_000)
    review_max_findings: int = Field(default=20, ge=0, le=500)
    review_max_diff_chars: int = Field(default=120_000, ge=1000)
    review_max_diff_parts: int = Field(default=4, ge=1, le=50)
    review_max_tokens: int = Field(default=2048, ge=64, le=200_000)
    review_per_source: int = Field(default=12, ge=1, le=200)
    review_post: bool = True  # post reviews of provider pull requests back to the provider
    review_github_api_url: str | None = None  # default: https://api.github.com (or the GHES host's /api/v3)
    review_gitlab_api_url: str | None = None  # default: https://<host>/api/v4
    review_bitbucket_api_url: str | None = None  # default: https://api.bitbucket.org/2.0
    # Resolve a new snapshot's graph when it is built (not on the first review after it) for
    # repositories reviewed within this many days; 0 turns the warm-up off.
    review_warm_graph_days: float = Field(default=14.0, ge=0)


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
        if event.head_sha:
            async with tenant_tx(self.pool, event.tenant_id) as conn:
                found = await existing_review(conn, event.repository_id, event.head_sha)
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
        """Warm this process's graph cache with a new snapshot of a repository under review.

        Resolving a large snapshot's graph takes seconds (4.6 s for 50 000 files); without the
        warm-up the first review after every push to the default branch paid it. Repositories
        without recent reviews are left alone (the cache holds a few graphs). With several
        reviewer replicas only the one that receives the event is warm.
        """
        days = self.settings.review_warm_graph_days
        if event.state != "ready" or event.snapshot_id is None or days <= 0:
            return
        started = time.monotonic()
        async with tenant_tx(self.pool, event.tenant_id) as conn:
            cur = await conn.execute(
                "SELECT 1 FROM reviews WHERE repository_id = %s AND created_at > now() - %s::interval LIMIT 1",
                (event.repository_id, f"{days} days"),
            )
            if await cur.fetchone() is None:
                return
            try:
                await snapshot_graph(conn, event.repository_id, snapshot_id=event.snapshot_id)
            except IndexNotReady:  # superseded and pruned meanwhile: nothing to warm
                return
        log.info("graph of snapshot %s warmed in %.1fs", event.snapshot_id, time.monotonic() - started)

    async def _post(self, event: ReviewRequested, record: ReviewRecord) -> None:
        """Post a completed review of a provider pull request (at most once per head, see posting)."""
        s = self.settings
        if not s.review_post or record.state != "completed" or event.provider == "local" or not event.number:
            return
        urls = {
            "github": s.review_github_api_url,
            "gitlab": s.review_gitlab_api_url,
            "bitbucket": s.review_bitbucket_api_url,
        }
        async with tenant_tx(self.pool, event.tenant_id) as conn:
            found = await installation_target(conn, event.repository_id, event.number, record.head_sha, urls)
        box = self._box()
        if found is None or box is None:
            metrics.REVIEWS_POSTED.labels(event.provider, "no_credentials").inc()
            return
        target, credential = found
        try:
            token = await self._posting_token(credential, box)
            if token is None:  # App credentials of a provider other than GitHub
                metrics.REVIEWS_POSTED.labels(event.provider, "no_credentials").inc()
                return
            fresh = await post_review(target, token, record.summary, record.findings)
        except ReviewFailed as exc:
            metrics.REVIEWS_POSTED.labels(event.provider, "failed").inc()
            record.reason = str(exc)
            log.warning("review %s not posted: %s", record.review_id, exc)
            return
        record.posted = True
        metrics.REVIEWS_POSTED.labels(event.provider, "posted" if fresh else "already_posted").inc()

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
        self, event: ReviewRequested, ctx: HandlerContext, found: dict[str, Any]
    ) -> None:
        if not found["posted"] and found["state"] == "completed":  # an earlier post failed: try again
            async with tenant_tx(self.pool, event.tenant_id) as conn:
                record = await stored_record(conn, UUID(str(found["review_id"])))
            if record is not None:
                await self._post(event, record)
                if record.posted:
                    async with tenant_tx(self.pool, event.tenant_id) as conn:
                        await mark_posted(conn, record.review_id)
                    found = {**found, "posted": True}
        async with ctx.transaction() as conn:
            review_id = UUID(str(found["review_id"]))
            await _finish_submission(conn, event, review_id, found["state"], found["reason"], event.head_sha)
            await emit(
                conn,
                _completed(
                    event,
                    review_id,
                    found["state"],
                    found["reason"],
                    posted=bool(found["posted"]),
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
        )
        try:
            base = event.base_sha or event.base_ref or repo["default_branch"]
            head = event.head_sha or event.head_ref
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
                pr = change.pr
                if heartbeat is not None:
                    await heartbeat()
                context = await self._context(event, repo, pr, change.head, change.base_sha, change.links)
            _fill_context(record, context)
            outcome, usage = await self._findings(event, context, pr)
            record.summary, record.findings = outcome.summary, outcome.findings
            record.findings_dropped = outcome.findings_dropped
            record.mode, record.model = usage.get("mode", "brief"), usage.get("model")
            record.reason = "; ".join(r for r in (usage.get("reason"), _config_note(context)) if r) or None
            record.prompt_tokens = usage.get("prompt_tokens", 0)
            record.completion_tokens = usage.get("completion_tokens", 0)
            record.cost_usd = usage.get("cost_usd")
        except ReviewFailed as exc:
            record.state, record.reason = "failed", str(exc)
        except IndexNotReady as exc:
            record.state, record.reason = "failed", f"index_not_ready: {exc}"
        if not _valid_sha(record.head_sha):
            record.head_sha = ""
        return record

    async def _submitted_diff(self, event: ReviewRequested) -> str | None:
        """The diff of an API submission of ``{base, diff}`` (None: the request names a head)."""
        if event.submission_id is None:
            return None
        async with tenant_tx(self.pool, event.tenant_id) as conn:
            found = await submission(conn, event.submission_id)
        if found is None:
            raise ReviewFailed("submission_missing", "the submitted review request is gone")
        diff: str | None = found["diff"]
        return diff

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
    ) -> ReviewContext:
        s = self.settings
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
                options=ContextOptions(per_source=s.review_per_source),
                links=links,
            )

    async def _reranker(self, tenant_id: UUID) -> Reranker | None:
        return await reranker(self.gateway, tenant_id, reference="review")

    async def _query_embedder(self, tenant_id: UUID) -> QueryEmbedder | None:
        return query_embedder(self.gateway, tenant_id, accounted_as="review")

    async def _findings(
        self, event: ReviewRequested, context: ReviewContext, pr: PullRequestDiff
    ) -> tuple[Outcome, dict[str, Any]]:
        s = self.settings
        route = await self.gateway.route(event.tenant_id, "review")
        if route is None:
            return Outcome(brief(context, pr.files)), {"mode": "brief"}
        plan = plan_parts(pr.text, s.review_max_diff_chars, s.review_max_diff_parts)

        async def chat(diff: str, part: tuple[int, int]) -> ChatResult:
            return await self.gateway.chat(
                event.tenant_id,
                "review",
                messages(context, diff, event.title, event.body, part=part),
                max_tokens=s.review_max_tokens,
                route=route,
                reference=str(event.request_id),
            )

        done = await review_in_parts(plan, chat, pr.files, max_findings=s.review_max_findings)
        if not done.reviewed:  # every call failed
            error = done.failures[0].split(": ", 1)[-1]
            summary = brief(context, pr.files) + f"\n\nThe model call failed ({error}); no findings."
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
        async def close_gateway(infra: Infra, stop: asyncio.Event) -> None:
            try:
                await stop.wait()
            finally:
                await asyncio.shield(self.gateway.aclose())

        return [close_gateway]


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
    infra.extras["reviewer"] = service
    return ServiceDefinition(
        name="reviewer",
        handlers={"review.requested": service.on_requested, "snapshot.built": service.on_snapshot_built},
        consumer=consumer or CONSUMERS["reviewer"],
        background=service.background(),
    )


def bootstrap(infra: Infra) -> ServiceDefinition:
    settings = infra.settings if isinstance(infra.settings, Settings) else load(Settings, **_shared(infra))
    return definition(infra, settings)


def _shared(infra: Infra) -> dict[str, Any]:
    """Values the process was started with (e.g. the embedded stack's) win over the environment."""
    return {
        k: getattr(infra.settings, k)
        for k in BaseServiceSettings.model_fields
        if k in infra.settings.model_fields_set
    }
