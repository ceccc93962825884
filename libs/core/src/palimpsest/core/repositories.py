"""The ``repositories`` row, as every service reads it: one frozen type and its typed readers.

The ingest service owns the table (it registers, changes and deletes repositories:
``palimpsest.ingest.store.repositories``, which re-exports these types); the chunker stamps
``index_updated_at`` (``palimpsest.chunker.store``). Every other reader of a repository's row
calls the functions here, in the caller's tenant transaction (row-level security scopes them);
cross-repository context reads the repositories a link names, and the admin links
(``repository_links``, ingest's ``palimpsest.ingest.store.links``) that apply, here too.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Final
from uuid import UUID

from palimpsest.core.db import Conn, JsonRow, columns, fetch_all_as, fetch_one_as
from palimpsest.core.stores import Store

__all__ = [
    "AdminLink",
    "InstallationOf",
    "LinkTarget",
    "NewRepository",
    "Repository",
    "RepositoryScanned",
    "Suspension",
    "admin_links",
    "get_repository",
    "installation_of",
    "link_targets",
    "named",
    "suspension_of",
    "with_last_scan",
]

STORE = Store(
    owner="ingest",
    reads=("repositories", "installations", "tenants", "repository_links", "recency_scans"),
)


@dataclass(frozen=True, slots=True)
class NewRepository:
    repository_id: UUID
    provider: str
    external_id: str | None
    full_name: str
    clone_url: str
    default_branch: str
    visibility: str
    index_mode: str
    installation_id: UUID | None


@dataclass(frozen=True, slots=True)
class Repository(NewRepository, JsonRow):
    """A registered repository, as the API shows it."""

    created_at: datetime
    updated_at: datetime


_GET: Final = f"SELECT {columns(Repository)} FROM repositories WHERE repository_id = %s"


async def get_repository(conn: Conn, repository_id: UUID) -> Repository | None:
    """The repository (of the transaction's tenant), or None when it is not there (or gone)."""
    return await fetch_one_as(conn, Repository, _GET, (repository_id,))


_NAMED: Final = (
    f"SELECT {columns(Repository)} FROM repositories WHERE repository_id::text = %(ref)s"
    " OR (CASE WHEN %(fold)s THEN lower(full_name) = ANY(%(lower)s) ELSE full_name = ANY(%(names)s) END)"
    " OR clone_url = ANY(%(names)s) ORDER BY created_at LIMIT %(limit)s"
)


async def named(
    conn: Conn, ref: str, *, also: Sequence[str] = (), fold_case: bool = False, limit: int = 2
) -> list[Repository]:
    """The repositories a user named: whose id is ``ref``, or whose full name (letter case aside
    when ``fold_case``) or clone URL is ``ref`` or one of ``also`` (a local path, resolved);
    oldest first, at most ``limit`` — a caller that wants one tells none from several."""
    names = [ref, *also]
    params = {
        "ref": ref,
        "fold": fold_case,
        "lower": [n.lower() for n in names],
        "names": names,
        "limit": limit,
    }
    return await fetch_all_as(conn, Repository, _NAMED, params)


@dataclass(frozen=True, slots=True)
class InstallationOf:
    """The repository's installation as a clone or a post needs it: the sealed credential and
    what minting a token needs (host, the provider's installation id)."""

    provider: str
    host: str
    external_id: str
    credentials: bytes | None
    credentials_kind: str


_INSTALLATION: Final = (
    "SELECT r.provider, i.host, i.external_id, i.credentials, i.credentials_kind FROM repositories r"
    " JOIN installations i ON i.tenant_id = r.tenant_id AND i.installation_id = r.installation_id"
    " WHERE r.repository_id = %s"
)


async def installation_of(conn: Conn, repository_id: UUID) -> InstallationOf | None:
    """The repository's installation, or None when it has none (or is gone)."""
    return await fetch_one_as(conn, InstallationOf, _INSTALLATION, (repository_id,))


@dataclass(frozen=True, slots=True)
class Suspension:
    """Whether the repository's tenant is suspended or being deleted, and its installation suspended."""

    tenant: bool
    deleting: bool
    installation: bool


_SUSPENSION: Final = (
    "SELECT t.suspended_at IS NOT NULL AS tenant, t.deleting_at IS NOT NULL AS deleting,"
    " coalesce(i.suspended_at IS NOT NULL, false) AS installation"
    " FROM repositories r JOIN tenants t ON t.tenant_id = r.tenant_id"
    " LEFT JOIN installations i ON i.tenant_id = r.tenant_id AND i.installation_id = r.installation_id"
    " WHERE r.repository_id = %s"
)


async def suspension_of(conn: Conn, repository_id: UUID) -> Suspension | None:
    """The repository's suspension state, or None when it is not there."""
    return await fetch_one_as(conn, Suspension, _SUSPENSION, (repository_id,))


@dataclass(frozen=True, slots=True)
class LinkTarget:
    """A repository a link names (or the linking one), with what decides whether it may be read."""

    repository_id: UUID
    full_name: str
    visibility: str
    key: str  # the lower-cased full name
    installation_id: UUID | None
    suspended: bool  # its installation is suspended


_LINK_TARGETS: Final = (
    "SELECT r.repository_id, r.full_name, r.visibility, lower(r.full_name) AS key, r.installation_id,"
    " i.suspended_at IS NOT NULL AS suspended FROM repositories r LEFT JOIN installations i"
    " ON i.tenant_id = r.tenant_id AND i.installation_id = r.installation_id"
    " WHERE r.repository_id = %s OR lower(r.full_name) = ANY(%s::text[]) ORDER BY r.created_at"
)


async def link_targets(conn: Conn, repository_id: UUID, lower_names: Sequence[str]) -> list[LinkTarget]:
    """The repository and those whose lower-cased full name is one of ``lower_names``, oldest first."""
    return await fetch_all_as(conn, LinkTarget, _LINK_TARGETS, (repository_id, list(lower_names)))


@dataclass(frozen=True, slots=True)
class AdminLink:
    """An admin link (``repository_links``, written by the ingest service's admin API) as a
    reviewer applies it: its role and the target's full name."""

    role: str  # linked | pattern
    full_name: str


_ADMIN_LINKS: Final = (
    "SELECT l.role, r.full_name FROM repository_links l JOIN repositories r"
    " ON r.tenant_id = l.tenant_id AND r.repository_id = l.target_id"
    " WHERE (l.source_id = %s OR l.source_id IS NULL) AND l.target_id <> %s"
    " ORDER BY l.source_id IS NULL, l.created_at, l.link_id"
)


async def admin_links(conn: Conn, repository_id: UUID) -> list[AdminLink]:
    """The admin links that apply to the repository: its own, then the organisation-wide pattern
    repositories (other than itself)."""
    return await fetch_all_as(conn, AdminLink, _ADMIN_LINKS, (repository_id, repository_id))


@dataclass(frozen=True, slots=True)
class RepositoryScanned:
    """A repository as the MCP list shows it, with when its last recency scan ran (None: never)."""

    repository_id: UUID
    full_name: str
    provider: str
    default_branch: str
    index_mode: str
    scanned_at: datetime | None


async def with_last_scan(conn: Conn) -> list[RepositoryScanned]:
    """Every repository of the transaction's tenant, by full name, with its last recency scan."""
    return await fetch_all_as(
        conn,
        RepositoryScanned,
        "SELECT r.repository_id, r.full_name, r.provider, r.default_branch, r.index_mode,"
        " s.scanned_at FROM repositories r LEFT JOIN recency_scans s USING (tenant_id, repository_id)"
        " ORDER BY r.full_name, r.repository_id",
    )
