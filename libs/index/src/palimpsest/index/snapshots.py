"""Reading snapshots: which snapshot a query runs against, and what a build produced."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from palimpsest.core.db import Conn


async def newest_ready(conn: Conn, repository_id: UUID) -> dict[str, Any] | None:
    cur = await conn.execute(
        "SELECT * FROM code_index_snapshots WHERE repository_id = %s AND state = 'ready'"
        " ORDER BY created_at DESC LIMIT 1",
        (repository_id,),
    )
    row = await cur.fetchone()
    return dict(row) if row else None


async def for_commit(conn: Conn, repository_id: UUID, commit: str) -> dict[str, Any] | None:
    """The ready snapshot of ``commit`` (a PR's base), else None."""
    cur = await conn.execute(
        "SELECT * FROM code_index_snapshots WHERE repository_id = %s AND commit_sha = %s"
        " AND state IN ('ready', 'superseded') ORDER BY created_at DESC LIMIT 1",
        (repository_id, commit),
    )
    row = await cur.fetchone()
    return dict(row) if row else None


async def by_request(conn: Conn, request_id: UUID) -> dict[str, Any] | None:
    cur = await conn.execute(
        "SELECT * FROM code_index_snapshots WHERE request_id = %s ORDER BY created_at DESC LIMIT 1",
        (request_id,),
    )
    row = await cur.fetchone()
    return dict(row) if row else None


async def list_snapshots(conn: Conn, repository_id: UUID) -> list[dict[str, Any]]:
    cur = await conn.execute(
        "SELECT snapshot_id, commit_sha, state, reason, files, chunks, symbols, bytes, parsed_blobs, skipped,"
        " duration_s, embedding_state, embedding_reason, embedding_model, embedding_dimension, embedded_chunks,"
        " embedding_pending, embedding_truncated, embedding_updated_at, created_at, ready_at FROM code_index_snapshots"
        " WHERE repository_id = %s ORDER BY created_at DESC",
        (repository_id,),
    )
    return [dict(r) for r in await cur.fetchall()]


async def delete_repository_index(conn: Conn, repository_id: UUID) -> None:
    """Bulk-delete a repository's index bottom-up (fast), before the repository row cascades."""
    for table in ("code_chunk_embeddings", "code_facts", "code_symbols", "code_chunks"):
        await conn.execute(f"DELETE FROM {table} WHERE repository_id = %s", (repository_id,))
    await conn.execute(
        "DELETE FROM code_index_files f USING code_index_snapshots s"
        " WHERE s.snapshot_id = f.snapshot_id AND s.repository_id = %s",
        (repository_id,),
    )
    await conn.execute("DELETE FROM code_index_snapshots WHERE repository_id = %s", (repository_id,))
    await conn.execute("DELETE FROM code_blobs WHERE repository_id = %s", (repository_id,))
