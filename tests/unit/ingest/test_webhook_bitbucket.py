"""Bitbucket Cloud deliveries, from full-size fixtures, to normalised intents."""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from typing import Any

import pytest

from palimpsest.ingest.webhooks import (
    Ignored,
    IndexCandidates,
    IndexIntent,
    InstallationKey,
    ParsedDelivery,
    RepoRef,
    ReviewIntent,
    WebhookError,
    bitbucket,
)

from .webhook_support import BOT, DELIVERY, edited, encode, headers_for, load, without

PLANNER = RepoRef(
    provider="bitbucket",
    external_id="{3f0c9d2e-5b7a-4c1e-9a8d-6e2f1b4c7d90}",
    full_name="kestrel-freight/route-planner",
    clone_url="https://bitbucket.org/kestrel-freight/route-planner.git",
    default_branch=None,
    visibility="private",
)


def parse(event: str, payload: dict[str, Any], bot_name: str = BOT) -> ParsedDelivery:
    body = encode(payload)
    return bitbucket.parse(headers_for("bitbucket", event, body), body, bot_name=bot_name)


def ignored_reason(parsed: ParsedDelivery) -> str:
    assert isinstance(parsed.intent, Ignored)
    return parsed.intent.reason


def review_intent(parsed: ParsedDelivery) -> ReviewIntent:
    assert isinstance(parsed.intent, ReviewIntent)
    return parsed.intent


# -- repo:push -----------------------------------------------------------------------------


def test_branch_push_requests_an_index_and_leaves_the_default_branch_open() -> None:
    parsed = parse("repo:push", load("bitbucket", "repo_push"))
    assert (parsed.provider, parsed.delivery_id, parsed.event) == (
        "bitbucket",
        DELIVERY,
        "repo:push",
    )
    assert parsed.repo == PLANNER
    assert parsed.intent == IndexIntent(
        repo=PLANNER,
        branch="main",
        head_sha="5a4f04ed729f92a5e284f54f0b5cdf3cfb8648cf",
        head_commit_at=datetime(2025, 5, 6, 8, 2, 47, tzinfo=UTC),
        changed_paths=(),
        paths_complete=False,
        before_sha="20103ad27bc9d5822202415700dca6f4c1bd9d64",
        is_default_branch=None,
    )


def test_known_main_branch_decides_default_branch() -> None:
    payload = edited(
        load("bitbucket", "repo_push"), {"repository.mainbranch": {"type": "branch", "name": "main"}}
    )
    intent = parse("repo:push", payload).intent
    assert isinstance(intent, IndexIntent)
    assert intent.is_default_branch is True
    assert intent.repo.default_branch == "main"


def test_push_to_another_branch_is_ignored_when_main_branch_is_known() -> None:
    payload = edited(
        load("bitbucket", "repo_push"),
        {"repository.mainbranch": {"type": "branch", "name": "develop"}},
    )
    assert ignored_reason(parse("repo:push", payload)) == ("push to 'main', not the default branch 'develop'")


def test_push_of_several_branches_yields_candidates() -> None:
    payload = load("bitbucket", "repo_push")
    second = copy.deepcopy(payload["push"]["changes"][0])
    second["new"]["name"] = "release/1.9"
    second["old"]["name"] = "release/1.9"
    payload["push"]["changes"].append(second)
    intent = parse("repo:push", payload).intent
    assert isinstance(intent, IndexCandidates)
    assert [i.branch for i in intent.intents] == ["main", "release/1.9"]


def test_tag_push_is_ignored() -> None:
    assert ignored_reason(parse("repo:push", load("bitbucket", "repo_push_tag"))) == ("tag push (v1.9.0)")


def test_branch_deletion_is_ignored() -> None:
    reason = ignored_reason(parse("repo:push", load("bitbucket", "repo_push_branch_deleted")))
    assert reason == "branch 'spike/isochrones' deleted"


def test_public_repository() -> None:
    payload = edited(load("bitbucket", "repo_push"), {"repository.is_private": False})
    repo = parse("repo:push", payload).repo
    assert repo is not None
    assert repo.visibility == "public"


# -- pull requests -------------------------------------------------------------------------


def test_created_pull_request_requests_a_review() -> None:
    parsed = parse("pullrequest:created", load("bitbucket", "pullrequest_created"))
    assert parsed.action is None
    assert review_intent(parsed) == ReviewIntent(
        repo=PLANNER,
        number=88,
        base_sha="d75224c3c9e2",
        head_sha="07947ca3a49c",
        base_ref="main",
        head_ref="feature/rail-quota",
        title="Prefer rail legs within carrier quota",
        body=load("bitbucket", "pullrequest_created")["pullrequest"]["description"],
        draft=False,
        trigger="opened",
        comment_id=None,
        requested_by="rcosta",
        author="rcosta",
    )


def test_updated_pull_request_requests_a_review() -> None:
    intent = review_intent(parse("pullrequest:updated", load("bitbucket", "pullrequest_updated")))
    assert intent.trigger == "updated"
    assert intent.head_sha == "224cc369291a"


def test_draft_pull_request_passes_the_flag_on() -> None:
    payload = edited(load("bitbucket", "pullrequest_created"), {"pullrequest.draft": True})
    assert review_intent(parse("pullrequest:created", payload)).draft is True


@pytest.mark.parametrize(("state", "word"), [("MERGED", "merged"), ("DECLINED", "declined")])
def test_closed_pull_request_is_ignored(state: str, word: str) -> None:
    payload = edited(load("bitbucket", "pullrequest_updated"), {"pullrequest.state": state})
    assert ignored_reason(parse("pullrequest:updated", payload)) == f"pull request {word}"


def test_fulfilled_event_is_ignored() -> None:
    parsed = parse("pullrequest:fulfilled", load("bitbucket", "pullrequest_fulfilled"))
    assert ignored_reason(parsed) == "pull request merged"


def test_comment_mentioning_the_bot_requests_a_review() -> None:
    parsed = parse("pullrequest:comment_created", load("bitbucket", "pullrequest_comment_created"))
    intent = review_intent(parsed)
    assert intent.trigger == "comment"
    assert intent.comment_id == "561203987"
    assert intent.requested_by == "lhoffmann"
    assert intent.author == "rcosta"  # the pull request's author, not the commenter
    assert (intent.base_sha, intent.head_sha) == ("d75224c3c9e2", "224cc369291a")


def test_comment_mentioning_the_bot_by_account_id_form() -> None:
    payload = edited(
        load("bitbucket", "pullrequest_comment_created"),
        {"comment.content.raw": "@{palimpsest-review} review please"},
    )
    intent = parse("pullrequest:comment_created", payload).intent
    assert isinstance(intent, ReviewIntent)


def test_comment_without_the_mention_is_ignored() -> None:
    payload = edited(
        load("bitbucket", "pullrequest_comment_created"),
        {"comment.content.raw": "Can we cap detours at 10% instead?"},
    )
    assert "does not ask" in ignored_reason(parse("pullrequest:comment_created", payload))


def test_comment_by_the_bot_is_ignored() -> None:
    payload = edited(
        load("bitbucket", "pullrequest_comment_created"),
        {"comment.user.nickname": "palimpsest-review"},
    )
    assert ignored_reason(parse("pullrequest:comment_created", payload)) == ("comment written by the bot")


def test_deleted_comment_is_ignored() -> None:
    payload = edited(load("bitbucket", "pullrequest_comment_created"), {"comment.deleted": True})
    assert ignored_reason(parse("pullrequest:comment_created", payload)) == "comment deleted"


# -- unsupported events and malformed payloads ---------------------------------------------


def test_unsupported_event_is_ignored() -> None:
    parsed = parse("repo:fork", {"repository": load("bitbucket", "repo_push")["repository"]})
    assert ignored_reason(parsed) == "unsupported Bitbucket event 'repo:fork'"


@pytest.mark.parametrize(
    ("fixture", "event", "path"),
    [
        ("repo_push", "repo:push", "push"),
        ("repo_push", "repo:push", "push.changes.0.new.target"),
        ("repo_push", "repo:push", "repository.is_private"),
        ("pullrequest_created", "pullrequest:created", "pullrequest.source"),
        ("pullrequest_created", "pullrequest:created", "pullrequest.id"),
        ("pullrequest_comment_created", "pullrequest:comment_created", "comment.content"),
    ],
)
def test_missing_required_field_is_a_400_naming_it(fixture: str, event: str, path: str) -> None:
    with pytest.raises(WebhookError) as caught:
        parse(event, without(load("bitbucket", fixture), path))
    assert caught.value.status == 400
    field = path.replace(".0.", "[0].")
    assert caught.value.reason == f"missing required field '{field}'"


def test_installation_key_is_the_workspace() -> None:
    key = bitbucket.installation_key({}, load("bitbucket", "pullrequest_created"))
    assert key == InstallationKey(
        "bitbucket", "workspace", "{a7e41c08-92d3-4f6b-b15e-0c8d3a9f6e21}", "kestrel-freight"
    )


def test_installation_key_falls_back_to_the_owner() -> None:
    payload = without(load("bitbucket", "repo_push"), "repository.workspace")
    key = bitbucket.installation_key({}, payload)
    assert key.external_id == "{a7e41c08-92d3-4f6b-b15e-0c8d3a9f6e21}"
