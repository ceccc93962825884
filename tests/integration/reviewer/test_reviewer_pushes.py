"""Push after push on one pull request, through the bus, the fake model and the fake provider APIs:
the same finding is not posted again when lines above it move, a new finding is posted once, a
fixed finding is resolved, the summary is edited in place, and a push is reviewed incrementally
(the commits since the last reviewed head) unless a full review is asked for."""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any
from uuid import UUID

import pytest
from pydantic import SecretStr

from palimpsest.core.db import tenant_tx
from palimpsest.core.events import ReviewCompleted, ReviewRequested
from palimpsest.core.llm import Gateway
from palimpsest.core.service import Infra
from palimpsest.devtools.fakes.llm import FakeLLM
from palimpsest.index.stored import load_review
from palimpsest.reviewer.review import INCREMENTAL_HEADING, WHOLE_HEADING
from palimpsest.reviewer.service import Settings
from tests.integration.analyzer.support import running
from tests.integration.reviewer.conftest import BILLING
from tests.integration.reviewer.test_reviewer_flow import KEY, reviewer_for, settings
from tests.integration.reviewer.test_reviewer_posting import ENCRYPTION_KEY, TOKEN, provider_repository
from tests.support.fake_providers import FakeProviders
from tests.support.gitrepo import commit, git, init_repo
from tests.support.pipeline import request_and_wait

HEADER = "# header one\n# header two\n# header three\n"
REFUND = "\n\ndef refund(amount):\n    return amount * -1\n"
H1 = BILLING.replace("    total = 0\n", "    total = discount(items)\n")
H2 = HEADER + H1 + REFUND
H3 = H2.replace("total = discount(items)\n", "total = discount(items) or 0\n")


@contextlib.asynccontextmanager
async def reviewer(infra: Infra, tenant: UUID, s: Settings) -> AsyncIterator[None]:
    """One reviewer (and one gateway: litellm's client cache outlives a closed gateway) for a sequence."""
    gateway = Gateway(infra.pool, s)
    try:
        async with running(infra, [reviewer_for(infra, {tenant}, s, gateway)]):
            yield
    finally:
        await gateway.aclose()


async def ask(infra: Infra, event: ReviewRequested) -> dict[str, Any]:
    found = await request_and_wait(infra, event, (ReviewCompleted,), timeout_s=90)
    done = found[ReviewCompleted]
    assert done.state in ("completed", "skipped"), done
    async with tenant_tx(infra.pool, event.tenant_id) as conn:
        stored = await load_review(conn, done.review_id)
    assert stored is not None
    return stored.to_json()


@pytest.fixture(scope="module")
def pushes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    r = init_repo(tmp_path_factory.mktemp("pushes") / "repo")
    base = commit(r, "2024-05-01T00:00:00+00:00", {"src/billing.py": BILLING, "src/util.py": "X = 1\n"})
    git(r, "checkout", "-q", "-b", "pr")
    h1 = commit(r, "2024-06-01T00:00:00+00:00", {"src/billing.py": H1}, message="discount")
    h2 = commit(r, "2024-06-02T00:00:00+00:00", {"src/billing.py": H2}, message="header and refund")
    h3 = commit(r, "2024-06-03T00:00:00+00:00", {"src/billing.py": H3}, message="fix discount")
    git(r, "checkout", "-q", "main")
    return {"path": r, "base": base, "h1": h1, "h2": h2, "h3": h3}


def _shown(body: dict[str, Any]) -> str:
    """The diff the model is asked about (the first ```diff block of the prompt)."""
    text = body["messages"][-1]["content"]
    found = re.search(r"```diff\n(.*?)\n```", text, re.S)
    return found.group(1) if found else ""


def model(body: dict[str, Any]) -> str:
    """Reports the None-discount problem while the unguarded line is in the PR, and the refund sign."""
    prompt = body["messages"][-1]["content"]
    findings = []
    if "+    total = discount(items)\n" in prompt:
        line = 5 if "+# header one" in prompt else 2
        findings.append(
            {
                "path": "src/billing.py",
                "start_line": line,
                "end_line": line,
                "severity": "major",
                "category": "bug",
                "message": f"discount() may return None (line {line})",
                "suggested_change": "    total = discount(items) or 0",
            }
        )
    if "+def refund" in prompt:
        line = H2.splitlines().index("    return amount * -1") + 1
        findings.append(
            {
                "path": "src/billing.py",
                "start_line": line,
                "end_line": line,
                "severity": "minor",
                "category": "logic",
                "message": "refund inverts the sign",
            }
        )
    return json.dumps({"summary": f"{len(findings)} problem(s).", "findings": findings})


def event(
    tenant: UUID, repo_id: UUID, pushes: dict[str, Any], head: str, provider: str, **kw: Any
) -> ReviewRequested:
    return ReviewRequested(
        tenant_id=tenant,
        repository_id=repo_id,
        base_sha=pushes["base"],
        head_sha=pushes[head],
        provider=provider,
        **{"number": 11, **kw},
    )


def model_settings(llm: FakeLLM, api: FakeProviders, provider: str, **kw: Any) -> Settings:
    return settings(
        llm_model="openai/fake-model",
        llm_api_base=llm.base_url,
        llm_api_key=SecretStr(KEY),
        encryption_key=SecretStr(ENCRYPTION_KEY),
        **{f"review_{provider}_api_url": api.url},
        **kw,
    )


@pytest.mark.parametrize("provider", ["github", "gitlab", "bitbucket"])
async def test_push_after_push(infra: Infra, pushes: dict[str, Any], provider: str) -> None:
    tenant, repo_id = await provider_repository(infra, pushes, provider)
    with FakeProviders(token=TOKEN) as api, FakeLLM(reply=model, api_key=KEY) as llm:
        s = model_settings(llm, api, provider)

        def diff_to(head: str) -> None:
            api.diffs[11] = git(pushes["path"], "diff", "--no-color", "-M", pushes["base"], pushes[head])

        async with reviewer(infra, tenant, s):
            diff_to("h1")
            first = await ask(infra, event(tenant, repo_id, pushes, "h1", provider))
            [f1] = first["findings"]
            assert first["scope"] == "full" and f1["start_line"] == 2 and f1["posted_as"] == "inline"
            assert len(api.inline(provider, 11)) == 1 and len(api.summaries(provider, 11)) == 1

            # push 2, reviewed in full on request: the discount finding moved 3 lines down and keeps
            # its fingerprint (not posted again); the refund finding is new and posted once
            diff_to("h2")
            second = await ask(
                infra, event(tenant, repo_id, pushes, "h2", provider, trigger="comment", full=True)
            )
            assert second["scope"] == "full"
            assert second["sources"]["scope"]["why"] == "a full review was asked for"
            by_line = {f["start_line"]: f for f in second["findings"]}
            assert by_line[5]["fingerprint"] == f1["fingerprint"] and by_line[5]["posted_as"] == "existing"
            refund = next(f for f in second["findings"] if f["category"] == "logic")
            assert refund["posted_as"] == "inline"
            assert len(api.inline(provider, 11)) == 2
            assert second["resolved"] == []

            # push 3 fixes the discount line: reviewed incrementally (one commit since h2), the
            # fixed finding is resolved on the provider, the refund one stays open, not reposted
            diff_to("h3")
            third = await ask(infra, event(tenant, repo_id, pushes, "h3", provider, trigger="synchronize"))
            assert third["scope"] == "incremental" and third["commits"] == [pushes["h3"]]
            assert third["since_sha"] == pushes["h2"]
            prompt = llm.requests("chat")[-1].body
            assert INCREMENTAL_HEADING.split("(")[0] in prompt["messages"][-1]["content"]
            assert WHOLE_HEADING in prompt["messages"][-1]["content"]
            assert "+def refund" not in _shown(prompt)  # only the commits since h2 are under review
            assert third["resolved"] == [f1["fingerprint"]]
            assert len(api.inline(provider, 11)) == 2
            resolved = [c for c in api.inline(provider, 11) if c["resolved"]]
            assert len(resolved) == 1
            text = resolved[0].get("body") or resolved[0]["content"]["raw"]
            assert f"fp={f1['fingerprint']}" in text
            [summary] = api.summaries(provider, 11)  # one summary, edited in place
            assert f"head={pushes['h3']}" in summary and "1 resolved" in summary

            # the fix is recorded as feedback on the finding; both posted findings have their thread
            async with tenant_tx(infra.pool, tenant) as conn:
                cur = await conn.execute(
                    "SELECT fingerprint, kind, category FROM review_feedback WHERE repository_id = %s",
                    (repo_id,),
                )
                assert [tuple(r.values()) for r in await cur.fetchall()] == [
                    (f1["fingerprint"], "code_changed", "bug")
                ]
                cur = await conn.execute(
                    "SELECT fingerprint, state FROM review_threads WHERE repository_id = %s ORDER BY state",
                    (repo_id,),
                )
                threads = [tuple(r.values()) for r in await cur.fetchall()]
                assert threads == [(refund["fingerprint"], "open"), (f1["fingerprint"], "resolved")]

            # a redelivered request for push 3: nothing posted, nothing edited
            edits = len(api.edits)
            again = await ask(infra, event(tenant, repo_id, pushes, "h3", provider))
            assert again["review_id"] == third["review_id"] and len(api.edits) == edits
            assert len(api.items(provider, 11)) == 3
    assert api.rejected == []


async def test_a_large_push_is_reviewed_in_full(infra: Infra, pushes: dict[str, Any]) -> None:
    tenant, repo_id = await provider_repository(infra, pushes, "github")
    with FakeProviders(token=TOKEN) as api, FakeLLM(reply=model, api_key=KEY) as llm:
        async with reviewer(
            infra, tenant, model_settings(llm, api, "github", review_incremental_max_lines=2)
        ):
            await ask(infra, event(tenant, repo_id, pushes, "h1", "github"))
            second = await ask(infra, event(tenant, repo_id, pushes, "h2", "github", trigger="synchronize"))
    assert second["scope"] == "full" and second["commits"] == []
    assert "more than 2" in second["sources"]["scope"]["why"]
    async with tenant_tx(infra.pool, tenant) as conn:
        cur = await conn.execute(
            "SELECT scope FROM reviews WHERE repository_id = %s ORDER BY created_at", (repo_id,)
        )
        assert [r["scope"] for r in await cur.fetchall()] == ["full", "full"]


async def test_a_late_request_for_an_older_head_does_not_overwrite_the_newer_summary(
    infra: Infra, pushes: dict[str, Any]
) -> None:
    tenant, repo_id = await provider_repository(infra, pushes, "bitbucket")
    with FakeProviders(token=TOKEN) as api, FakeLLM(reply=model, api_key=KEY) as llm:
        async with reviewer(infra, tenant, model_settings(llm, api, "bitbucket")):
            newer = await ask(infra, event(tenant, repo_id, pushes, "h3", "bitbucket"))
            late = event(tenant, repo_id, pushes, "h2", "bitbucket", trigger="synchronize")
            late = late.model_copy(update={"occurred_at": late.occurred_at - timedelta(hours=1)})
            older = await ask(infra, late)
    assert newer["posted"] is True
    assert older["state"] == "completed" and older["posted"] is False
    assert (older["reason"] or "").startswith(f"not posted: superseded by the review of {pushes['h3'][:12]}")
    [summary] = api.summaries("bitbucket", 11)
    assert f"head={pushes['h3']}" in summary and api.edits == []
    # the older head's findings were not posted either (the refund one was, by the newer review)
    assert len(api.inline("bitbucket", 11)) == len(newer["findings"])


async def test_review_full_on_a_comment_without_a_head(infra: Infra, pushes: dict[str, Any]) -> None:
    """A GitHub comment carries no commit: the head is the pull request's ref; a full review of a
    head reviewed before replaces it, posts nothing twice and edits the summary."""
    git(pushes["path"], "update-ref", "refs/pull/12/head", pushes["h1"])
    tenant, repo_id = await provider_repository(infra, pushes, "github")
    with FakeProviders(token=TOKEN) as api, FakeLLM(reply=model, api_key=KEY) as llm:
        async with reviewer(infra, tenant, model_settings(llm, api, "github")):
            first = await ask(infra, event(tenant, repo_id, pushes, "h1", "github", number=12))
            asked = ReviewRequested(
                tenant_id=tenant,
                repository_id=repo_id,
                provider="github",
                number=12,
                trigger="comment",
                full=True,
            )
            again = await ask(infra, asked)
    assert again["head_sha"] == pushes["h1"] and again["review_id"] != first["review_id"]
    assert again["scope"] == "full" and again["sources"]["scope"]["why"] == "a full review was asked for"
    assert [f["posted_as"] for f in again["findings"]] == ["existing"]
    assert (
        len(api.inline("github", 12)) == 1 and len(api.summaries("github", 12)) == 1 and len(api.edits) == 1
    )
    async with tenant_tx(infra.pool, tenant) as conn:
        cur = await conn.execute("SELECT count(*) AS n FROM reviews WHERE repository_id = %s", (repo_id,))
        assert (await cur.fetchone())["n"] == 1  # type: ignore[index]


async def test_the_newest_request_wins_even_for_a_head_reviewed_before(
    infra: Infra, pushes: dict[str, Any]
) -> None:
    """h3 posted; a later request for h2 (arrived late, but requested later) is posted over it; h3
    asked for again afterwards is answered from its stored review and the summary names it again."""
    tenant, repo_id = await provider_repository(infra, pushes, "gitlab")
    with FakeProviders(token=TOKEN) as api, FakeLLM(reply=model, api_key=KEY) as llm:
        async with reviewer(infra, tenant, model_settings(llm, api, "gitlab")):
            first = await ask(infra, event(tenant, repo_id, pushes, "h3", "gitlab"))
            await ask(infra, event(tenant, repo_id, pushes, "h2", "gitlab", trigger="synchronize"))
            [summary] = api.summaries("gitlab", 11)
            assert f"head={pushes['h2']}" in summary
            inline = len(api.inline("gitlab", 11))
            again = await ask(infra, event(tenant, repo_id, pushes, "h3", "gitlab", trigger="reopened"))
            assert again["review_id"] == first["review_id"]
            [summary] = api.summaries("gitlab", 11)
            assert f"head={pushes['h3']}" in summary and len(api.inline("gitlab", 11)) == inline
            assert [f["posted_as"] for f in again["findings"]] == [f["posted_as"] for f in first["findings"]]
            # a redelivery of that request changes nothing more
            edits = len(api.edits)
            await ask(infra, event(tenant, repo_id, pushes, "h3", "gitlab", trigger="reopened"))
            assert len(api.edits) == edits
    assert api.rejected == []


async def test_a_newer_request_for_the_head_shown_keeps_older_requests_out(
    infra: Infra, pushes: dict[str, Any]
) -> None:
    """h3 requested (t1) and posted; h3 requested again (t3), answered from its stored review with
    nothing to post; a late request for h2 from between them (t2) then posts nothing: the newest
    request is h3's, so the summary keeps naming h3."""
    tenant, repo_id = await provider_repository(infra, pushes, "github")
    with FakeProviders(token=TOKEN) as api, FakeLLM(reply=model, api_key=KEY) as llm:
        async with reviewer(infra, tenant, model_settings(llm, api, "github")):
            first = event(tenant, repo_id, pushes, "h3", "github")
            await ask(infra, first.model_copy(update={"occurred_at": first.occurred_at - timedelta(hours=2)}))
            edits = len(api.edits)
            await ask(infra, event(tenant, repo_id, pushes, "h3", "github", trigger="reopened"))
            assert len(api.edits) == edits  # the summary already names h3
            late = event(tenant, repo_id, pushes, "h2", "github", trigger="synchronize")
            older = await ask(
                infra, late.model_copy(update={"occurred_at": late.occurred_at - timedelta(hours=1)})
            )
    assert older["state"] == "completed" and older["posted"] is False
    assert (older["reason"] or "").startswith(f"not posted: superseded by the review of {pushes['h3'][:12]}")
    [summary] = api.summaries("github", 11)
    assert f"head={pushes['h3']}" in summary
