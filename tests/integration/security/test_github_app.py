"""GitHub App installations clone and post with minted installation tokens.

The App's id and private key are sealed like any credential. Before a clone (chunker, recency
scanner, reviewer) or a post (reviewer), core signs a JWT with the key, asks the GitHub API for an
installation token and caches it until five minutes before it expires. Here the API is a fake on
loopback that verifies the JWT's RS256 signature with the App's public key, its issuer and its
lifetime; the repository is served by a real git smart-HTTP server that accepts only
``Basic x-access-token:<minted token>``. Before this, such repositories cloned anonymously and
reviews of them were never posted.
"""

from __future__ import annotations

import base64
import json
import logging
from pathlib import Path
from uuid import UUID

import pytest
from cryptography.fernet import Fernet
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from palimpsest.chunker.source import open_source
from palimpsest.core.credentials import git_auth_for
from palimpsest.core.db import tenant_tx
from palimpsest.core.git_errors import GitError, GitFailure
from palimpsest.core.github_app import InstallationTokens
from palimpsest.core.ids import uuid7
from palimpsest.core.secretbox import SecretBox
from palimpsest.core.service import Infra
from palimpsest.core.sources import SourcePolicy
from palimpsest.devtools.fakes.git_http import GitHttpServer
from palimpsest.recency_scanner.source import installation_auth, load_repository
from tests.support.fake_providers import FakeApp, FakeProviders

MINTED = "ghs_M1ntedInstallati0nT0ken0123456789abc"
POLICY = SourcePolicy(private_hosts=frozenset({"127.0.0.1"}))
BOX = SecretBox([Fernet.generate_key()])


def _key() -> tuple[rsa.RSAPrivateKey, str]:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()
    return key, pem


def _basic(token: str) -> str:
    return "Basic " + base64.b64encode(f"x-access-token:{token}".encode()).decode()


async def _app_repository(infra: Infra, url: str, pem: str) -> tuple[UUID, UUID]:
    tenant, installation, repository = uuid7(), uuid7(), uuid7()
    sealed = BOX.seal(json.dumps({"app_id": "1234", "private_key": pem}))
    async with tenant_tx(infra.pool, tenant) as conn:
        await conn.execute("INSERT INTO tenants (tenant_id, name) VALUES (%s, %s)", (tenant, f"app-{tenant}"))
        await conn.execute(
            "INSERT INTO installations (tenant_id, installation_id, provider, kind, external_id, host,"
            " credentials, credentials_kind) VALUES (%s, %s, 'github', 'installation', '4242', 'github.com',"
            " %s, 'app')",
            (tenant, installation, sealed),
        )
        await conn.execute(
            "INSERT INTO repositories (tenant_id, repository_id, provider, full_name, clone_url, default_branch,"
            " installation_id) VALUES (%s, %s, 'github', 'team/app', %s, 'main', %s)",
            (tenant, repository, url, installation),
        )
    return tenant, repository


async def test_a_private_repository_of_an_app_installation_clones_with_a_minted_token(
    infra: Infra, served_repo: tuple[Path, str], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    root, tip = served_repo
    key, pem = _key()
    app = FakeApp("1234", key.public_key(), "4242")
    with (
        FakeProviders(token=MINTED, app=app) as api,
        GitHttpServer(root, authorization=_basic(MINTED)) as git,
    ):
        tenant, repository = await _app_repository(infra, git.url("team/app.git"), pem)
        tokens = InstallationTokens(api_url=api.url)
        async with tenant_tx(infra.pool, tenant) as conn:
            auth = await git_auth_for(conn, repository, BOX, tokens=tokens)
            scanner_auth = await installation_auth(BOX, tokens)(conn, await load_repository(conn, repository))
        assert auth is not None and auth == scanner_auth
        async with open_source(
            git.url("team/app.git"), "main", auth=auth, policy=POLICY, timeout_s=60
        ) as source:
            assert source.commit == tip
        assert app.refused == [] and app.mints == 1  # the scanner's call was answered from the cache
        assert all(r.authorized for r in git.requests)
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert MINTED not in logged and "PRIVATE KEY" not in logged and pem[40:80] not in logged


async def test_a_refused_mint_says_why_and_shows_no_secret(
    infra: Infra, served_repo: tuple[Path, str]
) -> None:
    root, _ = served_repo
    _, pem = _key()
    other, _ = _key()  # GitHub knows another key: the JWT's signature does not verify
    app = FakeApp("1234", other.public_key(), "4242")
    with (
        FakeProviders(token=MINTED, app=app) as api,
        GitHttpServer(root, authorization=_basic(MINTED)) as git,
    ):
        tenant, repository = await _app_repository(infra, git.url("team/app.git"), pem)
        with pytest.raises(GitError) as refused:
            async with tenant_tx(infra.pool, tenant) as conn:
                await git_auth_for(conn, repository, BOX, tokens=InstallationTokens(api_url=api.url))
    assert refused.value.reason is GitFailure.AUTH
    assert "HTTP 401" in str(refused.value) and "1234" in str(refused.value)
    assert app.refused == ["401 bad JWT signature"]
    assert pem[40:80] not in str(refused.value) and MINTED not in str(refused.value)
    assert git.requests == []  # git never ran
