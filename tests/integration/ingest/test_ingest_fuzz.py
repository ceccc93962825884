"""Property-based fuzzing of the webhook endpoints over real HTTP: never a 5xx, never an event.

A tenant with installations for the fixtures' senders exists while the fuzzer runs, so random
deliveries do reach the signature check (the payloads name real installation ids). Runs are
derandomized and bounded (100 examples) so the suite stays deterministic and quick. The
hypothesis run is synchronous, so it runs in a worker thread while the server keeps serving on
the test's event loop.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from palimpsest.core.db import fetch_one, tenant_tx
from tests.integration.ingest.support import WORKSPACE, Served, outbox_ids, world_of
from tests.unit.ingest.webhook_support import CASES, SECRET, TOKEN, load

FUZZ = settings(
    max_examples=100,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.function_scoped_fixture,
    ],
)

HEADERS = [
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
    "Content-Type",
    "Content-Length-Bogus",
]
EVENTS = [
    "push",
    "pull_request",
    "ping",
    "installation",
    "Push Hook",
    "Note Hook",
    "repo:push",
    "pullrequest:created",
]
# plausible-looking but wrong credentials: nothing random can be a valid HMAC or token
WRONG_SECRETS = ["sha256=" + "ab" * 32, "sha256=", TOKEN[:-1], "glwt-guess", SECRET.decode()[::-1]]

header_value = st.one_of(
    st.sampled_from([*EVENTS, *WRONG_SECRETS, "52817364", "914203", "integration", "4821", WORKSPACE]),
    st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=60).map(str.strip),
)
fixture_payloads = st.sampled_from([(p, n) for p, n, _ in CASES]).map(lambda c: load(*c))


def _mutate(payload: dict[str, Any], key: str, value: Any) -> bytes:
    copy = dict(payload)
    copy[key] = value
    return json.dumps(copy).encode()


json_scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=20))
bodies = st.one_of(
    st.binary(max_size=300),
    fixture_payloads.map(lambda p: json.dumps(p).encode()),
    st.builds(
        _mutate,
        fixture_payloads,
        st.sampled_from(["repository", "project", "installation", "ref", "after", "action"]),
        json_scalars,
    ),
    st.recursive(
        json_scalars,
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
        max_leaves=12,
    ).map(lambda v: json.dumps(v).encode()),
)
requests = st.tuples(
    st.sampled_from(["github", "gitlab", "bitbucket", "github", "gitlab", "bitbucket", "gitea"]),
    st.dictionaries(st.sampled_from(HEADERS), header_value, max_size=8),
    bodies,
)


def _fuzz(url: str, seen: list[int]) -> None:
    with httpx.Client(base_url=url, timeout=30) as client:

        @FUZZ
        @given(requests)
        def run(request: tuple[str, dict[str, str], bytes]) -> None:
            provider, headers, body = request
            res = client.post(f"/webhooks/{provider}", content=body, headers=headers)
            seen.append(res.status_code)
            assert res.status_code < 500, (provider, headers, body[:200], res.text)
            answer = res.json()
            assert answer["outcome"] != "accepted" and answer["events"] == [], answer

        run()


async def test_random_deliveries_never_5xx_and_never_emit(client: httpx.AsyncClient, served: Served) -> None:
    async with world_of(client, served.ctx.pool) as world:
        before = await outbox_ids(served.ctx.pool, world.tenant_id)
        seen: list[int] = []
        await asyncio.to_thread(_fuzz, served.url, seen)
        assert len(seen) >= 50
        assert {401, 400} <= set(seen), "the fuzzer reached both the parser and the signature check"
        assert await outbox_ids(served.ctx.pool, world.tenant_id) == before
        async with tenant_tx(served.ctx.pool, world.tenant_id) as conn:
            accepted = await fetch_one(
                conn, "SELECT count(*) AS n FROM deliveries WHERE outcome = 'accepted'"
            )
        assert accepted is not None and accepted["n"] == 0


async def test_random_bearer_tokens_never_get_in(client: httpx.AsyncClient, served: Served) -> None:
    async with world_of(client, served.ctx.pool, repos=False) as world:
        path = world.path("/repositories")

        def fuzz_tokens(url: str) -> list[int]:
            statuses: list[int] = []
            with httpx.Client(base_url=url, timeout=30) as http:

                @settings(max_examples=60, deadline=None, derandomize=True, database=None)
                @given(
                    st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=80).map(str.strip)
                )
                def run(token: str) -> None:
                    res = http.get(path, headers={"Authorization": token})
                    statuses.append(res.status_code)
                    assert res.status_code == 401, (token, res.status_code)

                run()
            return statuses

        statuses = await asyncio.to_thread(fuzz_tokens, served.url)
        assert statuses and set(statuses) == {401}
