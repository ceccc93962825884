"""Feedback on posted review findings from the providers' webhooks (real HTTP, real PostgreSQL):
resolutions, replies and reactions on the reviewer's threads are recorded once per delivery,
anything else is ignored with a reason, and the API lists them with acceptance per category."""

from __future__ import annotations

import copy
from typing import Any
from uuid import UUID

import httpx

from palimpsest.core.db import tenant_tx
from palimpsest.core.ids import uuid7
from tests.integration.ingest.support import Served, deliver, world_of
from tests.unit.ingest.webhook_support import load

FP_GH, FP_GL, FP_BB = "a" * 32, "b" * 32, "c" * 32
MARK = "<!-- palimpsest-finding fp={} -->"


async def _posted(served: Served, tenant: UUID, repo_id: str, provider: str, number: int, fp: str, thread: str,
                  comment: str | None, category: str) -> None:  # fmt: skip
    """What the reviewer records when it posts a finding inline."""
    async with tenant_tx(served.ctx.pool, tenant) as conn:
        await conn.execute(
            "INSERT INTO review_threads (tenant_id, repository_id, provider, number, fingerprint, thread_ref,"
            " comment_ref, review_id, path, category, severity) VALUES (%s, %s, %s, %s, %s, %s, %s, %s,"
            " 'src/a.py', %s, 'major')",
            (tenant, repo_id, provider, number, fp, thread, comment, uuid7(), category),
        )


def _github(kind: str) -> tuple[str, dict[str, Any]]:
    base = load("github", "issue_comment_created")
    common = {k: base[k] for k in ("repository", "organization", "sender", "installation")}
    if kind == "thread":
        thread = {
            "node_id": "PRRT_1",
            "comments": [{"id": 555, "body": "**major** (bug): x\n\n" + MARK.format(FP_GH)}],
        }
        return "pull_request_review_thread", {
            "action": "resolved",
            "thread": thread,
            "pull_request": {"number": 131},
            **common,
        }
    reply_to = 555 if kind == "reply" else 999
    comment = {
        "id": 556,
        "in_reply_to_id": reply_to,
        "body": "fixed, thanks",
        "user": {"login": "priya-raman", "type": "User"},
    }
    return "pull_request_review_comment", {"action": "created", "comment": comment, "pull_request": {"number": 131}, **common}  # fmt: skip


def _gitlab(kind: str) -> tuple[str, dict[str, Any]]:
    note = load("gitlab", "note_merge_request")
    if kind == "reply":
        note["object_attributes"].update(
            {"type": "DiffNote", "note": "we do it this way on purpose", "discussion_id": "d" * 40}
        )
        return "Note Hook", note
    emoji = {
        "object_kind": "emoji",
        "event_type": "award",
        "user": note["user"],
        "project_id": note["project_id"],
        "project": note["project"],
        "object_attributes": {"id": 1, "name": "thumbsup", "awardable_type": "Note", "awardable_id": 7777},
        "merge_request": note["merge_request"],
        "note": {"id": 7777, "discussion_id": "d" * 40, "note": "**minor** (style): y\n\n" + MARK.format(FP_GL)},
    }  # fmt: skip
    return "Emoji Hook", emoji


def _bitbucket(kind: str) -> tuple[str, dict[str, Any]]:
    payload = load("bitbucket", "pullrequest_comment_created")
    if kind == "resolved":
        payload["comment"] = {
            **payload["comment"],
            "id": 901,
            "content": {"raw": "**major** (bug): z\n\n" + MARK.format(FP_BB)},
        }
        return "pullrequest:comment_resolved", payload
    reply = copy.deepcopy(payload)
    reply["comment"].update({"id": 902, "parent": {"id": 901}, "content": {"raw": "agreed"}})
    return "pullrequest:comment_created", reply


async def _send(
    client: httpx.AsyncClient, provider: str, event: str, payload: dict[str, Any], delivery: str
) -> httpx.Response:
    return await deliver(client, provider, "", event, delivery=delivery, payload=payload)


async def test_feedback_is_recorded_once_and_listed(client: httpx.AsyncClient, served: Served) -> None:
    async with world_of(client, served.ctx.pool) as world:
        tenant = world.tenant_id
        gh, gl, bb = (world.repos[p]["repository_id"] for p in ("github", "gitlab", "bitbucket"))
        await _posted(served, tenant, gh, "github", 131, FP_GH, "555", None, "bug")
        await _posted(served, tenant, gl, "gitlab", 57, FP_GL, "d" * 40, "7777", "Style")
        await _posted(served, tenant, bb, "bitbucket", 88, FP_BB, "901", None, "bug")
        sends = [
            ("github", *_github("thread"), "gh-1"),
            ("github", *_github("reply"), "gh-2"),
            ("gitlab", *_gitlab("reply"), "gl-1"),
            ("gitlab", *_gitlab("emoji"), "gl-2"),
            ("bitbucket", *_bitbucket("resolved"), "bb-1"),
            ("bitbucket", *_bitbucket("reply"), "bb-2"),
        ]
        for provider, event, payload, delivery in sends:
            res = await _send(client, provider, event, payload, delivery)
            assert (res.status_code, res.json()["outcome"]) == (202, "accepted"), (delivery, res.text)
        # a redelivery records nothing twice; a reply to somebody else's comment is not feedback
        again = await _send(client, "github", *_github("thread"), "gh-1")
        assert again.status_code == 200
        other = await _send(client, "github", *_github("other"), "gh-3")
        assert (other.status_code, other.json()["outcome"]) == (202, "ignored")
        assert "not about a finding" in other.json()["reason"]

        async with tenant_tx(served.ctx.pool, tenant) as conn:
            cur = await conn.execute(
                "SELECT provider, kind, detail, actor FROM review_feedback ORDER BY provider, kind"
            )
            rows = [tuple(r.values()) for r in await cur.fetchall()]
            cur = await conn.execute("SELECT provider, state FROM review_threads ORDER BY provider")
            states = [tuple(r.values()) for r in await cur.fetchall()]
        assert rows == [
            ("bitbucket", "reply", None, rows[0][3]),
            ("bitbucket", "resolved", None, rows[1][3]),
            ("github", "reply", None, "priya-raman"),
            ("github", "resolved", None, rows[3][3]),
            ("gitlab", "reaction", "thumbsup", rows[4][3]),
            ("gitlab", "reply", None, rows[5][3]),
        ]
        assert states == [("bitbucket", "resolved"), ("github", "resolved"), ("gitlab", "open")]

        res = await client.get(world.path(f"/repositories/{gh}/review-feedback"), headers=world.auth)
        assert res.status_code == 200, res.text
        body = res.json()
        assert [(i["kind"], i["fingerprint"], i["path"]) for i in body["items"]] == [
            ("reply", FP_GH, "src/a.py"),
            ("resolved", FP_GH, "src/a.py"),
        ]
        assert body["acceptance"] == [
            {"category": "bug", "posted": 1, "accepted": 1, "replied": 1, "rejected": 0}
        ]
        res = await client.get(world.path(f"/repositories/{gl}/review-feedback"), headers=world.auth)
        assert res.json()["acceptance"][0]["accepted"] == 1  # the thumbsup
