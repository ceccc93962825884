"""What a GitHub App for Palimpsest needs: its permissions and events, and the App manifest.

One place answers it for the code, the manifest (``palimpsest github manifest``) and the guide
(docs/connect-github.md, whose tables a test compares with this module):

* the **events** are the ones the webhook parser handles (``webhooks.github.SUBSCRIBED_EVENTS``),
  less those GitHub sends every App unasked (``ALWAYS_SENT``);
* the **permissions** are what those events and the services' calls need. Each names the code
  that uses it, so a new API call that needs more shows up here.

The manifest is the JSON of GitHub's App manifest flow ("Registering a GitHub App from a
manifest"): POST it as the ``manifest`` form field to ``https://github.com/settings/apps/new``
(or ``/organizations/ORG/settings/apps/new``); GitHub then redirects to ``redirect_url`` with a
``code``, which ``POST /app-manifests/{code}/conversions`` turns into the App's id, private key
and webhook secret.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final, Literal
from urllib.parse import urlsplit

from palimpsest.ingest.webhooks.github import ALWAYS_SENT, SUBSCRIBED_EVENTS

__all__ = [
    "ALWAYS_SENT",
    "EVENTS",
    "EVENT_PERMISSION",
    "PERMISSIONS",
    "Permission",
    "creation_url",
    "manifest",
    "webhook_url",
]

Access = Literal["read", "write"]


@dataclass(frozen=True, slots=True)
class Permission:
    """One repository permission of the App: its API name, the access, why (which code uses it)."""

    name: str  # the key in default_permissions, e.g. "pull_requests"
    label: str  # how GitHub's settings page names it
    access: Access
    why: str


PERMISSIONS: Final[tuple[Permission, ...]] = (
    Permission(
        "contents",
        "Contents",
        "read",
        "clone the repositories (chunker, recency scanner, analyzer, reviewer with an installation"
        " token from core.github_app) and receive `push`",
    ),
    Permission(
        "issues",
        "Issues",
        "read",
        'receive `issue_comment` ("@bot review" on a pull request\'s conversation)',
    ),
    Permission(
        "metadata",
        "Metadata",
        "read",
        "mandatory for every App: repository names, ids and visibility",
    ),
    Permission(
        "pull_requests",
        "Pull requests",
        "write",
        "receive `pull_request`, `pull_request_review_comment`, `pull_request_review_thread`; the"
        " reviewer reads a pull request's comments and reviews, posts review comments and the"
        " summary comment (POST/PATCH /issues/{n}/comments on a pull request) and resolves review"
        " threads (GraphQL resolveReviewThread)",
    ),
)

# The permission each subscribed event needs (GitHub refuses the subscription without it).
EVENT_PERMISSION: Final[dict[str, str]] = {
    "issue_comment": "issues",
    "pull_request": "pull_requests",
    "pull_request_review_comment": "pull_requests",
    "pull_request_review_thread": "pull_requests",
    "push": "contents",
}
EVENTS: Final[tuple[str, ...]] = SUBSCRIBED_EVENTS
WEBHOOK_PATH: Final = "/webhooks/github"


def webhook_url(base: str) -> str:
    """Where GitHub delivers: the ingest service's public URL plus /webhooks/github."""
    return base.rstrip("/") + WEBHOOK_PATH


def _check_base(url: str) -> str:
    parts = urlsplit(url)
    if parts.scheme != "https" or not parts.hostname:
        raise ValueError("the URL must be the https URL GitHub reaches the ingest service at")
    if parts.username is not None or parts.password is not None or parts.query or parts.fragment:
        raise ValueError("the URL must not carry credentials, a query or a fragment")
    return url.rstrip("/")


def manifest(
    url: str, *, name: str = "Palimpsest", redirect_url: str | None = None, public: bool = False
) -> dict[str, Any]:
    """The App manifest for an ingest service reachable at ``url`` (https, no trailing path needed)."""
    base = _check_base(url)
    return {
        "name": name,
        "url": base,
        "hook_attributes": {"url": webhook_url(base), "active": True},
        "redirect_url": redirect_url or base + "/",
        "public": public,
        "default_permissions": {p.name: p.access for p in PERMISSIONS},
        "default_events": list(EVENTS),
    }


def creation_url(org: str | None, host: str = "github.com") -> str:
    """Where the manifest is POSTed: the organization's App settings, or the user's."""
    if org:
        return f"https://{host}/organizations/{org}/settings/apps/new"
    return f"https://{host}/settings/apps/new"
