"""The ``index.requested`` handler: scan, write, report ``recency.scanned`` — never block the index.

A full request clones (or, for a local source, reads in place) and parses the history; an
incremental push dates only its changed paths with the push's head-commit date, or leaves them
unknown. Whatever goes wrong with the scan — refused credentials, a hung remote, a parse error —
ends as one warning line and a ``recency.scanned`` with status ``failed`` and a reason, and the
event is acknowledged: recency is an enrichment, and a retry would not change a deterministic
failure. Only a database error while writing is raised (and so retried by the runtime).

Slow work (clone and log) runs before the tenant transaction, with heartbeats so JetStream does
not redeliver a long scan; the writes, the scan record and the event share one transaction.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import psycopg

from palimpsest.core import metrics
from palimpsest.core.consumer import HandlerContext
from palimpsest.core.db import Conn, tenant_tx
from palimpsest.core.events import IndexRequested, RecencyScanned
from palimpsest.core.git import GitAuth, check_remote, scrub
from palimpsest.core.git_errors import GitError
from palimpsest.core.outbox import emit
from palimpsest.core.sources import SourcePolicy
from palimpsest.recency_scanner import store
from palimpsest.recency_scanner.clone import scan_local, scan_remote
from palimpsest.recency_scanner.errors import ScanFailed
from palimpsest.recency_scanner.logparse import RecencyResult
from palimpsest.recency_scanner.source import (
    Repository,
    check_transport,
    load_repository,
    no_auth,
)

log = logging.getLogger(__name__)

AuthProvider = Callable[[Conn, Repository], Awaitable[GitAuth | None]]
Status = Literal["ok", "failed", "disabled"]
Mode = Literal["full", "incremental", "none"]

__all__ = ["AuthProvider", "RecencyScanner", "ScanOptions"]


@dataclass(frozen=True, slots=True)
class ScanOptions:
    """What the service settings say about scanning (see ``service.Settings``)."""

    enabled: bool = True
    window: str | None = None
    max_files_per_commit: int = 30
    pair_cap: int = 50_000
    timeout_s: float = 600.0
    allow_local_sources: bool = False
    private_hosts: frozenset[str] = frozenset()  # PALIMPSEST_PRIVATE_PROVIDER_HOSTS
    tmp_dir: Path | None = None  # where temporary clones go (None: the system default)
    heartbeat_s: float = 10.0


@dataclass(slots=True)
class _Outcome:
    status: Status
    mode: Mode
    reason: str | None = None
    detail: str | None = None
    commit: str | None = None
    commits: int = 0
    counted_commits: int | None = None  # a full scan's (None: keep the last full scan's)
    write: store.WriteStats = field(default_factory=store.WriteStats)
    stats: dict[str, Any] = field(default_factory=dict)


class RecencyScanner:
    """Handler state: the options and where credentials come from (a function, fakeable)."""

    def __init__(self, options: ScanOptions, *, auth_provider: AuthProvider = no_auth) -> None:
        self.options = options
        self.auth_provider = auth_provider

    async def handle(self, event: IndexRequested, ctx: HandlerContext) -> None:
        if event.reason == "review":
            return  # a review base's pinned snapshot: recency follows the branch, not that commit
        started = time.monotonic()
        if not self.options.enabled:
            await self._disabled(event, ctx)
            return
        try:
            repository, auth = await self._repository(event, ctx)
        except ScanFailed as failure:
            await self._report_only(event, ctx, failure, started)
            return
        async with self._heartbeats(ctx):
            if event.changed_paths is not None and event.paths_complete:
                await self._incremental(event, ctx, started)
            else:
                await self._full(event, ctx, repository, auth, started)

    # ------------------------------------------------------------------ the three modes

    async def _disabled(self, event: IndexRequested, ctx: HandlerContext) -> None:
        outcome = _Outcome("disabled", "none", reason="recency_scan_off")
        async with ctx.transaction() as conn:
            if await store.lock_repository(conn, event.repository_id):
                await store.clear_repository(conn, event.repository_id)
                await self._record(conn, event, outcome, 0.0)
            await emit(conn, _scanned(event, outcome, 0.0))
        metrics.RECENCY_SCANS.labels("disabled", outcome.reason or "").inc()

    async def _incremental(self, event: IndexRequested, ctx: HandlerContext, started: float) -> None:
        commit = store.valid_sha(event.commit_sha)
        outcome = _Outcome("ok", "incremental", commit=commit)
        await self._write(
            event,
            ctx,
            outcome,
            started,
            lambda conn: store.apply_incremental(
                conn,
                event.tenant_id,
                event.repository_id,
                event.changed_paths or (),
                commit,
                event.head_commit_at,  # None: unknown — never now()
            ),
        )

    async def _full(
        self,
        event: IndexRequested,
        ctx: HandlerContext,
        repository: Repository,
        auth: GitAuth | None,
        started: float,
    ) -> None:
        try:
            result = await self._scan(repository, event.branch or repository.default_branch, auth)
        except (GitError, ScanFailed) as exc:
            await self._failed(event, ctx, _Outcome("failed", "full", exc.reason, exc.detail), auth, started)
            return
        except Exception as exc:  # a bug or an OS error: still only a missing enrichment
            detail = f"{exc.__class__.__name__}: {str(exc)[:300]}"
            await self._failed(event, ctx, _Outcome("failed", "full", "error", detail), auth, started)
            return
        outcome = _Outcome(
            "ok",
            "full",
            commit=result.head or store.valid_sha(event.commit_sha),
            commits=result.commits,
            counted_commits=result.counted_commits,
            stats={
                "oversized_commits": result.oversized_commits,
                "pairs_pruned": result.pairs_pruned,
                "boundary_commits": result.boundary_commits,
                "window": self.options.window,
                "scan_s": _since(started),  # clone + log + parse
            },
        )
        await self._write(
            event,
            ctx,
            outcome,
            started,
            lambda conn: store.replace_full(conn, event.tenant_id, event.repository_id, result),
        )

    # ------------------------------------------------------------------ steps

    async def _repository(
        self, event: IndexRequested, ctx: HandlerContext
    ) -> tuple[Repository, GitAuth | None]:
        async with tenant_tx(ctx.pool, event.tenant_id) as conn:
            repository = await load_repository(conn, event.repository_id)
            if repository is None:
                raise ScanFailed("repository_not_found", "the repository no longer exists")
            if event.changed_paths is not None and event.paths_complete:
                return repository, None  # incremental: no clone, no credential needed
            try:
                auth = await self.auth_provider(conn, repository)
            except GitError as exc:  # e.g. GitHub refused to mint an App token: says why, no secrets
                raise ScanFailed("credentials", str(exc)) from exc
            except Exception as exc:
                detail = f"cannot read the installation's credentials ({exc.__class__.__name__})"
                raise ScanFailed("credentials", detail) from exc
        return repository, auth

    async def _scan(self, repository: Repository, branch: str, auth: GitAuth | None) -> RecencyResult:
        o = self.options
        policy = SourcePolicy(private_hosts=o.private_hosts, allow_local=o.allow_local_sources)
        target = await check_remote(repository.clone_url, policy)  # source_refused: git never runs
        if target.local is not None:
            return await scan_local(
                target.local,
                branch,
                window=o.window,
                max_files_per_commit=o.max_files_per_commit,
                pair_cap=o.pair_cap,
                timeout_s=o.timeout_s,
            )
        check_transport(target.url, auth)
        return await scan_remote(
            target.url,
            branch,
            auth=auth,
            window=o.window,
            max_files_per_commit=o.max_files_per_commit,
            pair_cap=o.pair_cap,
            timeout_s=o.timeout_s,
            tmp_parent=o.tmp_dir,
            allowed_protocols=target.protocols,
            pins=target.pins,
        )

    async def _write(
        self,
        event: IndexRequested,
        ctx: HandlerContext,
        outcome: _Outcome,
        started: float,
        write: Callable[[Conn], Awaitable[store.WriteStats]],
    ) -> None:
        """Apply ``write``, the scan record and the event in one transaction.

        A row the database rejects (a deterministic data error) turns into a failed scan; a
        lost connection is raised so the runtime retries the event.
        """
        try:
            async with ctx.transaction() as conn:
                if not await store.lock_repository(conn, event.repository_id):
                    outcome = _Outcome(
                        "failed", outcome.mode, "repository_not_found", "the repository is gone"
                    )
                else:
                    writing = time.monotonic()
                    outcome.write = await write(conn)
                    outcome.stats["write_s"] = _since(writing)
                    if outcome.write.skipped_paths:
                        outcome.stats["skipped_paths"] = outcome.write.skipped_paths
                    await self._record(conn, event, outcome, _since(started))
                await emit(conn, _scanned(event, outcome, _since(started)))
        except (psycopg.errors.DataError, psycopg.errors.IntegrityError) as exc:
            detail = f"the database refused the scan's rows ({exc.__class__.__name__})"
            failed = _Outcome("failed", outcome.mode, "write_rejected", detail)
            await self._failed(event, ctx, failed, None, started)
            return
        duration = _since(started)
        _count(outcome, duration)
        if outcome.status == "failed":
            log.warning("recency scan of repository %s skipped: it no longer exists", event.repository_id)
            return
        log.info(
            "recency %s scan of repository %s: %d files, %d pairs, %d commits in %.2fs",
            outcome.mode,
            event.repository_id,
            outcome.write.files,
            outcome.write.pairs,
            outcome.commits,
            duration,
        )

    async def _failed(
        self,
        event: IndexRequested,
        ctx: HandlerContext,
        outcome: _Outcome,
        auth: GitAuth | None,
        started: float,
    ) -> None:
        """One warning, one scan record, one event; the previous recency rows stay as they were."""
        outcome.detail = scrub(outcome.detail or "", auth)
        duration = _since(started)
        async with ctx.transaction() as conn:
            if await store.lock_repository(conn, event.repository_id):
                await self._record(conn, event, outcome, duration)
            await emit(conn, _scanned(event, outcome, duration))
        _count(outcome, duration)
        log.warning(
            "recency scan of repository %s failed (%s): %s; the index proceeds without recency",
            event.repository_id,
            outcome.reason,
            outcome.detail,
        )

    async def _report_only(
        self, event: IndexRequested, ctx: HandlerContext, failure: ScanFailed, started: float
    ) -> None:
        """The repository itself is unusable (gone, credentials unreadable): event only."""
        if failure.reason != "repository_not_found":
            await self._failed(
                event, ctx, _Outcome("failed", "full", failure.reason, failure.detail), None, started
            )
            return
        outcome = _Outcome("failed", "none", reason=failure.reason, detail=failure.detail)
        async with ctx.transaction() as conn:
            await emit(conn, _scanned(event, outcome, _since(started)))
        _count(outcome, _since(started))
        log.warning("recency scan of repository %s skipped: it no longer exists", event.repository_id)

    async def _record(self, conn: Conn, event: IndexRequested, outcome: _Outcome, duration: float) -> None:
        await store.record_scan(
            conn,
            event.tenant_id,
            event.repository_id,
            store.ScanRecord(
                status=outcome.status,
                mode=outcome.mode,
                request_id=event.request_id,
                reason=outcome.reason,
                detail=outcome.detail,
                commit_sha=outcome.commit or event.commit_sha,
                files=outcome.write.files,
                pairs=outcome.write.pairs,
                commits=outcome.commits,
                duration_s=duration,
                stats=outcome.stats,
                counted_commits=outcome.counted_commits,
            ),
        )

    @contextlib.asynccontextmanager
    async def _heartbeats(self, ctx: HandlerContext) -> AsyncIterator[None]:
        """Keep the message in progress while a long scan runs (resets JetStream's ack_wait)."""

        async def beat() -> None:
            while True:
                await asyncio.sleep(self.options.heartbeat_s)
                try:
                    await ctx.heartbeat()
                except Exception:  # a missed heartbeat only risks a redelivery (the inbox dedupes)
                    log.debug("heartbeat failed", exc_info=True)

        task = asyncio.create_task(beat())
        try:
            yield
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task


def _since(started: float) -> float:
    return round(time.monotonic() - started, 3)


def _count(outcome: _Outcome, duration: float) -> None:
    metrics.RECENCY_SCANS.labels(outcome.status, outcome.reason or "").inc()
    metrics.RECENCY_SCAN_SECONDS.observe(duration)


def _scanned(event: IndexRequested, outcome: _Outcome, duration: float) -> RecencyScanned:
    return RecencyScanned(
        tenant_id=event.tenant_id,
        repository_id=event.repository_id,
        request_id=event.request_id,
        commit_sha=outcome.commit or event.commit_sha,
        status=outcome.status,
        reason=outcome.reason,
        mode=outcome.mode,
        files=outcome.write.files,
        pairs=outcome.write.pairs,
        commits=outcome.commits,
        duration_s=duration,
    )
