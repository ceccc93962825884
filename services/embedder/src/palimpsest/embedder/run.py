"""One embedding run: the snapshot's pending chunks, in pages, through the engine, into the table.

The run embeds at most ``max_chunks`` chunks (20 000 per run by default); a snapshot with more
pending ends ``budget_exceeded`` with what it managed stored, and the next run (the next build of
the repository) carries on where this one stopped. When the model's dimension is not yet known for
the tenant, the first request carries a single input, so a model of an unsupported dimension costs
one input, not a batch. Every stop is an :class:`~palimpsest.embedder.store.Outcome`; the snapshot
itself is never touched beyond its embedding columns.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncGenerator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from uuid import UUID

import psycopg

from palimpsest.core.db import Pool, tenant_tx
from palimpsest.embedder import store
from palimpsest.embedder.batching import BatchLimits, Item, embedding_text, make_item, plan_batches
from palimpsest.embedder.engine import BatchEmbedder, Provider, RetryPolicy, Sleep
from palimpsest.embedder.errors import ProviderError, RunStopped, SpendBudgetExceeded
from palimpsest.embedder.store import Outcome
from palimpsest.index.semantic import SUPPORTED_DIMENSIONS

log = logging.getLogger(__name__)

ANALYZE_AFTER = 5000


@dataclass(frozen=True, slots=True)
class RunLimits:
    max_chunks: int = 20_000
    page: int = 1000
    write_every: int = 512
    concurrency: int = 4  # requests in flight: a provider's latency, not its throughput, bounds one at a time


@dataclass(slots=True)
class Run:
    """The state of one run over one snapshot (one tenant, one model)."""

    pool: Pool
    tenant_id: UUID
    repository_id: UUID
    snapshot_id: UUID
    engine: BatchEmbedder
    limits: RunLimits = field(default_factory=RunLimits)
    known_dimension: int | None = None
    sent: int = 0
    written: int = 0
    buffer: list[tuple[str, int, Sequence[float], bool]] = field(default_factory=list)
    writing: asyncio.Task[int] | None = None  # the previous flush, written while we keep embedding
    bulk: bool = False  # the partition's HNSW indexes were dropped for this run's load
    flushing: asyncio.Lock = field(default_factory=asyncio.Lock)

    @property
    def model(self) -> str:
        return self.engine.provider.model

    async def execute(self) -> Outcome:
        async with tenant_tx(self.pool, self.tenant_id) as conn:
            self.known_dimension = await store.known_dimension(conn, self.repository_id, self.model)
            pending = await store.pending_count(conn, self.repository_id, self.snapshot_id, self.model)
            rows = min(pending, self.limits.max_chunks)
            self.bulk = await store.open_partition(conn, self.repository_id, rows)
        state, reason = "ready", None
        try:
            try:
                await self._embed_pending()
            except RunStopped as stop:
                state, reason = stop.state, stop.reason
            except SpendBudgetExceeded as exc:
                state, reason = "budget_exceeded", f"spend_budget: {exc}"
            except ProviderError as exc:
                state, reason = "embedding_failed", f"{exc.__class__.__name__}: {exc}"[:500]
            await self._flush(wait=True)
            await self._index()
        except BaseException:  # infrastructure trouble: no write left running behind the retry
            if self.writing is not None:
                self.writing.cancel()
                with contextlib.suppress(BaseException):
                    await self.writing
            raise
        return await self._outcome(state, reason)

    async def _embed_pending(self) -> None:
        """Send the pending chunks' batches with at most ``limits.concurrency`` requests in flight,
        reading the next page while the current one's requests are out.

        The requests flow on across page boundaries: a page is not drained (its last requests
        going out one by one while the other slots idle) before the next one is read. A probe
        (the model's dimension still unknown) goes alone first. The first failure cancels the
        requests still in flight and is raised as it is; what completed is kept (buffered and
        written), as when requests went one at a time.
        """
        senders = self.limits.concurrency
        queue: asyncio.Queue[list[Item] | None] = asyncio.Queue(maxsize=senders)

        async def read() -> None:
            async with contextlib.aclosing(self._batches()) as batches:
                async for batch in batches:
                    await queue.put(batch)
            for _ in range(senders):
                await queue.put(None)

        async def send() -> None:
            while (batch := await queue.get()) is not None:
                await self._send(batch)

        tasks = [asyncio.create_task(read()), *(asyncio.create_task(send()) for _ in range(senders))]
        try:
            done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
            failed = [exc for task in tasks if task in done and (exc := task.exception()) is not None]
            if failed:
                raise failed[0]
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    async def _batches(self) -> AsyncGenerator[list[Item], None]:
        """The pending chunks' batches, read a page at a time, up to ``limits.max_chunks`` chunks. When
        the model's dimension is not known, the first page's first input is sent here, alone,
        before anything else goes out."""
        after: tuple[str, int] | None = None
        taken = 0
        while taken < self.limits.max_chunks:
            async with tenant_tx(self.pool, self.tenant_id) as conn:
                page = await store.pending_page(
                    conn,
                    self.repository_id,
                    self.snapshot_id,
                    self.model,
                    after=after,
                    limit=min(self.limits.page, self.limits.max_chunks - taken),
                )
            if not page:
                return
            taken += len(page)
            after = (page[-1].blob_sha, page[-1].ordinal)
            items = [
                make_item(
                    c.blob_sha, c.ordinal, embedding_text(c.name, c.kind, c.content), self.engine.limits
                )
                for c in page
            ]
            if self._probing:
                await self._send(items[:1])
                items = items[1:]
            for batch in plan_batches(items, self.engine.limits):
                yield batch

    @property
    def _probing(self) -> bool:
        """The model's dimension is not known yet: one input goes alone before paying for a batch."""
        return self.engine.dimension is None and self.known_dimension is None

    async def _send(self, batch: list[Item]) -> None:
        pairs = await self.engine.embed(batch)
        self._check_dimension()
        self.sent += len(batch)
        self.buffer.extend((item.blob_sha, item.ordinal, vector, item.truncated) for item, vector in pairs)
        if len(self.buffer) >= self.limits.write_every:
            await self._flush()
        await self.engine.beat()

    def _check_dimension(self) -> None:
        dim = self.engine.dimension
        if dim is None:
            return
        if dim not in SUPPORTED_DIMENSIONS:
            self.buffer.clear()
            raise RunStopped(
                "unsupported_dimensions",
                f"model {self.model} returns {dim} dimensions; supported: "
                + ", ".join(map(str, SUPPORTED_DIMENSIONS)),
            )
        if self.known_dimension is not None and dim != self.known_dimension:
            raise ProviderError(
                f"model {self.model} now returns {dim} dimensions; its stored vectors have {self.known_dimension}"
            )

    async def _flush(self, *, wait: bool = False) -> None:
        """Write the buffer in the background (one write at a time) while requests go on."""
        async with self.flushing:  # requests in flight flush too: one swaps the write task at a time
            await self._written()
            if self.buffer:
                rows, self.buffer = self.buffer, []
                self.writing = asyncio.create_task(self._write(rows))
            if wait:
                await self._written()

    async def _written(self) -> None:
        """Wait for the write in the background. Shielded: a request cancelled while it waits (a
        failure of another in flight) leaves the write running, and the final flush awaits it."""
        if self.writing is not None:
            self.written += await asyncio.shield(self.writing)
            self.writing = None

    async def _write(self, rows: list[tuple[str, int, Sequence[float], bool]]) -> int:
        async with tenant_tx(self.pool, self.tenant_id) as conn:
            return await store.write_vectors(conn, self.tenant_id, self.repository_id, self.model, rows)

    async def _index(self) -> None:
        """Build the HNSW indexes the repository's partition lacks (migration 0037): after a bulk
        load, a new repository's first vectors, or a run whose build failed; a partition that has
        them costs one index lookup. Statistics are refreshed after large loads.

        A failed build is logged, not raised: the vectors are stored and searches read them
        without the graph (exact and slower) until a later run builds it.
        """
        try:
            async with tenant_tx(self.pool, self.tenant_id) as conn:
                built = await store.index_partition(
                    conn, self.repository_id, analyze=self.written >= ANALYZE_AFTER
                )
        except psycopg.errors.OperationalError:
            raise  # the database is in trouble: the run is retried
        except psycopg.Error as exc:
            log.warning("repository %s: HNSW index build failed: %s", self.repository_id, exc)
            return
        if built:
            log.info(
                "repository %s: %d HNSW index(es) built after %d vectors (bulk load: %s)",
                self.repository_id,
                built,
                self.written,
                self.bulk,
            )

    async def _outcome(self, state: str, reason: str | None) -> Outcome:
        async with tenant_tx(self.pool, self.tenant_id) as conn:
            cov = await store.coverage(conn, self.repository_id, self.snapshot_id, self.model)
        if state == "ready" and cov.pending and self.sent >= self.limits.max_chunks:
            state = "budget_exceeded"
            reason = (
                f"chunk_cap: {self.limits.max_chunks} chunks embedded per run; {cov.pending} of the"
                " snapshot's chunks wait for the next run"
            )
        stats = self.engine.stats
        return Outcome(
            state=state,
            reason=reason,
            model=self.model,
            dimension=self.engine.dimension or self.known_dimension,
            embedded=self.written,
            covered=cov.embedded,
            pending=cov.pending,
            truncated=stats.truncated,
            tokens=stats.tokens,
        )


async def embed_snapshot(
    pool: Pool,
    tenant_id: UUID,
    repository_id: UUID,
    snapshot_id: UUID,
    provider: Provider,
    *,
    limits: RunLimits | None = None,
    batch_limits: BatchLimits | None = None,
    policy: RetryPolicy | None = None,
    beat: Callable[[], Awaitable[None]] | None = None,
    sleep: Sleep | None = None,
) -> Outcome:
    """Embed the snapshot's pending chunks with ``provider``; never raises for provider trouble."""
    engine = BatchEmbedder(provider, batch_limits or BatchLimits(), policy or RetryPolicy())
    if beat is not None:
        engine.beat = beat
    if sleep is not None:
        engine.sleep = sleep
    run = Run(pool, tenant_id, repository_id, snapshot_id, engine, limits or RunLimits())
    outcome = await run.execute()
    log.info(
        "snapshot %s embedding %s%s: %d new vectors (%s), %d pending, %d truncated, %d requests,"
        " %d retries, %d splits",
        snapshot_id,
        outcome.state,
        f" ({outcome.reason})" if outcome.reason else "",
        outcome.embedded,
        provider.model,
        outcome.pending,
        outcome.truncated,
        engine.stats.requests,
        engine.stats.retries,
        engine.stats.splits,
    )
    return outcome
