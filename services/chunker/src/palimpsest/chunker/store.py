"""The chunker's tables: a snapshot of a repository's default branch and what it is built from.

The declaration below is their home, and the functions below the chunker's statements over them:
a snapshot's life (started, progress, ready, failed, superseded, pruned, deleted). The build's
statements are still in ``build.py`` (listed as not yet moved by
``tests/unit/core/test_sql_placement.py``). The chunker also stamps
``repositories.index_updated_at`` in the build's own transaction (a build and its stamp commit
together, and a service may not import the ingest service's store); ingest clears the stamp when a
repository's index data is deleted. Readers read these tables through ``palimpsest.index.snapshots``.
"""

from __future__ import annotations

from dataclasses import dataclass
from uuid import UUID

from palimpsest.core.db import Conn, fetch_one_as
from palimpsest.core.stores import Owns, Store

STORE = Store(
    owner="chunker",
    writes=(
        Owns("code_index_snapshots"),
        Owns("code_index_files"),
        Owns("code_blobs"),
        Owns("code_chunks"),
        Owns("code_symbols"),
        Owns("code_facts"),
        Owns("repositories", "its `index_updated_at`"),
    ),
)


@dataclass(frozen=True, slots=True)
class _SnapshotId:
    snapshot_id: UUID


async def ready_for(conn: Conn, repository_id: UUID, commit: str, *, pinned: bool) -> UUID | None:
    """The newest kept snapshot of ``commit`` that makes a build unnecessary: for the branch, its
    ready snapshot (a pinned one is not the branch's); for a review's base (``pinned``), any kept one."""
    row = await fetch_one_as(
        conn,
        _SnapshotId,
        "SELECT snapshot_id FROM code_index_snapshots WHERE repository_id = %s AND commit_sha = %s"
        " AND (state = 'ready' AND NOT pinned OR %s AND state IN ('ready', 'superseded'))"
        " ORDER BY created_at DESC LIMIT 1",
        (repository_id, commit, pinned),
    )
    return row.snapshot_id if row is not None else None


async def start_snapshot(
    conn: Conn,
    tenant_id: UUID,
    repository_id: UUID,
    snapshot_id: UUID,
    commit: str,
    request_id: UUID | None,
    *,
    pinned: bool,
) -> None:
    """A ``building`` row for ``commit``; the repository's builds left ``building`` (interrupted)
    become failed."""
    await conn.execute(
        "UPDATE code_index_snapshots SET state = 'failed', reason = 'interrupted'"
        " WHERE repository_id = %s AND state = 'building'",
        (repository_id,),
    )
    await conn.execute(
        "INSERT INTO code_index_snapshots (tenant_id, repository_id, snapshot_id, commit_sha, request_id, pinned)"
        " VALUES (%s, %s, %s, %s, %s, %s)",
        (tenant_id, repository_id, snapshot_id, commit, request_id, pinned),
    )


async def record_progress(conn: Conn, snapshot_id: UUID, parsed_blobs: int) -> None:
    await conn.execute(
        "UPDATE code_index_snapshots SET parsed_blobs = %s WHERE snapshot_id = %s",
        (parsed_blobs, snapshot_id),
    )


async def mark_failed(conn: Conn, snapshot_id: UUID, reason: str, duration_s: float) -> None:
    await conn.execute(
        "UPDATE code_index_snapshots SET state = 'failed', reason = %s, duration_s = %s WHERE snapshot_id = %s",
        (reason, duration_s, snapshot_id),
    )


async def delete_snapshot(conn: Conn, snapshot_id: UUID) -> None:
    """Delete one snapshot (its file rows go by trigger; its blobs stay until garbage collection)."""
    await conn.execute("DELETE FROM code_index_snapshots WHERE snapshot_id = %s", (snapshot_id,))


async def delete_snapshots(conn: Conn, repository_id: UUID) -> None:
    """Delete every snapshot of the repository (its index mode is off)."""
    await conn.execute("DELETE FROM code_index_snapshots WHERE repository_id = %s", (repository_id,))
