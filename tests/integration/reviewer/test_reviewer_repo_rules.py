"""Repository rules through the reviewer: the base's .palimpsest/config.yml decides what is reviewed
(ignore), what the model is told (instructions), how many findings of which severity are kept, and
whether an automatic trigger reviews at all; the head's config is never read; a bad config leaves
the defaults and the review says why."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from palimpsest.core.service import Infra
from palimpsest.devtools.fakes.llm import FakeLLM
from palimpsest.reviewer.review import INSTRUCTIONS_HEADING
from tests.integration.analyzer.support import index, indexer_definitions, new_repository, running
from tests.integration.reviewer.conftest import BILLING, TAX
from tests.integration.reviewer.test_reviewer_flow import KEY, pr, review, settings
from tests.integration.reviewer.test_reviewer_posting import TOKEN, provider_repository
from tests.integration.reviewer.test_reviewer_pushes import _shown, ask, event, model_settings, reviewer
from tests.support.fake_providers import FakeProviders
from tests.support.gitrepo import commit, git, init_repo

CONFIG = """review:
  ignore: ["generated/**"]
  instructions:
    - "Money is integer cents."
    - {path: "docs/**", text: "Docs are checked by a human."}
  max_findings: 1
  min_severity: minor
  auto: ready_only
"""
CHANGED = BILLING.replace("    total = 0\n", "    total = discount(items)\n    total += 0\n")


@pytest.fixture(scope="module")
def ruled(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    r = init_repo(tmp_path_factory.mktemp("rules") / "repo")
    base = commit(
        r,
        "2024-05-01T00:00:00+00:00",
        {".palimpsest/config.yml": CONFIG, "src/billing.py": BILLING, "generated/out.py": "A = 1\n"},
    )
    git(r, "checkout", "-q", "-b", "pr")
    # the head also rewrites the config: it must not count
    head = commit(
        r,
        "2024-06-01T00:00:00+00:00",
        {
            "src/billing.py": CHANGED,
            "generated/out.py": "A = 2\n",
            ".palimpsest/config.yml": "review:\n  auto: on\n  max_findings: 50\n",
        },
    )
    git(r, "checkout", "-q", "-b", "bad", base)
    bad_base = commit(r, "2024-05-02T00:00:00+00:00", {".palimpsest/config.yml": "review:\n  auto: [nope\n"})
    bad_head = commit(r, "2024-06-02T00:00:00+00:00", {"src/billing.py": CHANGED})
    git(r, "checkout", "-q", "main")
    return {"path": r, "base": base, "head": head, "bad_base": bad_base, "bad_head": bad_head}


def model(body: dict[str, Any]) -> str:
    findings = [
        {"path": "src/billing.py", "start_line": 2, "end_line": 2, "severity": "major", "category": "bug",
         "message": "discount() may return None"},
        {"path": "src/billing.py", "start_line": 3, "end_line": 3, "severity": "info", "category": "style",
         "message": "adding zero does nothing"},
        {"path": "src/billing.py", "start_line": 3, "end_line": 3, "severity": "minor", "category": "style",
         "message": "a second minor one"},
        {"path": "generated/out.py", "start_line": 1, "end_line": 1, "severity": "critical", "category": "bug",
         "message": "generated code"},
    ]  # fmt: skip
    return json.dumps({"summary": "Findings.", "findings": findings})


async def test_the_bases_rules_decide(infra: Infra, ruled: dict[str, Any]) -> None:
    tenant, repo_id = await provider_repository(infra, ruled, "github")
    with FakeProviders(token=TOKEN) as api, FakeLLM(reply=model, api_key=KEY) as llm:
        async with reviewer(infra, tenant, model_settings(llm, api, "github")):
            ask_for = {"base": ruled["base"], "head": ruled["head"]}
            draft = await ask(infra, event(tenant, repo_id, ask_for, "head", "github", draft=True))
            assert draft["state"] == "skipped" and "ready_only" in (draft["reason"] or "")
            assert llm.requests("chat") == [] and api.items("github", 11) == []
            asked = await ask(
                infra, event(tenant, repo_id, ask_for, "head", "github", draft=True, trigger="comment")
            )
    assert asked["state"] == "completed" and asked["review_id"] != draft["review_id"]
    [prompt] = llm.requests("chat")
    text = prompt.body["messages"][-1]["content"]
    assert "generated/out.py" not in _shown(prompt.body)  # ignored: not in the diff under review
    told = text.split(INSTRUCTIONS_HEADING + "\n", 1)[1].split("\n\n", 1)[0]
    assert told == "- Money is integer cents."  # the docs/** one matches no changed file
    # min_severity drops the info one, max_findings keeps one of the rest; the ignored file's is dropped
    assert [(f["path"], f["severity"]) for f in asked["findings"]] == [("src/billing.py", "major")]
    assert asked["findings_dropped"] == 3
    assert asked["sources"]["rules"]["max_findings"] == 1 and asked["reason"] is None
    assert len(api.inline("github", 11)) == 1


async def test_a_bad_config_leaves_the_defaults_and_says_why(infra: Infra, ruled: dict[str, Any]) -> None:
    tenant, repo_id = await provider_repository(infra, ruled, "gitlab")
    with FakeProviders(token=TOKEN) as api, FakeLLM(reply=model, api_key=KEY) as llm:
        async with reviewer(infra, tenant, model_settings(llm, api, "gitlab")):
            ask_for = {"base": ruled["bad_base"], "head": ruled["bad_head"]}
            done = await ask(infra, event(tenant, repo_id, ask_for, "head", "gitlab", draft=True))
    assert done["state"] == "completed"  # auto fell back to on: the draft is reviewed
    assert "config_invalid" in (done["reason"] or "") and "not valid YAML" in (done["reason"] or "")
    assert len(done["findings"]) == 3  # no severity floor, no cap of 1 (generated/out.py is unchanged here)
    [summary] = api.summaries("gitlab", 11)
    assert "Findings." in summary


async def test_the_bases_rules_shape_the_cochange_warning(infra: Infra, tmp_path: Path) -> None:
    """``cochange_include: [ci]`` lets a CI config be warned about (never by default) and
    ``cochange_max: 1`` keeps the most confident partner only."""
    r = init_repo(tmp_path / "repo")
    for i in range(3):  # unrelated history: the partners below are a habit, not everything
        commit(r, f"2023-0{i + 1}-01T00:00:00+00:00", {"NOTICE": f"v{i}\n"})
    for i in range(3):  # billing.py changes with the CI config every time, with tax.py twice
        files = {"src/billing.py": BILLING + f"\n# v{i}\n", ".github/workflows/ci.yml": f"on: push # {i}\n"}
        if i:
            files["src/tax.py"] = TAX + f"\n# v{i}\n"
        commit(r, f"2024-0{i + 2}-01T00:00:00+00:00", files)
    rules = "review:\n  cochange_include: [ci]\n  cochange_max: 1\n"
    base = commit(r, "2024-05-01T00:00:00+00:00", {".palimpsest/config.yml": rules})
    git(r, "checkout", "-q", "-b", "pr")
    head = commit(r, "2024-06-01T00:00:00+00:00", {"src/billing.py": CHANGED})
    git(r, "checkout", "-q", "main")
    tenant, repo_id = await new_repository(infra, r, "cochange-rules")
    async with running(infra, indexer_definitions({tenant})):
        await index(infra, tenant, repo_id)
    ask_for = {"path": r, "base": base, "head": head}
    stored = await review(infra, tenant, pr(tenant, repo_id, ask_for, "head", provider="local"), settings())
    assert [m["path"] for m in stored["cochange_missing"]] == [".github/workflows/ci.yml"]
    assert stored["sources"]["rules"]["cochange_max"] == 1
    assert stored["sources"]["rules"]["cochange_include"] == ["ci"]
