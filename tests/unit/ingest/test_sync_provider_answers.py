"""Installation sync: which API each installation's host is listed from, and how a provider's
refusal reads (status and headers only; the body, which the provider controls, is never quoted)."""

from __future__ import annotations

import time

import httpx

from palimpsest.core.github_app import provider_api_url
from palimpsest.ingest.sync import _failure


def test_each_host_is_listed_from_its_own_api_unless_a_url_is_configured() -> None:
    assert provider_api_url("github", "github.com") == "https://api.github.com"
    assert provider_api_url("github", "ghe.northwind.example") == "https://ghe.northwind.example/api/v3"
    assert provider_api_url("gitlab", "gitlab.northwind.example") == "https://gitlab.northwind.example/api/v4"
    assert provider_api_url("bitbucket", "bitbucket.org") == "https://api.bitbucket.org/2.0"
    assert provider_api_url("github", "github.com", "https://proxy.example/gh/") == "https://proxy.example/gh"


def _answer(status: int, headers: dict[str, str] | None = None) -> httpx.Response:
    return httpx.Response(status, headers=headers, text="secret glpat-XYZ in the body")


def test_refusals_name_the_status_and_what_to_do_never_the_body() -> None:
    reset = str(int(time.time()) + 120)
    limited = _failure("github", _answer(403, {"x-ratelimit-remaining": "0", "x-ratelimit-reset": reset}))
    assert limited.status == 403 and limited.message.startswith("GitHub API rate limit reached (HTTP 403)")
    assert "retry after 1" in limited.message  # about 120 s
    assert _failure("gitlab", _answer(429, {"Retry-After": "9"})).message.endswith("retry after 9 s")
    assert "may not list" in _failure("github", _answer(403)).message
    assert "credentials were refused" in _failure("bitbucket", _answer(401)).message
    assert "not found" in _failure("gitlab", _answer(404)).message
    assert _failure("bitbucket", _answer(503)).message == "Bitbucket API answered HTTP 503"
    for status in (401, 403, 404, 429, 500):
        assert "glpat" not in _failure("gitlab", _answer(status)).message
