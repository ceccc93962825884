"""The operator's own tenant and repositories for local use (``palimpsest index PATH``).

The embedded default has one tenant, ``local``, created on first use (or, when a tenant of that name
is there already, that one: names are unique); its id is kept in ``$PALIMPSEST_HOME/local-tenant``. Repositories given as paths are registered in it with the
``local`` provider; ``--tenant`` selects another tenant for operators of a shared stack.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from uuid import UUID

from palimpsest.cli.tenants import TenantNameTaken, create_tenant
from palimpsest.core.db import Pool, tenant_tx
from palimpsest.core.errors import PalimpsestError
from palimpsest.core.ids import uuid7


class RepositoryNotFound(PalimpsestError):
    """No repository matches what the user named."""


async def local_tenant(pool: Pool, home: Path) -> UUID:
    marker = home / "local-tenant"
    if marker.exists():
        tenant = UUID(marker.read_text().strip())
        async with tenant_tx(pool, tenant) as conn:
            cur = await conn.execute("SELECT 1 FROM tenants WHERE tenant_id = %s", (tenant,))
            if await cur.fetchone() is not None:
                return tenant
    try:
        tenant = await create_tenant(pool, "local")
    except TenantNameTaken:  # made before from another home (or its marker was lost): the one there is
        from palimpsest.ingest.store.lookups import tenant_list

        tenant = next(t.tenant_id for t in await tenant_list(pool) if t.name.lower() == "local")
    home.mkdir(parents=True, exist_ok=True)
    marker.write_text(str(tenant))
    return tenant


def default_branch(path: Path) -> str:
    """The checked-out branch of a local repository (``main`` when detached or unborn)."""
    out = subprocess.run(
        ["git", "-C", str(path), "symbolic-ref", "--quiet", "--short", "HEAD"],
        capture_output=True,
        text=True,
        check=False,
        timeout=30,
    )
    return out.stdout.strip() or "main"


async def register_path(pool: Pool, tenant: UUID, path: Path, *, mode: str | None = None) -> UUID:
    """Register (or find) the local repository at ``path``; returns its id."""
    path = path.resolve()
    if not (path / ".git").exists() and not (path / "HEAD").exists():
        raise RepositoryNotFound(f"{path} is not a git repository")
    branch = default_branch(path)
    async with tenant_tx(pool, tenant) as conn:
        cur = await conn.execute("SELECT repository_id FROM repositories WHERE clone_url = %s", (str(path),))
        row = await cur.fetchone()
        if row is not None:
            await conn.execute(
                "UPDATE repositories SET default_branch = %s, index_mode = coalesce(%s, index_mode),"
                " updated_at = now() WHERE repository_id = %s",
                (branch, mode, row["repository_id"]),
            )
            return UUID(str(row["repository_id"]))
        repository_id = uuid7()
        await conn.execute(
            "INSERT INTO repositories (tenant_id, repository_id, provider, full_name, clone_url, default_branch,"
            " index_mode) VALUES (%s, %s, 'local', %s, %s, %s, %s)",
            (tenant, repository_id, path.name, str(path), branch, mode or "lexical"),
        )
        return repository_id


async def find_repository(pool: Pool, tenant: UUID, ref: str) -> UUID:
    """A repository by id, full name, clone URL or local path."""
    candidates = [ref]
    as_path = Path(ref).expanduser()
    if as_path.exists():
        candidates.append(str(as_path.resolve()))
    async with tenant_tx(pool, tenant) as conn:
        cur = await conn.execute(
            "SELECT repository_id FROM repositories WHERE repository_id::text = %s OR full_name = ANY(%s)"
            " OR clone_url = ANY(%s) ORDER BY created_at LIMIT 2",
            (ref, candidates, candidates),
        )
        rows = await cur.fetchall()
    if not rows:
        raise RepositoryNotFound(f"no repository {ref!r} (index it first: palimpsest index PATH)")
    if len(rows) > 1:
        raise RepositoryNotFound(f"{ref!r} names more than one repository; use its id")
    return UUID(str(rows[0]["repository_id"]))


__all__ = [
    "RepositoryNotFound",
    "default_branch",
    "find_repository",
    "local_tenant",
    "register_path",
    "uuid7",
]
