"""The analyzer through the bus: ``analysis.requested`` → stored analysis + ``analysis.completed``.

The model is the local OpenAI-compatible fake server (real HTTP on 127.0.0.1) behind the real
LLM gateway and litellm; what the model received is read from the fake's captured requests.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
from pydantic import SecretStr

from palimpsest.analyzer.context import DOC_BANNER
from palimpsest.analyzer.prompts import FINDINGS_BANNER, FRAMING, SECTION_TITLES
from palimpsest.analyzer.service import Settings
from palimpsest.core.events import AnalysisCompleted, AnalysisRequested
from palimpsest.core.llm import Gateway
from palimpsest.core.service import Infra
from palimpsest.devtools.fakes.llm import Captured, FakeLLM
from tests.integration.analyzer.support import (
    analyzer_for,
    analyzer_settings,
    index,
    indexer_definitions,
    new_repository,
    query,
    running,
)
from tests.support.gitrepo import commit, init_repo
from tests.support.pipeline import request_and_wait

KEY = "sk-analyzer-test-7f3a9c"
SEVEN = "\n\n".join(f"## {title}\n\nFake text for {title}." for title in SECTION_TITLES)


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Code of 2024, a design doc of 2022 (stale), a guide of 2024 (current), a README naming a
    function renamed in 2024 (``start_service`` → ``start_app``), the design doc a module deleted then; ``src/undated.py`` gets its date removed after indexing."""
    r = init_repo(tmp_path_factory.mktemp("svc") / "repo")
    commit(
        r,
        "2022-01-10T00:00:00+00:00",
        {
            "docs/design.md": "# Design\n\nThe scheduler lives in `src/scheduler.py`.\n",
            "README.md": "# Service\n\nCall `start_service()` to begin.\n",
            "src/app.py": "def start_service(config):\n    return config\n",
            "src/scheduler.py": "def tick():\n    return 0\n",
        },
    )
    commit(
        r,
        "2024-03-05T00:00:00+00:00",
        {
            "src/app.py": "def start_app(config):\n    return config\n",
            "src/scheduler.py": None,
            "src/undated.py": "def helper():\n    return 1\n",
            "docs/guide.md": "# Guide\n\nRun `start_app()` with a config.\n",
        },
    )
    commit(r, "2024-04-01T00:00:00+00:00", {"src/store.py": "def save(row):\n    return row\n"})
    return r


@pytest.fixture(scope="module")
async def indexed(infra: Infra, repo: Path) -> tuple[UUID, UUID]:
    tenant, repo_id = await new_repository(infra, repo, "analyzer-svc")
    async with running(infra, indexer_definitions({tenant})):
        await index(infra, tenant, repo_id)
    await query(
        infra,
        tenant,
        "UPDATE file_recency SET last_modified_at = NULL WHERE repository_id = %s AND path = 'src/undated.py'"
        " RETURNING path",
        repo_id,
    )
    return tenant, repo_id


@pytest.fixture
def fake() -> Iterator[FakeLLM]:
    def reply(body: dict[str, Any]) -> str:
        return SEVEN if body.get("max_tokens") == 5120 else "A small service that starts and stores rows."

    with FakeLLM(reply=reply, api_key=KEY, hang_s=3.0) as server:
        yield server


def model_settings(fake: FakeLLM, **overrides: Any) -> Settings:
    values: dict[str, Any] = {
        "llm_model": "openai/fake-model",
        "llm_api_base": fake.base_url,
        "llm_api_key": SecretStr(KEY),
        "llm_max_retries": 2,
        "llm_timeout_s": 1.0,
        "analysis_auto": False,
    }
    values.update(overrides)
    return analyzer_settings(**values)


async def analyse(
    infra: Infra, tenant: UUID, repo_id: UUID, settings: Settings
) -> tuple[AnalysisCompleted, dict[str, Any]]:
    """Run the analyzer, request an analysis, return (the completed event, the stored analysis)."""
    from palimpsest.analyzer.store import load_analysis
    from palimpsest.core.db import tenant_tx

    gateway = Gateway(infra.pool, settings)
    try:
        async with running(infra, [analyzer_for(infra, {tenant}, settings, gateway)]):
            event = AnalysisRequested(tenant_id=tenant, repository_id=repo_id)
            found = await request_and_wait(infra, event, (AnalysisCompleted,), timeout_s=90)
    finally:
        await gateway.aclose()
    completed = found[AnalysisCompleted]
    async with tenant_tx(infra.pool, tenant) as conn:
        stored = (await load_analysis(conn, completed.analysis_id)).to_json()
    return completed, stored


def chat(fake: FakeLLM, max_tokens: int) -> list[Captured]:
    return [c for c in fake.requests("chat") if c.body.get("max_tokens") == max_tokens and not c.failed]


# ----------------------------------------------------------------------------- no model


async def test_without_a_model_the_report_says_what_is_missing(
    infra: Infra, indexed: tuple[UUID, UUID]
) -> None:
    tenant, repo_id = indexed
    completed, stored = await analyse(infra, tenant, repo_id, analyzer_settings(analysis_auto=False))
    assert completed.state == "completed"
    assert stored["mode"] == "mechanical" and stored["state"] == "completed"
    markdown = stored["analysis"]
    assert "No model is configured" in markdown
    for title in SECTION_TITLES[:-1]:
        assert title in markdown
    assert "PALIMPSEST_LLM_MODEL" in markdown
    assert "## Selection facts" in markdown and "### Documentation freshness" in markdown
    # an old doc with proved drift is shown as drift, not as merely old
    assert "| `docs/design.md` | 2022-01-10 | drift (see the documentation check) |" in markdown
    assert stored["facts"]["doc_check"]["docs"]["drift"] >= 1
    assert stored["facts"]["doc_check"]["rules"]["finding"] >= 2
    assert "_Doc mentions by the rule that decided them: " in markdown
    kinds = {(f["doc"], f["kind"]) for f in stored["doc_findings"]}
    assert ("README.md", "missing_identifier") in kinds
    assert ("docs/design.md", "missing_path") in kinds
    # each drift finding is shown with its proof: last seen, removed in (commit and date), what it became
    renamed = next(f for f in stored["doc_findings"] if f["kind"] == "missing_identifier")
    evidence = renamed["evidence"]
    assert evidence["renamed_to"] == "start_app" and evidence["written_while_existed"] is True
    row = (
        f"| `README.md` | 3 | missing identifier | `start_service` | `{evidence['last_seen_commit'][:12]}` 2022-01-10"
        f" (`src/app.py`) | `{evidence['removed_in_commit'][:12]}` 2024-03-05 | `start_app` | 2022-01-10 (while it existed) |"
    )
    assert row in markdown
    assert "History: 3 commits walked" in markdown
    # the selection says why it read each file
    why = {s["path"]: s["why"] for s in stored["selection"]}
    assert why["README.md"] == "root README" and why["src/app.py"] == "entry point of src"
    assert stored["facts"]["primary_packages"] == [{"root": "src", "declared_by": "largest code tree"}]
    assert (
        stored["summary"].startswith("repo: ")
        and "1 verified against the code, 0 unverified and old" in stored["summary"]
    )
    assert stored["median_code"] is not None
    assert {s["path"] for s in stored["selection"]} >= {"src/app.py", "README.md", "docs/design.md"}
    assert all(set(s) >= {"path", "kind", "last_modified_at", "stale"} for s in stored["selection"])
    usage = await query(infra, tenant, "SELECT count(*) AS n FROM llm_usage")
    assert usage[0]["n"] == 0


# ----------------------------------------------------------------------------- with a model


async def test_the_prompt_the_model_receives(infra: Infra, indexed: tuple[UUID, UUID], fake: FakeLLM) -> None:
    tenant, repo_id = indexed
    completed, stored = await analyse(infra, tenant, repo_id, model_settings(fake))
    assert completed.state == "completed", completed
    [analysis] = chat(fake, 5120)
    assert analysis.headers["authorization"] == f"Bearer {KEY}"
    system, user = analysis.messages[0]["content"], analysis.messages[1]["content"]
    assert FRAMING in system
    for title in SECTION_TITLES:
        assert f"## {title}\n" in system
    assert "seven sections" in system
    # code first, then the banner, then the docs
    banner = user.index(DOC_BANNER)
    assert user.index("// src/app.py (last modified 2024-03-05)") < banner
    assert user.index("// docs/guide.md (last modified 2024-03-05") > banner
    # annotations only with dates; each doc headed with the state the report gives it: the two
    # 2022 docs are proved drift (not merely old), the guide's claim holds
    assert "// src/undated.py\n" in user and "// src/undated.py (" not in user
    drift = "drift: the documentation check proved a claim of it false"
    assert f"// docs/design.md (last modified 2022-01-10; {drift})\n" in user
    assert f"// README.md (last modified 2022-01-10; {drift})\n" in user
    assert "// docs/guide.md (last modified 2024-03-05; verified: its claims hold at this commit)\n" in user
    assert "older than typical code" not in user.split(FINDINGS_BANNER)[0]
    # the mechanical check is the evidence for Documentation Accuracy
    assert "Mechanical documentation check" in user and "`start_service`" in user
    # the summary: 40 chunks, the framing line, no seventh section
    [summary] = chat(fake, 1024)
    assert FRAMING in summary.messages[0]["content"]
    assert "Documentation Accuracy" not in summary.messages[0]["content"]
    # what was stored
    assert stored["mode"] == "model" and stored["model"] == "openai/fake-model"
    assert "## Documentation Accuracy\n\nFake text" in stored["analysis"]
    assert "## Appendix: mechanical documentation check" in stored["analysis"]
    assert stored["summary"] == "A small service that starts and stores rows."
    assert stored["usage"]["prompt_tokens"] > 0 and stored["usage"]["completion_tokens"] > 0
    rows = await query(
        infra, tenant, "SELECT feature, outcome, attempts, reference FROM llm_usage ORDER BY created_at"
    )
    assert [(r["feature"], r["outcome"], r["attempts"]) for r in rows[-2:]] == [
        ("analysis", "ok", 1),
        ("summary", "ok", 1),
    ]
    assert rows[-1]["reference"] == stored["analysis_id"]


async def test_transient_model_errors_are_retried(
    infra: Infra, indexed: tuple[UUID, UUID], fake: FakeLLM
) -> None:
    tenant, repo_id = indexed
    fake.fail(429, endpoint="chat", retry_after=0)
    fake.fail(500, endpoint="chat")
    completed, stored = await analyse(infra, tenant, repo_id, model_settings(fake))
    assert completed.state == "completed"
    assert stored["mode"] == "model"
    failed = [c.failed for c in fake.requests("chat") if c.failed]
    assert failed == ["429", "500"]
    rows = await query(
        infra, tenant, "SELECT feature, attempts FROM llm_usage WHERE reference = %s", stored["analysis_id"]
    )
    assert sorted((r["feature"], r["attempts"]) for r in rows) == [("analysis", 3), ("summary", 1)]


@pytest.mark.parametrize(
    ("failure", "reason"), [("timeout", "timeout"), (429, "rate_limited"), (500, "server_error")]
)
async def test_persistent_model_errors_fail_the_analysis_with_the_reason(
    infra: Infra, indexed: tuple[UUID, UUID], fake: FakeLLM, failure: Any, reason: str
) -> None:
    tenant, repo_id = indexed
    fake.fail(failure, times=3, endpoint="chat", retry_after=0 if failure == 429 else None)
    completed, stored = await analyse(infra, tenant, repo_id, model_settings(fake))
    assert len(fake.requests("chat")) == 3  # one attempt and two retries
    assert completed.state == "failed"
    assert completed.reason is not None
    assert completed.reason.startswith(f"model call failed: {reason}")
    assert "after 3 attempt(s)" in completed.reason
    assert KEY not in completed.reason
    assert stored["state"] == "failed" and stored["reason"] == completed.reason
    # nothing lost: the mechanical report, the findings and the selection are stored
    assert "The model call failed" in stored["analysis"]
    assert stored["doc_findings"] and stored["selection"]
    [usage] = await query(
        infra,
        tenant,
        "SELECT outcome, attempts, error FROM llm_usage WHERE reference = %s",
        stored["analysis_id"],
    )
    assert usage["outcome"] == "error" and usage["attempts"] == 3 and usage["error"].startswith(reason)


# ----------------------------------------------------------------------------- debounce


async def _analyses(infra: Infra, tenant: UUID, repo_id: UUID) -> list[dict[str, Any]]:
    return await query(
        infra,
        tenant,
        "SELECT analysis_id, snapshot_id, trigger FROM analyses WHERE repository_id = %s ORDER BY created_at",
        repo_id,
    )


async def _until(
    infra: Infra, tenant: UUID, repo_id: UUID, count: int, timeout_s: float = 60.0
) -> list[dict[str, Any]]:
    deadline = time.monotonic() + timeout_s
    while True:
        rows = await _analyses(infra, tenant, repo_id)
        if len(rows) >= count or time.monotonic() > deadline:
            return rows
        await asyncio.sleep(0.1)


async def test_new_snapshots_are_analysed_once_and_not_more_often_than_the_interval(
    infra: Infra, tmp_path: Path
) -> None:
    repo = init_repo(tmp_path / "auto")
    commit(
        repo, "2024-01-01T00:00:00+00:00", {"README.md": "# Auto\n", "main.py": "def main():\n    return 0\n"}
    )
    tenant, repo_id = await new_repository(infra, repo, "auto")
    settings = analyzer_settings(analysis_auto=True, analysis_interval_s=3600.0, analysis_debounce_s=0.0)
    gateway = Gateway(infra.pool, settings)
    definitions = [*indexer_definitions({tenant}), analyzer_for(infra, {tenant}, settings, gateway)]
    try:
        async with running(infra, definitions):
            first = await index(infra, tenant, repo_id)
            rows = await _until(infra, tenant, repo_id, 1)
            assert [(r["snapshot_id"], r["trigger"]) for r in rows] == [(first.snapshot_id, "snapshot")]
            # a second snapshot within the interval is scheduled, not analysed
            second = await index(infra, tenant, repo_id)
            assert second.snapshot_id != first.snapshot_id
            await asyncio.sleep(1.0)
            assert len(await _analyses(infra, tenant, repo_id)) == 1
            schedule = await _schedule(infra, repo_id)
            assert schedule is not None and schedule["snapshot_id"] == second.snapshot_id
            assert schedule["delay_s"] > 3000  # due one interval after the first analysis
            # an explicit request is not debounced; the schedule then finds the snapshot analysed
            found = await request_and_wait(
                infra,
                AnalysisRequested(tenant_id=tenant, repository_id=repo_id),
                (AnalysisCompleted,),
                timeout_s=60,
            )
            assert found[AnalysisCompleted].snapshot_id == second.snapshot_id
            await _make_due(infra, repo_id)
            deadline = time.monotonic() + 30
            while await _schedule(infra, repo_id) is not None:
                assert time.monotonic() < deadline, "the schedule row was not settled"
                await asyncio.sleep(0.1)
            assert [r["trigger"] for r in await _analyses(infra, tenant, repo_id)] == ["snapshot", "request"]
    finally:
        await gateway.aclose()


async def _schedule(infra: Infra, repo_id: UUID) -> dict[str, Any] | None:
    from palimpsest.core.db import system_tx

    async with system_tx(infra.pool) as conn:
        cur = await conn.execute(
            "SELECT s.snapshot_id, extract(epoch FROM s.due_at - now()) AS delay_s FROM analysis_schedule s"
            " WHERE s.repository_id = %s",
            (repo_id,),
        )
        row = await cur.fetchone()
    return dict(row) if row is not None else None


async def _make_due(infra: Infra, repo_id: UUID) -> None:
    from palimpsest.core.db import system_tx

    async with system_tx(infra.pool) as conn:
        await conn.execute("UPDATE analysis_schedule SET due_at = now() WHERE repository_id = %s", (repo_id,))
