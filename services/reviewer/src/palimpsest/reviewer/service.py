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
import time

from pydantic import Field

from palimpsest.core import metrics
from palimpsest.core.bus import CONSUMERS, ConsumerSpec
from palimpsest.core.consumer import HandlerContext, Heartbeat
from palimpsest.core.db import Pool, tenant_tx
from palimpsest.core.events import ReviewRequested, SnapshotBuilt
from palimpsest.core.github_app import InstallationTokens
from palimpsest.core.ids import uuid7
from palimpsest.core.llm import Gateway, LLMSettings
from palimpsest.core.secretbox import SecretBox
from palimpsest.core.service import Background, Infra, ServiceDefinition, closed_on_stop
from palimpsest.core.settings import BaseServiceSettings, service_settings
from palimpsest.index.context.assemble import (
    COCHANGE_DEPTH,
    NEIGHBOURHOOD_DEPTH,
)
from palimpsest.index.errors import IndexNotReady
from palimpsest.index.graph import snapshot_graph
from palimpsest.index.graph.persisted import store_snapshot_graph
from palimpsest.reviewer.apply import apply
from palimpsest.reviewer.assemble import Assembler
from palimpsest.reviewer.decide import (
    AnswerExisting,
    Gone,
    Skip,
    answered,
    completed,
    decide_request,
    skipped,
)
from palimpsest.reviewer.load import load
from palimpsest.reviewer.publish import Publisher, api_urls, secret_box
from palimpsest.reviewer.store import (
    RepositoryRow,
    ReviewRecord,
    reviewed_within,
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
    """``review.requested``, one way down: :func:`.load.load` reads the typed rows (repository,
    suspension, the stored review of the head); :func:`.decide.decide_request` says what to do;
    :class:`.assemble.Assembler` reviews (git, the index, the model; no writes); the publisher
    posts (:mod:`.publish`: its own locked transaction); :func:`.decide.completed` turns the record
    into intents and :func:`.apply.apply` writes them in the inbox transaction."""

    def __init__(self, pool: Pool, gateway: Gateway, settings: Settings) -> None:
        self.pool = pool
        self.gateway = gateway
        self.settings = settings
        # GitHub App installation tokens, for fetching and for posting (one REST API for both)
        self.tokens = InstallationTokens(api_url=settings.github_api_url or settings.review_github_api_url)
        self.assembler = Assembler(pool, gateway, settings, self.tokens, self._box)
        self.publisher = Publisher(
            pool, api_urls(settings), self.tokens, self._box, post=settings.review_post
        )

    async def on_requested(self, event: ReviewRequested, ctx: HandlerContext) -> None:
        started = time.monotonic()
        decision = decide_request(event, await load(self.pool, event))
        if isinstance(decision, Gone):
            log.info("review request %s: repository %s is gone", event.request_id, event.repository_id)
            return
        if isinstance(decision, Skip):  # not reviewed (issue 19); the request is answered, not retried
            async with ctx.transaction() as conn:
                await apply(conn, skipped(event, decision.reason, uuid7()))
            log.info("review request %s skipped: %s", event.request_id, decision.reason)
            return
        if isinstance(decision, AnswerExisting):
            await self._answer_existing(event, ctx, decision)
            return
        record = await self.review(event, decision.repo, heartbeat=ctx.heartbeat)
        await self.publisher.post(event, decision.repo, record)
        record.duration_s = round(time.monotonic() - started, 3)
        async with ctx.transaction() as conn:
            await apply(conn, completed(event, record))
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
            recent = days > 0 and await reviewed_within(conn, event.repository_id, days)
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

    def _box(self) -> SecretBox | None:
        key = self.settings.encryption_key
        return secret_box(key.get_secret_value() if key is not None else None, self.settings.home)

    async def _answer_existing(
        self, event: ReviewRequested, ctx: HandlerContext, answer: AnswerExisting
    ) -> None:
        """Answer with the stored review of the head: post it first when :func:`.decide.decide_request`
        says so (what to post was loaded), then the intents in the inbox's transaction."""
        posted = False
        if answer.post is not None:
            await self.publisher.post(event, answer.repo, answer.post)
            posted = answer.post.posted
        async with ctx.transaction() as conn:
            await apply(conn, answered(event, answer, posted=posted))
        log.info("review request %s: head %s was reviewed before", event.request_id, event.head_sha)

    async def review(
        self, event: ReviewRequested, repo: RepositoryRow, *, heartbeat: Heartbeat | None = None
    ) -> ReviewRecord:
        """The whole review of one request (no writes): :meth:`.assemble.Assembler.review`."""
        return await self.assembler.review(event, repo, heartbeat=heartbeat)

    def background(self) -> list[Background]:
        return [closed_on_stop(self.gateway.aclose)]


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
