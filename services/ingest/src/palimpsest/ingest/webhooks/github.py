"""GitHub webhooks: verify `X-Hub-Signature-256`, then turn a delivery into an intent.

Shapes follow GitHub's "Webhook events and payloads" reference. Handled events: `ping`,
`push`, `pull_request`, `issue_comment`, `installation`, `installation_repositories`, and, as
feedback on posted findings, `pull_request_review_thread` and `pull_request_review_comment`
(see `feedback`); any other event is `Ignored`. `X-GitHub-Delivery` is the idempotency key (a redelivery reuses it).

The secret is looked up by `installation_key` before verifying: a GitHub App delivery names
its installation in the payload (`installation.id`); App-level deliveries (the App's `ping`)
and repository/organization webhooks have no installation, so the
`X-GitHub-Hook-Installation-Target-Type`/`-ID` headers identify the sender instead.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import datetime
from typing import Final
from urllib.parse import urlsplit

from palimpsest.ingest.webhooks import feedback
from palimpsest.ingest.webhooks._payload import (
    Node,
    clip,
    header_value,
    is_null_sha,
    parse_timestamp,
    required_header,
)
from palimpsest.ingest.webhooks._rules import (
    collect_paths,
    is_bot_author,
    off_default_branch,
    pushed_branch,
    requests_full_review,
    requests_review,
)
from palimpsest.ingest.webhooks._template import DeliveryParser, Handled, Handler
from palimpsest.ingest.webhooks.errors import WebhookError
from palimpsest.ingest.webhooks.models import (
    Ignored,
    IndexIntent,
    InstallationKey,
    Ping,
    RepoRef,
    ReposChanged,
    ReviewIntent,
    ReviewTrigger,
    Suspension,
    Visibility,
)
from palimpsest.ingest.webhooks.signatures import check_signature

PROVIDER: Final = "github"
SIGNATURE_HEADER: Final = "X-Hub-Signature-256"
# GitHub documents at most 20 commits for timeline events (2048 for webhook deliveries) and
# gives no total count: a push listing 20 or more commits may be truncated.
COMMITS_LIMIT: Final = 20
_DEFAULT_WEB = "https://github.com"
_FULL_NAME = re.compile(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+")
_REVIEW_ACTIONS: Final[dict[str, ReviewTrigger]] = {
    "opened": "opened",
    "reopened": "reopened",
    "synchronize": "synchronize",
    "ready_for_review": "ready_for_review",
}
_TARGET_KINDS: Final = {"integration": "app"}


def delivery_id(headers: Mapping[str, str]) -> str:
    """The `X-GitHub-Delivery` GUID: the idempotency key of the delivery."""
    return required_header(headers, "X-GitHub-Delivery")


def event_name(headers: Mapping[str, str]) -> str:
    return required_header(headers, "X-GitHub-Event")


def installation_key(headers: Mapping[str, str], payload: object) -> InstallationKey:
    """Who sent the delivery, to find its secret: the App installation, else the hook target."""
    if isinstance(payload, dict):
        installation = Node(payload).opt_node("installation")
        if installation is not None:
            account = installation.opt_node("account")
            path = account.opt_string("login") if account is not None else None
            return InstallationKey(PROVIDER, "installation", installation.ident("id"), path)
    target_type = header_value(headers, "X-GitHub-Hook-Installation-Target-Type")
    target_id = header_value(headers, "X-GitHub-Hook-Installation-Target-ID")
    if target_type is None or target_id is None:
        raise WebhookError(400, "cannot tell which GitHub installation sent this delivery")
    kind = _TARGET_KINDS.get(target_type.lower(), target_type.lower())
    return InstallationKey(PROVIDER, kind, target_id, None)


def verify(secret: str | bytes, headers: Mapping[str, str], body: bytes) -> None:
    """Raise WebhookError(401) unless `X-Hub-Signature-256` signs `body` with `secret`."""
    check_signature(secret, headers, body, SIGNATURE_HEADER)


def _installation_id(payload: Node) -> str | None:
    installation = payload.opt_node("installation")
    return installation.ident("id") if installation is not None else None


# -- repositories ------------------------------------------------------------------------


def _visibility(repo: Node) -> Visibility:
    declared = repo.opt_string("visibility")
    if declared == "public":
        return "public"
    if declared == "internal":
        return "internal"
    if declared == "private":
        return "private"
    return "private" if repo.boolean("private") else "public"


def _repo(repo: Node) -> RepoRef:
    """A full repository object (push, pull_request, issue_comment, ping)."""
    return RepoRef(
        provider=PROVIDER,
        external_id=repo.ident("id"),
        full_name=repo.string("full_name"),
        clone_url=repo.url("clone_url"),
        default_branch=repo.opt_string("default_branch"),
        visibility=_visibility(repo),
    )


def api_repository(repo: Node) -> RepoRef:
    """A repository as the REST API lists it (``GET /installation/repositories``): the same full
    object a push or pull request delivery carries."""
    return _repo(repo)


def _web_base(installation: Node) -> str:
    """Scheme and host of the GitHub instance (github.com or an Enterprise Server)."""
    account = installation.opt_node("account")
    html_url = account.opt_string("html_url") if account is not None else None
    if html_url is None:
        return _DEFAULT_WEB
    try:
        parts = urlsplit(html_url)
    except ValueError:
        return _DEFAULT_WEB
    if parts.scheme not in ("http", "https") or not parts.hostname or "@" in parts.netloc:
        return _DEFAULT_WEB
    return f"{parts.scheme}://{parts.netloc}"


def _listed_repo(repo: Node, web_base: str) -> RepoRef:
    """The short repository objects of installation events (id, name, full_name, private)."""
    full_name = repo.string("full_name")
    if _FULL_NAME.fullmatch(full_name) is None or ".." in full_name:
        raise WebhookError(400, f"field '{repo.where('full_name')}' is not an owner/name pair")
    return RepoRef(
        provider=PROVIDER,
        external_id=repo.ident("id"),
        full_name=full_name,
        clone_url=f"{web_base}/{full_name}.git",
        default_branch=None,
        visibility="private" if repo.boolean("private") else "public",
    )


# -- events ------------------------------------------------------------------------------


def _ping(payload: Node, _event: str, _bot_name: str) -> Handled:
    repository = payload.opt_node("repository")
    return (_repo(repository) if repository is not None else None), Ping()


def _push(payload: Node, _event: str, _bot_name: str) -> Handled:
    repo = _repo(payload.node("repository"))
    branch = pushed_branch(payload.string("ref"))
    if isinstance(branch, Ignored):
        return repo, branch
    after = payload.sha("after")
    if payload.boolean("deleted", default=False) or is_null_sha(after):
        return repo, Ignored(f"branch '{clip(branch)}' deleted")
    elsewhere = off_default_branch(repo, branch)
    if elsewhere is not None:
        return repo, elsewhere
    return repo, _index_intent(payload, repo, branch, after)


def _index_intent(payload: Node, repo: RepoRef, branch: str, after: str) -> IndexIntent:
    commits = payload.nodes("commits")
    head = payload.opt_node("head_commit")
    paths, complete = collect_paths(commits if commits else ([head] if head else []))
    before = payload.opt_sha("before")
    complete = (
        complete
        and len(commits) < COMMITS_LIMIT
        and not payload.boolean("forced", default=False)
        and not payload.boolean("created", default=False)
        and not is_null_sha(before)
    )
    return IndexIntent(
        repo=repo,
        branch=branch,
        head_sha=after,
        head_commit_at=_commit_time(head, commits, after),
        changed_paths=paths,
        paths_complete=complete,
        before_sha=None if is_null_sha(before) else before,
        is_default_branch=None if repo.default_branch is None else True,
    )


def _commit_time(head: Node | None, commits: list[Node], sha: str) -> datetime | None:
    for commit in ([head] if head is not None else []) + commits:
        if commit.opt_sha("id") == sha:
            return parse_timestamp(commit.opt_string("timestamp"))
    return None


def _pull_request(payload: Node, _event: str, _bot_name: str) -> Handled:
    repo = _repo(payload.node("repository"))
    action = payload.string("action")
    pull = payload.node("pull_request")
    if action == "closed":
        merged = pull.boolean("merged", default=False)
        return repo, Ignored("pull request merged" if merged else "pull request closed")
    if action == "converted_to_draft":
        return repo, Ignored("draft-only edit: pull request converted to draft")
    trigger = _REVIEW_ACTIONS.get(action)
    if trigger is None:
        return repo, Ignored(f"pull request action '{clip(action)}' does not request a review")
    if pull.string("state") != "open":
        return repo, Ignored("pull request is not open")
    base, head = pull.node("base"), pull.node("head")
    sender = payload.opt_node("sender")
    return repo, ReviewIntent(
        repo=repo,
        number=pull.integer("number"),
        base_sha=base.sha("sha"),
        head_sha=head.sha("sha"),
        base_ref=base.string("ref"),
        head_ref=head.string("ref"),
        title=pull.text("title"),
        body=pull.text("body"),
        draft=pull.boolean("draft", default=False),
        trigger=trigger,
        comment_id=None,
        requested_by=sender.opt_string("login") if sender is not None else None,
        author=_login(pull),
    )


def _login(item: Node) -> str | None:
    """The login of a pull request's (or its issue's) author."""
    user = item.opt_node("user")
    return user.peek_string("login") if user is not None else None  # optional: never refuses a delivery


def _issue_comment(payload: Node, _event: str, bot_name: str) -> Handled:
    repo = _repo(payload.node("repository"))
    action = payload.string("action")
    issue, comment = payload.node("issue"), payload.node("comment")
    if action != "created":
        return repo, Ignored(f"comment {clip(action)}; only new comments request reviews")
    if not issue.has("pull_request"):
        return repo, Ignored("comment on an issue, not a pull request")
    author = comment.node("user")
    login = author.string("login")
    if author.opt_string("type") == "Bot" or is_bot_author(login, bot_name):
        return repo, Ignored("comment written by a bot")
    if issue.string("state") != "open":
        return repo, Ignored("pull request is not open")
    if not requests_review(comment.text("body"), bot_name):
        return repo, Ignored(f"comment does not ask @{clip(bot_name)} for a review")
    return repo, ReviewIntent(
        repo=repo,
        number=issue.integer("number"),
        base_sha=None,
        head_sha=None,
        base_ref=None,
        head_ref=None,
        title=issue.text("title"),
        body=issue.text("body"),
        draft=issue.boolean("draft", default=False),
        trigger="comment",
        comment_id=comment.ident("id"),
        requested_by=login,
        author=_login(issue),
        full=requests_full_review(comment.text("body"), bot_name),
    )


def _installation(payload: Node, _event: str, _bot_name: str) -> Handled:
    action = payload.string("action")
    installation = payload.node("installation")
    installation_id = installation.ident("id")
    if action in ("suspend", "unsuspend"):
        return None, Suspension(suspended=action == "suspend")
    web_base = _web_base(installation)
    repos = tuple(_listed_repo(repo, web_base) for repo in payload.nodes("repositories"))
    if action == "created":
        return None, ReposChanged(installation_id, added=repos, removed=())
    if action == "deleted":
        return None, ReposChanged(installation_id, added=(), removed=repos)
    return None, Ignored(f"installation {clip(action)}; repositories unchanged")


def _installation_repositories(payload: Node, _event: str, _bot_name: str) -> Handled:
    action = payload.string("action")
    installation = payload.node("installation")
    installation_id = installation.ident("id")
    web_base = _web_base(installation)
    added = tuple(_listed_repo(r, web_base) for r in payload.nodes("repositories_added"))
    removed = tuple(_listed_repo(r, web_base) for r in payload.nodes("repositories_removed"))
    if action not in ("added", "removed"):
        return None, Ignored(f"installation_repositories action '{clip(action)}' not handled")
    return None, ReposChanged(installation_id, added=added, removed=removed)


def _review_thread(payload: Node, _event: str, bot_name: str) -> Handled:
    repo = _repo(payload.node("repository"))
    return repo, feedback.github_thread(payload, repo, bot_name)


def _review_comment(payload: Node, _event: str, bot_name: str) -> Handled:
    repo = _repo(payload.node("repository"))
    return repo, feedback.github_review_comment(payload, repo, bot_name)


_HANDLERS: Final[dict[str, Handler]] = {
    "ping": _ping,
    "pull_request_review_thread": _review_thread,
    "pull_request_review_comment": _review_comment,
    "push": _push,
    "pull_request": _pull_request,
    "issue_comment": _issue_comment,
    "installation": _installation,
    "installation_repositories": _installation_repositories,
}

# GitHub sends these to every App without a subscription (the App's `ping` when it is created or
# its webhook changes; `installation` and `installation_repositories` on every install change):
# a manifest cannot list them. Every other handled event is one the App must subscribe to.
ALWAYS_SENT: Final = frozenset({"ping", "installation", "installation_repositories"})
SUBSCRIBED_EVENTS: Final[tuple[str, ...]] = tuple(sorted(e for e in _HANDLERS if e not in ALWAYS_SENT))

PARSER: Final = DeliveryParser(
    PROVIDER,
    "GitHub",
    delivery_id,
    event_name,
    _HANDLERS,
    action=lambda payload: payload.peek_string("action"),
    installation_id=_installation_id,
)
# parse(headers, body, *, bot_name, decoded=None): one (already verified) delivery, normalised
parse: Final = PARSER.parse
