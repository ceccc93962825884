"""One embedding run per repository at a time, across every embedder pod.

Two pushes in a row produce two ``snapshot.built`` events whose pending chunks overlap; run
together they would pay twice for the same vectors. A transaction-scoped advisory lock serialises
them, and the second run then finds the first one's vectors already stored. The lock lives in a
transaction of its own, on a pool connection set aside for the run, that holds nothing else (no
row locks, no snapshot between statements) and ends when the run does; a pod that dies ends it
too. Being transaction-scoped, it holds behind a transaction-mode pooler (PgBouncer), which pins a
server connection to a client only for the length of a transaction. Each attempt is a short
transaction of its own, so a waiting run pins no server connection; while it waits, the message is
heart-beaten so JetStream does not redeliver it. A server-side ``idle_in_transaction_session_timeout``
(or PgBouncer's ``idle_transaction_timeout``) shorter than a run would end the holding transaction,
and with it the lock: leave them at 0 or above the longest run.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from uuid import UUID

import psycopg

from palimpsest.core.db import Pool, try_xact_lock

log = logging.getLogger(__name__)


@asynccontextmanager
async def repository_lock(
    pool: Pool, repository_id: UUID, *, beat: Callable[[], Awaitable[None]], poll_s: float = 0.5
) -> AsyncIterator[None]:
    async with pool.connection() as conn:
        while True:
            if await try_xact_lock(
                conn, f"palimpsest-embed:{repository_id}"
            ):  # opens the holding transaction
                break
            await conn.rollback()
            await beat()
            await asyncio.sleep(poll_s)
        try:
            yield
        finally:
            try:
                await conn.rollback()  # ends the transaction, and with it the lock
            except psycopg.Error as exc:  # the holder was ended meanwhile: the lock went with it
                log.warning(
                    "embedding lock of repository %s was lost during the run (%s); an"
                    " idle_in_transaction_session_timeout shorter than a run ends it",
                    repository_id,
                    exc.__class__.__name__,
                )
