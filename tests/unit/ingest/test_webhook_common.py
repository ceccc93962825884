"""Behaviour shared by the three providers: bodies, headers, mentions, reasons."""

from __future__ import annotations

import pytest

from palimpsest.ingest.intake import event_label
from palimpsest.ingest.webhooks import (
    PROVIDERS,
    IndexIntent,
    ReviewIntent,
    WebhookError,
    decode_payload,
)
from palimpsest.ingest.webhooks._rules import MAX_CHANGED_PATHS, requests_full_review, requests_review

from .webhook_support import BOT, CASES, encode, headers_for, load, secret_for

EVENTS = {"github": "push", "gitlab": "Push Hook", "bitbucket": "repo:push"}
MALFORMED = {
    "empty": b"",
    "text": b"payload=%7B%22ref%22%3A%22refs%2Fheads%2Fmain%22%7D",
    "array": b"[1, 2, 3]",
    "string": b'"push"',
    "truncated": b'{"ref": "refs/heads/main", "after": ',
    "nan": b'{"ref": NaN}',
    "bad-utf8": b'{"ref": "\xff\xfe"}',
    "deep": b"[" * 100_000 + b"]" * 100_000,
    "huge-int": b'{"id": ' + b"9" * 5000 + b"}",
}


@pytest.mark.parametrize("provider", sorted(PROVIDERS))
@pytest.mark.parametrize("body", list(MALFORMED.values()), ids=list(MALFORMED))
def test_malformed_json_is_a_400(provider: str, body: bytes) -> None:
    headers = headers_for(provider, EVENTS[provider], body)
    with pytest.raises(WebhookError) as caught:
        PROVIDERS[provider].parse(headers, body, bot_name=BOT)
    assert caught.value.status == 400
    assert "\n" not in caught.value.reason


def test_oversized_body_is_a_413() -> None:
    with pytest.raises(WebhookError) as caught:
        decode_payload(b" " * (25 * 1024 * 1024 + 1))
    assert caught.value.status == 413


@pytest.mark.parametrize(("provider", "name", "event"), CASES)
def test_every_fixture_parses_and_names_its_delivery(provider: str, name: str, event: str) -> None:
    body = encode(load(provider, name))
    headers = {k.upper(): v for k, v in headers_for(provider, event, body).items()}
    parsed = PROVIDERS[provider].receive(secret_for(provider), headers, body, bot_name=BOT)
    assert parsed.provider == provider
    assert parsed.event == event
    assert PROVIDERS[provider].delivery_id(headers) == parsed.delivery_id


@pytest.mark.parametrize(
    ("provider", "header"),
    [("github", "X-GitHub-Delivery"), ("bitbucket", "X-Request-UUID"), ("github", "X-GitHub-Event")],
)
def test_missing_delivery_or_event_header_is_a_400(provider: str, header: str) -> None:
    body = encode(load(provider, "push_default_branch" if provider == "github" else "repo_push"))
    headers = headers_for(provider, EVENTS[provider], body)
    del headers[header]
    with pytest.raises(WebhookError) as caught:
        PROVIDERS[provider].parse(headers, body, bot_name=BOT)
    assert (caught.value.status, caught.value.reason) == (400, f"missing {header} header")


def test_control_characters_in_the_delivery_header_are_a_400() -> None:
    body = encode(load("github", "ping"))
    headers = headers_for("github", "ping", body) | {"X-GitHub-Delivery": "abc\x00def"}
    with pytest.raises(WebhookError) as caught:
        PROVIDERS["github"].parse(headers, body, bot_name=BOT)
    assert caught.value.status == 400


def test_error_reasons_are_single_bounded_lines() -> None:
    error = WebhookError(400, "first\nsecond\r\n" + "x" * 1000)
    assert "\n" not in error.reason
    assert len(error.reason) <= 300


def test_changed_paths_are_bounded() -> None:
    payload = load("github", "push_default_branch")
    payload["commits"] = [
        {**payload["commits"][0], "added": [f"gen/file_{i:05}.py" for i in range(MAX_CHANGED_PATHS + 7)]}
    ]
    body = encode(payload)
    parsed = PROVIDERS["github"].parse(headers_for("github", "push", body), body, bot_name=BOT)
    intent = parsed.intent
    assert isinstance(intent, IndexIntent)
    assert intent.paths_complete is False
    assert len(intent.changed_paths) == MAX_CHANGED_PATHS


def test_nul_and_lone_surrogates_in_free_text_are_made_storable() -> None:
    payload = load("github", "pull_request_opened")
    payload["pull_request"]["title"] = "FX \x00 revaluation \ud800"
    body = encode(payload)
    parsed = PROVIDERS["github"].parse(headers_for("github", "pull_request", body), body, bot_name=BOT)
    assert isinstance(parsed.intent, ReviewIntent)
    title = parsed.intent.title
    assert "\x00" not in title
    title.encode("utf-8")  # storable


@pytest.mark.parametrize(
    ("comment", "expected"),
    [
        ("@palimpsest-review review", True),
        ("@Palimpsest-Review please REVIEW", True),
        ("Could you review this, @palimpsest-review?", True),
        ("@palimpsest-review[bot] review", True),
        ("@{palimpsest-review} review", True),
        ("@palimpsest-review", False),
        ("@palimpsest-review thanks", False),
        ("palimpsest-review review", False),
        ("mail@palimpsest-review review", False),
        ("@palimpsest-reviewer review", False),
        ("@palimpsest-review reviewed already", False),
        ("> @palimpsest-review review\nthanks", False),
        ("~~~\n@palimpsest-review review\n~~~\nok", False),
    ],
)
def test_review_request_detection(comment: str, expected: bool) -> None:
    assert requests_review(comment, BOT) is expected


def test_empty_bot_name_never_matches() -> None:
    assert not requests_review("@ review", "")
    assert not requests_review("@ review", "[bot]")


@pytest.mark.parametrize(
    ("comment", "expected"),
    [
        ("@palimpsest-review review full", True),
        ("@palimpsest-review please do a FULL review", True),
        ("@palimpsest-review review", False),
        ("@palimpsest-review review fully", False),
        ("> @palimpsest-review review full\n@palimpsest-review review", False),
        ("review full", False),
    ],
)
def test_full_review_request_detection(comment: str, expected: bool) -> None:
    assert requests_full_review(comment, BOT) is expected


@pytest.mark.parametrize(
    ("provider", "fixture", "event", "path"),
    [
        ("github", "issue_comment_created", "issue_comment", ("comment", "body")),
        ("gitlab", "note_merge_request", "Note Hook", ("object_attributes", "note")),
        (
            "bitbucket",
            "pullrequest_comment_created",
            "pullrequest:comment_created",
            ("comment", "content", "raw"),
        ),
    ],
)
def test_a_comment_asking_for_a_full_review_says_so(
    provider: str, fixture: str, event: str, path: tuple[str, ...]
) -> None:
    for text, full in (("@palimpsest-review review full", True), ("@palimpsest-review review", False)):
        payload = load(provider, fixture)
        node = payload
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = text
        body = encode(payload)
        parsed = PROVIDERS[provider].parse(headers_for(provider, event, body), body, bot_name=BOT)
        assert isinstance(parsed.intent, ReviewIntent) and parsed.intent.full is full


# The events each provider's parser handles, as the providers name them: the review-feedback
# events (GitHub's review comments and threads, GitLab's emoji, Bitbucket's resolved/reopened
# comments) were counted as "other" while the metric kept a list of its own.
HANDLED = {
    "github": {
        "ping",
        "push",
        "pull_request",
        "issue_comment",
        "installation",
        "installation_repositories",
        "pull_request_review_comment",
        "pull_request_review_thread",
    },
    "gitlab": {"Push Hook", "Tag Push Hook", "Merge Request Hook", "Note Hook", "Emoji Hook"},
    "bitbucket": {
        "repo:push",
        "pullrequest:created",
        "pullrequest:updated",
        "pullrequest:fulfilled",
        "pullrequest:rejected",
        "pullrequest:comment_created",
        "pullrequest:comment_resolved",
        "pullrequest:comment_reopened",
    },
}


@pytest.mark.parametrize("provider", sorted(PROVIDERS))
def test_every_handled_event_is_counted_under_its_own_name(provider: str) -> None:
    assert set(PROVIDERS[provider].parser.handlers) == HANDLED[provider]
    for event in sorted(HANDLED[provider]):
        assert event_label(provider, event) == event
    for other in ("<script>", "pull_request_review", "", None):
        assert event_label(provider, other) == "other"
