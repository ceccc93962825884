"""Git credentials of a repository, decrypted from its installation for the services that clone.

Ingest stores an installation's access token sealed with the deployment's Fernet key; the chunker,
the recency scanner and the reviewer open it here, just before a clone, and hand git only a
header (see :mod:`palimpsest.core.git`). The plaintext never leaves this process's memory. A
GitHub App installation (``credentials_kind = 'app'``: app id and private key) gets an
installation token minted and cached by :mod:`palimpsest.core.github_app`; a mint GitHub refuses
raises :class:`~palimpsest.core.git_errors.GitError` (``auth``), as a refused clone would.
"""

from __future__ import annotations

import logging
from typing import NamedTuple
from uuid import UUID

from palimpsest.core.db import Conn
from palimpsest.core.git import GitAuth
from palimpsest.core.github_app import AppCredentials, InstallationTokens
from palimpsest.core.repositories import installation_of
from palimpsest.core.secretbox import SecretBox, load_box
from palimpsest.core.settings import BaseServiceSettings

log = logging.getLogger(__name__)


def box_for(settings: BaseServiceSettings, *, embedded: bool) -> SecretBox | None:
    """The deployment's box; None when no key is configured outside embedded mode."""
    key = settings.encryption_key.get_secret_value() if settings.encryption_key else None
    if key is None and not embedded:
        return None
    return load_box(key, home=settings.home, generate=embedded)


def auth_for(provider: str, token: str) -> GitAuth:
    """The header each provider's git endpoint accepts for an access token."""
    if provider == "github":
        return GitAuth.github_app(token)  # Basic x-access-token:<token>: PATs and installation tokens
    if provider == "gitlab":
        return GitAuth.gitlab(token)
    if provider == "bitbucket":
        return GitAuth.bitbucket(token)
    return GitAuth.bearer(token)


_DEFAULT_TOKENS = InstallationTokens()


class Credential(NamedTuple):
    """A repository's installation credential, still sealed: a token, or a GitHub App's id and
    key (``kind`` ``'app'``), with what minting needs (host, GitHub's installation id)."""

    provider: str
    kind: str
    sealed: bytes
    host: str
    external_id: str


async def installation_credential(conn: Conn, repository_id: UUID) -> Credential | None:
    """The sealed credential of ``repository_id``'s installation (caller's tenant), or None."""
    found = await installation_of(conn, repository_id)
    if found is None or found.credentials is None or found.credentials_kind not in ("token", "app"):
        return None
    return Credential(
        found.provider, found.credentials_kind, bytes(found.credentials), found.host, found.external_id
    )


async def credential_token(
    credential: Credential, box: SecretBox, tokens: InstallationTokens | None = None
) -> str | None:
    """The token ``credential`` stands for: opened, or minted from a GitHub App's key (None for
    App credentials of another provider). Raises GitError (``auth``, …) when GitHub refuses.

    ``tokens`` mints and caches installation tokens (default: a process-wide cache against the
    hosts' own APIs; services pass theirs, configured with PALIMPSEST_GITHUB_API_URL).
    """
    opened = box.open(credential.sealed)
    if credential.kind != "app":
        return opened
    if credential.provider != "github":
        return None
    app = AppCredentials.from_sealed_json(opened)
    return await (tokens or _DEFAULT_TOKENS).token(credential.host, credential.external_id, app)


async def git_auth_for(
    conn: Conn, repository_id: UUID, box: SecretBox | None, *, tokens: InstallationTokens | None = None
) -> GitAuth | None:
    """Credentials for cloning ``repository_id`` (in the caller's tenant transaction), or None."""
    credential = await installation_credential(conn, repository_id)
    if credential is None:
        return None
    if box is None:
        log.warning("repository %s has credentials but PALIMPSEST_ENCRYPTION_KEY is not set", repository_id)
        return None
    token = await credential_token(credential, box, tokens)
    if token is None:
        log.warning("repository %s: App credentials are GitHub's; cloning without", repository_id)
        return None
    return auth_for(credential.provider, token)
