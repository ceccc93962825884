"""One repository analysis, from the snapshot to the record that gets stored.

Read phase (one tenant transaction): the snapshot's files and chunk metadata, the two selections
(80 chunks for the analysis, 40 for the summary), the mechanical documentation check. Model
phase (no transaction open): the analysis and the summary through the LLM gateway, when a model
is routed. The caller stores the returned :class:`AnalysisRecord` and emits
``analysis.completed`` in its own transaction.

Whatever happens to the model, nothing is lost: with no model the analysis is the mechanical
report; when the model fails (after the gateway's retries) or the budget is spent, the analysis
is stored as ``failed`` with the reason, and its Markdown is still the mechanical report.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from uuid import UUID

from palimpsest.analyzer.doccheck import DocFinding, gather_claims
from palimpsest.analyzer.prompts import RepositoryFacts, analysis_messages, summary_messages
from palimpsest.analyzer.proof import AuthProvider, prove
from palimpsest.analyzer.report import (
    SelectionFacts,
    apply_doc_states,
    mechanical_report,
    mechanical_summary,
    model_report,
    selection_facts,
)
from palimpsest.analyzer.selection import Selection, select_from_index, selection_plan
from palimpsest.analyzer.snapshot import SnapshotIndex, load_snapshot
from palimpsest.analyzer.store import AnalysisRecord, Trigger
from palimpsest.core import metrics
from palimpsest.core.db import Pool, tenant_tx
from palimpsest.core.errors import BudgetExceeded, LLMError, ModelCallFailed
from palimpsest.core.events import AnalysisCompleted
from palimpsest.core.ids import uuid7
from palimpsest.core.llm import ChatResult, Gateway
from palimpsest.core.repositories import get_repository
from palimpsest.core.sources import SourcePolicy
from palimpsest.index.snapshots import readable

log = logging.getLogger(__name__)

Heartbeat = Callable[[], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class AnalyzerConfig:
    analysis_chunks: int = 80
    summary_chunks: int = 40
    analysis_max_tokens: int = 5120
    summary_max_tokens: int = 1024
    heartbeat_s: float = 20.0
    list_unverified: bool = False  # list doc references that never existed in the code
    history_timeout_s: float = 1800.0


@dataclass(frozen=True, slots=True)
class Job:
    tenant_id: UUID
    repository_id: UUID
    snapshot_id: UUID | None  # None: the newest ready snapshot
    request_id: UUID | None
    trigger: Trigger


@dataclass(slots=True)
class _Read:
    """What the read phase produced."""

    repo: RepositoryFacts
    index: SnapshotIndex
    analysis: Selection
    summary: Selection
    findings: list[DocFinding]
    facts: SelectionFacts


class Analyzer:
    """Runs analyses; stateless between jobs."""

    def __init__(
        self,
        pool: Pool,
        gateway: Gateway,
        config: AnalyzerConfig,
        *,
        policy: SourcePolicy | None = None,
        auth: AuthProvider | None = None,
    ) -> None:
        self.pool = pool
        self.gateway = gateway
        self.config = config
        self.policy = policy or SourcePolicy()
        self.auth = auth

    async def run(self, job: Job, *, heartbeat: Heartbeat | None = None) -> AnalysisRecord | None:
        """The analysis of ``job``; None when the repository no longer exists."""
        started = time.monotonic()
        async with _keepalive(heartbeat, self.config.heartbeat_s):
            read = await self._read(job)
            if read is None:
                return None
            if isinstance(read, AnalysisRecord):
                return read
            record = await self._write(job, read)
        record.duration_s = time.monotonic() - started
        metrics.ANALYSES.labels(record.state, record.mode).inc()
        return record

    # ------------------------------------------------------------------------ read phase

    async def _read(self, job: Job) -> _Read | AnalysisRecord | None:
        async with tenant_tx(self.pool, job.tenant_id) as conn:
            repo_row = await get_repository(conn, job.repository_id)
            if repo_row is None:
                return None
            snapshot = await readable(conn, job.repository_id, job.snapshot_id)
            if snapshot is None:
                return _no_snapshot(job, repo_row.full_name)
            index = await load_snapshot(conn, job.repository_id, snapshot)
            plan = await selection_plan(conn, index)
            analysis = await select_from_index(conn, index, self.config.analysis_chunks, plan)
            summary = await select_from_index(conn, index, self.config.summary_chunks, plan)
            claims = await gather_claims(conn, index)
            auth = await self.auth(conn, job.repository_id) if self.auth is not None else None
        # history is read with no transaction open: a long pass must not hold one
        judged, check = await prove(
            claims,
            index,
            clone_url=repo_row.clone_url,
            branch=repo_row.default_branch or "main",
            policy=self.policy,
            auth=auth,
            list_unverified=self.config.list_unverified,
            timeout_s=self.config.history_timeout_s,
        )
        repo = RepositoryFacts(repo_row.full_name, index.commit_sha, len(index.files), len(index.chunks))
        facts = selection_facts(index, analysis)
        facts["doc_check"] = check
        apply_doc_states(facts, judged.doc_states)
        analysis = analysis.with_doc_states(judged.doc_states)  # the prompt says what the report says
        return _Read(repo, index, analysis, summary, judged.findings, facts)

    # ------------------------------------------------------------------------ model phase

    async def _write(self, job: Job, read: _Read) -> AnalysisRecord:
        record = _base_record(job, read)
        route = await self.gateway.route(job.tenant_id, "analysis")
        if route is None:
            return record
        reference = str(record.analysis_id)
        try:
            result = await self.gateway.chat(
                job.tenant_id,
                "analysis",
                analysis_messages(read.repo, read.analysis, read.findings),
                max_tokens=self.config.analysis_max_tokens,
                route=route,
                reference=reference,
            )
        except (ModelCallFailed, BudgetExceeded) as exc:
            reason = f"model call failed: {exc}" if isinstance(exc, ModelCallFailed) else str(exc)
            log.warning("analysis %s of %s failed: %s", record.analysis_id, read.repo.name, reason)
            record.state, record.reason, record.model = "failed", reason, route.model
            record.markdown = mechanical_report(read.repo, read.facts, read.findings, model_error=str(exc))
            return record
        record.mode, record.model = "model", route.model
        record.markdown = model_report(read.repo, _with_limit_note(result), read.findings, model=route.model)
        _add_usage(record, result)
        await self._summarise(job, read, record, reference)
        return record

    async def _summarise(self, job: Job, read: _Read, record: AnalysisRecord, reference: str) -> None:
        route = await self.gateway.route(job.tenant_id, "summary")
        if route is None:
            return
        try:
            result = await self.gateway.chat(
                job.tenant_id,
                "summary",
                summary_messages(read.repo, read.summary),
                max_tokens=self.config.summary_max_tokens,
                route=route,
                reference=reference,
            )
        except LLMError as exc:  # the analysis stands; the summary stays mechanical
            log.warning("summary of %s failed (%s); keeping the mechanical summary", read.repo.name, exc)
            return
        record.summary, record.summary_mode, record.summary_model = result.text.strip(), "model", route.model
        _add_usage(record, result)


def _base_record(job: Job, read: _Read) -> AnalysisRecord:
    """The mechanical analysis: what every analysis starts as (and stays, without a model)."""
    return AnalysisRecord(
        analysis_id=uuid7(),
        repository_id=job.repository_id,
        snapshot_id=read.index.snapshot_id,
        commit_sha=read.index.commit_sha,
        request_id=job.request_id,
        trigger=job.trigger,
        state="completed",
        mode="mechanical",
        reason=None,
        model=None,
        markdown=mechanical_report(read.repo, read.facts, read.findings),
        summary=mechanical_summary(read.repo, read.facts, read.findings),
        summary_mode="mechanical",
        selection=[c.as_dict() for c in read.analysis.chunks],
        facts=dict(read.facts),
        median_code=read.analysis.median_code,
        findings=read.findings,
    )


def _no_snapshot(job: Job, name: str) -> AnalysisRecord:
    return AnalysisRecord(
        analysis_id=uuid7(),
        repository_id=job.repository_id,
        snapshot_id=None,
        commit_sha=None,
        request_id=job.request_id,
        trigger=job.trigger,
        state="failed",
        mode="mechanical",
        reason="no_ready_snapshot: the repository has no ready snapshot (index it first)",
        model=None,
        markdown=f"# Repository analysis: {name}\n\nNo ready snapshot: index the repository first.\n",
        summary="",
        summary_mode="mechanical",
    )


def _with_limit_note(result: ChatResult) -> str:
    if not result.truncated:
        return result.text
    return (
        result.text.rstrip()
        + "\n\n_(The model stopped at its output token limit; the text may be cut short.)_"
    )


def _add_usage(record: AnalysisRecord, result: ChatResult) -> None:
    record.prompt_tokens += result.usage.prompt_tokens
    record.completion_tokens += result.usage.completion_tokens
    if result.usage.cost_usd is not None:
        record.cost_usd = (record.cost_usd or 0.0) + result.usage.cost_usd


def completed_event(tenant_id: UUID, record: AnalysisRecord) -> AnalysisCompleted:
    return AnalysisCompleted(
        tenant_id=tenant_id,
        repository_id=record.repository_id,
        request_id=record.request_id,
        analysis_id=record.analysis_id,
        snapshot_id=record.snapshot_id,
        state=record.state,
        reason=record.reason,
    )


@contextlib.asynccontextmanager
async def _keepalive(heartbeat: Heartbeat | None, every_s: float) -> AsyncIterator[None]:
    """Call ``heartbeat`` every ``every_s`` seconds while the block runs (long model calls)."""
    if heartbeat is None:
        yield
        return

    async def beat() -> None:
        while True:
            await asyncio.sleep(every_s)
            try:
                await heartbeat()
            except Exception:  # a missed heartbeat only risks a redelivery
                log.debug("heartbeat failed", exc_info=True)

    task = asyncio.create_task(beat(), name="analysis-heartbeat")
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
