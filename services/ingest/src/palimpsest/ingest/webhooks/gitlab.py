"""GitLab webhooks: check `X-Gitlab-Token`, then turn a delivery into an intent.

Shapes follow GitLab's "Webhook events" reference. Handled events: `Push Hook`,
`Tag Push Hook` (always ignored), `Merge Request Hook`, `Note Hook`; anything else is
`Ignored`. The idempotency key is `Idempotency-Key` (GitLab 17.4+, stable across retries),
else `X-Gitlab-Event-UUID`.

GitLab has no app installations: a project or group webhook carries its own secret token.
`installation_key` names the project (`project.id`; group hooks send it too, with the
namespace path in `path` so a group installation can be matched by prefix), or the group for
group-only events. GitLab merge request payloads carry no base commit: `base_sha` is None.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Final

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
    RepoRef,
    ReviewIntent,
    ReviewTrigger,
    Visibility,
)
from palimpsest.ingest.webhooks.signatures import check_token

PROVIDER: Final = "gitlab"
AUTH_HEADER: Final = "X-Gitlab-Token"
_VISIBILITY: Final[dict[int, Visibility]] = {0: "private", 10: "internal", 20: "public"}
_CLOSED_STATES: Final = frozenset({"closed", "merged", "locked"})


def delivery_id(headers: Mapping[str, str]) -> str:
    """`Idempotency-Key` when GitLab sends it (stable across retries), else the event UUID."""
    found = header_value(headers, "Idempotency-Key") or header_value(headers, "X-Gitlab-Event-UUID")
    if found is None:
        raise WebhookError(400, "missing Idempotency-Key and X-Gitlab-Event-UUID headers")
    return found


def event_name(headers: Mapping[str, str]) -> str:
    return required_header(headers, "X-Gitlab-Event")


def installation_key(headers: Mapping[str, str], payload: object) -> InstallationKey:
    """The project the delivery is about (or the group, for group-only events)."""
    del headers  # GitLab names no sender in its headers; kept for a uniform signature
    if not isinstance(payload, dict):
        raise WebhookError(400, "JSON body is not an object")
    root = Node(payload)
    project = root.opt_node("project")
    if project is not None:
        path = project.opt_string("path_with_namespace")
        return InstallationKey(PROVIDER, "project", project.ident("id"), path)
    project_id = root.opt_ident("project_id")
    if project_id is not None:
        return InstallationKey(PROVIDER, "project", project_id, None)
    group_id = root.opt_ident("group_id")
    if group_id is not None:
        return InstallationKey(PROVIDER, "group", group_id, root.opt_string("group_path"))
    raise WebhookError(400, "cannot tell which GitLab project or group sent this delivery")


def verify(secret: str | bytes, headers: Mapping[str, str], body: bytes) -> None:
    """Raise WebhookError(401) unless `X-Gitlab-Token` equals the configured token."""
    del body  # GitLab does not sign the body; the shared token authenticates the sender
    check_token(secret, headers, AUTH_HEADER)


def _action(payload: Node) -> str | None:
    attributes = payload.peek_node("object_attributes")
    return attributes.peek_string("action") if attributes is not None else None


# -- repositories ------------------------------------------------------------------------


def _visibility(project: Node) -> Visibility:
    level = project.opt_integer("visibility_level")
    return _VISIBILITY.get(level, "private") if level is not None else "private"


def _repo(project: Node) -> RepoRef:
    return RepoRef(
        provider=PROVIDER,
        external_id=project.ident("id"),
        full_name=project.string("path_with_namespace"),
        clone_url=project.url("git_http_url"),
        default_branch=project.opt_string("default_branch"),
        visibility=_visibility(project),
    )


_API_VISIBILITY: Final[dict[str, Visibility]] = {
    "private": "private",
    "internal": "internal",
    "public": "public",
}


def api_repository(project: Node) -> RepoRef:
    """A project as the REST API lists it (``GET /groups/:id/projects``, ``GET /projects/:id``):
    ``http_url_to_repo`` and a ``visibility`` name where a webhook has ``git_http_url`` and a level."""
    return RepoRef(
        provider=PROVIDER,
        external_id=project.ident("id"),
        full_name=project.string("path_with_namespace"),
        clone_url=project.url("http_url_to_repo"),
        default_branch=project.opt_string("default_branch"),
        visibility=_API_VISIBILITY.get(project.opt_string("visibility") or "", "private"),
    )


# -- events ------------------------------------------------------------------------------


def _push(payload: Node, _event: str, _bot_name: str) -> Handled:
    repo = _repo(payload.node("project"))
    branch = pushed_branch(payload.string("ref"))
    if isinstance(branch, Ignored):
        return repo, branch
    after = payload.sha("after")
    head = payload.opt_sha("checkout_sha")
    if is_null_sha(after) or head is None:
        return repo, Ignored(f"branch '{clip(branch)}' deleted")
    elsewhere = off_default_branch(repo, branch)
    if elsewhere is not None:
        return repo, elsewhere
    commits = payload.nodes("commits")
    paths, complete = collect_paths(commits)
    total = payload.opt_integer("total_commits_count")
    before = payload.opt_sha("before")
    complete = complete and (total is None or total <= len(commits)) and not is_null_sha(before)
    return repo, IndexIntent(
        repo=repo,
        branch=branch,
        head_sha=head,
        head_commit_at=_commit_time(commits, head),
        changed_paths=paths,
        paths_complete=complete,
        before_sha=None if is_null_sha(before) else before,
        is_default_branch=None if repo.default_branch is None else True,
    )


def _commit_time(commits: list[Node], sha: str) -> datetime | None:
    for commit in commits:
        if commit.opt_sha("id") == sha:
            return parse_timestamp(commit.opt_string("timestamp"))
    return None


def _tag_push(payload: Node, _event: str, _bot_name: str) -> Handled:
    repo = _repo(payload.node("project"))
    ref = payload.string("ref")
    return repo, Ignored(f"tag push ({clip(ref.removeprefix('refs/tags/'))})")


def _draft(request: Node) -> bool:
    return request.boolean("draft", default=request.boolean("work_in_progress", default=False))


def _update_trigger(payload: Node, attributes: Node) -> ReviewTrigger | Ignored:
    """What an `update` means: new commits, leaving draft, or nothing a review needs."""
    if attributes.opt_sha("oldrev") is not None:
        return "synchronize"
    changes = payload.opt_node("changes")
    draft_change = None
    if changes is not None:
        draft_change = changes.opt_node("draft")
        if draft_change is None:
            draft_change = changes.opt_node("work_in_progress")
    if draft_change is None:
        return Ignored("merge request update without new commits")
    if draft_change.boolean("previous", default=False) and not draft_change.boolean("current", default=False):
        return "ready_for_review"
    return Ignored("draft-only edit")


def _merge_request_trigger(payload: Node, attributes: Node) -> ReviewTrigger | Ignored:
    action = attributes.opt_string("action")
    state = attributes.string("state")
    if action in ("close", "merge") or state in _CLOSED_STATES:
        return Ignored(f"merge request {clip(state)}")
    if action == "open":
        return "opened"
    if action == "reopen":
        return "reopened"
    if action == "update":
        return _update_trigger(payload, attributes)
    if action is None:
        return Ignored("merge request event without an action")
    return Ignored(f"merge request action '{clip(action)}' does not request a review")


def _author(request: Node, user: Node | None) -> str | None:
    """The merge request's author's username: GitLab's payloads name the author only by id, so it
    is known when the user who triggered the event is the author, else None (never a guess)."""
    author_id = request.opt_ident("author_id")
    if user is None or author_id is None or user.opt_ident("id") != author_id:
        return None
    return user.peek_string("username")


def _merge_request(payload: Node, _event: str, _bot_name: str) -> Handled:
    repo = _repo(payload.node("project"))
    attributes = payload.node("object_attributes")
    trigger = _merge_request_trigger(payload, attributes)
    if isinstance(trigger, Ignored):
        return repo, trigger
    user = payload.opt_node("user")
    return repo, ReviewIntent(
        repo=repo,
        number=attributes.integer("iid"),
        base_sha=None,
        head_sha=attributes.node("last_commit").sha("id"),
        base_ref=attributes.string("target_branch"),
        head_ref=attributes.string("source_branch"),
        title=attributes.text("title"),
        body=attributes.text("description"),
        draft=_draft(attributes),
        trigger=trigger,
        comment_id=None,
        requested_by=user.opt_string("username") if user is not None else None,
        author=_author(attributes, user),
    )


def _note(payload: Node, _event: str, bot_name: str) -> Handled:
    repo = _repo(payload.node("project"))
    attributes = payload.node("object_attributes")
    noteable = attributes.string("noteable_type")
    if noteable != "MergeRequest":
        return repo, Ignored(f"comment on {clip(noteable)}, not on a merge request")
    if attributes.opt_string("action") not in (None, "create"):
        return repo, Ignored("comment edited; only new comments request reviews")
    if attributes.boolean("system", default=False):
        return repo, Ignored("system note")
    user = payload.node("user")
    username = user.string("username")
    if is_bot_author(username, bot_name):
        return repo, Ignored("comment written by the bot")
    request = payload.node("merge_request")
    if request.string("state") != "opened":
        return repo, Ignored("merge request is not open")
    if not requests_review(attributes.text("note"), bot_name):
        reply = feedback.gitlab_reply(payload, repo)  # a reply in a finding's discussion?
        return repo, reply or Ignored(f"comment does not ask @{clip(bot_name)} for a review")
    last_commit = request.opt_node("last_commit")
    return repo, ReviewIntent(
        repo=repo,
        number=request.integer("iid"),
        base_sha=None,
        head_sha=last_commit.sha("id") if last_commit is not None else None,
        base_ref=request.string("target_branch"),
        head_ref=request.string("source_branch"),
        title=request.text("title"),
        body=request.text("description"),
        draft=_draft(request),
        trigger="comment",
        comment_id=attributes.ident("id"),
        requested_by=username,
        author=_author(request, user),
        full=requests_full_review(attributes.text("note"), bot_name),
    )


def _emoji(payload: Node, _event: str, bot_name: str) -> Handled:
    repo = _repo(payload.node("project"))
    return repo, feedback.gitlab_emoji(payload, repo, bot_name)


_HANDLERS: Final[dict[str, Handler]] = {
    "Push Hook": _push,
    "Emoji Hook": _emoji,
    "Tag Push Hook": _tag_push,
    "Merge Request Hook": _merge_request,
    "Note Hook": _note,
}

PARSER: Final = DeliveryParser(PROVIDER, "GitLab", delivery_id, event_name, _HANDLERS, action=_action)
# parse(headers, body, *, bot_name, decoded=None): one (already verified) delivery, normalised
parse: Final = PARSER.parse
