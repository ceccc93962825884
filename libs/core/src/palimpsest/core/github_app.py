"""GitHub App installation tokens: what repositories of an App installation clone and post with.

An installation registered with ``app_credentials`` (app id and private key, sealed like every
credential) has no long-lived token. For each use, this module signs a ten-minute JWT with the
App's key (RS256, ``iss`` = app id) and exchanges it at
``POST {api}/app/installations/{id}/access_tokens`` for an installation token, which GitHub
issues for one hour. Tokens are cached per (API, app, installation) in the process and renewed
five minutes before they expire, so a busy service mints about once an hour per installation.

The API is ``https://api.github.com`` for github.com and ``https://<host>/api/v3`` for GitHub
Enterprise Server, or ``PALIMPSEST_GITHUB_API_URL`` when set. The JWT, the key and the token
never appear in a URL, a log record or an error message; a refusal says which status the API
answered and what to check.

The JWT is built with ``cryptography`` (already a dependency, for sealing): a JWT library would be
one more dependency for one fixed header and three claims.
"""

from __future__ import annotations

import base64
import json
import logging
import time
from dataclasses import dataclass, field
from datetime import datetime

import httpx
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa

from palimpsest.core.git_errors import GitError, GitFailure

__all__ = ["AppCredentials", "InstallationTokens", "api_url_for", "app_jwt", "provider_api_url"]

log = logging.getLogger(__name__)

JWT_LIFETIME_S = 540  # GitHub accepts at most 10 minutes
CLOCK_SKEW_S = 60  # iat is backdated for servers whose clock runs ahead of ours
RENEW_BEFORE_S = 300.0
TIMEOUT_S = 15.0


@dataclass(frozen=True, slots=True, repr=False)
class AppCredentials:
    """An App's id and PEM private key, as the ingest API seals them (JSON)."""

    app_id: str
    private_key: str

    def __repr__(self) -> str:
        return f"AppCredentials(app_id={self.app_id!r}, private_key=<redacted>)"

    @classmethod
    def from_sealed_json(cls, text: str) -> AppCredentials:
        try:
            data = json.loads(text)
            return cls(str(data["app_id"]), str(data["private_key"]))
        except (ValueError, KeyError, TypeError) as exc:
            raise GitError(GitFailure.AUTH, "the installation's App credentials are not readable") from exc


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def app_jwt(credentials: AppCredentials, now: float | None = None) -> str:
    """The App's JWT (RS256): what authenticates the request for an installation token."""
    issued = int(now if now is not None else time.time())
    try:
        key = serialization.load_pem_private_key(credentials.private_key.encode(), password=None)
    except (ValueError, TypeError) as exc:
        raise GitError(GitFailure.AUTH, "the App private key is not a PEM RSA key") from exc
    if not isinstance(key, rsa.RSAPrivateKey):
        raise GitError(GitFailure.AUTH, "the App private key is not an RSA key")
    header = _b64(json.dumps({"alg": "RS256", "typ": "JWT"}, separators=(",", ":")).encode())
    claims = {"iat": issued - CLOCK_SKEW_S, "exp": issued + JWT_LIFETIME_S, "iss": credentials.app_id}
    payload = _b64(json.dumps(claims, separators=(",", ":")).encode())
    signing_input = f"{header}.{payload}".encode("ascii")
    signature = key.sign(signing_input, padding.PKCS1v15(), hashes.SHA256())
    return f"{header}.{payload}.{_b64(signature)}"


def api_url_for(host: str, override: str | None = None) -> str:
    """The REST API of a GitHub host (github.com or an Enterprise Server), without a trailing /."""
    if override:
        return override.rstrip("/")
    return "https://api.github.com" if host == "github.com" else f"https://{host}/api/v3"


def provider_api_url(provider: str, host: str, override: str | None = None) -> str:
    """The REST API of a provider's host, without a trailing /: GitHub's (above), GitLab's
    ``https://<host>/api/v4``, Bitbucket Cloud's ``https://api.bitbucket.org/2.0``; ``override``
    (``PALIMPSEST_GITHUB_API_URL``, ``…_GITLAB_API_URL``, ``…_BITBUCKET_API_URL``) wins."""
    if override:
        return override.rstrip("/")
    if provider == "github":
        return api_url_for(host)
    if provider == "gitlab":
        return f"https://{host}/api/v4"
    return "https://api.bitbucket.org/2.0"


@dataclass(slots=True)
class InstallationTokens:
    """Installation tokens minted on demand and cached until five minutes before they expire."""

    api_url: str | None = None  # PALIMPSEST_GITHUB_API_URL (tests, proxies); default: by host
    timeout_s: float = TIMEOUT_S
    transport: httpx.AsyncBaseTransport | None = None
    _cache: dict[tuple[str, str, str], tuple[str, float]] = field(default_factory=dict)
    minted: int = 0  # how many tokens this process asked GitHub for

    async def token(self, host: str, installation: str, credentials: AppCredentials) -> str:
        """A valid installation token for ``installation`` (GitHub's numeric installation id)."""
        api = api_url_for(host, self.api_url)
        key = (api, credentials.app_id, installation)
        cached = self._cache.get(key)
        if cached is not None and cached[1] - time.time() > RENEW_BEFORE_S:
            return cached[0]
        token, expires = await self._mint(api, installation, credentials)
        self._cache[key] = (token, expires)
        return token

    async def _mint(self, api: str, installation: str, credentials: AppCredentials) -> tuple[str, float]:
        if not installation.isdigit():
            raise GitError(GitFailure.AUTH, f"GitHub App installation id {installation!r} is not a number")
        headers = {
            "Authorization": f"Bearer {app_jwt(credentials)}",
            "Accept": "application/vnd.github+json",
            "X-GitHub-Api-Version": "2022-11-28",
            "User-Agent": "palimpsest",
        }
        where = f"{api}/app/installations/{installation}/access_tokens"
        try:
            async with httpx.AsyncClient(
                timeout=self.timeout_s, follow_redirects=False, transport=self.transport
            ) as client:
                response = await client.post(where, headers=headers)
        except httpx.TimeoutException as exc:
            raise GitError(GitFailure.TIMEOUT, f"GitHub App token request to {api} timed out") from exc
        except httpx.HTTPError as exc:
            raise GitError(
                GitFailure.NETWORK, f"GitHub App token request to {api} failed: {exc.__class__.__name__}"
            ) from exc
        if response.status_code in (401, 403, 404):
            raise GitError(
                GitFailure.AUTH,
                f"GitHub App token request answered HTTP {response.status_code}: check the app id"
                f" ({credentials.app_id}), its private key and installation {installation}",
                status=response.status_code,
            )
        if response.status_code >= 300:
            failure = GitFailure.NETWORK if response.status_code >= 500 else GitFailure.REFUSED
            raise GitError(
                failure,
                f"GitHub App token request answered HTTP {response.status_code}",
                status=response.status_code,
            )
        try:
            body = response.json()
            token = str(body["token"])
            expires = datetime.fromisoformat(str(body["expires_at"]).replace("Z", "+00:00")).timestamp()
        except (ValueError, KeyError, TypeError) as exc:
            raise GitError(GitFailure.PARSE_ERROR, "GitHub App token response has no token") from exc
        self.minted += 1
        log.info(
            "minted a GitHub App installation token for installation %s (app %s)",
            installation,
            credentials.app_id,
        )
        return token, expires
