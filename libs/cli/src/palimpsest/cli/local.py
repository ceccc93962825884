"""The operator's own tenant and repositories for local use (``palimpsest index PATH``).

The embedded default has one tenant, ``local``, created on first use (or, when a tenant of that name
is there already, that one: names are unique); its id is kept in ``$PALIMPSEST_HOME/local-tenant``. Repositories given as paths are registered in it with the
``local`` provider; ``--tenant`` selects another tenant for operators of a shared stack. The
tables are the ingest service's: read and written through its store (``palimpsest.ingest.store``).
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from uuid import UUID

from palimpsest.cli.tenants import TenantNameTaken, create_tenant
from palimpsest.core.db import Pool, tenant_tx
from palimpsest.core.errors import PalimpsestError
from palimpsest.core.ids import uuid7
from palimpsest.core.repositories import named
from palimpsest.ingest.store import repositories, tenants


class RepositoryNotFound(PalimpsestError):
    """No repository matches what the user named."""


async def local_tenant(pool: Pool, home: Path) -> UUID:
    marker = home / "local-tenant"
    if marker.exists():
        tenant = UUID(marker.read_text().strip())
        async with tenant_tx(pool, tenant) as conn:
            if await tenants.get_tenant(conn, tenant) is not None:
                return tenant
    try:
        tenant = await create_tenant(pool, "local")
    except TenantNameTaken:  # made before from another home (or its marker was lost): the one there is
        from palimpsest.ingest.store.lookups import tenant_list

        tenant = next(t.tenant_id for t in await tenant_list(pool) if t.name.lower() == "local")
    home.mkdir(parents=True, exist_ok=True)
    marker.write_text(str(tenant))
    return tenant


def checked_out_branch(path: Path) -> str | None:
    """The checked-out branch of a local repository (an unborn one's too); None when HEAD is
    detached."""
    out = subprocess.run(
        ["git", "-C", str(path), "symbolic-ref", "--quiet", "--short", "HEAD"],
        capture_output=True,
        text=True,
        check=False,
        timeout=30,
    )
    return out.stdout.strip() or None


class DetachedHead(PalimpsestError):
    """Indexing asked of a local repository whose HEAD is on no branch."""


def branch_to_index(path: Path, shown: str | None = None) -> str:
    """The branch that indexing ``path`` follows: its checked-out one. A detached HEAD is refused
    (``shown``: the path as the user wrote it): guessing ``main`` built another commit than the
    one checked out, or failed later with ``source_ref_not_found`` where there is no main."""
    branch = checked_out_branch(path)
    if branch is None:
        raise DetachedHead(
            f"{shown or path}: HEAD is detached (on no branch), and indexing follows a branch:"
            " check one out (git switch -c NAME)"
        )
    return branch


async def register_path(pool: Pool, tenant: UUID, path: Path, *, mode: str | None = None) -> UUID:
    """Register (or find) the local repository at ``path``; returns its id."""
    path = path.resolve()
    if not (path / ".git").exists() and not (path / "HEAD").exists():
        raise RepositoryNotFound(f"{path} is not a git repository")
    branch = checked_out_branch(path)  # detached (a review of a CI checkout): keep what was known
    async with tenant_tx(pool, tenant) as conn:
        known = await repositories.find_by_clone_url(conn, str(path))
        if known is not None:
            changes: dict[str, str] = {"default_branch": branch or known.default_branch or "main"}
            if mode is not None:
                changes["index_mode"] = mode
            await repositories.update_repository(conn, known.repository_id, changes)
            return known.repository_id
        new = repositories.NewRepository(
            repository_id=uuid7(),
            provider="local",
            external_id=None,
            full_name=path.name,
            clone_url=str(path),
            default_branch=branch or "main",
            visibility="private",
            index_mode=mode or "lexical",
            installation_id=None,
        )
        return (await repositories.insert_repository(conn, tenant, new)).repository_id


async def find_repository(pool: Pool, tenant: UUID, ref: str) -> UUID:
    """A repository by id, full name, clone URL or local path."""
    candidates = [ref]
    as_path = Path(ref).expanduser()
    if as_path.exists():
        candidates.append(str(as_path.resolve()))
    async with tenant_tx(pool, tenant) as conn:
        found = await named(conn, ref, also=candidates[1:])
    if not found:
        raise RepositoryNotFound(f"no repository {ref!r} (index it first: palimpsest index PATH)")
    if len(found) > 1:
        raise RepositoryNotFound(f"{ref!r} names more than one repository; use its id")
    return found[0].repository_id


__all__ = [
    "DetachedHead",
    "RepositoryNotFound",
    "branch_to_index",
    "checked_out_branch",
    "find_repository",
    "local_tenant",
    "register_path",
    "uuid7",
]
