"""Links to commits and files on the provider, in each provider's URL form (none for local sources).

GitHub: ``<repo>/commit/<sha>``, ``<repo>/blob/<sha>/<path>#L<n>``; GitLab: ``<repo>/-/commit/<sha>``,
``<repo>/-/blob/<sha>/<path>#L<n>``; Bitbucket: ``<repo>/commits/<sha>``,
``<repo>/src/<sha>/<path>#lines-<n>``; pull requests ``<repo>/pull/<n>``, ``<repo>/-/merge_requests/<n>``,
``<repo>/pull-requests/<n>``. The repository's web address is its clone URL without
``.git`` and without any user information; only http(s) clone URLs give links.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import quote, urlsplit

from palimpsest.core.git import is_object_id

__all__ = ["ProviderLinks"]

_COMMIT = {
    "github": "{base}/commit/{sha}",
    "gitlab": "{base}/-/commit/{sha}",
    "bitbucket": "{base}/commits/{sha}",
}
_BLOB = {
    "github": "{base}/blob/{sha}/{path}",
    "gitlab": "{base}/-/blob/{sha}/{path}",
    "bitbucket": "{base}/src/{sha}/{path}",
}
_PULL = {
    "github": "{base}/pull/{number}",
    "gitlab": "{base}/-/merge_requests/{number}",
    "bitbucket": "{base}/pull-requests/{number}",
}
_LINE = {"github": "#L{line}", "gitlab": "#L{line}", "bitbucket": "#lines-{line}"}


@dataclass(frozen=True, slots=True)
class ProviderLinks:
    provider: str
    base: str | None  # the repository's web address, or None (local, or not an http(s) URL)

    @classmethod
    def of(cls, provider: str, clone_url: str) -> ProviderLinks:
        if provider not in _COMMIT:
            return cls(provider, None)
        parts = urlsplit(clone_url)
        if parts.scheme not in ("https", "http") or not parts.hostname:
            return cls(provider, None)
        host = parts.hostname + (f":{parts.port}" if parts.port else "")
        path = parts.path.rstrip("/").removesuffix(".git")
        return cls(provider, f"{parts.scheme}://{host}{quote(path, safe='/')}")

    def commit(self, sha: str | None) -> str | None:
        if self.base is None or not sha or not is_object_id(sha):
            return None
        return _COMMIT[self.provider].format(base=self.base, sha=sha)

    def pull(self, number: int | None) -> str | None:
        """The pull (merge) request's page, or None (local, no number, no web address)."""
        if self.base is None or number is None:
            return None
        return _PULL[self.provider].format(base=self.base, number=int(number))

    def blob(self, sha: str | None, path: str, line: int | None = None) -> str | None:
        if self.base is None or not sha or not is_object_id(sha):
            return None
        url = _BLOB[self.provider].format(base=self.base, sha=sha, path=quote(path, safe="/"))
        return url + (_LINE[self.provider].format(line=line) if line else "")
