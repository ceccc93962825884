"""``--tenant`` and ``--repo``: one definition, one help text, one meaning on every command.

A tenant is named by its id or its name; a repository by its id, full name (``owner/name``),
clone URL or local path. Locally they are looked up in the database (:func:`local_tenant_id`,
:func:`palimpsest.cli.local.find_repository`); remotely through the ingest API
(:meth:`palimpsest.cli.api.Api.tenant`, :meth:`~palimpsest.cli.api.Api.repository`). A name that
matches nothing ends the command with one line.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar
from uuid import UUID

import click

from palimpsest.cli.output import fail
from palimpsest.core.errors import PalimpsestError

if TYPE_CHECKING:  # the database driver is imported only by commands that use it
    from palimpsest.core.db import Pool

__all__ = [
    "REPO_HELP",
    "TENANT_HELP",
    "TenantNotFound",
    "as_uuid",
    "check_path_target",
    "local_tenant_id",
    "pick_tenant",
    "repo_option",
    "tenant_option",
]

TENANT_HELP = (
    "The tenant: its id or its name (default: $PALIMPSEST_TENANT; on the local stack, its own tenant)."
)
REPO_HELP = "The repository: its id, full name (owner/name), clone URL or local path."

F = TypeVar("F", bound=Callable[..., Any])


class TenantNotFound(PalimpsestError):
    """--tenant names no tenant (by id or by name), or names several."""


def tenant_option(fn: F) -> F:
    return click.option(
        "--tenant", "tenant", envvar="PALIMPSEST_TENANT", default=None, metavar="TENANT", help=TENANT_HELP
    )(fn)


def repo_option(*, required: bool = True, help_suffix: str = "") -> Callable[[F], F]:
    def decorate(fn: F) -> F:
        return click.option(
            "--repo", "repo", required=required, default=None, metavar="REPO", help=REPO_HELP + help_suffix
        )(fn)

    return decorate


def check_path_target(target: str, *, on_a_branch: bool = False) -> None:
    """Before any stack starts: a target written as a path (``/…``, ``.…``, ``~…``, ``file://…``)
    must be an existing git repository, and with ``on_a_branch`` (indexing, which follows the
    repository's branch) one whose HEAD is on a branch. Other targets (ids, names, URLs) are
    looked up later."""
    from urllib.parse import unquote, urlsplit

    if target.startswith("file://"):
        path = Path(unquote(urlsplit(target).path))
    elif target.startswith(("/", ".", "~")):
        path = Path(target).expanduser()
    else:
        return
    if not path.exists():
        fail(f"no such path: {target}")
    if not path.is_dir() or not ((path / ".git").exists() or (path / "HEAD").exists()):
        fail(f"{target} is not a git repository")
    if on_a_branch:
        from palimpsest.cli.local import DetachedHead, branch_to_index

        try:
            branch_to_index(path, shown=target)
        except DetachedHead as exc:
            fail(str(exc))


def as_uuid(value: str) -> UUID | None:
    try:
        return UUID(value)
    except ValueError:
        return None


def pick_tenant(given: str, tenants: list[tuple[UUID, str]]) -> UUID:
    """The one tenant of ``(id, name)`` pairs that ``given`` names, by id or else by name (letter
    case aside, as names are unique: migration 0050)."""
    wanted = as_uuid(given)
    key = given.lower()
    found = [tid for tid, name in tenants if (tid == wanted if wanted is not None else name.lower() == key)]
    if not found:
        raise TenantNotFound(f"no tenant {given!r}: --tenant takes a tenant id or a tenant's name")
    if len(found) > 1:
        raise TenantNotFound(f"several tenants are named {given!r}; give --tenant the id")
    return found[0]


async def local_tenant_id(pool: Pool, home: Path, given: str | None) -> UUID:
    """The tenant ``--tenant`` names on the local stack (its own ``local`` tenant when none)."""
    from palimpsest.cli.local import local_tenant
    from palimpsest.ingest.store.lookups import tenant_list

    if not given:
        return await local_tenant(pool, home)
    return pick_tenant(given, [(t.tenant_id, t.name) for t in await tenant_list(pool)])
