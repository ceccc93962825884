"""GitLab deliveries, from full-size fixtures, to normalised intents."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from palimpsest.ingest.webhooks import (
    Ignored,
    IndexIntent,
    InstallationKey,
    ParsedDelivery,
    RepoRef,
    ReviewIntent,
    WebhookError,
    gitlab,
)

from .webhook_support import BOT, DELIVERY, edited, encode, headers_for, load, without

ENGINE = RepoRef(
    provider="gitlab",
    external_id="4821",
    full_name="platform/billing/invoice-engine",
    clone_url="https://gitlab.northwind.example/platform/billing/invoice-engine.git",
    default_branch="main",
    visibility="internal",
)


def parse(event: str, payload: dict[str, Any], **header_changes: str) -> ParsedDelivery:
    body = encode(payload)
    headers = headers_for("gitlab", event, body) | header_changes
    return gitlab.parse(headers, body, bot_name=BOT)


def ignored_reason(parsed: ParsedDelivery) -> str:
    assert isinstance(parsed.intent, Ignored)
    return parsed.intent.reason


def review_intent(parsed: ParsedDelivery) -> ReviewIntent:
    assert isinstance(parsed.intent, ReviewIntent)
    return parsed.intent


# -- push ----------------------------------------------------------------------------------


def test_push_to_default_branch_requests_an_index() -> None:
    parsed = parse("Push Hook", load("gitlab", "push"))
    assert (parsed.provider, parsed.delivery_id, parsed.event) == ("gitlab", DELIVERY, "Push Hook")
    assert parsed.repo == ENGINE
    assert parsed.installation_external_id is None
    assert parsed.intent == IndexIntent(
        repo=ENGINE,
        branch="main",
        head_sha="3a65cfe513d21ccb0d01b2d0ea901b083101d184",
        head_commit_at=datetime(2025, 4, 2, 13, 12, 7, tzinfo=UTC),
        changed_paths=(
            "Gemfile",
            "Gemfile.lock",
            "README.md",
            "app/credit_notes/renderer.rb",
            "app/invoices/numbering.rb",
            "app/renderers/pdfkit_renderer.rb",
            "config/locales/de.yml",
            "docs/architecture/rendering.md",
            "spec/credit_notes/renderer_spec.rb",
            "spec/renderers/pdfkit_renderer_spec.rb",
        ),
        paths_complete=True,
        before_sha="f49de81d68684cd98ce6506fb4a6be6590507834",
        is_default_branch=True,
    )


def test_truncated_commit_list_makes_paths_incomplete() -> None:
    payload = edited(load("gitlab", "push"), {"total_commits_count": 25})
    intent = parse("Push Hook", payload).intent
    assert isinstance(intent, IndexIntent)
    assert not intent.paths_complete
    assert len(intent.changed_paths) == 10


def test_push_to_another_branch_is_ignored() -> None:
    payload = edited(load("gitlab", "push"), {"ref": "refs/heads/feature/dunning-levels"})
    assert ignored_reason(parse("Push Hook", payload)) == (
        "push to 'feature/dunning-levels', not the default branch 'main'"
    )


def test_project_without_a_default_branch_leaves_the_decision_open() -> None:
    payload = edited(load("gitlab", "push"), {"project.default_branch": None})
    intent = parse("Push Hook", payload).intent
    assert isinstance(intent, IndexIntent)
    assert intent.is_default_branch is None


def test_branch_deletion_is_ignored() -> None:
    reason = ignored_reason(parse("Push Hook", load("gitlab", "push_branch_deleted")))
    assert reason == "branch 'feature/dunning-levels' deleted"


def test_tag_push_hook_is_ignored() -> None:
    parsed = parse("Tag Push Hook", load("gitlab", "tag_push"))
    assert ignored_reason(parsed) == "tag push (v3.8.0)"
    assert parsed.repo == ENGINE


def test_tag_ref_in_a_push_hook_is_ignored() -> None:
    payload = edited(load("gitlab", "push"), {"ref": "refs/tags/v3.8.0"})
    assert ignored_reason(parse("Push Hook", payload)) == "tag push (v3.8.0)"


@pytest.mark.parametrize(
    ("level", "visibility"), [(0, "private"), (10, "internal"), (20, "public"), (30, "private")]
)
def test_visibility_levels(level: int, visibility: str) -> None:
    payload = edited(load("gitlab", "push"), {"project.visibility_level": level})
    repo = parse("Push Hook", payload).repo
    assert repo is not None
    assert repo.visibility == visibility


# -- merge requests ------------------------------------------------------------------------


def test_opened_merge_request_requests_a_review_without_a_base_sha() -> None:
    parsed = parse("Merge Request Hook", load("gitlab", "merge_request_open"))
    assert parsed.action == "open"
    assert review_intent(parsed) == ReviewIntent(
        repo=ENGINE,
        number=57,
        base_sha=None,
        head_sha="7df003cb518886b270e159cd76daa1edfb055de7",
        base_ref="main",
        head_ref="feature/dunning-levels",
        title="Configurable dunning levels per account tier",
        body=load("gitlab", "merge_request_open")["object_attributes"]["description"],
        draft=False,
        trigger="opened",
        comment_id=None,
        requested_by="anwosu",
        author="anwosu",  # the user who opened it is the author (user.id == author_id)
    )


def test_reopened_merge_request_requests_a_review() -> None:
    payload = edited(load("gitlab", "merge_request_open"), {"object_attributes.action": "reopen"})
    assert review_intent(parse("Merge Request Hook", payload)).trigger == "reopened"


def test_update_with_new_commits_is_a_synchronize() -> None:
    intent = review_intent(parse("Merge Request Hook", load("gitlab", "merge_request_update_commits")))
    assert intent.trigger == "synchronize"
    assert intent.head_sha == "5ad2ee40b77f7e23b051382fbd5259d4f0a86c3b"


def test_draft_only_edit_is_ignored() -> None:
    parsed = parse("Merge Request Hook", load("gitlab", "merge_request_update_draft"))
    assert ignored_reason(parsed) == "draft-only edit"


def test_leaving_draft_is_ready_for_review() -> None:
    payload = edited(
        load("gitlab", "merge_request_update_draft"),
        {
            "changes.draft": {"previous": True, "current": False},
            "object_attributes.draft": False,
            "object_attributes.work_in_progress": False,
        },
    )
    intent = review_intent(parse("Merge Request Hook", payload))
    assert intent.trigger == "ready_for_review"
    assert intent.draft is False


def test_update_without_commits_or_draft_change_is_ignored() -> None:
    payload = edited(
        load("gitlab", "merge_request_open"),
        {"object_attributes.action": "update", "changes": {"labels": {"previous": [], "current": []}}},
    )
    assert ignored_reason(parse("Merge Request Hook", payload)) == (
        "merge request update without new commits"
    )


def test_merged_merge_request_is_ignored() -> None:
    reason = ignored_reason(parse("Merge Request Hook", load("gitlab", "merge_request_merge")))
    assert reason == "merge request merged"


def test_closed_merge_request_is_ignored() -> None:
    payload = edited(
        load("gitlab", "merge_request_open"),
        {"object_attributes.action": "close", "object_attributes.state": "closed"},
    )
    assert ignored_reason(parse("Merge Request Hook", payload)) == "merge request closed"


@pytest.mark.parametrize("action", ["approved", "unapproved", "approval", "unapproval"])
def test_approval_actions_are_ignored(action: str) -> None:
    payload = edited(load("gitlab", "merge_request_open"), {"object_attributes.action": action})
    assert "does not request a review" in ignored_reason(parse("Merge Request Hook", payload))


# -- notes ---------------------------------------------------------------------------------


def test_note_mentioning_the_bot_requests_a_review() -> None:
    parsed = parse("Note Hook", load("gitlab", "note_merge_request"))
    assert parsed.action == "create"
    intent = review_intent(parsed)
    assert intent.trigger == "comment"
    assert intent.number == 57
    assert intent.comment_id == "1190245"
    assert intent.requested_by == "jlindqvist"
    assert intent.author is None  # the payload names the author by id only, and they did not comment
    assert intent.head_sha == "7df003cb518886b270e159cd76daa1edfb055de7"
    assert intent.base_sha is None
    assert (intent.base_ref, intent.head_ref) == ("main", "feature/dunning-levels")


def test_a_note_by_the_author_names_the_author() -> None:
    payload = load("gitlab", "note_merge_request")
    author_id = payload["merge_request"]["author_id"]
    intent = review_intent(parse("Note Hook", edited(payload, {"user.id": author_id})))
    assert intent.author == intent.requested_by == "jlindqvist"


def test_note_without_the_mention_is_ignored() -> None:
    payload = edited(
        load("gitlab", "note_merge_request"), {"object_attributes.note": "Looks close, merging."}
    )
    assert "does not ask" in ignored_reason(parse("Note Hook", payload))


def test_note_on_an_issue_is_ignored() -> None:
    reason = ignored_reason(parse("Note Hook", load("gitlab", "note_issue")))
    assert reason == "comment on Issue, not on a merge request"


def test_system_note_is_ignored() -> None:
    payload = edited(load("gitlab", "note_merge_request"), {"object_attributes.system": True})
    assert ignored_reason(parse("Note Hook", payload)) == "system note"


def test_note_written_by_the_bot_is_ignored() -> None:
    payload = edited(load("gitlab", "note_merge_request"), {"user.username": BOT})
    assert ignored_reason(parse("Note Hook", payload)) == "comment written by the bot"


def test_note_on_a_merged_merge_request_is_ignored() -> None:
    payload = edited(load("gitlab", "note_merge_request"), {"merge_request.state": "merged"})
    assert ignored_reason(parse("Note Hook", payload)) == "merge request is not open"


def test_edited_note_is_ignored() -> None:
    payload = edited(load("gitlab", "note_merge_request"), {"object_attributes.action": "update"})
    assert "only new comments" in ignored_reason(parse("Note Hook", payload))


# -- headers, unsupported events, malformed payloads ---------------------------------------


def test_idempotency_key_is_preferred_for_dedupe() -> None:
    parsed = parse(
        "Push Hook", load("gitlab", "push"), **{"Idempotency-Key": "f0e1d2c3-b4a5-4968-8776-655443322110"}
    )
    assert parsed.delivery_id == "f0e1d2c3-b4a5-4968-8776-655443322110"


def test_missing_delivery_headers_are_a_400() -> None:
    body = encode(load("gitlab", "push"))
    headers = headers_for("gitlab", "Push Hook", body)
    del headers["X-Gitlab-Event-UUID"]
    with pytest.raises(WebhookError) as caught:
        gitlab.parse(headers, body, bot_name=BOT)
    assert caught.value.status == 400
    assert "Idempotency-Key" in caught.value.reason


def test_unsupported_event_is_ignored() -> None:
    parsed = parse("Pipeline Hook", {"object_kind": "pipeline", "object_attributes": {"id": 31}})
    assert ignored_reason(parsed) == "unsupported GitLab event 'Pipeline Hook'"


@pytest.mark.parametrize(
    ("fixture", "event", "path"),
    [
        ("push", "Push Hook", "project.git_http_url"),
        ("push", "Push Hook", "ref"),
        ("merge_request_open", "Merge Request Hook", "object_attributes.last_commit"),
        ("merge_request_open", "Merge Request Hook", "object_attributes.iid"),
        ("note_merge_request", "Note Hook", "merge_request"),
        ("note_merge_request", "Note Hook", "object_attributes.noteable_type"),
    ],
)
def test_missing_required_field_is_a_400_naming_it(fixture: str, event: str, path: str) -> None:
    with pytest.raises(WebhookError) as caught:
        parse(event, without(load("gitlab", fixture), path))
    assert caught.value.status == 400
    assert caught.value.reason == f"missing required field '{path}'"


def test_installation_key_is_the_project() -> None:
    key = gitlab.installation_key({}, load("gitlab", "merge_request_open"))
    assert key == InstallationKey("gitlab", "project", "4821", "platform/billing/invoice-engine")


def test_installation_key_of_a_group_only_event() -> None:
    payload = {"event_name": "subgroup_create", "group_id": 78, "group_path": "platform"}
    key = gitlab.installation_key({}, payload)
    assert key == InstallationKey("gitlab", "group", "78", "platform")


def test_installation_key_without_project_or_group_is_a_400() -> None:
    with pytest.raises(WebhookError) as caught:
        gitlab.installation_key({}, {"object_kind": "push"})
    assert caught.value.status == 400
