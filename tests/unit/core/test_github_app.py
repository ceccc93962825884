"""The GitHub App JWT and the API address; minting itself is tested against a fake API
(tests/integration/security/test_github_app.py)."""

from __future__ import annotations

import base64
import json

import pytest
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa

from palimpsest.core.git_errors import GitError, GitFailure
from palimpsest.core.github_app import AppCredentials, api_url_for, app_jwt


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _pem(key: rsa.RSAPrivateKey) -> str:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.TraditionalOpenSSL,
        serialization.NoEncryption(),
    ).decode()


def test_the_jwt_is_rs256_signed_by_the_app_key_with_a_short_backdated_lifetime() -> None:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    token = app_jwt(AppCredentials("12345", _pem(key)), now=1_700_000_000)
    header, payload, signature = token.split(".")
    key.public_key().verify(
        _unb64(signature), f"{header}.{payload}".encode(), padding.PKCS1v15(), hashes.SHA256()
    )
    assert json.loads(_unb64(header)) == {"alg": "RS256", "typ": "JWT"}
    assert json.loads(_unb64(payload)) == {
        "iat": 1_700_000_000 - 60,
        "exp": 1_700_000_000 + 540,
        "iss": "12345",
    }


def test_a_key_that_is_not_pem_rsa_is_an_auth_failure_that_shows_no_key() -> None:
    with pytest.raises(GitError) as bad:
        app_jwt(
            AppCredentials(
                "1", "-----BEGIN RSA PRIVATE KEY-----\nc2VjcmV0LWJ5dGVz\n-----END RSA PRIVATE KEY-----"
            )
        )
    assert bad.value.reason is GitFailure.AUTH and "c2VjcmV0" not in str(bad.value)
    with pytest.raises(GitError):
        AppCredentials.from_sealed_json('{"app_id": 1}')
    assert "c2VjcmV0" not in repr(AppCredentials("1", "c2VjcmV0"))


def test_the_api_is_github_com_s_or_the_enterprise_host_s_unless_configured() -> None:
    assert api_url_for("github.com") == "https://api.github.com"
    assert api_url_for("ghe.example.com") == "https://ghe.example.com/api/v3"
    assert api_url_for("github.com", "http://127.0.0.1:9/") == "http://127.0.0.1:9"
