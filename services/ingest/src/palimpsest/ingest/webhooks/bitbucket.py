"""Bitbucket Cloud webhooks: verify `X-Hub-Signature`, then turn a delivery into an intent.

Shapes follow Atlassian's "Event payloads" reference for Bitbucket Cloud. Handled events:
`repo:push`, `pullrequest:created`, `pullrequest:updated`, `pullrequest:comment_created`
(and `pullrequest:fulfilled`/`rejected`, which are ignored); anything else is `Ignored`. `X-Request-UUID` is the idempotency key.

Bitbucket webhooks belong to a repository or a workspace and carry no installation id:
`installation_key` names the workspace (`repository.workspace.uuid`, else the owner's uuid).
What the payloads do not say, the intents leave open: push changes carry no file lists
(`paths_complete` is False), the repository's main branch is usually absent
(`is_default_branch` None; a push touching several branches yields `IndexCandidates`), and
pull request commit hashes are abbreviated to 12 hex digits.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import replace
from typing import Final

from palimpsest.ingest.webhooks import feedback
from palimpsest.ingest.webhooks._payload import (
    Node,
    clip,
    parse_timestamp,
    required_header,
)
from palimpsest.ingest.webhooks._rules import (
    is_bot_author,
    off_default_branch,
    requests_full_review,
    requests_review,
)
from palimpsest.ingest.webhooks._template import DeliveryParser, Handled, Handler
from palimpsest.ingest.webhooks.errors import WebhookError
from palimpsest.ingest.webhooks.models import (
    Ignored,
    IndexCandidates,
    IndexIntent,
    InstallationKey,
    RepoRef,
    ReviewIntent,
    ReviewTrigger,
)
from palimpsest.ingest.webhooks.signatures import check_signature

PROVIDER: Final = "bitbucket"
SIGNATURE_HEADER: Final = "X-Hub-Signature"
_DEFAULT_WEB = "https://bitbucket.org"
_FULL_NAME = re.compile(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+")


def delivery_id(headers: Mapping[str, str]) -> str:
    """The `X-Request-UUID` of the delivery: its idempotency key."""
    return required_header(headers, "X-Request-UUID")


def event_name(headers: Mapping[str, str]) -> str:
    return required_header(headers, "X-Event-Key")


def installation_key(headers: Mapping[str, str], payload: object) -> InstallationKey:
    """The workspace the repository belongs to."""
    del headers  # Bitbucket names the hook (X-Hook-UUID), not the workspace, in headers
    if not isinstance(payload, dict):
        raise WebhookError(400, "JSON body is not an object")
    repository = Node(payload).node("repository")
    workspace = repository.opt_node("workspace") or repository.opt_node("owner")
    if workspace is None:
        raise WebhookError(400, "cannot tell which Bitbucket workspace sent this delivery")
    return InstallationKey(PROVIDER, "workspace", workspace.string("uuid"), workspace.opt_string("slug"))


def verify(secret: str | bytes, headers: Mapping[str, str], body: bytes) -> None:
    """Raise WebhookError(401) unless `X-Hub-Signature` signs `body` with `secret`."""
    check_signature(secret, headers, body, SIGNATURE_HEADER)


# -- repositories and accounts -----------------------------------------------------------


def _html_href(node: Node) -> str | None:
    links = node.opt_node("links")
    html = links.opt_node("html") if links is not None else None
    return html.url("href") if html is not None else None


def _repo(repository: Node) -> RepoRef:
    full_name = repository.string("full_name")
    if _FULL_NAME.fullmatch(full_name) is None or ".." in full_name:
        raise WebhookError(400, f"field '{repository.where('full_name')}' is not a workspace/slug pair")
    web_url = _html_href(repository) or f"{_DEFAULT_WEB}/{full_name}"
    main_branch = repository.opt_node("mainbranch")
    return RepoRef(
        provider=PROVIDER,
        external_id=repository.string("uuid"),
        full_name=full_name,
        clone_url=web_url.rstrip("/") + ".git",
        default_branch=main_branch.string("name") if main_branch is not None else None,
        visibility="private" if repository.boolean("is_private") else "public",
    )


def api_repository(repository: Node) -> RepoRef:
    """A repository as the REST API lists it (``GET /2.0/repositories/{workspace}``): the same
    object a delivery carries."""
    return _repo(repository)


def _account_name(account: Node | None) -> str | None:
    """How people mention the account: nickname, else display name, else uuid."""
    if account is None:
        return None
    for key in ("nickname", "display_name", "uuid"):
        value = account.opt_string(key)
        if value is not None:
            return value
    return None


# -- push --------------------------------------------------------------------------------


def _change_intent(change: Node, repo: RepoRef) -> IndexIntent | Ignored:
    new, old = change.opt_node("new"), change.opt_node("old")
    if new is None:
        kind = old.opt_string("type") if old is not None else None
        name = old.opt_string("name") if old is not None else None
        what = "tag" if kind == "tag" else "branch"
        return Ignored(f"{what} '{clip(name or '?')}' deleted")
    kind, name = new.string("type"), new.string("name")
    if kind == "tag":
        return Ignored(f"tag push ({clip(name)})")
    if kind != "branch":
        return Ignored(f"push to a {clip(kind)}, not a branch")
    elsewhere = off_default_branch(repo, name)
    if elsewhere is not None:
        return elsewhere
    target = new.node("target")
    old_target = old.opt_node("target") if old is not None else None
    return IndexIntent(
        repo=repo,
        branch=name,
        head_sha=target.sha("hash"),
        head_commit_at=parse_timestamp(target.opt_string("date")),
        changed_paths=(),
        paths_complete=False,
        before_sha=old_target.sha("hash") if old_target is not None else None,
        is_default_branch=None if repo.default_branch is None else True,
    )


def _push(payload: Node, _event: str, _bot_name: str) -> Handled:
    repo = _repo(payload.node("repository"))
    changes = payload.node("push").nodes("changes", required=True)
    intents: list[IndexIntent] = []
    reasons: list[str] = []
    for change in changes:
        outcome = _change_intent(change, repo)
        if isinstance(outcome, Ignored):
            if outcome.reason not in reasons:
                reasons.append(outcome.reason)
        else:
            intents.append(outcome)
    if not intents:
        return repo, Ignored("; ".join(reasons[:3]) or "push without ref changes")
    if len(intents) == 1:
        return repo, intents[0]
    return repo, IndexCandidates(tuple(intents))


# -- pull requests -----------------------------------------------------------------------


def _commit_hash(side: Node) -> str | None:
    commit = side.opt_node("commit")
    return commit.sha("hash") if commit is not None else None


def _review(
    repo: RepoRef,
    pull: Node,
    *,
    trigger: ReviewTrigger,
    comment_id: str | None,
    requested_by: str | None,
) -> ReviewIntent:
    source, destination = pull.node("source"), pull.node("destination")
    return ReviewIntent(
        repo=repo,
        number=pull.integer("id"),
        base_sha=_commit_hash(destination),
        head_sha=_commit_hash(source),
        base_ref=destination.node("branch").string("name"),
        head_ref=source.node("branch").string("name"),
        title=pull.text("title"),
        body=pull.text("description"),
        draft=pull.boolean("draft", default=False),
        trigger=trigger,
        comment_id=comment_id,
        requested_by=requested_by,
        author=_account_name(pull.opt_node("author")),
    )


def _pull_request(payload: Node, event: str, _bot_name: str) -> Handled:
    repo = _repo(payload.node("repository"))
    pull = payload.node("pullrequest")
    state = pull.string("state")
    if state != "OPEN":
        return repo, Ignored(f"pull request {clip(state.lower())}")
    trigger: ReviewTrigger = "opened" if event == "pullrequest:created" else "updated"
    requested_by = _account_name(payload.opt_node("actor"))
    return repo, _review(repo, pull, trigger=trigger, comment_id=None, requested_by=requested_by)


def _comment(payload: Node, _event: str, bot_name: str) -> Handled:
    repo = _repo(payload.node("repository"))
    comment, pull = payload.node("comment"), payload.node("pullrequest")
    if comment.boolean("deleted", default=False):
        return repo, Ignored("comment deleted")
    author = comment.opt_node("user") or payload.opt_node("actor")
    name = _account_name(author)
    if author is not None and (
        is_bot_author(name, bot_name) or is_bot_author(author.opt_string("account_id"), bot_name)
    ):
        return repo, Ignored("comment written by the bot")
    if pull.string("state") != "OPEN":
        return repo, Ignored("pull request is not open")
    text = comment.node("content").text("raw")
    if not requests_review(text, bot_name):
        reply = feedback.bitbucket_reply(payload, repo, name)  # a reply to a finding's comment?
        return repo, reply or Ignored(f"comment does not ask @{clip(bot_name)} for a review")
    intent = _review(repo, pull, trigger="comment", comment_id=comment.ident("id"), requested_by=name)
    return repo, replace(intent, full=requests_full_review(text, bot_name))


def _resolution(payload: Node, event: str, _bot_name: str) -> Handled:
    repo = _repo(payload.node("repository"))
    return repo, feedback.bitbucket_resolution(payload, repo, event, _account_name(payload.opt_node("actor")))


_HANDLERS: Final[dict[str, Handler]] = {
    "repo:push": _push,
    "pullrequest:comment_resolved": _resolution,
    "pullrequest:comment_reopened": _resolution,
    "pullrequest:created": _pull_request,
    "pullrequest:updated": _pull_request,
    "pullrequest:fulfilled": _pull_request,  # merged: ignored with the state as the reason
    "pullrequest:rejected": _pull_request,  # declined: likewise
    "pullrequest:comment_created": _comment,
}

PARSER: Final = DeliveryParser(PROVIDER, "Bitbucket", delivery_id, event_name, _HANDLERS)
# parse(headers, body, *, bot_name, decoded=None): one (already verified) delivery, normalised
parse: Final = PARSER.parse
