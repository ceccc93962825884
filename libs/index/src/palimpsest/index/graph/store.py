"""The stored graphs' statements: ``code_graphs`` (migration 0036), one row per snapshot and resolver.

A derived cache (:data:`palimpsest.core.stores.CACHE`): a row's payload is a pure function of its
snapshot's facts and of the resolver's code (:mod:`.persisted` encodes and decodes it), so no one
service owns the table. Whichever process first needs a snapshot's graph fills the miss with an
idempotent insert — the reviewer (warming after a build, or reviewing), the analyzer, ingest's API,
web view and MCP tools, the CLI, the benchmarks — and every process reads it. Its rows go with
their snapshot (a foreign key), so pruning, repository and tenant deletion take them along.
"""

from __future__ import annotations

from uuid import UUID

from psycopg.rows import tuple_row

from palimpsest.core.db import Conn, try_xact_lock
from palimpsest.core.stores import CACHE, Owns, Store

__all__ = ["STORE", "fill", "is_stored", "stored_payload"]

STORE = Store(owner=CACHE, writes=(Owns("code_graphs", "a snapshot's resolved graph"),))


async def stored_payload(conn: Conn, snapshot_id: UUID, resolver: str) -> bytes | None:
    """The payload stored for ``snapshot_id`` by ``resolver`` in the caller's tenant, or None."""
    async with conn.cursor(row_factory=tuple_row, binary=True) as cur:
        await cur.execute(
            "SELECT payload FROM code_graphs WHERE snapshot_id = %s AND resolver = %s",
            (snapshot_id, resolver),
        )
        row = await cur.fetchone()
    return None if row is None else bytes(row[0])


async def is_stored(conn: Conn, snapshot_id: UUID, resolver: str) -> bool:
    """Whether a payload of ``resolver`` is stored for ``snapshot_id`` (without reading it)."""
    cur = await conn.execute(
        "SELECT 1 FROM code_graphs WHERE snapshot_id = %s AND resolver = %s", (snapshot_id, resolver)
    )
    return await cur.fetchone() is not None


async def fill(conn: Conn, tenant_id: UUID, snapshot_id: UUID, resolver: str, payload: bytes) -> bool:
    """Store ``payload`` as the graph of ``snapshot_id`` by ``resolver``, in a savepoint of the
    caller's transaction; True when this call stored it.

    Idempotent (a row already there is replaced by the same payload), and it never waits: when
    another transaction is storing the same graph right now, this one leaves it to that one
    (False). A failure (the snapshot deleted meanwhile) rolls the savepoint back and is raised.
    """
    async with conn.transaction():
        if not await try_xact_lock(conn, f"code_graphs/{snapshot_id}/{resolver}"):
            return False
        cur = await conn.execute(
            "INSERT INTO code_graphs (tenant_id, snapshot_id, resolver, payload) VALUES (%s, %s, %s, %s)"
            " ON CONFLICT (tenant_id, snapshot_id, resolver) DO UPDATE SET payload = EXCLUDED.payload",
            (tenant_id, snapshot_id, resolver, payload),
        )
        return cur.rowcount == 1
