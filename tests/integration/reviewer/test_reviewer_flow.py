"""The reviewer through the bus: ``review.requested`` → stored review + ``review.completed``.

A real git repository with controlled dates is indexed by the real chunker and recency-scanner;
the reviewer service runs on a test consumer of its own. The model, when there is one, is the
local OpenAI-compatible fake (real HTTP on 127.0.0.1).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from uuid import UUID

import pytest
from pydantic import SecretStr

from palimpsest.cli.commands_review import review_local, review_text
from palimpsest.core.db import tenant_tx
from palimpsest.core.events import ReviewCompleted, ReviewRequested
from palimpsest.core.llm import Gateway
from palimpsest.core.service import Infra, ServiceDefinition
from palimpsest.devtools.fakes.llm import FakeLLM
from palimpsest.index.context.assemble import DOC_ANNOTATION, FROM_HEAD_NOTE, STALE_USAGE_NOTE
from palimpsest.index.stored import load_review
from palimpsest.reviewer.review import CODE_IS_AUTHORITATIVE, NEEDS_MODEL
from palimpsest.reviewer.service import Settings
from palimpsest.reviewer.service import definition as reviewer_definition
from tests.integration.analyzer.support import _scoped, index, indexer_definitions, new_repository, running
from tests.support.pipeline import request_and_wait

KEY = "sk-reviewer-test-41b7"


@pytest.fixture(scope="module")
async def indexed(infra: Infra, repo: dict[str, Any]) -> tuple[UUID, UUID]:
    tenant, repo_id = await new_repository(infra, repo["path"], "reviewer")
    async with running(infra, indexer_definitions({tenant})):
        await index(infra, tenant, repo_id)
    return tenant, repo_id


def settings(**overrides: Any) -> Settings:
    values: dict[str, Any] = {
        "allow_local_sources": True,
        "ack_wait_s": 5.0,
        "llm_model": None,
        "llm_api_base": None,
        "llm_api_key": None,
        "llm_timeout_s": 5.0,
        "llm_retry_base_s": 0.01,
        "llm_retry_max_s": 0.05,
    }
    values.update(overrides)
    return Settings.model_construct(**{**Settings().model_dump(), **values})


def reviewer_for(infra: Infra, tenants: set[UUID], s: Settings, gateway: Gateway) -> ServiceDefinition:
    return _scoped(reviewer_definition(infra, s, gateway=gateway), tenants, "reviewer")


async def review(infra: Infra, tenant: UUID, event: ReviewRequested, s: Settings) -> dict[str, Any]:
    gateway = Gateway(infra.pool, s)
    try:
        async with running(infra, [reviewer_for(infra, {tenant}, s, gateway)]):
            found = await request_and_wait(infra, event, (ReviewCompleted,), timeout_s=90)
    finally:
        await gateway.aclose()
    done = found[ReviewCompleted]
    assert done.state == "completed", done
    async with tenant_tx(infra.pool, tenant) as conn:
        stored = await load_review(conn, done.review_id)
    assert stored is not None
    return stored.to_json()


def pr(tenant: UUID, repo_id: UUID, repo: dict[str, Any], branch: str, **kw: Any) -> ReviewRequested:
    return ReviewRequested(
        tenant_id=tenant, repository_id=repo_id, base_sha=repo["base"], head_sha=repo[branch], **kw
    )


def comparable(stored: dict[str, Any]) -> list[tuple[Any, ...]]:
    return [
        (c["source"], c["path"], c["start_line"], c["end_line"], c["last_modified_at"], c["annotation"])
        for c in stored["context"]
    ]


async def test_without_a_model_the_review_is_the_context_brief(
    infra: Infra, indexed: tuple[UUID, UUID], repo: dict[str, Any]
) -> None:
    tenant, repo_id = indexed
    stored = await review(
        infra, tenant, pr(tenant, repo_id, repo, "feature", provider="github", number=7), settings()
    )
    assert stored["mode"] == "brief" and stored["findings"] == []
    assert NEEDS_MODEL in stored["summary"]
    assert "src/billing.py" in stored["summary"]
    # co-change partner missing from the PR, reported with the evidence that says why
    assert [m["path"] for m in stored["cochange_missing"]] == ["src/tax.py"]
    assert stored["cochange_missing"][0]["reason"] == (
        "changed in 3 of the 3 commits that changed `src/billing.py` since 2024-03 (lift 2.0)"
    )
    assert "- src/tax.py: changed in 3 of the 3 commits" in stored["summary"]
    # the base snapshot's compute_total no longer matches head: the PR's own file is shown as the
    # head has it, never listed as dropped
    assert all(d["path"] != "src/billing.py" for d in stored["dropped"])
    own = [c for c in stored["context"] if c["path"] == "src/billing.py"]
    assert own and all(c["reason"].endswith(FROM_HEAD_NOTE) for c in own)
    # the code that calls the changed definition comes first among its usages, dated, saying why
    usage = [c for c in stored["context"] if c["source"] == "usage"]
    assert usage[0]["path"] == "src/invoice.py"
    assert usage[0]["annotation"] == "last modified 2024-03-01"
    assert "compute_total" in usage[0]["reason"]
    # the docs that name compute_total are usages too: the guide headed as documentation; the
    # 2022 design doc, stale by the rule, is kept because the change may be what makes it wrong
    docs = {c["path"]: c for c in usage if c["path"].startswith("docs/")}
    assert set(docs) == {"docs/guide.md", "docs/design.md"}
    assert docs["docs/guide.md"]["annotation"].startswith(DOC_ANNOTATION)
    assert docs["docs/design.md"]["annotation"] == (
        f"{DOC_ANNOTATION}, last modified 2022-01-10, {STALE_USAGE_NOTE}"
    )
    assert all(c["reason"] for c in stored["context"])


async def test_cochange_partners_in_the_pr_are_not_reported(
    infra: Infra, indexed: tuple[UUID, UUID], repo: dict[str, Any]
) -> None:
    tenant, repo_id = indexed
    stored = await review(infra, tenant, pr(tenant, repo_id, repo, "both", provider="local"), settings())
    assert stored["cochange_missing"] == []  # the PR touches its only partner: nothing to warn about
    assert all(c["source"] != "cochange" or c["path"] != "src/tax.py" for c in stored["context"])


async def test_the_same_head_is_reviewed_once(
    infra: Infra, indexed: tuple[UUID, UUID], repo: dict[str, Any]
) -> None:
    tenant, repo_id = indexed
    first = await review(
        infra, tenant, pr(tenant, repo_id, repo, "feature", provider="github", number=7), settings()
    )
    again = await review(
        infra, tenant, pr(tenant, repo_id, repo, "feature", provider="github", number=7), settings()
    )
    assert again["review_id"] == first["review_id"]
    async with tenant_tx(infra.pool, tenant) as conn:
        cur = await conn.execute("SELECT count(*) AS n FROM reviews WHERE head_sha = %s", (repo["feature"],))
        row = await cur.fetchone()
    assert row is not None and row["n"] == 1


async def test_the_webhook_flow_and_the_local_flow_yield_the_same_context(
    infra: Infra, repo: dict[str, Any]
) -> None:
    s = settings()
    hook_tenant, hook_repo = await new_repository(infra, repo["path"], "reviewer-hook")
    local_tenant, local_repo = await new_repository(infra, repo["path"], "reviewer-local")
    tenants = {hook_tenant, local_tenant}
    async with running(infra, indexer_definitions(tenants)):
        await index(infra, hook_tenant, hook_repo)
        await index(infra, local_tenant, local_repo)
    hook = await review(
        infra, hook_tenant, pr(hook_tenant, hook_repo, repo, "feature", provider="github", number=3), s
    )
    gateway = Gateway(infra.pool, s)
    try:
        async with running(infra, [reviewer_for(infra, {local_tenant}, s, gateway)]):
            local = await review_local(
                infra.pool,
                infra.nc,
                local_tenant,
                repo["path"],
                "main",
                "feature",
                timeout_s=90,
                say=lambda _: None,
            )
    finally:
        await gateway.aclose()
    assert local["state"] == "completed"
    assert comparable(local) == comparable(hook) and comparable(hook)
    assert local["dropped"] == hook["dropped"]
    assert local["cochange_missing"] == hook["cochange_missing"]
    assert [m["path"] for m in hook["cochange_missing"]] == ["src/tax.py"]
    for key in ("snapshot_id", "context", "dropped", "cochange_missing", "findings", "summary"):
        assert key in local


@pytest.fixture
def fake() -> Iterator[FakeLLM]:
    reply = (
        '{"summary": "discount() can return None.", "findings": ['
        '{"path": "src/billing.py", "start_line": 2, "end_line": 2, "severity": "major", "category": "bug",'
        ' "message": "discount() may return None", "suggested_change": "total = discount(items) or 0"},'
        '{"path": "src/billing.py", "start_line": 9, "end_line": 9, "severity": "minor", "category": "style",'
        ' "message": "not a changed line"}]}'
    )
    with FakeLLM(reply=reply, api_key=KEY) as server:
        yield server


async def test_with_a_model_findings_on_changed_lines_are_stored(
    infra: Infra, repo: dict[str, Any], fake: FakeLLM
) -> None:
    tenant, repo_id = await new_repository(infra, repo["path"], "reviewer-model")
    async with running(infra, indexer_definitions({tenant})):
        await index(infra, tenant, repo_id)
    s = settings(llm_model="openai/fake-model", llm_api_base=fake.base_url, llm_api_key=SecretStr(KEY))
    stored = await review(infra, tenant, pr(tenant, repo_id, repo, "feature", provider="gitlab", number=5), s)
    assert stored["mode"] == "model"
    assert [(f["path"], f["start_line"], f["severity"]) for f in stored["findings"]] == [
        ("src/billing.py", 2, "major")
    ]
    assert stored["findings"][0]["suggested_change"] == "total = discount(items) or 0"
    assert stored["findings_dropped"] == 1
    assert stored["summary"] == "discount() can return None."
    assert stored["tokens"]["prompt"] > 0
    # the CLI's text leads with the result: the review id, the finding, the co-change warning, the
    # summary; the context and what was dropped come after
    lines = review_text(stored).splitlines()
    assert lines[0].startswith(f"Review {stored['review_id']} · completed")
    finding = next(i for i, line in enumerate(lines) if "discount() may return None" in line)
    warning = lines.index("Usually changes with these, not in this change:")
    summary = lines.index("discount() can return None.")
    context = lines.index("Context (prompt order):")
    assert 0 < finding < warning < summary < context
    assert any(line.startswith("  src/tax.py: ") for line in lines[warning:summary])
    assert lines[-1] == f"Show it again: palimpsest review show {stored['review_id']}"
    prompt = fake.requests("chat")[0].text()
    assert CODE_IS_AUTHORITATIVE in prompt
    assert "src/invoice.py" in prompt and "usually change" in prompt


async def test_a_refused_key_is_said_once_and_not_retried(infra: Infra, repo: dict[str, Any]) -> None:
    """A model that is configured but refuses the key: one call, then the brief with why the model
    call failed — not also that no model is configured."""
    tenant, repo_id = await new_repository(infra, repo["path"], "reviewer-refused-key")
    async with running(infra, indexer_definitions({tenant})):
        await index(infra, tenant, repo_id)
    with FakeLLM(api_key=KEY) as server:
        s = settings(
            llm_model="openai/fake-model",
            llm_api_base=server.base_url,
            llm_api_key=SecretStr("sk-not-the-key-8d2e"),
            llm_max_retries=3,
        )
        stored = await review(infra, tenant, pr(tenant, repo_id, repo, "feature", provider="local"), s)
        assert len(server.requests("chat")) == 1, "an authentication failure is not retried"
    assert stored["mode"] == "brief" and stored["findings"] == []
    summary = stored["summary"]
    assert "The model call failed (authentication (HTTP 401) after 1 attempt(s)" in summary
    assert NEEDS_MODEL not in summary and "No model is configured" not in summary
    assert "sk-not-the-key-8d2e" not in summary
    assert "src/billing.py" in summary  # the brief is still there


async def test_a_routed_rerank_model_scores_the_context(infra: Infra, repo: dict[str, Any]) -> None:
    with FakeLLM(api_key=KEY) as server:
        tenant, repo_id = await new_repository(infra, repo["path"], "reviewer-rerank")
        async with running(infra, indexer_definitions({tenant})):
            await index(infra, tenant, repo_id)
        s = settings(
            llm_rerank_model="cohere/fake-rerank", llm_api_base=server.url, llm_api_key=SecretStr(KEY)
        )
        stored = await review(infra, tenant, pr(tenant, repo_id, repo, "feature", provider="bitbucket"), s)
        assert server.requests("rerank"), "the rerank model was not asked"
    assert stored["sources"]["ranking"] == "rerank"
    assert stored["mode"] == "brief"  # rerank alone is no chat model
    assert all(0.0 <= c["score"] <= 1.0 for c in stored["context"])


async def test_a_new_snapshot_of_a_reviewed_repository_is_warmed(infra: Infra, tmp_path: Any) -> None:
    """The reviewer resolves and stores a new snapshot's graph when it is built (any replica then
    loads it), and keeps it in its cache for repositories reviewed recently, so the first review
    after a push does not pay for it."""
    import asyncio

    from palimpsest.index.graph import GRAPHS
    from tests.support.gitrepo import commit, init_repo

    path = init_repo(tmp_path / "warm")
    base = commit(path, "2024-01-01", {"src/app.py": "def handler(event):\n    return event\n"})
    tenant, repo_id = await new_repository(infra, path, "warm")
    gateway = Gateway(infra.pool, settings())
    definitions = [*indexer_definitions({tenant}), reviewer_for(infra, {tenant}, settings(), gateway)]

    async def stored(snapshot_id: Any, timeout_s: float = 20.0) -> bool:
        for _ in range(int(timeout_s / 0.2)):
            async with tenant_tx(infra.pool, tenant) as conn:
                cur = await conn.execute("SELECT 1 FROM code_graphs WHERE snapshot_id = %s", (snapshot_id,))
                if await cur.fetchone() is not None:
                    return True
            await asyncio.sleep(0.2)
        return False

    async def warmed(snapshot_id: Any, timeout_s: float = 20.0) -> bool:
        for _ in range(int(timeout_s / 0.2)):
            if UUID(str(snapshot_id)) in GRAPHS:
                return True
            await asyncio.sleep(0.2)
        return False

    try:
        async with running(infra, definitions):
            first = await index(infra, tenant, repo_id)
            assert await stored(first.snapshot_id)  # for every process: any replica loads it
            assert not await warmed(first.snapshot_id, timeout_s=1.0)  # never reviewed: not cached here
            head = commit(path, "2024-01-02", {"src/app.py": "def handler(event):\n    return [event]\n"})
            event = ReviewRequested(
                tenant_id=tenant, repository_id=repo_id, provider="local", base_sha=base, head_sha=head
            )
            await request_and_wait(infra, event, (ReviewCompleted,))
            GRAPHS.clear()
            second = await index(infra, tenant, repo_id)
            assert await warmed(second.snapshot_id)
    finally:
        await gateway.aclose()
