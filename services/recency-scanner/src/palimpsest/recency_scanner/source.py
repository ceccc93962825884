"""Where a scan reads history from, and with which credentials.

A repository is either *local* (a path or ``file://`` URL, read in place; only when the
deployment allows local sources — the embedded default does) or *remote* (cloned blob-less over
https, or http). Credentials come from the repository's installation and travel as a header in
git's environment (see :mod:`palimpsest.core.git`); they are never sent over plain http to a
host other than loopback.
"""

from __future__ import annotations

import ipaddress
import logging
from collections.abc import Awaitable, Callable
from urllib.parse import urlsplit
from uuid import UUID

from palimpsest.core.credentials import git_auth_for
from palimpsest.core.db import Conn
from palimpsest.core.git import GitAuth
from palimpsest.core.github_app import InstallationTokens
from palimpsest.core.repositories import Repository, get_repository
from palimpsest.core.secretbox import SecretBox
from palimpsest.recency_scanner.errors import ScanFailed

log = logging.getLogger(__name__)

__all__ = ["Repository", "check_transport", "installation_auth", "load_repository"]


async def load_repository(conn: Conn, repository_id: UUID) -> Repository | None:
    """The repository row (RLS: only the transaction's tenant's), or None when it is gone."""
    return await get_repository(conn, repository_id)


def installation_auth(
    box: SecretBox | None, tokens: InstallationTokens | None = None
) -> Callable[[Conn, Repository], Awaitable[GitAuth | None]]:
    """The credential source of the service: the repository's installation token, decrypted (or
    minted, for a GitHub App installation, by ``tokens``)."""

    async def auth(conn: Conn, repository: Repository) -> GitAuth | None:
        if repository.installation_id is None:
            return None
        return await git_auth_for(conn, repository.repository_id, box, tokens=tokens)

    return auth


async def no_auth(conn: Conn, repository: Repository) -> GitAuth | None:
    """Anonymous clones (public repositories, local sources, tests)."""
    del conn, repository
    return None


def check_transport(url: str, auth: GitAuth | None) -> None:
    """Refuse to send a credential in clear text: plain http with auth only to loopback."""
    parts = urlsplit(url)
    if auth is None or parts.scheme.lower() != "http":
        return
    host = (parts.hostname or "").lower()
    if host == "localhost":
        return
    try:
        if ipaddress.ip_address(host).is_loopback:
            return
    except ValueError:
        pass
    raise ScanFailed("insecure_transport", "refusing to send credentials over plain http")
