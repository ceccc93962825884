"""Property-based fuzzing: only WebhookError ever escapes, and nothing unverified gets through.

Runs are derandomized (same examples every run) and keep modest example counts so the suite
stays quick; the example database is disabled so nothing is written to the checkout.
"""

from __future__ import annotations

import contextlib
import copy
import json
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from palimpsest.ingest.webhooks import PROVIDERS, ParsedDelivery, WebhookError, decode_payload

from .webhook_support import BOT, CASES, SECRET, TOKEN, encode, headers_for, load, secret_for, sign

FUZZ = settings(
    max_examples=150,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

HEADER_NAMES = [
    "X-GitHub-Event",
    "X-GitHub-Delivery",
    "X-Hub-Signature-256",
    "X-Hub-Signature",
    "X-GitHub-Hook-Installation-Target-Type",
    "X-GitHub-Hook-Installation-Target-ID",
    "X-Gitlab-Event",
    "X-Gitlab-Token",
    "X-Gitlab-Event-UUID",
    "Idempotency-Key",
    "X-Event-Key",
    "X-Request-UUID",
]
SUPPORTED_EVENTS = {
    "github": ["ping", "push", "pull_request", "issue_comment", "installation", "installation_repositories"],
    "gitlab": ["Push Hook", "Tag Push Hook", "Merge Request Hook", "Note Hook"],
    "bitbucket": ["repo:push", "pullrequest:created", "pullrequest:updated", "pullrequest:comment_created"],
}


def _keys(value: Any) -> Iterator[str]:
    if isinstance(value, dict):
        for key, child in value.items():
            yield key
            yield from _keys(child)
    elif isinstance(value, list):
        for child in value:
            yield from _keys(child)


FIELD_NAMES = sorted({key for provider, name, _ in CASES for key in _keys(load(provider, name))})
FIXTURES = {(provider, name): load(provider, name) for provider, name, _ in CASES}

json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**65), max_value=2**65)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=24)
    | st.sampled_from(
        [
            "refs/heads/main",
            "refs/tags/v1",
            "0" * 40,
            "a" * 40,
            "OPEN",
            "opened",
            "open",
            "@palimpsest-review review",
        ]
    )
)
json_values = st.recursive(
    json_scalars,
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(st.sampled_from(FIELD_NAMES) | st.text(max_size=8), children, max_size=5)
    ),
    max_leaves=12,
)
json_objects = st.dictionaries(st.sampled_from(FIELD_NAMES), json_values, max_size=6)
header_maps = st.dictionaries(
    st.sampled_from(HEADER_NAMES) | st.text(max_size=20), st.text(max_size=80), max_size=8
)


def exercise(provider: str, headers: dict[str, str], body: bytes) -> ParsedDelivery | None:
    """Every public function of the provider; returns the parse result when there is one."""
    functions = PROVIDERS[provider]
    for call in (
        lambda: functions.delivery_id(headers),
        lambda: functions.event_name(headers),
        lambda: functions.installation_key(headers, decode_payload(body)),
        lambda: functions.verify(secret_for(provider), headers, body),
    ):
        with contextlib.suppress(WebhookError):
            call()
    rejection: WebhookError | None = None
    try:
        return functions.parse(headers, body, bot_name=BOT)
    except WebhookError as error:
        rejection = error
    assert rejection.status in (400, 413)
    assert "\n" not in rejection.reason
    return None


@pytest.mark.parametrize("provider", sorted(PROVIDERS))
@FUZZ
@given(headers=header_maps, body=st.binary(max_size=512))
def test_random_headers_and_bytes(provider: str, headers: dict[str, str], body: bytes) -> None:
    exercise(provider, headers, body)


@pytest.mark.parametrize("provider", sorted(PROVIDERS))
@FUZZ
@given(data=st.data(), payload=json_objects)
def test_random_json_objects_for_supported_events(
    provider: str, data: st.DataObject, payload: dict[str, Any]
) -> None:
    event = data.draw(st.sampled_from(SUPPORTED_EVENTS[provider]))
    body = encode(payload)
    exercise(provider, headers_for(provider, event, body), body)


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    if isinstance(value, dict):
        for key, child in value.items():
            yield (*prefix, key)
            yield from _paths(child, (*prefix, key))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            yield (*prefix, index)
            yield from _paths(child, (*prefix, index))


@st.composite
def mutated_fixtures(draw: st.DrawFn) -> tuple[str, str, dict[str, Any]]:
    provider, name, event = draw(st.sampled_from(CASES))
    payload = copy.deepcopy(FIXTURES[(provider, name)])
    for _ in range(draw(st.integers(min_value=1, max_value=4))):
        paths = list(_paths(payload))
        if not paths:
            break
        path = draw(st.sampled_from(paths))
        parent = payload
        for key in path[:-1]:
            parent = parent[key]
        if draw(st.booleans()):
            del parent[path[-1]]
        else:
            parent[path[-1]] = draw(json_values)
    return provider, event, payload


@FUZZ
@given(case=mutated_fixtures())
def test_mutated_fixtures(case: tuple[str, str, dict[str, Any]]) -> None:
    provider, event, payload = case
    body = encode(payload)
    exercise(provider, headers_for(provider, event, body), body)


@FUZZ
@given(case=mutated_fixtures(), garbage=st.binary(min_size=1, max_size=8), cut=st.integers(min_value=0))
def test_mutated_fixture_bytes(case: tuple[str, str, dict[str, Any]], garbage: bytes, cut: int) -> None:
    provider, event, payload = case
    body = encode(payload)
    position = cut % (len(body) + 1)
    broken = body[:position] + garbage + body[position + len(garbage) :]
    exercise(provider, headers_for(provider, event, broken), broken)


# -- nothing unverified yields an intent ---------------------------------------------------


@st.composite
def wrong_credentials(draw: st.DrawFn) -> tuple[str, dict[str, str], bytes]:
    """A genuine fixture delivery whose signature/token is wrong in some way."""
    provider, name, event = draw(st.sampled_from(CASES))
    body = encode(FIXTURES[(provider, name)])
    headers = headers_for(provider, event, body)
    credential = {"github": "X-Hub-Signature-256", "gitlab": "X-Gitlab-Token"}.get(
        provider, "X-Hub-Signature"
    )
    how = draw(st.sampled_from(["missing", "random", "other-secret", "tampered", "prefix", "case"]))
    if how == "missing":
        del headers[credential]
    elif how == "random":
        headers[credential] = draw(st.text(max_size=80))
    elif how == "other-secret":
        other = draw(st.binary(min_size=1, max_size=32))
        assume(other not in (SECRET, TOKEN.encode()))
        headers[credential] = sign(body, other) if provider != "gitlab" else other.hex()
    elif how == "tampered":
        mutated = json.loads(body)
        mutated[draw(st.sampled_from(sorted(mutated)))] = draw(json_values)
        tampered = json.dumps(mutated).encode()
        assume(tampered != body)
        if provider == "gitlab":
            headers[credential] = TOKEN[:-1]
        body = tampered
    elif how == "prefix":
        if provider == "gitlab":
            headers[credential] = "Bearer " + TOKEN
        else:
            headers[credential] = "sha1=" + headers[credential].removeprefix("sha256=")
    else:
        headers[credential] = headers[credential].swapcase() if provider == "gitlab" else ""
    assume(headers.get(credential) != headers_for(provider, event, body).get(credential))
    return provider, headers, body


@FUZZ
@given(case=wrong_credentials())
def test_wrong_credentials_never_yield_an_intent(case: tuple[str, dict[str, str], bytes]) -> None:
    provider, headers, body = case
    with pytest.raises(WebhookError) as caught:
        PROVIDERS[provider].receive(secret_for(provider), headers, body, bot_name=BOT)
    assert caught.value.status == 401


@pytest.mark.parametrize("provider", sorted(PROVIDERS))
@FUZZ
@given(secret=st.text(max_size=40) | st.binary(max_size=40), credential=st.text(max_size=80))
def test_random_secrets_and_credentials(provider: str, secret: str | bytes, credential: str) -> None:
    body = encode(FIXTURES[("github", "ping")])
    for name in ("X-Hub-Signature-256", "X-Hub-Signature", "X-Gitlab-Token"):
        with contextlib.suppress(WebhookError):
            PROVIDERS[provider].verify(secret, {name: credential}, body)
