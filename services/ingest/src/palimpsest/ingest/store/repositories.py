"""Repositories of a tenant: registration, lookup by provider id or name, updates and deletion.

The row type and the reader every service shares are :mod:`palimpsest.core.repositories`'s
(re-exported here); the writes are the ingest service's, here.

Deleting a repository cascades (through foreign keys declared by later migrations) to everything
indexed for it.
"""

from __future__ import annotations

from typing import Any, Final
from uuid import UUID

import psycopg
from psycopg import sql

from palimpsest.core.db import Conn, columns, fetch_all, fetch_all_as, fetch_one, fetch_one_as
from palimpsest.core.repositories import NewRepository, Repository, get_repository
from palimpsest.core.stores import Owns, Store
from palimpsest.ingest.errors import Conflict
from palimpsest.ingest.store.rows import delete_row, update_row

__all__ = [
    "COLUMNS",
    "INDEX_TABLES",
    "TAKEN",
    "NewRepository",
    "Repository",
    "delete_index_data",
    "delete_installed",
    "delete_repository",
    "drop_embedding_partitions",
    "find_by_clone_url",
    "find_repository",
    "get_repository",
    "insert_repository",
    "list_repositories",
    "update_repository",
]

STORE = Store(owner="ingest", writes=(Owns("repositories"),))


_UPDATABLE: Final = frozenset(
    {"index_mode", "default_branch", "visibility", "external_id", "installation_id", "full_name"}
)


COLUMNS: Final = sql.SQL(columns(Repository))
# The webhook hot path: a plain string, rendered once (composing SQL costs on every call).
_FIND: Final = (
    f"SELECT {columns(Repository)} FROM repositories WHERE provider = %(p)s"
    " AND (external_id = %(e)s OR (external_id IS NULL AND lower(full_name) = lower(%(n)s)))"
    " ORDER BY external_id IS NULL LIMIT 1"
)


TAKEN: Final = "a repository with this clone URL or provider id is already registered"


def _taken(exc: psycopg.errors.UniqueViolation) -> Conflict:
    del exc
    return Conflict(TAKEN)


async def insert_repository(conn: Conn, tenant_id: UUID, new: NewRepository) -> Repository:
    query = sql.SQL(
        "INSERT INTO repositories (tenant_id, repository_id, provider, external_id, full_name, clone_url,"
        " default_branch, visibility, index_mode, installation_id)"
        " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s) RETURNING {}"
    ).format(COLUMNS)
    params = (
        tenant_id,
        new.repository_id,
        new.provider,
        new.external_id,
        new.full_name,
        new.clone_url,
        new.default_branch,
        new.visibility,
        new.index_mode,
        new.installation_id,
    )
    try:
        row = await fetch_one_as(conn, Repository, query, params)
    except psycopg.errors.UniqueViolation as exc:
        raise _taken(exc) from exc
    assert row is not None
    return row


async def list_repositories(
    conn: Conn, *, provider: str | None = None, installation_id: UUID | None = None
) -> list[Repository]:
    query = sql.SQL(
        "SELECT {} FROM repositories WHERE (%(p)s::text IS NULL OR provider = %(p)s)"
        " AND (%(i)s::uuid IS NULL OR installation_id = %(i)s) ORDER BY created_at, repository_id"
    ).format(COLUMNS)
    return await fetch_all_as(conn, Repository, query, {"p": provider, "i": installation_id})


async def update_repository(conn: Conn, repository_id: UUID, changes: dict[str, Any]) -> Repository | None:
    return await update_row(
        conn,
        Repository,
        "repositories",
        "repository_id",
        repository_id,
        changes,
        columns=COLUMNS,
        updatable=_UPDATABLE,
        taken=_taken,
    )


async def delete_repository(conn: Conn, repository_id: UUID) -> bool:
    return await delete_row(conn, "repositories", "repository_id", repository_id)


async def find_repository(conn: Conn, provider: str, external_id: str, full_name: str) -> Repository | None:
    """The repository a delivery is about: by the provider's id, else by name if it has no id yet."""
    return await fetch_one_as(conn, Repository, _FIND, {"p": provider, "e": external_id, "n": full_name})


async def find_by_clone_url(conn: Conn, clone_url: str) -> Repository | None:
    """The repository registered with this clone URL (a local one: its path)."""
    query = sql.SQL("SELECT {} FROM repositories WHERE clone_url = %s").format(COLUMNS)
    return await fetch_one_as(conn, Repository, query, (clone_url,))


async def delete_installed(
    conn: Conn, installation_id: UUID, provider: str, external_ids: list[str]
) -> list[tuple[UUID, str]]:
    """Delete the installation's repositories with these provider ids; returns their ids and names."""
    if not external_ids:
        return []
    rows = await fetch_all(
        conn,
        "DELETE FROM repositories WHERE installation_id = %s AND provider = %s AND external_id = ANY(%s)"
        " RETURNING repository_id, full_name",
        (installation_id, provider, external_ids),
    )
    return [(r["repository_id"], str(r["full_name"])) for r in rows]


# Index data of a repository (ADR-0017 D7): a derived cache, deleted when the mode is switched off.
# Chunks, symbols, facts, embeddings and snapshot files go with their blobs and snapshots (the
# statement triggers of migration 0013). Analyses and reviews are results, not index data: kept.
INDEX_TABLES = ("code_index_snapshots", "code_blobs", "file_recency", "cochange", "recency_scans")


async def delete_index_data(conn: Conn, repository_id: UUID) -> dict[str, int]:
    """Delete the repository's index data; rows deleted per table."""
    deleted: dict[str, int] = {}
    for table in INDEX_TABLES:
        cur = await conn.execute(
            sql.SQL("DELETE FROM {} WHERE repository_id = %s").format(sql.Identifier(table)), (repository_id,)
        )
        deleted[table] = cur.rowcount
    await conn.execute(
        "UPDATE repositories SET index_updated_at = NULL WHERE repository_id = %s", (repository_id,)
    )
    return deleted


async def drop_embedding_partitions(conn: Conn) -> int:
    """Drop the embeddings partitions of deleted repositories, any tenant's (migration 0037): their
    rows went with the repositories' blobs; the empty tables stay until this runs. How many."""
    row = await fetch_one(conn, "SELECT palimpsest_drop_embedding_partitions() AS dropped")
    return int(row["dropped"]) if row else 0
