"""Signature and token checks: every way a delivery can fail to authenticate is a 401."""

from __future__ import annotations

import pytest

from palimpsest.ingest.webhooks import (
    PROVIDERS,
    WebhookError,
    bitbucket,
    get_provider,
    github,
    gitlab,
    verify_hmac_sha256,
    verify_token,
)

from .webhook_support import BOT, SECRET, TOKEN, encode, headers_for, load, sign

BODY = encode(load("github", "push_default_branch"))


# -- primitives ----------------------------------------------------------------------------


def test_hmac_accepts_the_provider_format() -> None:
    assert verify_hmac_sha256(SECRET, BODY, sign(BODY))


def test_hmac_tolerates_case_and_surrounding_whitespace() -> None:
    assert verify_hmac_sha256(SECRET, BODY, "  " + sign(BODY).upper() + "\t")


@pytest.mark.parametrize(
    "header",
    [
        None,
        "",
        "sha256=",
        "sha1=" + sign(BODY).removeprefix("sha256="),
        sign(BODY).removeprefix("sha256="),
        sign(BODY)[:-1],
        sign(BODY) + "0",
        sign(BODY, b"another-secret"),
        sign(BODY).replace("sha256=", "sha256 = "),
        "sha256=" + "é" * 64,
        "sha256=\udcff",
    ],
    ids=[
        "missing",
        "empty",
        "prefix-only",
        "wrong-prefix",
        "no-prefix",
        "short",
        "long",
        "other-secret",
        "spaced",
        "non-ascii",
        "surrogate",
    ],
)
def test_hmac_rejects(header: str | None) -> None:
    assert not verify_hmac_sha256(SECRET, BODY, header)


def test_hmac_rejects_a_tampered_body() -> None:
    assert not verify_hmac_sha256(SECRET, BODY.replace(b"main", b"mair", 1), sign(BODY))


def test_hmac_with_an_empty_secret_never_matches() -> None:
    assert not verify_hmac_sha256(b"", BODY, sign(BODY, b""))


def test_token_comparison() -> None:
    assert verify_token(TOKEN, TOKEN)
    assert not verify_token(TOKEN, TOKEN + " ")
    assert not verify_token(TOKEN, None)
    assert not verify_token(TOKEN, "")
    assert not verify_token("", "")
    assert not verify_token(TOKEN, "tökén\udcff")


# -- per provider --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("module", "header"), [(github, "X-Hub-Signature-256"), (bitbucket, "X-Hub-Signature")]
)
class TestHmacProviders:
    def headers(self, module: object, body: bytes = BODY) -> dict[str, str]:
        provider = "github" if module is github else "bitbucket"
        return headers_for(provider, "push", body)

    def test_valid_signature_passes(self, module: object, header: str) -> None:
        get_provider(self.name(module)).verify(SECRET, self.headers(module), BODY)

    def test_header_names_are_case_insensitive(self, module: object, header: str) -> None:
        headers = {k.lower(): v for k, v in self.headers(module).items()}
        get_provider(self.name(module)).verify(SECRET.decode(), headers, BODY)

    def test_missing_signature(self, module: object, header: str) -> None:
        headers = self.headers(module)
        del headers[header]
        self.assert_401(module, headers, BODY, f"missing {header} header")

    def test_wrong_secret(self, module: object, header: str) -> None:
        headers = self.headers(module) | {header: sign(BODY, b"not-the-secret")}
        self.assert_401(module, headers, BODY, f"{header} does not match the body")

    def test_wrong_prefix(self, module: object, header: str) -> None:
        hexdigest = sign(BODY).removeprefix("sha256=")
        headers = self.headers(module) | {header: "sha1=" + hexdigest}
        self.assert_401(module, headers, BODY, f"{header} does not match the body")

    def test_tampered_body(self, module: object, header: str) -> None:
        tampered = BODY.replace(b"refs/heads/main", b"refs/heads/prod")
        self.assert_401(module, self.headers(module), tampered, f"{header} does not match the body")

    def test_unconfigured_secret(self, module: object, header: str) -> None:
        self.assert_401(module, self.headers(module), BODY, "no webhook secret", secret=b"")

    @staticmethod
    def name(module: object) -> str:
        return "github" if module is github else "bitbucket"

    def assert_401(
        self, module: object, headers: dict[str, str], body: bytes, reason: str, secret: bytes = SECRET
    ) -> None:
        with pytest.raises(WebhookError) as caught:
            get_provider(self.name(module)).verify(secret, headers, body)
        assert caught.value.status == 401
        assert caught.value.reason.startswith(reason)
        assert SECRET.decode() not in str(caught.value)


def test_github_legacy_sha1_header_alone_is_not_enough() -> None:
    headers = headers_for("github", "push", BODY)
    legacy = headers.pop("X-Hub-Signature-256").replace("sha256=", "sha1=")
    headers["X-Hub-Signature"] = legacy
    with pytest.raises(WebhookError) as caught:
        github.verify(SECRET, headers, BODY)
    assert caught.value.reason == "missing X-Hub-Signature-256 header"


@pytest.mark.parametrize(
    ("token", "reason"),
    [
        (None, "missing X-Gitlab-Token header"),
        ("glwt-wrong", "X-Gitlab-Token does not match"),
        ("", "X-Gitlab-Token does not match"),
        (TOKEN.upper(), "X-Gitlab-Token does not match"),
    ],
)
def test_gitlab_token_failures(token: str | None, reason: str) -> None:
    body = encode(load("gitlab", "push"))
    headers = headers_for("gitlab", "Push Hook", body)
    del headers["X-Gitlab-Token"]
    if token is not None:
        headers["x-gitlab-token"] = token
    with pytest.raises(WebhookError) as caught:
        gitlab.verify(TOKEN, headers, body)
    assert (caught.value.status, caught.value.reason) == (401, reason)
    assert TOKEN not in str(caught.value)


def test_gitlab_token_passes_and_accepts_bytes_secret() -> None:
    body = encode(load("gitlab", "push"))
    gitlab.verify(TOKEN.encode(), headers_for("gitlab", "Push Hook", body), body)


def test_gitlab_unconfigured_token() -> None:
    body = encode(load("gitlab", "push"))
    with pytest.raises(WebhookError) as caught:
        gitlab.verify("", headers_for("gitlab", "Push Hook", body), body)
    assert caught.value.status == 401


# -- receive: verify before parse ----------------------------------------------------------


def test_receive_verifies_then_parses() -> None:
    body = encode(load("github", "push_default_branch"))
    parsed = PROVIDERS["github"].receive(SECRET, headers_for("github", "push", body), body, bot_name=BOT)
    assert parsed.event == "push"


def test_receive_rejects_before_looking_at_the_payload() -> None:
    body = b"not even json"
    headers = headers_for("bitbucket", "repo:push", body) | {"X-Hub-Signature": "sha256=00"}
    with pytest.raises(WebhookError) as caught:
        PROVIDERS["bitbucket"].receive(SECRET, headers, body, bot_name=BOT)
    assert caught.value.status == 401


def test_unknown_provider_is_a_404() -> None:
    with pytest.raises(WebhookError) as caught:
        get_provider("gitea")
    assert caught.value.status == 404
