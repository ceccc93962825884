"""Shared helpers for the webhook tests: fixtures, signed headers, payload edits."""

from __future__ import annotations

import copy
import hashlib
import hmac
import json
from pathlib import Path
from typing import Any

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "webhooks"
BOT = "palimpsest-review"
SECRET = b"whsec_9f1c2b7e4a6d8c0e3b5a7f9d1c3e5b7a"
TOKEN = "glwt-4e8a1c6f2b9d0e7a3c5f8b1d"
DELIVERY = "72d3162e-cc78-11e3-81ab-4c9367dc0958"

# (provider, fixture name, event name the provider sends with it)
CASES: list[tuple[str, str, str]] = [
    ("github", "ping", "ping"),
    ("github", "push_default_branch", "push"),
    ("github", "push_other_branch", "push"),
    ("github", "push_tag", "push"),
    ("github", "push_branch_deleted", "push"),
    ("github", "pull_request_opened", "pull_request"),
    ("github", "pull_request_synchronize", "pull_request"),
    ("github", "pull_request_closed", "pull_request"),
    ("github", "issue_comment_created", "issue_comment"),
    ("github", "installation_created", "installation"),
    ("github", "installation_repositories_added", "installation_repositories"),
    ("github", "installation_repositories_removed", "installation_repositories"),
    ("gitlab", "push", "Push Hook"),
    ("gitlab", "push_branch_deleted", "Push Hook"),
    ("gitlab", "tag_push", "Tag Push Hook"),
    ("gitlab", "merge_request_open", "Merge Request Hook"),
    ("gitlab", "merge_request_update_commits", "Merge Request Hook"),
    ("gitlab", "merge_request_update_draft", "Merge Request Hook"),
    ("gitlab", "merge_request_merge", "Merge Request Hook"),
    ("gitlab", "note_merge_request", "Note Hook"),
    ("gitlab", "note_issue", "Note Hook"),
    ("bitbucket", "repo_push", "repo:push"),
    ("bitbucket", "repo_push_tag", "repo:push"),
    ("bitbucket", "repo_push_branch_deleted", "repo:push"),
    ("bitbucket", "pullrequest_created", "pullrequest:created"),
    ("bitbucket", "pullrequest_updated", "pullrequest:updated"),
    ("bitbucket", "pullrequest_fulfilled", "pullrequest:fulfilled"),
    ("bitbucket", "pullrequest_comment_created", "pullrequest:comment_created"),
]


def load(provider: str, name: str) -> dict[str, Any]:
    data = json.loads((FIXTURES / provider / f"{name}.json").read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


def encode(payload: object) -> bytes:
    return json.dumps(payload).encode()


def sign(body: bytes, secret: bytes = SECRET) -> str:
    return "sha256=" + hmac.new(secret, body, hashlib.sha256).hexdigest()


def headers_for(provider: str, event: str, body: bytes, *, delivery: str = DELIVERY) -> dict[str, str]:
    """The headers the provider sends with `body`, correctly signed with SECRET/TOKEN."""
    if provider == "github":
        return {
            "X-GitHub-Event": event,
            "X-GitHub-Delivery": delivery,
            "X-GitHub-Hook-ID": "503219876",
            "X-GitHub-Hook-Installation-Target-Type": "integration",
            "X-GitHub-Hook-Installation-Target-ID": "914203",
            "X-Hub-Signature-256": sign(body),
            "User-Agent": "GitHub-Hookshot/4f1a2b3",
            "Content-Type": "application/json",
        }
    if provider == "gitlab":
        return {
            "X-Gitlab-Event": event,
            "X-Gitlab-Event-UUID": delivery,
            "X-Gitlab-Webhook-UUID": "9a4e1b2c-5d6f-4a7b-8c9d-0e1f2a3b4c5d",
            "X-Gitlab-Instance": "https://gitlab.northwind.example",
            "X-Gitlab-Token": TOKEN,
            "User-Agent": "GitLab/17.9.2",
            "Content-Type": "application/json",
        }
    assert provider == "bitbucket"
    return {
        "X-Event-Key": event,
        "X-Request-UUID": delivery,
        "X-Hook-UUID": "2b7e5c1d-8f3a-4e9b-a6d0-c4f2e8b1a397",
        "X-Attempt-Number": "1",
        "X-Hub-Signature": sign(body),
        "User-Agent": "Bitbucket-Webhooks/2.0",
        "Content-Type": "application/json",
    }


def secret_for(provider: str) -> str | bytes:
    return TOKEN if provider == "gitlab" else SECRET


def _walk(payload: Any, dotted: str) -> tuple[Any, str | int]:
    keys: list[str | int] = [int(k) if k.isdigit() else k for k in dotted.split(".")]
    node = payload
    for key in keys[:-1]:
        node = node[key]
    return node, keys[-1]


def edited(payload: dict[str, Any], changes: dict[str, Any]) -> dict[str, Any]:
    """A deep copy of `payload` with dotted paths set (`a.b.0.c`)."""
    result = copy.deepcopy(payload)
    for dotted, value in changes.items():
        node, last = _walk(result, dotted)
        node[last] = value
    return result


def without(payload: dict[str, Any], *dotted_paths: str) -> dict[str, Any]:
    """A deep copy of `payload` with the dotted paths removed."""
    result = copy.deepcopy(payload)
    for dotted in dotted_paths:
        node, last = _walk(result, dotted)
        del node[last]
    return result
