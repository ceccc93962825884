"""One embedding run per repository at a time, across every embedder pod.

Two pushes in a row produce two ``snapshot.built`` events whose pending chunks overlap; run
together they would pay twice for the same vectors. A session-level advisory lock, held on a
dedicated autocommit connection for the run (never inside an open transaction), serialises them,
and the second run then finds the first one's vectors already stored. While it waits, the
message is heart-beaten so JetStream does not redeliver it.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from uuid import UUID

from palimpsest.core.db import Pool

_KEY = "SELECT hashtextextended('palimpsest-embed:' || %s, 0) AS k"


@asynccontextmanager
async def repository_lock(
    pool: Pool, repository_id: UUID, *, beat: Callable[[], Awaitable[None]], poll_s: float = 0.5
) -> AsyncIterator[None]:
    async with pool.connection() as conn:
        await conn.set_autocommit(True)
        try:
            cur = await conn.execute(_KEY, (str(repository_id),))
            row = await cur.fetchone()
            key = int(row["k"]) if row else 0
            while True:
                cur = await conn.execute("SELECT pg_try_advisory_lock(%s) AS ok", (key,))
                got = await cur.fetchone()
                if got and got["ok"]:
                    break
                await beat()
                await asyncio.sleep(poll_s)
            try:
                yield
            finally:
                await conn.execute("SELECT pg_advisory_unlock(%s)", (key,))
        finally:
            await conn.set_autocommit(False)
