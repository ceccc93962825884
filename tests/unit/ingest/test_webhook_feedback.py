"""Feedback webhooks on posted findings, parsed: what is feedback, and what is ignored and why."""

from __future__ import annotations

from typing import Any

from palimpsest.ingest.webhooks import PROVIDERS, FeedbackIntent, Ignored, ParsedDelivery

from .webhook_support import BOT, encode, headers_for, load

FP = "e" * 32


def parse(provider: str, event: str, payload: dict[str, Any]) -> ParsedDelivery:
    body = encode(payload)
    return PROVIDERS[provider].parse(headers_for(provider, event, body), body, bot_name=BOT)


def _github(**comment: Any) -> dict[str, Any]:
    base = load("github", "issue_comment_created")
    common = {k: base[k] for k in ("repository", "sender", "installation")}
    body = {"id": 9, "body": "ok", "user": {"login": "dev", "type": "User"}, **comment}
    return {"action": "created", "comment": body, "pull_request": {"number": 4}, **common}


def test_github_review_threads_and_replies() -> None:
    base = load("github", "issue_comment_created")
    thread = {
        "action": "unresolved",
        "thread": {"comments": [{"id": 5, "body": f"x <!-- palimpsest-finding fp={FP} -->"}]},
        "pull_request": {"number": 4},
        **{k: base[k] for k in ("repository", "sender", "installation")},
    }
    intent = parse("github", "pull_request_review_thread", thread).intent
    assert isinstance(intent, FeedbackIntent)
    assert (intent.kind, intent.refs, intent.fingerprint, intent.number) == ("unresolved", ("5",), FP, 4)
    reply = parse("github", "pull_request_review_comment", _github(in_reply_to_id=5)).intent
    assert isinstance(reply, FeedbackIntent) and (reply.kind, reply.refs, reply.actor) == (
        "reply",
        ("5",),
        "dev",
    )
    top = parse("github", "pull_request_review_comment", _github()).intent
    assert isinstance(top, Ignored) and "not a reply" in top.reason
    bot = parse(
        "github",
        "pull_request_review_comment",
        _github(in_reply_to_id=5, user={"login": BOT, "type": "User"}),
    )
    assert isinstance(bot.intent, Ignored)
    thread["action"] = "created"
    assert isinstance(parse("github", "pull_request_review_thread", thread).intent, Ignored)


def test_gitlab_replies_and_emoji() -> None:
    note = load("gitlab", "note_merge_request")
    note["object_attributes"]["note"] = "thanks"
    plain = parse("gitlab", "Note Hook", note).intent
    assert isinstance(plain, Ignored)  # a general comment: neither a review request nor feedback
    note["object_attributes"].update({"type": "DiffNote", "note": "why?"})
    reply = parse("gitlab", "Note Hook", note).intent
    assert isinstance(reply, FeedbackIntent) and reply.kind == "reply"
    assert reply.refs == (note["object_attributes"]["discussion_id"],)
    emoji = {
        "object_kind": "emoji",
        "event_type": "revoke",
        "user": note["user"],
        "project": note["project"],
        "object_attributes": {"name": "thumbsdown", "awardable_type": "Note", "awardable_id": 3},
        "merge_request": note["merge_request"],
    }
    assert isinstance(parse("gitlab", "Emoji Hook", emoji).intent, Ignored)
    emoji["event_type"] = "award"
    award = parse("gitlab", "Emoji Hook", emoji).intent
    assert isinstance(award, FeedbackIntent) and (award.kind, award.detail, award.refs) == (
        "reaction",
        "thumbsdown",
        ("3",),
    )
    emoji["object_attributes"]["awardable_type"] = "MergeRequest"
    assert isinstance(parse("gitlab", "Emoji Hook", emoji).intent, Ignored)


def test_bitbucket_resolution_and_replies() -> None:
    payload = load("bitbucket", "pullrequest_comment_created")
    payload["comment"]["content"]["raw"] = f"y <!-- palimpsest-finding fp={FP} -->"
    reopened = parse("bitbucket", "pullrequest:comment_reopened", payload).intent
    assert isinstance(reopened, FeedbackIntent) and (reopened.kind, reopened.fingerprint) == (
        "unresolved",
        FP,
    )
    payload["comment"]["content"]["raw"] = "plain"
    assert isinstance(parse("bitbucket", "pullrequest:comment_created", payload).intent, Ignored)
    payload["comment"]["parent"] = {"id": 77}
    reply = parse("bitbucket", "pullrequest:comment_created", payload).intent
    assert isinstance(reply, FeedbackIntent) and (reply.kind, reply.refs) == ("reply", ("77",))
