"""Posting reviews back to providers (fake GitHub/GitLab/Bitbucket APIs on 127.0.0.1), once per head."""

from __future__ import annotations

import json
from typing import Any
from uuid import UUID

import pytest
from cryptography.fernet import Fernet
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from pydantic import SecretStr

from palimpsest.core.db import tenant_tx
from palimpsest.core.ids import uuid7
from palimpsest.core.secretbox import SecretBox
from palimpsest.core.service import Infra
from palimpsest.devtools.fakes.llm import FakeLLM
from tests.integration.analyzer.support import index, indexer_definitions, new_repository, running
from tests.integration.reviewer.test_reviewer_flow import KEY, pr, review, settings
from tests.support.fake_providers import FakeApp, FakeProviders
from tests.support.gitrepo import git

TOKEN = "ghs_provider-token-5d1e"
ENCRYPTION_KEY = Fernet.generate_key().decode()
REPLY = (
    '{"summary": "discount() can return None.", "findings": [{"path": "src/billing.py", "start_line": 2,'
    ' "end_line": 2, "severity": "major", "category": "bug", "message": "discount() may return None",'
    ' "suggested_change": "total = discount(items) or 0"}]}'
)


async def provider_repository(infra: Infra, repo: dict[str, Any], provider: str) -> tuple[UUID, UUID]:
    """The test repository, indexed, as a ``provider`` repository of a token installation."""
    tenant, repo_id = await new_repository(infra, repo["path"], f"reviewer-post-{provider}")
    async with running(infra, indexer_definitions({tenant})):
        await index(infra, tenant, repo_id)
    installation = uuid7()
    sealed = SecretBox([ENCRYPTION_KEY.encode()]).seal(TOKEN)
    async with tenant_tx(infra.pool, tenant) as conn:
        await conn.execute(
            "INSERT INTO installations (tenant_id, installation_id, provider, kind, external_id, host, credentials,"
            " credentials_kind) VALUES (%s, %s, %s, 'repository', '42', 'example.test', %s, 'token')",
            (tenant, installation, provider, sealed),
        )
        await conn.execute(
            "UPDATE repositories SET provider = %s, full_name = 'acme/shop', installation_id = %s"
            " WHERE repository_id = %s",
            (provider, installation, repo_id),
        )
    return tenant, repo_id


@pytest.mark.parametrize("provider", ["github", "gitlab", "bitbucket"])
async def test_a_review_is_posted_once_per_head(infra: Infra, repo: dict[str, Any], provider: str) -> None:
    tenant, repo_id = await provider_repository(infra, repo, provider)
    with FakeProviders(token=TOKEN) as api, FakeLLM(reply=REPLY, api_key=KEY) as model:
        s = settings(
            llm_model="openai/fake-model",
            llm_api_base=model.base_url,
            llm_api_key=SecretStr(KEY),
            encryption_key=SecretStr(ENCRYPTION_KEY),
            **{f"review_{provider}_api_url": api.url},
        )
        api.diffs[9] = git(repo["path"], "diff", "--no-color", "-M", repo["base"], repo["feature"])
        event = pr(tenant, repo_id, repo, "feature", provider=provider, number=9)
        first = await review(infra, tenant, event, s)
        assert api.rejected == []
        assert first["posted"] is True
        [text] = api.summaries(provider, 9)
        [comment] = api.inline(provider, 9)
        assert "discount() can return None." in text
        assert f"head={repo['feature']}" in text
        # with a model too, the summary ends with the context used and the co-change warning
        used, partners = text.split("<details>")[1:]
        assert "<summary>Context used" in used and "`src/invoice.py:" in used and "(usage)" in used
        assert "<summary>Usually changes with these, not in this pull request (1)</summary>" in partners
        assert "- `src/tax.py`: changed in 3 of the 3 commits that changed `src/billing.py`" in partners
        [finding] = first["findings"]
        assert finding["posted_as"] == "inline" and len(finding["fingerprint"]) == 32
        assert f"fp={finding['fingerprint']}" in (comment.get("body") or comment["content"]["raw"])
        if provider == "github":
            assert comment["commit_id"] == repo["feature"]
            assert (comment["path"], comment["line"], comment["side"]) == ("src/billing.py", 2, "RIGHT")
        elif provider == "gitlab":
            assert (comment["position"]["new_path"], comment["position"]["new_line"]) == ("src/billing.py", 2)
        else:
            assert comment["inline"] == {"path": "src/billing.py", "to": 2}
        # a redelivered / repeated request for the same head posts nothing
        again = await review(
            infra, tenant, pr(tenant, repo_id, repo, "feature", provider=provider, number=9), s
        )
        assert again["review_id"] == first["review_id"]
        # even when the stored review is gone (a crash after posting): the provider's marker is found
        async with tenant_tx(infra.pool, tenant) as conn:
            await conn.execute("DELETE FROM reviews WHERE repository_id = %s", (repo_id,))
        third = await review(
            infra, tenant, pr(tenant, repo_id, repo, "feature", provider=provider, number=9), s
        )
        assert third["posted"] is True
        assert len(api.posted[provider]) == 2 and api.edits == []  # one summary, one inline comment
        assert all(m == "GET" or p == provider for m, p, _ in api.requests)
    assert TOKEN not in repr(first) + repr(third)


async def test_a_failed_post_is_retried_by_the_next_request(infra: Infra, repo: dict[str, Any]) -> None:
    tenant, repo_id = await provider_repository(infra, repo, "github")
    with FakeProviders(token=TOKEN, fail_posts=1) as api:
        s = settings(encryption_key=SecretStr(ENCRYPTION_KEY), review_github_api_url=api.url)
        first = await review(
            infra, tenant, pr(tenant, repo_id, repo, "feature", provider="github", number=4), s
        )
        assert first["posted"] is False and "post_failed" in (first["reason"] or "")
        assert TOKEN not in (first["reason"] or "")
        again = await review(
            infra, tenant, pr(tenant, repo_id, repo, "feature", provider="github", number=4), s
        )
        assert again["review_id"] == first["review_id"] and again["posted"] is True
        assert api.inline("github", 4) == []  # the brief (no model) has no findings
        [summary] = api.summaries("github", 4)
        assert "findings need a model" in summary


async def test_a_github_app_installation_posts_with_a_minted_token(
    infra: Infra, repo: dict[str, Any]
) -> None:
    """An App installation (id + private key) gets an installation token minted from a signed JWT
    (verified by the fake API) and cached: one mint serves a review's fetch and its post."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()
    tenant, repo_id = await provider_repository(infra, repo, "github")
    sealed = SecretBox([ENCRYPTION_KEY.encode()]).seal(json.dumps({"app_id": "77", "private_key": pem}))
    async with tenant_tx(infra.pool, tenant) as conn:
        await conn.execute(
            "UPDATE installations SET kind = 'installation', external_id = '4242', credentials = %s,"
            " credentials_kind = 'app'",
            (sealed,),
        )
    app = FakeApp("77", key.public_key(), "4242")
    with FakeProviders(token=TOKEN, app=app) as api:
        s = settings(encryption_key=SecretStr(ENCRYPTION_KEY), review_github_api_url=api.url)
        first = await review(
            infra, tenant, pr(tenant, repo_id, repo, "feature", provider="github", number=5), s
        )
        assert app.mints == 1  # the fetch's token served the post too
        second = await review(
            infra, tenant, pr(tenant, repo_id, repo, "both", provider="github", number=6), s
        )
    assert app.refused == [] and api.rejected == []
    assert first["posted"] is True and second["posted"] is True
    assert len(api.summaries("github", 5)) == len(api.summaries("github", 6)) == 1
    assert TOKEN not in repr(first) + repr(second)
