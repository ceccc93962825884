"""The review context demotes docs by the analyzer's doc states, and by age only without an analysis.

The states are read back from the newest completed analysis (``analyses.facts``) through
:func:`palimpsest.index.docstates.doc_states` on real PostgreSQL; the context is assembled for a
real indexed repository whose 2022 design doc is stale by the age rule.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID

import pytest

from palimpsest.core.db import tenant_tx
from palimpsest.core.ids import uuid7
from palimpsest.core.service import Infra
from palimpsest.index.context.assemble import (
    DOC_ANNOTATION,
    STALE_USAGE_NOTE,
    STATE_NOTES,
    apply_recency,
    assemble_context,
)
from palimpsest.index.docstates import DocState, doc_states
from tests.integration.analyzer.support import index, indexer_definitions, new_repository, running
from tests.integration.reviewer.test_reviewer_rules import cand
from tests.support.gitrepo import git
from tests.support.tenants import create_tenant

# ----------------------------------------------------------------------- the rule, on its own

CODE = [
    cand("src/a.py", 1.0, "2024-05-01"),
    cand("src/b.py", 0.9, "2024-06-01"),
    cand("src/c.py", 0.8, "2024-04-01"),
]


def _apply(
    docs: list[Any], states: dict[str, DocState] | None
) -> tuple[list[dict[str, Any]], dict[str, str | None]]:
    dropped: list[dict[str, Any]] = []
    _, kept = apply_recency([*CODE, *docs], dropped, states)
    return dropped, {c.path: c.annotation for c in kept}


def test_without_an_analysis_the_age_rule_demotes() -> None:
    dropped, notes = _apply([cand("docs/old.md", 0.4, "2022-01-01")], None)
    assert [(d["path"], d["reason"]) for d in dropped] == [("docs/old.md", "stale_doc")]
    assert "docs/old.md" not in notes


def test_a_verified_or_reference_doc_is_not_demoted_for_its_age() -> None:
    docs = [cand("docs/old.md", 0.1, "2022-01-01"), cand("docs/api.rst", 0.1, "2021-01-01")]
    dropped, notes = _apply(docs, {"docs/old.md": "verified", "docs/api.rst": "reference"})
    assert dropped == []
    assert notes["docs/old.md"] == f"{DOC_ANNOTATION}, {STATE_NOTES['verified']}, last modified 2022-01-01"
    assert notes["docs/api.rst"] == f"{DOC_ANNOTATION}, {STATE_NOTES['reference']}, last modified 2021-01-01"


def test_unverified_old_is_demoted_as_stale_was_and_drift_says_so() -> None:
    docs = [
        cand("docs/old.md", 0.4, "2022-01-01"),
        cand("docs/drift.md", 0.4, "2024-05-20"),  # young, yet proved wrong
        cand("docs/drift-kept.md", 0.7, "2024-05-20"),
        cand("docs/drift-used.md", 0.1, "2024-05-20", source="usage"),
        cand("docs/young.md", 0.1, "2024-05-20"),
    ]
    states: dict[str, DocState] = {
        "docs/old.md": "unverified_old",
        "docs/drift.md": "drift",
        "docs/drift-kept.md": "drift",
        "docs/drift-used.md": "drift",
        "docs/young.md": "unverified",
    }
    dropped, notes = _apply(docs, states)
    assert [(d["path"], d["reason"]) for d in dropped] == [
        ("docs/old.md", "stale_doc"),
        ("docs/drift.md", "drift_doc"),
    ]
    assert (
        notes["docs/drift-kept.md"] == f"{DOC_ANNOTATION}, last modified 2024-05-20, {STATE_NOTES['drift']}"
    )
    assert notes["docs/drift-used.md"].endswith("drift: names what this change touches, may need updating")
    assert notes["docs/young.md"] == f"{DOC_ANNOTATION}, last modified 2024-05-20"


def test_a_doc_the_analysis_did_not_judge_falls_back_to_its_age() -> None:
    dropped, _ = _apply([cand("docs/new-but-old.md", 0.1, "2022-01-01")], {"docs/other.md": "verified"})
    assert [d["reason"] for d in dropped] == ["stale_doc"]


# ------------------------------------------------------------ the stored states, on PostgreSQL


@pytest.fixture(scope="module")
async def indexed(infra: Infra, repo: dict[str, Any]) -> tuple[UUID, UUID]:
    tenant, repo_id = await new_repository(infra, repo["path"], "doc-states")
    async with running(infra, indexer_definitions({tenant})):
        await index(infra, tenant, repo_id)
    return tenant, repo_id


async def _analysis(
    infra: Infra,
    tenant: UUID,
    repo_id: UUID,
    states: dict[str, str] | None,
    *,
    state: str = "completed",
    age_s: int = 0,
) -> None:
    docs = [{"path": p, "stale": False, **({"state": s} if s else {})} for p, s in (states or {}).items()]
    async with tenant_tx(infra.pool, tenant) as conn:
        await conn.execute(
            "INSERT INTO analyses (tenant_id, analysis_id, repository_id, state, reason, facts, created_at)"
            " VALUES (%s, %s, %s, %s, %s, %s::jsonb, %s)",
            (
                tenant,
                uuid7(),
                repo_id,
                state,
                "failed on purpose" if state == "failed" else None,
                json.dumps({"doc_freshness": docs}),
                datetime.now(UTC) - timedelta(seconds=age_s),
            ),
        )


async def _states(infra: Infra, tenant: UUID, repo_id: UUID) -> dict[str, DocState] | None:
    async with tenant_tx(infra.pool, tenant) as conn:
        return await doc_states(conn, repo_id)


async def _context(infra: Infra, tenant: UUID, repo_id: UUID, repo: dict[str, Any]) -> Any:
    diff = git(repo["path"], "diff", repo["base"], repo["feature"])
    at_head = {"src/billing.py": git(repo["path"], "show", f"{repo['feature']}:src/billing.py")}
    async with tenant_tx(infra.pool, tenant) as conn:
        return await assemble_context(conn, repo_id, diff, at_head, 8000, base_sha=repo["base"])


async def test_the_context_reads_the_newest_completed_analysiss_states(
    infra: Infra, indexed: tuple[UUID, UUID], repo: dict[str, Any]
) -> None:
    tenant, repo_id = indexed
    # no analysis: the age rule, and the 2022 design doc (a usage) is shown marked stale
    assert await _states(infra, tenant, repo_id) is None
    ctx = await _context(infra, tenant, repo_id, repo)
    design = {c.path: c.annotation for c in ctx.items}["docs/design.md"]
    assert ctx.doc_rule == "age" and design.endswith(STALE_USAGE_NOTE)

    # a failed analysis and one from before the check had states are no analysis of docs
    await _analysis(infra, tenant, repo_id, {"docs/design.md": "drift"}, state="failed", age_s=30)
    await _analysis(infra, tenant, repo_id, {"docs/design.md": None}, age_s=20)
    assert await _states(infra, tenant, repo_id) is None

    # an older completed analysis said drift; the newest says verified: the newest is read
    await _analysis(infra, tenant, repo_id, {"docs/design.md": "drift"}, age_s=10)
    assert await _states(infra, tenant, repo_id) == {"docs/design.md": "drift"}
    await _analysis(infra, tenant, repo_id, {"docs/design.md": "verified", "docs/guide.md": "unverified"})
    assert await _states(infra, tenant, repo_id) == {
        "docs/design.md": "verified",
        "docs/guide.md": "unverified",
    }
    ctx = await _context(infra, tenant, repo_id, repo)
    design = {c.path: c.annotation for c in ctx.items}["docs/design.md"]
    assert ctx.doc_rule == "analysis"
    assert design == f"{DOC_ANNOTATION}, {STATE_NOTES['verified']}, last modified 2022-01-10"


async def test_the_states_are_the_tenants_own(infra: Infra, indexed: tuple[UUID, UUID]) -> None:
    tenant, repo_id = indexed
    await _analysis(infra, tenant, repo_id, {"docs/guide.md": "verified"})
    other = await create_tenant(infra.pool, "doc-states-other")
    assert await _states(infra, other, repo_id) is None  # forced RLS: another tenant sees no analysis
    assert await _states(infra, tenant, repo_id) == {"docs/guide.md": "verified"}
