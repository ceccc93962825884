"""POST /v1/…/reviews over real HTTP, with the reviewer service on the real bus.

``{base, head}`` and ``{base, diff}`` of the same change give the same review context; the diff
is turned into a head in a temporary repository, never in the user's; a diff that does not apply
is a failed review with reason ``diff_does_not_apply``; text that is not a unified diff is a 400.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import AsyncIterator
from typing import Any
from uuid import UUID

import httpx
import pytest

from palimpsest.core.llm import Gateway
from palimpsest.core.service import Infra
from tests.integration.analyzer.support import running
from tests.integration.ingest.read_support import Indexed, indexed_world, poll
from tests.integration.ingest.support import Served
from tests.integration.reviewer.test_reviewer_flow import reviewer_for, settings
from tests.support.gitrepo import git


@pytest.fixture(scope="module")
async def indexed(client: httpx.AsyncClient, served: Served, tmp_path_factory: pytest.TempPathFactory) -> Any:
    async with indexed_world(
        client, served.infra, tmp_path_factory.mktemp("review-api") / "repo", "reviews"
    ) as w:
        yield w


@contextlib.asynccontextmanager
async def reviewer(infra: Infra, tenant: UUID) -> AsyncIterator[None]:
    """The real reviewer service (no model) on a consumer of its own, for ``tenant``'s events."""
    s = settings()
    gateway = Gateway(infra.pool, s)
    try:
        async with running(infra, [reviewer_for(infra, {tenant}, s, gateway)]):
            yield
    finally:
        await gateway.aclose()


async def _review(client: httpx.AsyncClient, w: Indexed, body: dict[str, Any]) -> dict[str, Any]:
    """POST the request, then GET it by request id until the reviewer is done."""
    posted = await client.post(w.repo_path("/reviews"), json=body, headers=w.world.auth)
    assert posted.status_code == 202, posted.text
    request_id = posted.json()["request_id"]

    async def get() -> httpx.Response:
        return await client.get(w.path(f"/reviews/{request_id}"), headers=w.world.auth)

    done = await poll(get, lambda r: r.status_code == 200 and r.json()["state"] != "pending")
    return {**done.json(), "submitted": posted.json()}


def _comparable(review: dict[str, Any]) -> list[tuple[Any, ...]]:
    return [
        (
            c["source"],
            c["path"],
            c["start_line"],
            c["end_line"],
            c["last_modified_at"],
            c["annotation"],
            c["score"],
        )
        for c in review["context"]
    ]


def _repository_state(path: Any) -> tuple[str, str, str, str]:
    return (
        git(path, "count-objects", "-v"),
        git(path, "for-each-ref"),
        git(path, "status", "--porcelain"),
        git(path, "rev-parse", "HEAD"),
    )


async def test_a_submitted_diff_is_reviewed_like_the_same_change_as_two_revisions(
    client: httpx.AsyncClient, served: Served, indexed: Indexed
) -> None:
    repo = indexed.repo
    path = repo["path"]
    diff = git(path, "diff", repo["base"], repo["feature"])
    before = _repository_state(path)
    async with reviewer(served.infra, indexed.world.tenant_id):
        by_head = await _review(client, indexed, {"base": repo["base"], "head": "feature"})
        by_diff = await _review(client, indexed, {"base": "main", "diff": diff})
    assert by_head["state"] == "completed" and by_diff["state"] == "completed", (by_head, by_diff)
    assert by_head["head_sha"] == repo["feature"] and by_head["base_sha"] == repo["base"]
    assert by_diff["base_sha"] == repo["base"] and by_diff["head_sha"] not in (repo["base"], repo["feature"])
    assert by_diff["review_id"] != by_head["review_id"]
    assert by_diff["request_id"] == by_diff["submitted"]["request_id"]
    # the same change: the same context, in the same order, from the same sources
    assert by_head["context"] and _comparable(by_diff) == _comparable(by_head)
    timeless = [{k: v for k, v in r["sources"].items() if k != "timings"} for r in (by_diff, by_head)]
    assert timeless[0] == timeless[1] and by_diff["dropped"] == by_head["dropped"]  # timings vary
    assert by_diff["cochange_missing"] == by_head["cochange_missing"]
    assert [m["path"] for m in by_head["cochange_missing"]] == ["src/tax.py"]
    assert by_diff["summary"] and by_diff["mode"] == "brief" and by_diff["findings"] == []
    # the user's repository: no object, ref, index or work-tree change; the new head is not in it
    assert _repository_state(path) == before
    assert git(path, "cat-file", "-e", repo["feature"]) == ""
    assert git(path, "cat-file", "-t", by_diff["head_sha"], ok=(0, 1, 128)) == ""  # no such object
    # listed newest first, paged; each stored review readable by its own id
    auth = indexed.world.auth
    page = (await client.get(indexed.repo_path("/reviews?limit=1"), headers=auth)).json()
    assert [i["review_id"] for i in page["items"]] == [by_diff["review_id"]]
    assert page["items"][0]["provider"] == "local" and page["items"][0]["findings"] == 0
    rest = (
        await client.get(indexed.repo_path(f"/reviews?before={page['next_before']}"), headers=auth)
    ).json()
    assert [i["review_id"] for i in rest["items"]] == [by_head["review_id"]] and rest["next_before"] is None
    one = (await client.get(indexed.path(f"/reviews/{by_head['review_id']}"), headers=auth)).json()
    assert _comparable(one) == _comparable(by_head)


async def test_a_diff_that_does_not_apply_is_a_failed_review(
    client: httpx.AsyncClient, served: Served, indexed: Indexed
) -> None:
    wrong = (
        "diff --git a/src/billing.py b/src/billing.py\n"
        "--- a/src/billing.py\n"
        "+++ b/src/billing.py\n"
        "@@ -1,2 +1,2 @@\n"
        "-def not_what_is_there(items):\n"
        "+def compute_sum(items):\n"
        "     total = 0\n"
    )
    async with reviewer(served.infra, indexed.world.tenant_id):
        failed = await _review(client, indexed, {"base": indexed.repo["base"], "diff": wrong})
    assert failed["state"] == "failed" and failed["review_id"] is None
    assert failed["reason"].startswith("diff_does_not_apply"), failed["reason"]
    assert failed["context"] == [] and failed["head_sha"] is None


async def test_a_request_is_pending_until_the_reviewer_answers(
    client: httpx.AsyncClient, indexed: Indexed
) -> None:
    body = {"base": indexed.repo["base"], "head": indexed.repo["feature"], "title": "pending"}
    posted = await client.post(indexed.repo_path("/reviews"), json=body, headers=indexed.world.auth)
    assert posted.status_code == 202, posted.text
    answer = posted.json()
    assert {"event_id", "request_id", "submission_id", "repository_id"} <= set(answer)
    got = await client.get(indexed.path(f"/reviews/{answer['request_id']}"), headers=indexed.world.auth)
    assert got.status_code == 200
    assert (got.json()["state"], got.json()["review_id"]) == ("pending", None)
    missing = await client.get(indexed.path(f"/reviews/{uuid.uuid4()}"), headers=indexed.world.auth)
    assert missing.status_code == 404


@pytest.mark.parametrize(
    ("body", "status"),
    [
        ({"base": "main", "diff": "this is not a diff\n"}, 400),
        ({"base": "main", "diff": "--- a/x\n+++ b/x\n@@ -1,3 +1,3 @@\n-a\n+b\n"}, 400),
        ({"base": "main", "diff": "--- a/x\n+++ b/x\n@@ nonsense @@\n-a\n"}, 400),
        ({"base": "main", "diff": "@@ -1 +1 @@\n-a\n+b\n"}, 400),
        ({"base": "main", "head": "feature", "diff": "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n"}, 422),
        ({"base": "main"}, 422),
        ({"base": "main", "head": "feature", "extra": 1}, 422),
        ({"base": "-evil", "head": "feature"}, 422),
        (
            {"base": "main", "diff": "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+" + "b" * (5 * 1024 * 1024) + "\n"},
            422,
        ),
    ],
)
async def test_invalid_review_requests_are_refused(
    client: httpx.AsyncClient, indexed: Indexed, body: dict[str, Any], status: int
) -> None:
    res = await client.post(indexed.repo_path("/reviews"), json=body, headers=indexed.world.auth)
    assert res.status_code == status, res.text
    assert "nonsense" not in res.text and "this is not a diff" not in res.text
