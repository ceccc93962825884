"""The mechanical documentation check on planted drift, with no model involved.

The repository's history plants three lies: the README names a function that was renamed, a
design doc points at a directory that was deleted, and a ``Governs:`` line names a directory
that moved. A fourth doc is accurate and must produce nothing.
"""

from __future__ import annotations

from pathlib import Path
from uuid import UUID

import pytest

from palimpsest.analyzer.doccheck import DocFinding, check_documentation
from palimpsest.analyzer.snapshot import load_snapshot, resolve_snapshot
from palimpsest.core.db import tenant_tx
from palimpsest.core.service import Infra
from tests.integration.analyzer.support import index, indexer_definitions, new_repository, running
from tests.support.gitrepo import commit, init_repo, move

INVOICE = '''"""Invoices."""


def compute_total(lines):
    return sum(line.amount for line in lines)
'''
RENAMED = INVOICE.replace("compute_total", "compute_invoice_total")
LEDGER = '''"""The ledger."""


def post_entry(ledger, entry):
    ledger.append(entry)
    return ledger
'''
QUEUE = "def enqueue_job(job):\n    return [job]\n"
README = "# Billing service\n\nCall `compute_total()` to sum an invoice.\n"
DESIGN = "# Design\n\n## Workers\n\nJobs run in `src/workers/` (see [the queue](../src/workers/queue.py)).\n"
BILLING = "# Billing\n\nGoverns: src/billing\n\nInvoices are summed per line.\n"
ACCURATE = (
    "# Ledger\n\nGoverns: src/ledger.py\n\n"
    "Use `post_entry()` from `src/ledger.py` ([source](../src/ledger.py)) to record an entry.\n"
)


@pytest.fixture(scope="module")
def drifted(tmp_path_factory: pytest.TempPathFactory) -> Path:
    repo = init_repo(tmp_path_factory.mktemp("drift") / "repo")
    commit(
        repo,
        "2023-01-01T00:00:00+00:00",
        {
            "src/billing/invoice.py": INVOICE,
            "src/workers/queue.py": QUEUE,
            "src/ledger.py": LEDGER,
            "README.md": README,
            "docs/design.md": DESIGN,
            "docs/billing.md": BILLING,
        },
    )
    # the code moves on; the prose does not
    commit(
        repo, "2024-06-01T00:00:00+00:00", {"src/billing/invoice.py": RENAMED, "src/workers/queue.py": None}
    )
    move(repo, "2024-06-02T00:00:00+00:00", "src/billing", "src/payments/billing")
    commit(repo, "2024-06-02T00:00:00+00:00", {"docs/ledger.md": ACCURATE})
    return repo


@pytest.fixture(scope="module")
async def findings(infra: Infra, drifted: Path) -> list[DocFinding]:
    tenant, repo_id = await new_repository(infra, drifted, "doccheck")
    async with running(infra, indexer_definitions({tenant})):
        await index(infra, tenant, repo_id)
    return await _check(infra, tenant, repo_id)


async def _check(infra: Infra, tenant: UUID, repo_id: UUID) -> list[DocFinding]:
    async with tenant_tx(infra.pool, tenant) as conn:
        snapshot = await resolve_snapshot(conn, repo_id, None)
        assert snapshot is not None
        snap_index = await load_snapshot(conn, repo_id, snapshot)
        return await check_documentation(conn, snap_index)


def _of(findings: list[DocFinding], doc: str, kind: str) -> list[DocFinding]:
    return [f for f in findings if f.doc == doc and f.kind == kind]


async def test_renamed_function_named_in_readme(findings: list[DocFinding]) -> None:
    [found] = _of(findings, "README.md", "missing_identifier")
    assert found.claim == "`compute_total`"
    assert found.line == 3
    assert found.nearest == "compute_invoice_total"


async def test_design_doc_pointing_at_a_deleted_directory(findings: list[DocFinding]) -> None:
    missing = _of(findings, "docs/design.md", "missing_path")
    by_claim = {f.claim: f for f in missing}
    assert sorted(by_claim) == ["`../src/workers/queue.py`", "`src/workers`"]
    assert {f.line for f in missing} == {5}
    assert all(f.nearest is None or "workers" not in f.nearest for f in missing)
    assert "read as src/workers/queue.py" in (by_claim["`../src/workers/queue.py`"].detail or "")


async def test_governs_line_to_a_moved_path(findings: list[DocFinding]) -> None:
    [found] = _of(findings, "docs/billing.md", "unmatched_governs")
    assert found.claim == "Governs: src/billing"
    assert found.line == 3
    assert found.nearest == "src/payments/billing"


async def test_accurate_doc_has_no_finding(findings: list[DocFinding]) -> None:
    assert [f for f in findings if f.doc == "docs/ledger.md"] == []


async def test_stale_docs_by_the_shared_rule(findings: list[DocFinding]) -> None:
    stale = {f.doc: f for f in findings if f.kind == "stale_doc"}
    # code dates: ledger.py 2023-01-01, invoice.py 2024-06-02 → median 2023-09-17; docs of
    # 2023-01-01 are 8 months older than that, the ledger doc (2024-06-02) is current
    assert set(stale) == {"README.md", "docs/billing.md", "docs/design.md"}
    assert stale["README.md"].claim == "last modified 2023-01-01"
    assert stale["README.md"].detail == "8 months older than typical code in this repo"
    assert stale["README.md"].line == 1


async def test_findings_are_ordered_and_only_these(findings: list[DocFinding]) -> None:
    assert findings == sorted(findings, key=lambda f: (f.doc, f.line, f.kind, f.claim))
    assert {(f.doc, f.kind) for f in findings} == {
        ("README.md", "missing_identifier"),
        ("README.md", "stale_doc"),
        ("docs/billing.md", "stale_doc"),
        ("docs/billing.md", "unmatched_governs"),
        ("docs/design.md", "missing_path"),
        ("docs/design.md", "stale_doc"),
    }
