"""GitHub deliveries, from full-size fixtures, to normalised intents."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from palimpsest.ingest.webhooks import (
    Ignored,
    IndexIntent,
    InstallationKey,
    ParsedDelivery,
    Ping,
    RepoRef,
    ReposChanged,
    ReviewIntent,
    Suspension,
    WebhookError,
    github,
)

from .webhook_support import BOT, DELIVERY, edited, encode, headers_for, load, without


def parse(event: str, payload: dict[str, Any], bot_name: str = BOT) -> ParsedDelivery:
    body = encode(payload)
    return github.parse(headers_for("github", event, body), body, bot_name=bot_name)


def index_intent(parsed: ParsedDelivery) -> IndexIntent:
    assert isinstance(parsed.intent, IndexIntent)
    return parsed.intent


def review_intent(parsed: ParsedDelivery) -> ReviewIntent:
    assert isinstance(parsed.intent, ReviewIntent)
    return parsed.intent


def ignored_reason(parsed: ParsedDelivery) -> str:
    assert isinstance(parsed.intent, Ignored)
    assert parsed.ignored
    return parsed.intent.reason


LEDGER = RepoRef(
    provider="github",
    external_id="712384561",
    full_name="northwind-labs/ledger-service",
    clone_url="https://github.com/northwind-labs/ledger-service.git",
    default_branch="main",
    visibility="private",
)


# -- ping ----------------------------------------------------------------------------------


def test_ping_is_acknowledged_without_a_repository() -> None:
    parsed = parse("ping", load("github", "ping"))
    assert parsed.intent == Ping()
    assert parsed.repo is None
    assert parsed.installation_external_id is None
    assert (parsed.provider, parsed.delivery_id, parsed.event) == ("github", DELIVERY, "ping")


def test_repository_webhook_ping_names_its_repository() -> None:
    payload = load("github", "ping") | {"repository": load("github", "pull_request_opened")["repository"]}
    assert parse("ping", payload).repo == LEDGER


# -- push ----------------------------------------------------------------------------------


def test_push_to_default_branch_requests_an_index() -> None:
    parsed = parse("push", load("github", "push_default_branch"))
    intent = index_intent(parsed)
    assert parsed.repo == LEDGER
    assert parsed.installation_external_id == "52817364"
    assert parsed.action is None
    assert intent == IndexIntent(
        repo=LEDGER,
        branch="main",
        head_sha="a625406f6977d45c1391b078f4d3656e0b75bfcb",
        head_commit_at=datetime(2025, 3, 14, 9, 22, 41, tzinfo=UTC),
        changed_paths=(
            "CHANGELOG.md",
            "docs/adr/0012-single-entry-reversals.md",
            "docs/adr/README.md",
            "src/ledger/journal.py",
            "src/ledger/legacy_rounding.py",
            "src/ledger/money.py",
            "src/ledger/posting.py",
            "src/ledger/reversal.py",
            "tests/ledger/test_legacy_rounding.py",
            "tests/ledger/test_reversal.py",
        ),
        paths_complete=True,
        before_sha="5da16f820a6ee7d49ad271272b50d3596b02f8c2",
        is_default_branch=True,
    )


@pytest.mark.parametrize(
    "change",
    [{"forced": True}, {"created": True}, {"before": "0" * 40}],
    ids=["forced", "created", "new-branch"],
)
def test_rewritten_or_new_history_makes_paths_incomplete(change: dict[str, Any]) -> None:
    intent = index_intent(parse("push", edited(load("github", "push_default_branch"), change)))
    assert not intent.paths_complete
    assert intent.changed_paths  # what the payload lists is still passed on


def test_new_branch_has_no_before_sha() -> None:
    payload = edited(load("github", "push_default_branch"), {"before": "0" * 40})
    assert index_intent(parse("push", payload)).before_sha is None


def test_a_commit_list_at_the_documented_limit_may_be_truncated() -> None:
    payload = load("github", "push_default_branch")
    payload["commits"] = payload["commits"] * 7  # 21 entries
    intent = index_intent(parse("push", payload))
    assert not intent.paths_complete
    assert len(intent.changed_paths) == 10  # de-duplicated


def test_paths_fall_back_to_the_head_commit() -> None:
    payload = edited(load("github", "push_default_branch"), {"commits": []})
    intent = index_intent(parse("push", payload))
    assert intent.changed_paths == (
        "CHANGELOG.md",
        "docs/adr/0012-single-entry-reversals.md",
        "docs/adr/README.md",
    )


def test_unreadable_head_commit_time_is_unknown_not_now() -> None:
    payload = edited(load("github", "push_default_branch"), {"head_commit.timestamp": "soon"})
    payload["commits"][-1]["timestamp"] = "soon"
    assert index_intent(parse("push", payload)).head_commit_at is None


def test_push_to_another_branch_is_ignored_with_the_reason() -> None:
    parsed = parse("push", load("github", "push_other_branch"))
    assert parsed.repo == LEDGER
    assert ignored_reason(parsed) == ("push to 'feature/fx-revaluation', not the default branch 'main'")


def test_tag_push_is_ignored() -> None:
    assert ignored_reason(parse("push", load("github", "push_tag"))) == "tag push (v2.14.0)"


def test_branch_deletion_is_ignored() -> None:
    reason = ignored_reason(parse("push", load("github", "push_branch_deleted")))
    assert reason == "branch 'feature/fx-revaluation' deleted"


def test_push_to_a_non_branch_ref_is_ignored() -> None:
    payload = edited(load("github", "push_default_branch"), {"ref": "refs/notes/commits"})
    assert "not a branch" in ignored_reason(parse("push", payload))


# -- pull_request --------------------------------------------------------------------------


@pytest.mark.parametrize("action", ["opened", "reopened", "synchronize", "ready_for_review"])
def test_pull_request_actions_that_request_a_review(action: str) -> None:
    payload = edited(load("github", "pull_request_opened"), {"action": action})
    parsed = parse("pull_request", payload)
    assert parsed.action == action
    assert review_intent(parsed) == ReviewIntent(
        repo=LEDGER,
        number=131,
        base_sha="91da0c8a3eca8c3fed9d6cdab16b7f7a692f7c10",
        head_sha="7a24b6fb90f485ed5fb44ac8fe19513ba69a3d5a",
        base_ref="main",
        head_ref="feature/fx-revaluation",
        title="Nightly FX revaluation of open positions",
        body=payload["pull_request"]["body"],
        draft=False,
        trigger=action,  # type: ignore[arg-type]
        comment_id=None,
        requested_by="dtrinh",
        author="dtrinh",
    )


def test_synchronize_fixture_carries_the_new_head() -> None:
    intent = review_intent(parse("pull_request", load("github", "pull_request_synchronize")))
    assert intent.trigger == "synchronize"
    assert intent.head_sha == "6da2b0b5fba227b22679d03c77112e6299dd4f67"


def test_draft_flag_and_null_body_pass_through() -> None:
    payload = edited(
        load("github", "pull_request_opened"),
        {"pull_request.draft": True, "pull_request.body": None},
    )
    intent = review_intent(parse("pull_request", payload))
    assert intent.draft is True
    assert intent.body == ""


def test_merged_pull_request_is_ignored() -> None:
    reason = ignored_reason(parse("pull_request", load("github", "pull_request_closed")))
    assert reason == "pull request merged"


def test_closed_unmerged_pull_request_is_ignored() -> None:
    payload = edited(load("github", "pull_request_closed"), {"pull_request.merged": False})
    assert ignored_reason(parse("pull_request", payload)) == "pull request closed"


def test_draft_only_edit_is_ignored() -> None:
    payload = edited(
        load("github", "pull_request_opened"),
        {"action": "converted_to_draft", "pull_request.draft": True},
    )
    assert ignored_reason(parse("pull_request", payload)).startswith("draft-only edit")


@pytest.mark.parametrize("action", ["labeled", "edited", "assigned", "review_requested"])
def test_other_pull_request_actions_are_ignored(action: str) -> None:
    payload = edited(load("github", "pull_request_opened"), {"action": action})
    assert "does not request a review" in ignored_reason(parse("pull_request", payload))


# -- issue_comment -------------------------------------------------------------------------


def test_comment_mentioning_the_bot_requests_a_review_without_shas() -> None:
    parsed = parse("issue_comment", load("github", "issue_comment_created"))
    assert parsed.action == "created"
    intent = review_intent(parsed)
    assert (intent.base_sha, intent.head_sha, intent.base_ref, intent.head_ref) == (None,) * 4
    assert intent.number == 131
    assert intent.trigger == "comment"
    assert intent.comment_id == "2724318856"
    assert intent.requested_by == "priya-raman"
    assert intent.author == "dtrinh"  # the pull request's author, not the commenter
    assert intent.title == "Nightly FX revaluation of open positions"


def test_a_push_by_someone_else_keeps_the_pull_requests_author() -> None:
    payload = edited(load("github", "pull_request_synchronize"), {"sender.login": "ci-rebaser"})
    intent = review_intent(parse("pull_request", payload))
    assert (intent.author, intent.requested_by) == ("dtrinh", "ci-rebaser")


def test_a_malformed_author_login_loses_the_author_not_the_delivery() -> None:
    payload = edited(load("github", "pull_request_opened"), {"pull_request.user.login": "bad\x00login"})
    intent = review_intent(parse("pull_request", payload))
    assert intent.author is None and intent.title == "Nightly FX revaluation of open positions"


def test_the_app_login_also_works_as_bot_name() -> None:
    parsed = parse(
        "issue_comment", load("github", "issue_comment_created"), bot_name="palimpsest-review[bot]"
    )
    assert isinstance(parsed.intent, ReviewIntent)


@pytest.mark.parametrize(
    ("body", "why"),
    [
        ("LGTM, merging after CI.", "does not ask"),
        ("@palimpsest-review thanks for the summary!", "does not ask"),
        ("Please review this, @palimpsest-reviewer", "does not ask"),
        ("> @palimpsest-review please review\n\nDone, thanks.", "does not ask"),
        ("```\n@palimpsest-review review\n```", "does not ask"),
    ],
    ids=["no-mention", "mention-without-review", "other-user", "quoted", "code-block"],
)
def test_comment_without_a_review_request_is_ignored(body: str, why: str) -> None:
    payload = edited(load("github", "issue_comment_created"), {"comment.body": body})
    assert why in ignored_reason(parse("issue_comment", payload))


def test_comment_by_a_bot_is_ignored() -> None:
    payload = edited(
        load("github", "issue_comment_created"),
        {"comment.user.login": "palimpsest-review[bot]", "comment.user.type": "Bot"},
    )
    assert ignored_reason(parse("issue_comment", payload)) == "comment written by a bot"


def test_comment_on_a_plain_issue_is_ignored() -> None:
    payload = without(load("github", "issue_comment_created"), "issue.pull_request")
    assert "not a pull request" in ignored_reason(parse("issue_comment", payload))


def test_edited_comment_is_ignored() -> None:
    payload = edited(load("github", "issue_comment_created"), {"action": "edited"})
    assert "only new comments" in ignored_reason(parse("issue_comment", payload))


def test_comment_on_a_closed_pull_request_is_ignored() -> None:
    payload = edited(load("github", "issue_comment_created"), {"issue.state": "closed"})
    assert ignored_reason(parse("issue_comment", payload)) == "pull request is not open"


# -- installations -------------------------------------------------------------------------


def test_installation_created_adds_its_repositories() -> None:
    parsed = parse("installation", load("github", "installation_created"))
    assert parsed.repo is None
    assert parsed.installation_external_id == "52817364"
    assert isinstance(parsed.intent, ReposChanged)
    assert parsed.intent.installation_external_id == "52817364"
    assert parsed.intent.removed == ()
    assert [r.full_name for r in parsed.intent.added] == [
        "northwind-labs/ledger-service",
        "northwind-labs/payments-gateway",
        "northwind-labs/merchant-sdk-python",
    ]
    assert parsed.intent.added[2] == RepoRef(
        provider="github",
        external_id="655901722",
        full_name="northwind-labs/merchant-sdk-python",
        clone_url="https://github.com/northwind-labs/merchant-sdk-python.git",
        default_branch=None,
        visibility="public",
    )


def test_installation_deleted_removes_its_repositories() -> None:
    payload = edited(load("github", "installation_created"), {"action": "deleted"})
    intent = parse("installation", payload).intent
    assert isinstance(intent, ReposChanged)
    assert intent.added == ()
    assert len(intent.removed) == 3


def test_installation_suspend_and_unsuspend_are_suspensions() -> None:
    for action, suspended in (("suspend", True), ("unsuspend", False)):
        payload = edited(load("github", "installation_created"), {"action": action})
        assert parse("installation", payload).intent == Suspension(suspended=suspended)


def test_other_installation_actions_are_ignored() -> None:
    payload = edited(load("github", "installation_created"), {"action": "new_permissions_accepted"})
    assert ignored_reason(parse("installation", payload)).startswith("installation new_permissions_accepted")


def test_enterprise_server_host_is_used_for_clone_urls() -> None:
    payload = edited(
        load("github", "installation_repositories_added"),
        {"installation.account.html_url": "https://ghe.northwind.example/northwind-labs"},
    )
    intent = parse("installation_repositories", payload).intent
    assert isinstance(intent, ReposChanged)
    assert intent.added[0].clone_url == ("https://ghe.northwind.example/northwind-labs/settlement-worker.git")


def test_installation_repositories_added_and_removed() -> None:
    added = parse("installation_repositories", load("github", "installation_repositories_added"))
    removed = parse("installation_repositories", load("github", "installation_repositories_removed"))
    assert isinstance(added.intent, ReposChanged)
    assert isinstance(removed.intent, ReposChanged)
    assert [r.external_id for r in added.intent.added] == ["734019256"]
    assert added.intent.removed == ()
    assert [r.external_id for r in removed.intent.removed] == ["655901722"]
    assert removed.intent.added == ()


def test_listed_repository_with_a_path_like_name_is_rejected() -> None:
    payload = edited(
        load("github", "installation_repositories_added"),
        {"repositories_added.0.full_name": "northwind-labs/../../etc"},
    )
    with pytest.raises(WebhookError) as caught:
        parse("installation_repositories", payload)
    assert caught.value.status == 400


# -- unsupported events and malformed payloads ---------------------------------------------


def test_unsupported_event_is_ignored() -> None:
    parsed = parse("star", {"action": "created", "starred_at": "2025-03-14T12:00:00Z"})
    assert ignored_reason(parsed) == "unsupported GitHub event 'star'"
    assert parsed.action == "created"
    assert parsed.repo is None


@pytest.mark.parametrize(
    ("fixture", "event", "path", "field"),
    [
        ("push_default_branch", "push", "repository.clone_url", "repository.clone_url"),
        ("push_default_branch", "push", "after", "after"),
        ("pull_request_opened", "pull_request", "pull_request.head.sha", "pull_request.head.sha"),
        ("pull_request_opened", "pull_request", "pull_request.number", "pull_request.number"),
        ("issue_comment_created", "issue_comment", "comment.id", "comment.id"),
        ("installation_created", "installation", "installation.id", "installation.id"),
    ],
)
def test_missing_required_field_is_a_400_naming_it(fixture: str, event: str, path: str, field: str) -> None:
    with pytest.raises(WebhookError) as caught:
        parse(event, without(load("github", fixture), path))
    assert caught.value.status == 400
    assert caught.value.reason == f"missing required field '{field}'"


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"pull_request.number": "131"}, "pull_request.number"),
        ({"pull_request.head.sha": "not-a-sha"}, "pull_request.head.sha"),
        ({"repository": []}, "repository"),
        ({"pull_request.draft": "yes"}, "pull_request.draft"),
        ({"repository.clone_url": "https://token:x@github.com/a/b.git"}, "repository.clone_url"),
    ],
)
def test_wrong_type_is_a_400_naming_the_field(change: dict[str, Any], field: str) -> None:
    with pytest.raises(WebhookError) as caught:
        parse("pull_request", edited(load("github", "pull_request_opened"), change))
    assert caught.value.status == 400
    assert f"'{field}'" in caught.value.reason


# -- installation key ----------------------------------------------------------------------


def test_installation_key_comes_from_the_payload() -> None:
    payload = load("github", "push_default_branch")
    key = github.installation_key({}, payload)
    assert key == InstallationKey("github", "installation", "52817364", None)


def test_installation_key_names_the_account_when_it_is_given() -> None:
    key = github.installation_key({}, load("github", "installation_created"))
    assert key == InstallationKey("github", "installation", "52817364", "northwind-labs")


def test_installation_key_of_an_app_level_delivery_comes_from_the_headers() -> None:
    body = encode(load("github", "ping"))
    key = github.installation_key(headers_for("github", "ping", body), load("github", "ping"))
    assert key == InstallationKey("github", "app", "914203", None)


def test_installation_key_of_a_repository_webhook() -> None:
    headers = {
        "x-github-hook-installation-target-type": "repository",
        "x-github-hook-installation-target-id": "712384561",
    }
    key = github.installation_key(headers, {"zen": "Keep it logically awesome."})
    assert key == InstallationKey("github", "repository", "712384561", None)


def test_installation_key_without_any_clue_is_a_400() -> None:
    with pytest.raises(WebhookError) as caught:
        github.installation_key({}, {"zen": "Half measures are as bad as nothing at all."})
    assert caught.value.status == 400
