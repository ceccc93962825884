"""Reading snapshots: which snapshot a query runs against, and what a build produced."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from palimpsest.core.db import Conn


async def newest_ready(conn: Conn, repository_id: UUID) -> dict[str, Any] | None:
    cur = await conn.execute(
        "SELECT * FROM code_index_snapshots WHERE repository_id = %s AND state = 'ready' AND NOT pinned"
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


_LISTED = (
    "SELECT snapshot_id, repository_id, commit_sha, request_id, state, reason, files, chunks, symbols, bytes,"
    " parsed_blobs, skipped, duration_s, embedding_state, embedding_reason, embedding_model, embedding_dimension,"
    " embedded_chunks, embedding_pending, embedding_truncated, embedding_updated_at, created_at, ready_at"
    " FROM code_index_snapshots"
)


async def list_snapshots(
    conn: Conn, repository_id: UUID, *, limit: int | None = None, before: UUID | None = None
) -> list[dict[str, Any]]:
    """Newest first (ids are UUIDv7); ``limit`` and ``before`` (the last id of a page) page through."""
    cur = await conn.execute(
        _LISTED + " WHERE repository_id = %s AND (%s::uuid IS NULL OR snapshot_id < %s)"
        " ORDER BY created_at DESC, snapshot_id DESC LIMIT %s",
        (repository_id, before, before, limit),
    )
    return [dict(r) for r in await cur.fetchall()]


async def get_snapshot(conn: Conn, snapshot_id: UUID) -> dict[str, Any] | None:
    """One snapshot with the columns :func:`list_snapshots` shows."""
    cur = await conn.execute(_LISTED + " WHERE snapshot_id = %s", (snapshot_id,))
    row = await cur.fetchone()
    return dict(row) if row else None


async def delete_repository_index(conn: Conn, repository_id: UUID) -> None:
    """Delete a repository's index in a few set-based statements, before the repository row goes.

    Statement-level triggers (migration 0013) do the rest: deleting the snapshots deletes their
    file rows, deleting the blobs deletes their chunks, symbols, facts and embeddings (by
    repository, since no blob of it is left).
    """
    await conn.execute("DELETE FROM code_index_snapshots WHERE repository_id = %s", (repository_id,))
    await conn.execute("DELETE FROM code_blobs WHERE repository_id = %s", (repository_id,))
