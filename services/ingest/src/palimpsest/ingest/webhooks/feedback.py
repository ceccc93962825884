"""Webhooks about the reviewer's posted findings: resolved, reopened, replied to, reacted to.

What each provider sends (and what it does not):

* GitHub: ``pull_request_review_thread`` (``resolved`` / ``unresolved``; the thread's comments carry
  the finding's marker) and ``pull_request_review_comment`` ``created`` with ``in_reply_to_id`` (a
  reply). GitHub sends no webhook for reactions.
* GitLab: ``Note Hook`` on a merge request diff discussion that is not a review request (a reply;
  ``discussion_id`` names the thread) and ``Emoji Hook`` ``award`` on a note (a reaction). GitLab
  sends no webhook when a discussion is resolved.
* Bitbucket: ``pullrequest:comment_resolved`` / ``pullrequest:comment_reopened`` (the comment and
  its text) and ``pullrequest:comment_created`` with a ``parent`` (a reply). No reaction webhooks.

The ingest service matches ``refs`` (or the marker's fingerprint) against the threads the reviewer
recorded when it posted (``review_threads``); anything else is ignored with a reason.
"""

from __future__ import annotations

from palimpsest.core.wire import marker_fingerprint
from palimpsest.ingest.webhooks._payload import Node, clip
from palimpsest.ingest.webhooks._rules import is_bot_author
from palimpsest.ingest.webhooks.models import FeedbackIntent, Ignored, Intent, RepoRef


def github_thread(payload: Node, repo: RepoRef, bot_name: str) -> Intent:
    """``pull_request_review_thread``: a thread resolved or unresolved."""
    action = payload.string("action")
    if action not in ("resolved", "unresolved"):
        return Ignored(f"review thread {clip(action)}")
    thread = payload.node("thread")
    comments = thread.nodes("comments")
    if not comments:
        return Ignored("review thread without comments")
    sender = payload.opt_node("sender")
    return FeedbackIntent(
        repo=repo,
        number=payload.node("pull_request").integer("number"),
        kind="resolved" if action == "resolved" else "unresolved",
        refs=tuple(c.ident("id") for c in comments[:1]),
        fingerprint=marker_fingerprint(comments[0].text("body")),
        actor=sender.opt_string("login") if sender is not None else None,
    )


def github_review_comment(payload: Node, repo: RepoRef, bot_name: str) -> Intent:
    """``pull_request_review_comment``: a reply in a finding's thread."""
    action = payload.string("action")
    comment = payload.node("comment")
    if action != "created":
        return Ignored(f"review comment {clip(action)}")
    reply_to = comment.opt_ident("in_reply_to_id")
    if reply_to is None:
        return Ignored("a review comment, not a reply")
    author = comment.node("user")
    login = author.string("login")
    if author.opt_string("type") == "Bot" or is_bot_author(login, bot_name):
        return Ignored("comment written by a bot")
    return FeedbackIntent(
        repo=repo,
        number=payload.node("pull_request").integer("number"),
        kind="reply",
        refs=(reply_to,),
        fingerprint=None,
        actor=login,
    )


def gitlab_reply(payload: Node, repo: RepoRef) -> Intent | None:
    """A merge request note in a diff discussion (None: not one; the caller says why it ignores it)."""
    attributes = payload.node("object_attributes")
    discussion = attributes.opt_string("discussion_id")
    if discussion is None or attributes.opt_string("type") != "DiffNote":
        return None
    user = payload.opt_node("user")
    return FeedbackIntent(
        repo=repo,
        number=payload.node("merge_request").integer("iid"),
        kind="reply",
        refs=(discussion,),
        fingerprint=None,
        actor=user.opt_string("username") if user is not None else None,
    )


def gitlab_emoji(payload: Node, repo: RepoRef, bot_name: str) -> Intent:
    """``Emoji Hook``: a reaction awarded on a merge request note."""
    if payload.opt_string("event_type") != "award":
        return Ignored(f"emoji {clip(payload.opt_string('event_type') or 'event')}; only awards are feedback")
    attributes = payload.node("object_attributes")
    if attributes.opt_string("awardable_type") != "Note":
        return Ignored("emoji on something other than a comment")
    request = payload.opt_node("merge_request")
    if request is None:
        return Ignored("emoji on a comment outside a merge request")
    user = payload.opt_node("user")
    note = payload.opt_node("note")
    refs = [attributes.ident("awardable_id")]
    if note is not None and note.opt_string("discussion_id"):
        refs.append(note.string("discussion_id"))
    return FeedbackIntent(
        repo=repo,
        number=request.integer("iid"),
        kind="reaction",
        refs=tuple(refs),
        fingerprint=marker_fingerprint(note.text("note")) if note is not None and note.has("note") else None,
        actor=user.opt_string("username") if user is not None else None,
        detail=clip(attributes.string("name")),
    )


def bitbucket_resolution(payload: Node, repo: RepoRef, event: str, actor: str | None) -> Intent:
    """``pullrequest:comment_resolved`` / ``pullrequest:comment_reopened``."""
    comment = payload.node("comment")
    content = comment.opt_node("content")
    return FeedbackIntent(
        repo=repo,
        number=payload.node("pullrequest").integer("id"),
        kind="resolved" if event.endswith("resolved") else "unresolved",
        refs=(comment.ident("id"),),
        fingerprint=marker_fingerprint(content.text("raw")) if content is not None else None,
        actor=actor,
    )


def bitbucket_reply(payload: Node, repo: RepoRef, actor: str | None) -> Intent | None:
    """A pull request comment that answers another one (None: not a reply)."""
    parent = payload.node("comment").opt_node("parent")
    if parent is None:
        return None
    return FeedbackIntent(
        repo=repo,
        number=payload.node("pullrequest").integer("id"),
        kind="reply",
        refs=(parent.ident("id"),),
        fingerprint=None,
        actor=actor,
    )
