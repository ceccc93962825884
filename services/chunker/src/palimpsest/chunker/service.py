"""The chunker service: turns ``index.requested`` into a ready snapshot and ``snapshot.built``.

It always builds the head of the repository's default branch (resolved at build time), so
out-of-order or repeated requests converge on the newest commit; a head that already has a ready
snapshot is acknowledged without work unless the request is an explicit rebuild.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import multiprocessing
import os
import sys
import time
import types
from collections.abc import Iterator
from concurrent.futures import Executor, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any
from uuid import UUID

from pydantic import Field

from palimpsest.chunker import store
from palimpsest.chunker.build import BuildStats, Limits, build, finish
from palimpsest.chunker.errors import BuildFailed, BuildSkipped
from palimpsest.chunker.source import open_source, raise_build_failure
from palimpsest.chunker.work import warm_up
from palimpsest.core import metrics, outcomes
from palimpsest.core.bus import CONSUMERS
from palimpsest.core.consumer import HandlerContext
from palimpsest.core.credentials import box_for, git_auth_for
from palimpsest.core.db import tenant_tx
from palimpsest.core.events import IndexRequested, SnapshotBuilt
from palimpsest.core.git import GitAuth
from palimpsest.core.git_errors import GitError
from palimpsest.core.github_app import InstallationTokens
from palimpsest.core.ids import uuid7
from palimpsest.core.outbox import emit
from palimpsest.core.repositories import Repository, get_repository
from palimpsest.core.secretbox import SecretBox
from palimpsest.core.service import Infra, ServiceDefinition
from palimpsest.core.settings import BaseServiceSettings, service_settings
from palimpsest.core.suspension import suspended_reason

log = logging.getLogger(__name__)


class Settings(BaseServiceSettings):
    """Instance limits (ADR-0017 defaults) and parsing parallelism."""

    max_file_bytes: int = Field(
        default=256 * 1024, ge=1, description="Files larger than this are left out of the index."
    )
    max_files: int = Field(
        default=50_000,
        ge=1,
        description="Files indexed per snapshot at most; a larger repository is indexed in part.",
    )
    tenant_storage_bytes: int = Field(
        default=2 * 1024**3, ge=1, description="Index bytes one tenant may store; a build past it fails."
    )
    build_time_budget_s: float = Field(
        default=600.0, gt=0, description="Seconds one snapshot build may take before it fails."
    )
    keep_ready_snapshots: int = Field(
        default=2, ge=1, description="Ready snapshots kept per repository (older ones are deleted)."
    )
    parse_workers: int = Field(
        default=0,
        ge=0,
        description="Parse processes: 0, one per CPU; 1, parse in-process.",
    )
    clone_timeout_s: float = Field(
        default=300.0, gt=0, description="Seconds a clone or fetch of a repository may take."
    )

    def limits(self) -> Limits:
        return Limits(
            max_file_bytes=self.max_file_bytes,
            max_files=self.max_files,
            tenant_bytes=self.tenant_storage_bytes,
            time_budget_s=self.build_time_budget_s,
            keep_ready=self.keep_ready_snapshots,
            workers=self.workers,
        )

    @property
    def workers(self) -> int:
        return self.parse_workers or os.cpu_count() or 1


@contextlib.contextmanager
def main_left_out() -> Iterator[None]:
    """Start worker processes without re-running this process's ``__main__`` in each of them.

    A spawned or forkserver child re-imports the parent's main module before it runs anything;
    under the ``palimpsest`` command that is the whole CLI, seconds per worker on every first build.
    The workers run only ``palimpsest.chunker.work`` (the forkserver preloads it), so while they
    start, ``__main__`` is a bare module that names no file and no spec: nothing to re-run.
    """
    saved = sys.modules["__main__"]
    sys.modules["__main__"] = types.ModuleType("__main__")
    try:
        yield
    finally:
        sys.modules["__main__"] = saved


class Chunker:
    """Handler state: settings and a lazily started pool of parse workers."""

    def __init__(self, settings: Settings, box: SecretBox | None = None) -> None:
        self.settings = settings
        self.box = box
        self.tokens = InstallationTokens(api_url=settings.github_api_url)
        self._executor: Executor | None = None
        self._locks: dict[UUID, asyncio.Lock] = {}

    async def _auth(self, ctx: HandlerContext, repo: Repository) -> GitAuth | None:
        """The repository's installation token (decrypted, or minted for a GitHub App, here;
        handed to git as a header). A refused mint fails the request as a refused clone would."""
        try:
            async with tenant_tx(ctx.pool, ctx.event.tenant_id) as conn:
                return await git_auth_for(conn, repo.repository_id, self.box, tokens=self.tokens)
        except GitError as exc:
            raise_build_failure(exc)

    def executor(self) -> Executor | None:
        """The parse workers, started by the first build of this process without waiting for them:
        they fork from the forkserver (which imports the parsing code first) and load their grammars
        while the build opens its source and lists the tree; its first batch queues behind that."""
        if self.settings.workers <= 1:
            return None
        if self._executor is None:
            ctx = multiprocessing.get_context("forkserver")
            ctx.set_forkserver_preload(["palimpsest.chunker.work"])
            self._executor = ProcessPoolExecutor(self.settings.workers, mp_context=ctx)
            with main_left_out():  # the workers start on these submits
                for _ in range(self.settings.workers):
                    self._executor.submit(warm_up)
        return self._executor

    def close(self) -> None:
        if self._executor is not None:
            self._executor.shutdown(cancel_futures=True)

    def _discard_pool(self) -> None:
        """A parse worker died (killed, out of memory, a crashing parser): the pool is broken for
        good, so drop it; the next build starts a fresh one."""
        broken, self._executor = self._executor, None
        if broken is not None:
            broken.shutdown(wait=False, cancel_futures=True)

    async def handle(self, event: IndexRequested, ctx: HandlerContext) -> None:
        try:
            await self._handle(event, ctx)
        except Exception as exc:  # back to the bus: the repository says retrying or dead-lettered
            if not _pinned(event):
                await outcomes.record_unsuccessful(ctx, event.repository_id, "build", exc)
            raise

    async def _handle(self, event: IndexRequested, ctx: HandlerContext) -> None:
        started = time.monotonic()
        try:
            repo = await self._repository(ctx, event)
            if repo is None:
                return
            await self._build(event, ctx, repo, started)
        except BrokenProcessPool:
            self._discard_pool()
            log.warning("index request %s: a parse worker died; retrying with a new pool", event.request_id)
            raise  # redelivered (transient): the build runs again on the new pool
        except BuildSkipped as skip:
            async with ctx.transaction() as conn:
                await emit(
                    conn, _built(event, state="skipped", reason=skip.reason, snapshot_id=skip.snapshot_id)
                )
                if skip.reason == "up_to_date" and not _pinned(event):  # the head is indexed
                    await outcomes.record(conn, event.repository_id, "build", "ok", event_id=event.id)
            log.info("index request %s skipped: %s", event.request_id, skip.reason)
        except BuildFailed as failure:  # before a snapshot exists: the source was refused or is gone
            async with ctx.transaction() as conn:
                await emit(conn, _built(event, state="failed", reason=str(failure)[:1000]))
                if not _pinned(event):
                    await outcomes.record(
                        conn, event.repository_id, "build", "failed", str(failure), event_id=event.id
                    )
            metrics.INDEX_BUILDS.labels("failed", failure.reason).inc()
            log.warning("index request %s failed: %s", event.request_id, failure)

    async def _repository(self, ctx: HandlerContext, event: IndexRequested) -> Repository | None:
        """The repository row, or None when the request was handled here (index mode off)."""
        async with tenant_tx(ctx.pool, event.tenant_id) as conn:
            repo = await get_repository(conn, event.repository_id)
            suspended = await suspended_reason(conn, event.repository_id) if repo is not None else None
        if repo is None:
            raise BuildSkipped("repository_not_found")
        if suspended is not None:  # an event from before the suspension: not indexed (issue 19)
            raise BuildSkipped("suspended")
        if repo.index_mode == "off":
            async with ctx.transaction() as conn:
                await store.delete_snapshots(conn, event.repository_id)
                await store.collect_garbage(conn, event.repository_id)
                await outcomes.record(conn, event.repository_id, "build", "ok", event_id=event.id)
                await emit(conn, _built(event, state="skipped", reason="index_mode_off"))
            return None
        return repo

    async def _build(
        self, event: IndexRequested, ctx: HandlerContext, repo: Repository, started: float
    ) -> None:
        async with self._repository_lock(event.repository_id):  # one build per repository at a time
            await self._build_locked(event, ctx, repo, started)

    def _repository_lock(self, repository_id: UUID) -> asyncio.Lock:
        lock = self._locks.get(repository_id)
        if lock is None:
            if len(self._locks) > 1024:  # forget idle ones
                self._locks = {k: v for k, v in self._locks.items() if v.locked()}
            lock = self._locks[repository_id] = asyncio.Lock()
        return lock

    async def _build_locked(
        self, event: IndexRequested, ctx: HandlerContext, repo: Repository, started: float
    ) -> None:
        s = self.settings
        executor = self.executor()
        branch = repo.default_branch
        pinned = _pinned(event)
        async with open_source(
            repo.clone_url,
            branch,
            auth=await self._auth(ctx, repo),
            policy=s.source_policy(),
            timeout_s=s.clone_timeout_s,
            commit=event.commit_sha if pinned else None,
        ) as source:
            existing = await _ready_for(ctx, event.repository_id, source.commit, pinned=pinned)
            if existing is not None and event.reason != "rebuild":
                raise BuildSkipped("up_to_date", existing)
            snapshot_id = await _start_snapshot(ctx, event, source.commit, pinned=pinned)
            try:
                async with ctx.transaction() as conn:
                    stats = await build(
                        conn,
                        tenant_id=event.tenant_id,
                        repository_id=event.repository_id,
                        snapshot_id=snapshot_id,
                        source=source,
                        limits=s.limits(),
                        executor=executor,
                        progress=lambda done, total: _progress(ctx, snapshot_id, done),
                        heartbeat=ctx.heartbeat,
                        skip_if_ready=event.reason != "rebuild",
                        pinned=pinned,
                    )
                    duration = round(time.monotonic() - started, 3)
                    await finish(
                        conn,
                        event.repository_id,
                        snapshot_id,
                        stats,
                        duration,
                        s.keep_ready_snapshots,
                        pinned=pinned,
                    )
                    if not pinned:
                        await outcomes.record(conn, event.repository_id, "build", "ok", event_id=event.id)
                    await emit(
                        conn,
                        _built(
                            event,
                            state="ready",
                            snapshot_id=snapshot_id,
                            commit=source.commit,
                            stats=stats,
                            duration_s=duration,
                            pinned=pinned,
                        ),
                    )
            except BuildFailed as failure:
                await self._failed(ctx, event, snapshot_id, source.commit, failure, started)
                return
            except BuildSkipped:  # another replica built this commit first: ours was never needed
                async with tenant_tx(ctx.pool, event.tenant_id) as conn:
                    await store.delete_snapshot(conn, snapshot_id)
                raise
        metrics.INDEX_BUILDS.labels("ready", "").inc()
        metrics.INDEX_BUILD_SECONDS.labels("ready").observe(time.monotonic() - started)
        for reason, n in stats.skipped.items():
            metrics.INDEX_SKIPPED_FILES.labels(reason).inc(n)
        log.info(
            "snapshot %s ready: %d files, %d chunks, %d blobs parsed, %.1fs %s",
            snapshot_id,
            stats.files,
            stats.chunks,
            stats.parsed_blobs,
            time.monotonic() - started,
            stats.timings,
        )

    async def _failed(
        self,
        ctx: HandlerContext,
        event: IndexRequested,
        snapshot_id: UUID,
        commit: str,
        failure: BuildFailed,
        started: float,
    ) -> None:
        duration = round(time.monotonic() - started, 3)
        async with ctx.transaction() as conn:
            await store.mark_failed(conn, snapshot_id, failure.reason, duration)
            if not _pinned(event):
                await outcomes.record(
                    conn, event.repository_id, "build", "failed", str(failure), event_id=event.id
                )
            await emit(
                conn,
                _built(
                    event,
                    state="failed",
                    reason=failure.reason,
                    snapshot_id=snapshot_id,
                    commit=commit,
                    duration_s=duration,
                ),
            )
        metrics.INDEX_BUILDS.labels("failed", failure.reason).inc()
        metrics.INDEX_BUILD_SECONDS.labels("failed").observe(duration)
        log.warning("snapshot %s failed: %s", snapshot_id, failure)


def _pinned(event: IndexRequested) -> bool:
    """A review's base, built at a pinned commit: not the branch's build, so not its outcome."""
    return event.reason == "review" and event.commit_sha is not None


async def _ready_for(ctx: HandlerContext, repository_id: UUID, commit: str, *, pinned: bool) -> UUID | None:
    """A kept snapshot of ``commit`` that makes this build unnecessary: for the branch, its ready
    snapshot (a pinned one is not the branch's); for a review's base, any kept one."""
    async with tenant_tx(ctx.pool, ctx.event.tenant_id) as conn:
        return await store.ready_for(conn, repository_id, commit, pinned=pinned)


async def _start_snapshot(ctx: HandlerContext, event: IndexRequested, commit: str, *, pinned: bool) -> UUID:
    """A committed ``building`` row, visible to progress readers; interrupted builds become failed."""
    snapshot_id = uuid7()
    async with tenant_tx(ctx.pool, event.tenant_id) as conn:
        await store.start_snapshot(
            conn, event.tenant_id, event.repository_id, snapshot_id, commit, event.request_id, pinned=pinned
        )
    return snapshot_id


async def _progress(ctx: HandlerContext, snapshot_id: UUID, done: int) -> None:
    async with tenant_tx(ctx.pool, ctx.event.tenant_id) as conn:
        await store.record_progress(conn, snapshot_id, done)


def _built(
    event: IndexRequested,
    *,
    state: str,
    reason: str | None = None,
    snapshot_id: Any = None,
    commit: str | None = None,
    stats: BuildStats | None = None,
    duration_s: float = 0.0,
    pinned: bool = False,
) -> SnapshotBuilt:
    counts: dict[str, Any] = {}
    if stats is not None:
        counts = {
            "files": stats.files,
            "chunks": stats.chunks,
            "symbols": stats.symbols,
            "bytes": stats.bytes,
            "parsed_blobs": stats.parsed_blobs,
            "skipped": dict(stats.skipped),
            "timings": dict(stats.timings),
        }
    return SnapshotBuilt(
        tenant_id=event.tenant_id,
        repository_id=event.repository_id,
        request_id=event.request_id,
        snapshot_id=snapshot_id,
        commit_sha=commit,
        state=state,  # type: ignore[arg-type]
        reason=reason,
        duration_s=duration_s,
        pinned=pinned,
        **counts,
    )


def bootstrap(infra: Infra) -> ServiceDefinition:
    settings = service_settings(Settings, infra.settings)
    chunker = Chunker(settings, box_for(settings, embedded=infra.embedded_db))
    return ServiceDefinition(
        name="chunker",
        handlers={"index.requested": chunker.handle},
        consumer=CONSUMERS["chunker"],
        on_stop=[chunker.close],
    )


__all__ = ["Chunker", "Settings", "bootstrap", "main_left_out"]
