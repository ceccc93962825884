"""The analyzer service: settings, handlers and bootstrap.

* ``analysis.requested`` (the API, the CLI): analyse now — the requested snapshot, or the newest
  ready one — and store the analysis with ``analysis.completed`` in the inbox transaction.
* ``snapshot.built`` (ready) / ``snapshot.embedded``: mark the repository due for a debounced
  automatic analysis (see :mod:`palimpsest.analyzer.schedule`); the scheduler, a background task,
  runs it.

Settings: the fields of :class:`Settings` (``palimpsest settings --service analyzer``, docs/settings.md).
"""

from __future__ import annotations

import asyncio
import logging
from uuid import UUID

from pydantic import Field

from palimpsest.analyzer.analysis import Analyzer, AnalyzerConfig, Job, completed_event
from palimpsest.analyzer.proof import AuthProvider
from palimpsest.analyzer.schedule import ScheduleConfig, mark_due, run_scheduler
from palimpsest.analyzer.store import save_analysis
from palimpsest.core import outcomes
from palimpsest.core.bus import CONSUMERS, ConsumerSpec
from palimpsest.core.consumer import HandlerContext
from palimpsest.core.credentials import box_for, git_auth_for
from palimpsest.core.db import Conn
from palimpsest.core.events import AnalysisRequested, SnapshotBuilt, SnapshotEmbedded
from palimpsest.core.git import GitAuth
from palimpsest.core.git_errors import GitError
from palimpsest.core.github_app import InstallationTokens
from palimpsest.core.llm import Gateway, LLMSettings
from palimpsest.core.outbox import emit
from palimpsest.core.service import Background, Infra, ServiceDefinition, closed_on_stop
from palimpsest.core.settings import BaseServiceSettings, service_settings

__all__ = ["AnalyzerService", "Settings", "bootstrap", "definition"]

log = logging.getLogger(__name__)


class Settings(BaseServiceSettings, LLMSettings):
    """Settings of the analyzer service (PALIMPSEST_* variables)."""

    analysis_auto: bool = Field(default=True, description="Analyse new snapshots automatically.")
    analysis_interval_s: float = Field(
        default=3600.0,
        ge=0,
        description="At most one automatic analysis per repository per this many seconds.",
    )
    analysis_debounce_s: float = Field(
        default=30.0, ge=0, description="Wait this long after a snapshot for newer ones before analysing."
    )
    analysis_poll_s: float = Field(
        default=5.0, gt=0, description="Seconds between the scheduler's looks for due analyses."
    )
    analysis_lease_s: float = Field(
        default=1800.0, gt=0, description="A claimed automatic analysis not finished within this is retried."
    )
    analysis_chunks: int = Field(default=80, ge=1, le=1000, description="Chunks the analysis reads.")
    summary_chunks: int = Field(default=40, ge=1, le=1000, description="Chunks the summary reads.")
    analysis_max_tokens: int = Field(
        default=5120, ge=256, le=200_000, description="Output token limit of the analysis."
    )
    summary_max_tokens: int = Field(
        default=1024, ge=64, le=200_000, description="Output token limit of the summary."
    )
    analysis_list_unverified: bool = Field(
        default=False,
        description="List doc references that never existed in the code (facts.doc_check.unverified; the count is always there).",
    )
    analysis_history_timeout_s: float = Field(
        default=1800.0, gt=0, description="Seconds reading history for the doc check may take."
    )

    def analyzer_config(self) -> AnalyzerConfig:
        return AnalyzerConfig(
            analysis_chunks=self.analysis_chunks,
            summary_chunks=self.summary_chunks,
            analysis_max_tokens=self.analysis_max_tokens,
            summary_max_tokens=self.summary_max_tokens,
            heartbeat_s=max(0.5, min(20.0, self.ack_wait_s / 3)),
            list_unverified=self.analysis_list_unverified,
            history_timeout_s=self.analysis_history_timeout_s,
        )

    def schedule_config(self) -> ScheduleConfig:
        return ScheduleConfig(
            debounce_s=self.analysis_debounce_s,
            interval_s=self.analysis_interval_s,
            poll_s=self.analysis_poll_s,
            lease_s=self.analysis_lease_s,
        )


class AnalyzerService:
    """The handlers, over one analyzer and its gateway."""

    def __init__(self, analyzer: Analyzer, settings: Settings) -> None:
        self.analyzer = analyzer
        self.settings = settings
        self.schedule = settings.schedule_config()

    async def on_requested(self, event: AnalysisRequested, ctx: HandlerContext) -> None:
        try:
            await self._requested(event, ctx)
        except Exception as exc:  # back to the bus: the repository says retrying or dead-lettered
            await outcomes.record_unsuccessful(ctx, event.repository_id, "analysis", exc)
            raise

    async def _requested(self, event: AnalysisRequested, ctx: HandlerContext) -> None:
        job = Job(event.tenant_id, event.repository_id, event.snapshot_id, event.request_id, "request")
        record = await self.analyzer.run(job, heartbeat=ctx.heartbeat)
        if record is None:
            log.info("analysis request %s: repository %s is gone", event.request_id, event.repository_id)
            return
        async with ctx.transaction() as conn:
            await save_analysis(conn, event.tenant_id, record)
            await emit(conn, completed_event(event.tenant_id, record))
        log.info(
            "analysis %s of repository %s: %s (%s)%s",
            record.analysis_id,
            event.repository_id,
            record.state,
            record.mode,
            f": {record.reason}" if record.reason else "",
        )

    async def on_snapshot(self, event: SnapshotBuilt | SnapshotEmbedded, ctx: HandlerContext) -> None:
        if not self.settings.analysis_auto or event.snapshot_id is None:
            return
        if isinstance(event, SnapshotBuilt) and (event.state != "ready" or event.pinned):
            return
        async with ctx.transaction() as conn:
            await mark_due(conn, event.tenant_id, event.repository_id, event.snapshot_id, self.schedule)

    def background(self, gateway: Gateway) -> list[Background]:
        async def scheduler(infra: Infra, stop: asyncio.Event) -> None:
            if self.settings.analysis_auto:
                await run_scheduler(infra.pool, self.analyzer, self.schedule, stop)

        return [scheduler, closed_on_stop(gateway.aclose)]


def definition(
    infra: Infra, settings: Settings, *, consumer: ConsumerSpec | None = None, gateway: Gateway | None = None
) -> ServiceDefinition:
    """The service with explicit settings (tests pass their own consumer and gateway)."""
    gateway = gateway or Gateway(infra.pool, settings)
    analyzer = Analyzer(
        infra.pool,
        gateway,
        settings.analyzer_config(),
        policy=settings.source_policy(),
        auth=_auth_provider(settings, embedded=infra.embedded_db),
    )
    service = AnalyzerService(analyzer, settings)
    return ServiceDefinition(
        name="analyzer",
        handlers={
            "analysis.requested": service.on_requested,
            "snapshot.built": service.on_snapshot,
            "snapshot.embedded": service.on_snapshot,
        },
        consumer=consumer or CONSUMERS["analyzer"],
        background=service.background(gateway),
    )


def _auth_provider(settings: Settings, *, embedded: bool) -> AuthProvider:
    """Credentials for reading a repository's history: the installation's, as the chunker's."""
    box = box_for(settings, embedded=embedded)
    tokens = InstallationTokens(api_url=settings.github_api_url)

    async def provide(conn: Conn, repository_id: UUID) -> GitAuth | None:
        try:
            return await git_auth_for(conn, repository_id, box, tokens=tokens)
        except GitError as exc:  # no credential: the check proves nothing, the analysis goes on
            log.warning("no credentials to read history of repository %s: %s", repository_id, exc)
            return None

    return provide


def bootstrap(infra: Infra) -> ServiceDefinition:
    settings = service_settings(Settings, infra.settings)
    return definition(infra, settings)
