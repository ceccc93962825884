"""The embedder's reads and writes: pending chunks, vectors, and the snapshot's embedding state.

"Pending" means a chunk of a blob the snapshot references that has no vector of the model yet —
vectors are keyed by repository, blob and ordinal (content addressed), so a re-index pays only for
new blobs. Vectors are written as they arrive, batch by batch, each in its own short transaction,
so a run that stops half-way keeps what it paid for and the next run continues from there.
COPY is refused on tables under row-level security, so rows go through a session-private staging
table and an ``INSERT … SELECT`` that the tenant policy still checks; chunks that disappeared
meanwhile (a concurrent build's garbage collection) are skipped rather than failing the run.
"""

from __future__ import annotations

import struct
import sys
from array import array
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from psycopg import postgres
from psycopg.adapt import Dumper
from psycopg.pq import Format

from palimpsest.core.db import Conn, fetch_one
from palimpsest.core.stores import Owns, Store

STORE = Store(
    owner="embedder",
    writes=(Owns("code_chunk_embeddings"), Owns("code_index_snapshots", "its embedding state")),
    reads=("code_blobs", "code_chunks", "code_index_files"),
)


_FLOAT4 = postgres.types["float4"].oid
_FLOAT4_ARRAY = postgres.types["float4"].array_oid


_HEADER = struct.Struct(">iiIii")  # one dimension, no NULLs, element type, length, lower bound
# each element's length (4) as the wire has it, read as a native uint32
_ELEMENT_LENGTH = array("I", [int.from_bytes(struct.pack(">i", 4), sys.byteorder)])


def pack_float4_array(vector: Sequence[float]) -> bytes:
    """``vector`` as PostgreSQL's binary ``float4[]`` (array_recv): the header, then each element's
    length and value -- the bytes psycopg's list dumper makes element by element (it spent ~4 ms
    per 384-float vector doing so). The values become float4 in one C conversion (``array``, a copy
    where they are one already: the engine hands over its checked float4 vectors), and the lengths
    are interleaved by two slice assignments, so no Python runs per element (~3.5 us against
    ~32 us for one ``struct`` call over the interleaved values)."""
    values = array("f", vector)
    if sys.byteorder == "little":
        values.byteswap()
    words = array("I", bytes(8 * len(values)))
    words[0::2] = _ELEMENT_LENGTH * len(values)
    words[1::2] = array("I", values.tobytes())
    return _HEADER.pack(1, 0, _FLOAT4, len(values), 1) + words.tobytes()


class _PackedFloat4ArrayDumper(Dumper):
    """Sends a :func:`pack_float4_array` value as it is (used for the COPY's ``float4[]`` column)."""

    format = Format.BINARY
    oid = _FLOAT4_ARRAY

    def dump(self, obj: Any) -> bytes:
        return bytes(obj)


@dataclass(frozen=True, slots=True)
class PendingChunk:
    blob_sha: str
    ordinal: int
    kind: str
    name: str | None
    content: str


@dataclass(frozen=True, slots=True)
class Coverage:
    embedded: int
    pending: int


async def snapshot(conn: Conn, snapshot_id: UUID) -> dict[str, Any] | None:
    cur = await conn.execute(
        "SELECT snapshot_id, repository_id, state, embedding_state, embedding_model FROM code_index_snapshots"
        " WHERE snapshot_id = %s",
        (snapshot_id,),
    )
    row = await cur.fetchone()
    return dict(row) if row else None


_PENDING = (
    " FROM code_chunks c"
    " WHERE c.repository_id = %(repo)s"
    "   AND c.blob_sha IN (SELECT f.blob_sha FROM code_index_files f WHERE f.snapshot_id = %(snap)s)"
    "   AND NOT EXISTS (SELECT 1 FROM code_chunk_embeddings e WHERE e.repository_id = %(repo)s"
    "                   AND e.blob_sha = c.blob_sha AND e.ordinal = c.ordinal AND e.model = %(model)s)"
)


async def pending_count(conn: Conn, repository_id: UUID, snapshot_id: UUID, model: str) -> int:
    """How many of the snapshot's chunks have no vector of ``model``."""
    row = await fetch_one(
        conn, "SELECT count(*) AS n" + _PENDING, {"repo": repository_id, "snap": snapshot_id, "model": model}
    )
    return int(row["n"]) if row else 0


async def coverage(conn: Conn, repository_id: UUID, snapshot_id: UUID, model: str) -> Coverage:
    """How many of the snapshot's chunks have a vector of ``model``, and how many do not."""
    params = {"repo": repository_id, "snap": snapshot_id, "model": model}
    pending = await pending_count(conn, repository_id, snapshot_id, model)
    cur = await conn.execute(
        "SELECT count(*) AS n FROM code_chunks c WHERE c.repository_id = %(repo)s"
        " AND c.blob_sha IN (SELECT f.blob_sha FROM code_index_files f WHERE f.snapshot_id = %(snap)s)",
        params,
    )
    row = await cur.fetchone()
    total = int(row["n"]) if row else 0
    return Coverage(embedded=total - pending, pending=pending)


async def pending_page(
    conn: Conn,
    repository_id: UUID,
    snapshot_id: UUID,
    model: str,
    *,
    after: tuple[str, int] | None,
    limit: int,
) -> list[PendingChunk]:
    """The next ``limit`` pending chunks in (blob, ordinal) order, after the key ``after``."""
    params: dict[str, Any] = {"repo": repository_id, "snap": snapshot_id, "model": model, "limit": limit}
    keyset = ""
    if after is not None:
        keyset = " AND (c.blob_sha, c.ordinal) > (%(sha)s, %(ord)s)"
        params["sha"], params["ord"] = after
    cur = await conn.execute(
        "SELECT c.blob_sha, c.ordinal, c.kind, c.name, c.content"
        + _PENDING
        + keyset
        + " ORDER BY c.blob_sha, c.ordinal LIMIT %(limit)s",
        params,
    )
    return [
        PendingChunk(r["blob_sha"], r["ordinal"], r["kind"], r["name"], r["content"])
        for r in await cur.fetchall()
    ]


async def known_dimension(conn: Conn, repository_id: UUID, model: str) -> int | None:
    """The dimension vectors of ``model`` already have: the repository's stored vectors, else the
    tenant's last embedding run with the model (None when there is neither).

    The repository's vectors are one partition's (migration 0037); the runs' record spares a
    read of every partition of the tenant.
    """
    row = await fetch_one(
        conn,
        "SELECT coalesce("
        " (SELECT dimension FROM code_chunk_embeddings WHERE repository_id = %(repo)s AND model = %(model)s"
        "  LIMIT 1),"
        " (SELECT embedding_dimension FROM code_index_snapshots"
        "  WHERE embedding_model = %(model)s AND embedding_dimension IS NOT NULL"
        "  ORDER BY embedding_updated_at DESC LIMIT 1)) AS dimension",
        {"repo": repository_id, "model": model},
    )
    return int(row["dimension"]) if row and row["dimension"] is not None else None


async def open_partition(conn: Conn, repository_id: UUID, rows: int) -> bool:
    """Make the repository's vectors partition ready for ``rows`` new vectors (migration 0037):
    created once; its HNSW indexes dropped when rebuilding them after the load costs less than
    inserting into them. True when the partition is left without its indexes."""
    row = await fetch_one(
        conn, "SELECT palimpsest_embedding_bulk_load(%s, %s) AS dropped", (repository_id, rows)
    )
    return bool(row and row["dropped"])


async def index_partition(conn: Conn, repository_id: UUID, *, analyze: bool) -> int:
    """Build the HNSW indexes the repository's partition lacks (each dimension it holds), refresh
    its statistics when ``analyze`` or an index was built; how many indexes were built."""
    row = await fetch_one(
        conn, "SELECT palimpsest_index_embeddings(%s, %s) AS built", (repository_id, analyze)
    )
    return int(row["built"]) if row else 0


async def write_vectors(
    conn: Conn,
    tenant_id: UUID,
    repository_id: UUID,
    model: str,
    rows: Sequence[tuple[str, int, Sequence[float], bool]],
) -> int:
    """Store (blob, ordinal, vector, truncated) rows; returns how many were new."""
    if not rows:
        return 0
    await conn.execute("SELECT palimpsest_embedding_partition(%s)", (repository_id,))  # created once
    await conn.execute(
        "CREATE TEMP TABLE IF NOT EXISTS stage_embeddings"
        " (blob_sha text, ordinal integer, embedding real[], truncated boolean) ON COMMIT DROP"
    )
    async with conn.cursor() as cur:
        # binary COPY, each vector packed at once: psycopg's text dumper of float lists costs ~2 ms
        # per 384-float vector, and its binary list dumper ~4 ms (a Python call per element)
        cur.adapters.register_dumper(None, _PackedFloat4ArrayDumper)  # by oid: what set_types looks up
        async with cur.copy(
            "COPY stage_embeddings (blob_sha, ordinal, embedding, truncated) FROM STDIN (FORMAT BINARY)"
        ) as copy:
            copy.set_types(["text", "int4", _FLOAT4_ARRAY, "bool"])
            for blob_sha, ordinal, vector, truncated in rows:
                await copy.write_row((blob_sha, ordinal, pack_float4_array(vector), truncated))
        # lock the blobs as a foreign key's check would (migration 0013 replaced it): a blob that
        # garbage collection deletes concurrently takes its vectors with it, none are left behind
        await cur.execute(
            "SELECT 1 FROM code_blobs b WHERE b.repository_id = %(repo)s"
            " AND b.blob_sha IN (SELECT s.blob_sha FROM stage_embeddings s) FOR KEY SHARE OF b",
            {"repo": repository_id},
        )
        await cur.execute(
            "INSERT INTO code_chunk_embeddings"
            " (tenant_id, repository_id, blob_sha, ordinal, model, embedding, truncated)"
            " SELECT %(tenant)s, %(repo)s, s.blob_sha, s.ordinal, %(model)s, s.embedding, s.truncated"
            " FROM stage_embeddings s"
            " WHERE EXISTS (SELECT 1 FROM code_chunks c WHERE c.repository_id = %(repo)s"
            "               AND c.blob_sha = s.blob_sha AND c.ordinal = s.ordinal)"
            " ON CONFLICT DO NOTHING",
            {"tenant": tenant_id, "repo": repository_id, "model": model},
        )
        inserted = cur.rowcount
        await cur.execute("TRUNCATE stage_embeddings")
    return max(inserted, 0)


async def mark_started(conn: Conn, snapshot_id: UUID, model: str | None) -> None:
    await conn.execute(
        "UPDATE code_index_snapshots SET embedding_state = 'embedding', embedding_reason = NULL,"
        " embedding_model = %s, embedding_updated_at = now() WHERE snapshot_id = %s",
        (model, snapshot_id),
    )


@dataclass(frozen=True, slots=True)
class Outcome:
    """What a run ends with; stored on the snapshot and sent in ``snapshot.embedded``."""

    state: str  # ready | skipped | budget_exceeded | embedding_failed | unsupported_dimensions
    reason: str | None = None
    model: str | None = None
    dimension: int | None = None
    embedded: int = 0  # vectors written by this run
    covered: int = 0  # the snapshot's chunks that have a vector of the model
    pending: int = 0  # the snapshot's chunks that still do not
    truncated: int = 0
    tokens: int = 0


async def record_outcome(conn: Conn, snapshot_id: UUID, outcome: Outcome) -> None:
    await conn.execute(
        "UPDATE code_index_snapshots SET embedding_state = %s, embedding_reason = %s, embedding_model = %s,"
        " embedding_dimension = %s, embedded_chunks = %s, embedding_pending = %s, embedding_truncated = %s,"
        " embedding_updated_at = now() WHERE snapshot_id = %s",
        (
            outcome.state,
            outcome.reason,
            outcome.model,
            outcome.dimension,
            outcome.covered,
            outcome.pending,
            outcome.truncated,
            snapshot_id,
        ),
    )
