"""Webhook deliveries over real HTTP into real PostgreSQL (and, for the stream test, NATS).

Every fixture of every provider is delivered signed with its installation's secret; the answer,
the recorded delivery and the outbox events are checked. Then the ways a delivery goes wrong:
signatures, redeliveries, oversized and malformed bodies, unknown senders and repositories.
"""

from __future__ import annotations

import asyncio
import socket
import uuid
from collections import Counter
from typing import Any

import httpx
import pytest

from palimpsest.core.db import fetch_all, system_tx
from palimpsest.core.events import parse_event
from tests.integration.ingest.support import (
    WORKSPACE,
    Served,
    bearer,
    deliver,
    deliveries_of,
    outbox_ids,
    signed,
    stream_events,
    world_of,
)
from tests.unit.ingest.webhook_support import CASES, edited, load, sign, without

# (provider, fixture) -> (HTTP status, outcome, event type per emitted event)
EXPECTED: dict[tuple[str, str], tuple[int, str, list[str]]] = {
    ("github", "ping"): (200, "accepted", []),
    ("github", "push_default_branch"): (202, "accepted", ["index.requested"]),
    ("github", "push_other_branch"): (202, "ignored", []),
    ("github", "push_tag"): (202, "ignored", []),
    ("github", "push_branch_deleted"): (202, "ignored", []),
    ("github", "pull_request_opened"): (202, "accepted", ["review.requested"]),
    ("github", "pull_request_synchronize"): (202, "accepted", ["review.requested"]),
    ("github", "pull_request_closed"): (202, "ignored", []),
    ("github", "issue_comment_created"): (202, "accepted", ["review.requested"]),
    # the world registers ledger-service already: the two others are new
    ("github", "installation_created"): (202, "accepted", ["index.requested", "index.requested"]),
    ("github", "installation_repositories_added"): (202, "accepted", ["index.requested"]),
    ("github", "installation_repositories_removed"): (202, "accepted", []),
    ("gitlab", "push"): (202, "accepted", ["index.requested"]),
    ("gitlab", "push_branch_deleted"): (202, "ignored", []),
    ("gitlab", "tag_push"): (202, "ignored", []),
    ("gitlab", "merge_request_open"): (202, "accepted", ["review.requested"]),
    ("gitlab", "merge_request_update_commits"): (202, "accepted", ["review.requested"]),
    ("gitlab", "merge_request_update_draft"): (202, "ignored", []),
    ("gitlab", "merge_request_merge"): (202, "ignored", []),
    ("gitlab", "note_merge_request"): (202, "accepted", ["review.requested"]),
    ("gitlab", "note_issue"): (202, "ignored", []),
    ("bitbucket", "repo_push"): (202, "accepted", ["index.requested"]),
    ("bitbucket", "repo_push_tag"): (202, "ignored", []),
    ("bitbucket", "repo_push_branch_deleted"): (202, "ignored", []),
    ("bitbucket", "pullrequest_created"): (202, "accepted", ["review.requested"]),
    ("bitbucket", "pullrequest_updated"): (202, "accepted", ["review.requested"]),
    ("bitbucket", "pullrequest_fulfilled"): (202, "ignored", []),
    ("bitbucket", "pullrequest_comment_created"): (202, "accepted", ["review.requested"]),
}


async def _outbox_events(served: Served, tenant: uuid.UUID) -> list[dict[str, Any]]:
    async with system_tx(served.ctx.pool) as conn:
        rows = await fetch_all(conn, "SELECT payload FROM outbox WHERE tenant_id = %s ORDER BY id", (tenant,))
    return [dict(r["payload"]) for r in rows]


def test_every_fixture_has_an_expectation() -> None:
    assert {(p, n) for p, n, _ in CASES} == set(EXPECTED)


@pytest.mark.parametrize(("provider", "name", "event"), CASES, ids=[f"{p}-{n}" for p, n, _ in CASES])
async def test_every_event_of_every_provider(
    client: httpx.AsyncClient, served: Served, provider: str, name: str, event: str
) -> None:
    status, outcome, types = EXPECTED[(provider, name)]
    async with world_of(client, served.ctx.pool) as world:
        before = await _outbox_events(served, world.tenant_id)
        res = await deliver(client, provider, name, event, delivery=f"{name}-1")
        assert (res.status_code, res.json()["outcome"]) == (status, outcome), res.text
        after = await _outbox_events(served, world.tenant_id)
        emitted = after[len(before) :]
        assert [e["type"] for e in emitted] == types
        assert [str(e["id"]) for e in emitted] == res.json()["events"]
        rows = await deliveries_of(served.ctx.pool, world.tenant_id)
        assert len(rows) == 1
        row = rows[0]
        assert (row["provider"], row["event"], row["outcome"], row["http_status"]) == (
            provider,
            event,
            outcome,
            status,
        )
        assert [str(e) for e in row["event_ids"]] == res.json()["events"]
        assert row["installation_id"] is not None
        if outcome == "ignored":
            assert row["reason"], "an ignored delivery says why"
        for payload in emitted:
            parsed = parse_event(__import__("json").dumps(payload))
            assert parsed.tenant_id == world.tenant_id


async def test_push_event_carries_commit_time_and_paths(client: httpx.AsyncClient, served: Served) -> None:
    async with world_of(client, served.ctx.pool) as world:
        res = await deliver(client, "github", "push_default_branch", "push", delivery="push-details")
        assert res.status_code == 202
        event = (await _outbox_events(served, world.tenant_id))[-1]
        payload = load("github", "push_default_branch")
        assert event["repository_id"] == world.repos["github"]["repository_id"]
        assert event["commit_sha"] == payload["after"]
        assert event["branch"] == "main"
        assert event["reason"] == "push"
        assert event["head_commit_at"] is not None
        assert event["changed_paths"], "the push's changed paths travel with the event"


async def test_review_event_carries_the_pull_request(client: httpx.AsyncClient, served: Served) -> None:
    async with world_of(client, served.ctx.pool) as world:
        res = await deliver(client, "github", "pull_request_opened", "pull_request", delivery="pr-1")
        assert res.status_code == 202
        event = (await _outbox_events(served, world.tenant_id))[-1]
        pull = load("github", "pull_request_opened")["pull_request"]
        assert event["number"] == pull["number"]
        assert event["head_sha"] == pull["head"]["sha"]
        assert event["base_sha"] == pull["base"]["sha"]
        assert event["title"] == pull["title"]
        assert event["delivery_id"] == "pr-1"
        assert event["provider"] == "github"


# (provider, fixture, event) -> (title, the pull request's author, who asked, base ref, head ref);
# a GitLab note by someone else names the author by id only: no author, never the commenter
PULL_FACTS: dict[tuple[str, str, str], tuple[str, str | None, str, str | None, str | None]] = {
    ("github", "pull_request_opened", "pull_request"): (
        "Nightly FX revaluation of open positions",
        "dtrinh",
        "dtrinh",
        "main",
        "feature/fx-revaluation",
    ),
    ("github", "issue_comment_created", "issue_comment"): (
        "Nightly FX revaluation of open positions",
        "dtrinh",
        "priya-raman",
        None,
        None,
    ),
    ("gitlab", "merge_request_open", "Merge Request Hook"): (
        "Configurable dunning levels per account tier",
        "anwosu",
        "anwosu",
        "main",
        "feature/dunning-levels",
    ),
    ("gitlab", "note_merge_request", "Note Hook"): (
        "Configurable dunning levels per account tier",
        None,
        "jlindqvist",
        "main",
        "feature/dunning-levels",
    ),
    ("bitbucket", "pullrequest_created", "pullrequest:created"): (
        "Prefer rail legs within carrier quota",
        "rcosta",
        "rcosta",
        "main",
        "feature/rail-quota",
    ),
    ("bitbucket", "pullrequest_comment_created", "pullrequest:comment_created"): (
        "Prefer rail legs within carrier quota",
        "rcosta",
        "lhoffmann",
        "main",
        "feature/rail-quota",
    ),
}


@pytest.mark.parametrize(
    ("provider", "name", "event"), list(PULL_FACTS), ids=[f"{p}-{n}" for p, n, _ in PULL_FACTS]
)
async def test_review_event_carries_the_pull_requests_title_author_and_branches(
    client: httpx.AsyncClient, served: Served, provider: str, name: str, event: str
) -> None:
    async with world_of(client, served.ctx.pool) as world:
        res = await deliver(client, provider, name, event, delivery=f"{name}-facts")
        assert (res.status_code, res.json()["outcome"]) == (202, "accepted"), res.text
        emitted = (await _outbox_events(served, world.tenant_id))[-1]
        assert emitted["type"] == "review.requested"
        got = tuple(emitted[k] for k in ("title", "author", "requested_by", "base_ref", "head_ref"))
        assert got == PULL_FACTS[(provider, name, event)]


async def test_a_full_review_comment_asks_the_reviewer_for_a_full_review(
    client: httpx.AsyncClient, served: Served
) -> None:
    async with world_of(client, served.ctx.pool) as world:
        payload = load("github", "issue_comment_created")
        payload["comment"]["body"] = "@palimpsest-review review full"
        res = await deliver(
            client, "github", "issue_comment_created", "issue_comment", delivery="full-1", payload=payload
        )
        assert res.status_code == 202, res.text
        event = (await _outbox_events(served, world.tenant_id))[-1]
        assert event["type"] == "review.requested" and event["trigger"] == "comment" and event["full"] is True


async def test_redelivery_is_answered_200_and_emits_nothing(
    client: httpx.AsyncClient, served: Served
) -> None:
    async with world_of(client, served.ctx.pool) as world:
        first = await deliver(client, "gitlab", "push", "Push Hook", delivery="same-id")
        again = await deliver(client, "gitlab", "push", "Push Hook", delivery="same-id")
        assert (first.status_code, first.json()["outcome"]) == (202, "accepted")
        assert (again.status_code, again.json()["outcome"]) == (200, "duplicate")
        assert again.json()["events"] == []
        assert len(await outbox_ids(served.ctx.pool, world.tenant_id)) == 4  # 3 registrations + the push
        outcomes = [r["outcome"] for r in await deliveries_of(served.ctx.pool, world.tenant_id)]
        assert outcomes == ["accepted", "duplicate"]


async def test_concurrent_copies_of_one_delivery_emit_once(client: httpx.AsyncClient, served: Served) -> None:
    async with world_of(client, served.ctx.pool) as world:
        before = len(await outbox_ids(served.ctx.pool, world.tenant_id))
        answers = await asyncio.gather(
            *(deliver(client, "bitbucket", "repo_push", "repo:push", delivery="racing") for _ in range(8))
        )
        outcomes = Counter(a.json()["outcome"] for a in answers)
        assert outcomes == {"accepted": 1, "duplicate": 7}
        assert len(await outbox_ids(served.ctx.pool, world.tenant_id)) == before + 1


async def test_ignored_delivery_is_reconsidered_on_redelivery(
    client: httpx.AsyncClient, served: Served
) -> None:
    """An ignored delivery claims nothing: once the repository is registered, a redelivery counts."""
    async with world_of(client, served.ctx.pool, repos=False) as world:
        first = await deliver(client, "github", "push_default_branch", "push", delivery="retry-me")
        assert first.json()["outcome"] == "ignored"
        assert "not registered" in first.json()["reason"]
        body = {"url": "https://github.com/northwind-labs/ledger-service.git"}
        body["installation_id"] = world.installations["github"]["installation_id"]
        assert (
            await client.post(world.path("/repositories"), json=body, headers=world.auth)
        ).status_code == 201
        again = await deliver(client, "github", "push_default_branch", "push", delivery="retry-me")
        assert (again.status_code, again.json()["outcome"]) == (202, "accepted")


@pytest.mark.parametrize(
    ("provider", "name", "event", "header", "value"),
    [
        ("github", "push_default_branch", "push", "X-Hub-Signature-256", "sha256=" + "0" * 64),
        ("github", "push_default_branch", "push", "X-Hub-Signature-256", None),
        ("gitlab", "push", "Push Hook", "X-Gitlab-Token", "not-the-token"),
        ("gitlab", "push", "Push Hook", "X-Gitlab-Token", None),
        ("bitbucket", "repo_push", "repo:push", "X-Hub-Signature", sign(b"other body")),
        ("bitbucket", "repo_push", "repo:push", "X-Hub-Signature", None),
    ],
)
async def test_signature_failures_are_401_and_recorded(
    client: httpx.AsyncClient,
    served: Served,
    provider: str,
    name: str,
    event: str,
    header: str,
    value: str | None,
) -> None:
    async with world_of(client, served.ctx.pool) as world:
        before = await outbox_ids(served.ctx.pool, world.tenant_id)
        body, headers = signed(provider, name, event, delivery="forged")
        headers = {k: v for k, v in headers.items() if k != header}
        if value is not None:
            headers[header] = value
        res = await client.post(f"/webhooks/{provider}", content=body, headers=headers)
        assert res.status_code == 401, res.text
        assert res.json()["outcome"] == "rejected"
        assert header in res.json()["reason"]
        assert await outbox_ids(served.ctx.pool, world.tenant_id) == before
        (row,) = await deliveries_of(served.ctx.pool, world.tenant_id)
        assert (row["outcome"], row["http_status"], row["delivery_id"]) == ("rejected", 401, "forged")
        # the real delivery with the same id still goes through
        ok = await client.post(
            f"/webhooks/{provider}", content=body, headers=signed(provider, name, event, delivery="forged")[1]
        )
        assert ok.json()["outcome"] == "accepted"


async def test_tampered_body_is_rejected(client: httpx.AsyncClient, served: Served) -> None:
    async with world_of(client, served.ctx.pool) as world:
        body, headers = signed("github", "push_default_branch", "push", delivery="tampered")
        res = await client.post(
            "/webhooks/github", content=body.replace(b"refs/heads/main", b"refs/heads/evil"), headers=headers
        )
        assert res.status_code == 401
        assert await deliveries_of(served.ctx.pool, world.tenant_id) != []


async def test_unknown_installation_is_202_ignored_and_not_stored(
    client: httpx.AsyncClient, served: Served
) -> None:
    async with system_tx(served.ctx.pool) as conn:
        before = await fetch_all(conn, "SELECT count(*) AS n FROM outbox")
    for provider, name, event in [
        ("github", "push_default_branch", "push"),
        ("gitlab", "push", "Push Hook"),
        ("bitbucket", "repo_push", "repo:push"),
    ]:
        res = await deliver(client, provider, name, event, delivery=f"nobody-{provider}")
        assert res.status_code == 202, res.text
        assert res.json()["outcome"] == "ignored"
        assert "unknown" in res.json()["reason"]
    async with system_tx(served.ctx.pool) as conn:
        assert await fetch_all(conn, "SELECT count(*) AS n FROM outbox") == before


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (b"this is not json", "malformed JSON"),
        (b"[1, 2, 3]", "not an object"),
        (b'{"ref": "refs/heads/main"}', "installation"),
        (b"", "malformed JSON"),
        (b'{"installation": {"id": "x\\u0000y"}}', "installation"),
    ],
)
async def test_malformed_bodies_are_400_with_one_line(
    client: httpx.AsyncClient, body: bytes, reason: str
) -> None:
    headers = {"X-GitHub-Event": "push", "X-GitHub-Delivery": "bad", "Content-Type": "application/json"}
    res = await client.post("/webhooks/github", content=body, headers=headers)
    assert res.status_code == 400, res.text
    assert reason in res.json()["reason"]
    assert "\n" not in res.json()["reason"]


async def test_verified_payload_missing_fields_is_400_and_recorded(
    client: httpx.AsyncClient, served: Served
) -> None:
    async with world_of(client, served.ctx.pool) as world:
        payload = without(load("github", "push_default_branch"), "after")
        res = await deliver(
            client, "github", "push_default_branch", "push", delivery="no-after", payload=payload
        )
        assert res.status_code == 400
        assert "after" in res.json()["reason"]
        (row,) = await deliveries_of(served.ctx.pool, world.tenant_id)
        assert (row["outcome"], row["http_status"]) == ("rejected", 400)


async def test_unknown_provider_is_404(client: httpx.AsyncClient) -> None:
    res = await client.post("/webhooks/sourcehut", content=b"{}")
    assert res.status_code == 404


def _raw_request(url: str, head: bytes, body: bytes = b"", *, chunks: int = 0, chunk: bytes = b"") -> bytes:
    """Send a request over a plain socket and return what the server answered."""
    parts = httpx.URL(url)
    with socket.create_connection((parts.host, parts.port), timeout=30) as sock:
        sock.sendall(head + body)
        for _ in range(chunks):
            try:
                sock.sendall(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
            except OSError:
                break
        received = b""
        while b"\r\n\r\n" not in received and (part := sock.recv(65536)):
            received += part
        head_part, _, rest = received.partition(b"\r\n\r\n")
        length = next(
            (
                int(line.split(b":", 1)[1])
                for line in head_part.split(b"\r\n")
                if line.lower().startswith(b"content-length:")
            ),
            0,
        )
        while len(rest) < length and (part := sock.recv(65536)):
            rest += part
        return head_part + b"\r\n\r\n" + rest


async def test_oversized_declared_body_is_413_before_it_is_sent(served: Served) -> None:
    limit = served.ctx.settings.webhook_max_bytes
    head = (
        "POST /webhooks/github HTTP/1.1\r\nHost: test\r\nContent-Type: application/json\r\n"
        f"X-GitHub-Event: push\r\nX-GitHub-Delivery: big\r\nContent-Length: {limit + 1}\r\n\r\n"
    ).encode()
    answer = await asyncio.to_thread(_raw_request, served.url, head, b'{"a": ')
    assert answer.startswith(b"HTTP/1.1 413"), answer[:200]
    assert b"larger than 25 MiB" in answer


async def test_oversized_streamed_body_is_413_when_it_crosses_the_limit(served: Served) -> None:
    limit = served.ctx.settings.webhook_max_bytes
    chunk = b"x" * (1024 * 1024)
    head = (
        b"POST /webhooks/gitlab HTTP/1.1\r\nHost: test\r\nContent-Type: application/json\r\n"
        b"X-Gitlab-Event: Push Hook\r\nTransfer-Encoding: chunked\r\n\r\n"
    )
    answer = await asyncio.to_thread(
        _raw_request, served.url, head, chunks=limit // len(chunk) + 1, chunk=chunk
    )
    assert answer.startswith(b"HTTP/1.1 413"), answer[:200]


async def test_push_to_a_branch_other_than_the_stored_default_is_ignored(
    client: httpx.AsyncClient, served: Served
) -> None:
    """Bitbucket payloads do not name the main branch: the stored default branch decides."""
    async with world_of(client, served.ctx.pool) as world:
        repo = world.repos["bitbucket"]
        path = world.path(f"/repositories/{repo['repository_id']}")
        res = await client.patch(path, json={"default_branch": "develop"}, headers=world.auth)
        assert res.status_code == 200, res.text
        res = await deliver(client, "bitbucket", "repo_push", "repo:push", delivery="not-default")
        assert res.json()["outcome"] == "ignored"
        assert "not the default branch 'develop'" in res.json()["reason"]


async def test_index_mode_off_ignores_pushes(client: httpx.AsyncClient, served: Served) -> None:
    async with world_of(client, served.ctx.pool) as world:
        repo = world.repos["github"]
        res = await client.patch(
            world.path(f"/repositories/{repo['repository_id']}"),
            json={"index_mode": "off"},
            headers=world.auth,
        )
        assert res.status_code == 200
        res = await deliver(client, "github", "push_default_branch", "push", delivery="mode-off")
        assert res.json()["outcome"] == "ignored"
        assert "indexing is off" in res.json()["reason"]


async def test_default_branch_follows_the_provider(client: httpx.AsyncClient, served: Served) -> None:
    async with world_of(client, served.ctx.pool) as world:
        repo = world.repos["github"]
        path = world.path(f"/repositories/{repo['repository_id']}")
        await client.patch(path, json={"default_branch": "trunk"}, headers=world.auth)
        res = await deliver(client, "github", "push_default_branch", "push", delivery="branch-sync")
        assert res.json()["outcome"] == "accepted"
        assert (await client.get(path, headers=world.auth)).json()["default_branch"] == "main"


async def test_installation_events_add_and_remove_repositories(
    client: httpx.AsyncClient, served: Served
) -> None:
    async with world_of(client, served.ctx.pool, repos=False) as world:
        res = await deliver(client, "github", "installation_created", "installation", delivery="inst-1")
        assert res.json()["outcome"] == "accepted"
        assert "3 added" in res.json()["reason"]
        listed = (await client.get(world.path("/repositories"), headers=world.auth)).json()["items"]
        names = sorted(r["full_name"] for r in listed)
        assert names == [
            "northwind-labs/ledger-service",
            "northwind-labs/merchant-sdk-python",
            "northwind-labs/payments-gateway",
        ]
        assert {r["installation_id"] for r in listed} == {world.installations["github"]["installation_id"]}
        res = await deliver(
            client,
            "github",
            "installation_repositories_removed",
            "installation_repositories",
            delivery="inst-2",
        )
        assert "1 removed" in res.json()["reason"]
        listed = (await client.get(world.path("/repositories"), headers=world.auth)).json()["items"]
        assert "northwind-labs/merchant-sdk-python" not in {r["full_name"] for r in listed}


async def test_gitlab_group_installation_matches_projects_below_it(
    client: httpx.AsyncClient, served: Served
) -> None:
    async with world_of(client, served.ctx.pool, repos=False) as world:
        gitlab = world.installations["gitlab"]["installation_id"]
        assert (
            await client.delete(world.path(f"/installations/{gitlab}"), headers=world.auth)
        ).status_code == 204
        group = {
            "provider": "gitlab",
            "kind": "group",
            "external_id": "311",
            "namespace": "platform/billing",
            "host": "gitlab.northwind.example",
            "webhook_secret": "glwt-4e8a1c6f2b9d0e7a3c5f8b1d",
        }
        res = await client.post(world.path("/installations"), json=group, headers=world.auth)
        assert res.status_code == 201, res.text
        url = "https://gitlab.northwind.example/platform/billing/invoice-engine.git"
        body = {"url": url, "installation_id": res.json()["installation_id"]}
        assert (
            await client.post(world.path("/repositories"), json=body, headers=world.auth)
        ).status_code == 201
        res = await deliver(client, "gitlab", "push", "Push Hook", delivery="group-push")
        assert (res.status_code, res.json()["outcome"]) == (202, "accepted"), res.text


async def test_rotated_secret_takes_effect(client: httpx.AsyncClient, served: Served) -> None:
    async with world_of(client, served.ctx.pool) as world:
        installation = world.installations["bitbucket"]["installation_id"]
        res = await client.patch(
            world.path(f"/installations/{installation}"),
            json={"webhook_secret": "rotated"},
            headers=world.auth,
        )
        assert res.status_code == 200
        assert "rotated" not in res.text
        old = await deliver(client, "bitbucket", "repo_push", "repo:push", delivery="after-rotation")
        assert old.status_code == 401


async def test_exactly_one_event_on_the_stream_per_accepted_delivery(
    client: httpx.AsyncClient, served: Served
) -> None:
    async with world_of(client, served.ctx.pool) as world:
        answers: list[httpx.Response] = []
        for i in range(4):
            payload = edited(load("github", "push_default_branch"), {"after": f"{i + 1:040x}"})
            payload["head_commit"]["id"] = payload["after"]
            answers.append(
                await deliver(
                    client, "github", "push_default_branch", "push", delivery=f"s-{i}", payload=payload
                )
            )
        for name, event in [("merge_request_open", "Merge Request Hook"), ("push", "Push Hook")]:
            answers.append(await deliver(client, "gitlab", name, event, delivery=f"gl-{name}"))
            answers.append(await deliver(client, "gitlab", name, event, delivery=f"gl-{name}"))  # redelivery
        answers.append(
            await deliver(client, "bitbucket", "pullrequest_created", "pullrequest:created", delivery="bb")
        )
        answers.append(await deliver(client, "bitbucket", "repo_push_tag", "repo:push", delivery="bb-tag"))
        accepted = [a.json() for a in answers if a.json()["outcome"] == "accepted"]
        assert len(accepted) == 7
        expected = Counter(e for a in accepted for e in a["events"])
        assert all(n == 1 for n in expected.values()) and len(expected) == 7
        on_stream = await stream_events(
            served.infra.nc, served.ctx.pool, served.infra.database_url, world.tenant_id
        )
        webhook_events = Counter(str(e["id"]) for e in on_stream if str(e["id"]) in expected)
        assert webhook_events == expected
        registered = {str(r["index_event_id"]) for r in world.repos.values()}
        assert {str(e["id"]) for e in on_stream} == set(expected) | registered


async def test_delivery_record_is_listed_by_the_api(client: httpx.AsyncClient, served: Served) -> None:
    async with world_of(client, served.ctx.pool) as world:
        await deliver(client, "github", "push_default_branch", "push", delivery="listed-1")
        await deliver(client, "github", "push_tag", "push", delivery="listed-2")
        listed = (await client.get(world.path("/deliveries"), headers=bearer(world.token))).json()["items"]
        assert [(d["delivery_id"], d["outcome"]) for d in listed] == [
            ("listed-2", "ignored"),
            ("listed-1", "accepted"),
        ]
        ignored = await client.get(
            world.path("/deliveries"), params={"outcome": "ignored"}, headers=world.auth
        )
        assert [d["delivery_id"] for d in ignored.json()["items"]] == ["listed-2"]
        assert WORKSPACE  # the world also routes Bitbucket deliveries (used above)


async def test_installation_event_refuses_a_url_registered_under_another_name(
    client: httpx.AsyncClient, served: Served
) -> None:
    async with world_of(client, served.ctx.pool, repos=False) as world:
        body = {"url": "https://github.com/northwind-labs/payments-gateway.git", "full_name": "custom/name"}
        assert (
            await client.post(world.path("/repositories"), json=body, headers=world.auth)
        ).status_code == 201
        res = await deliver(client, "github", "installation_created", "installation", delivery="conflict")
        assert res.json()["outcome"] == "accepted", res.text
        assert (
            "2 added" in res.json()["reason"]
            and "refused northwind-labs/payments-gateway" in res.json()["reason"]
        )
        assert len(res.json()["events"]) == 2
        listed = (await client.get(world.path("/repositories"), headers=world.auth)).json()["items"]
        assert len(listed) == 3


async def test_the_documented_fastapi_route_answers_like_the_fast_path(
    client: httpx.AsyncClient, served: Served
) -> None:
    """The served app answers webhooks in front of FastAPI; the FastAPI route behaves the same."""
    from palimpsest.ingest.api.app import create_api

    transport = httpx.ASGITransport(app=create_api(served.ctx))
    async with httpx.AsyncClient(transport=transport, base_url="http://ingest") as direct:
        async with world_of(client, served.ctx.pool) as world:
            body, headers = signed("github", "push_default_branch", "push", delivery="via-fastapi")
            res = await direct.post("/webhooks/github", content=body, headers=headers)
            assert (res.status_code, res.json()["outcome"]) == (202, "accepted")
            again = await client.post("/webhooks/github", content=body, headers=headers)
            assert (again.status_code, again.json()["outcome"]) == (200, "duplicate")
            assert len(await deliveries_of(served.ctx.pool, world.tenant_id)) == 2
        bad = await direct.post("/webhooks/github", content=b"nope", headers={"X-GitHub-Event": "push"})
        assert bad.status_code == 400
