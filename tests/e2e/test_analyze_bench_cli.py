"""``palimpsest bench analyze`` as a user runs it, with drift planted in a scratch clone.

The repository the test builds has documentation naming two functions (inline code and a Sphinx
role), a class in a Python fence, and a module by path. ``--plant 3 --plant-paths 1`` renames three
doc-named definitions and moves the named module, one commit each, in a scratch clone; the
analysis of that clone must find every plant with its exact evidence (the plant's commit, its
parent, what it became), leave the user's repository untouched, and keep its own drift apart.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.support.bench import bench_process, run_bench
from tests.support.gitrepo import commit, git, init_repo

CODE = {
    "shop/__init__.py": "",
    "shop/billing.py": (
        "class InvoiceBuilder:\n    def build(self) -> str:\n        return 'invoice'\n\n\n"
        "def compute_total(items):\n    return sum(items)\n\n\n"
        "def apply_discount(total, rate):\n    return total * (1 - rate)\n"
    ),
    "shop/ledger.py": "from shop.billing import compute_total\n\n\ndef post(items):\n    return compute_total(items)\n",
    "tests/test_billing.py": "from shop.billing import apply_discount\n\n\ndef test_it():\n    assert apply_discount(10, 0)\n",
}
README = (
    "# Shop\n\nCall `compute_total` on the basket,\nthen :func:`apply_discount`.\n\n"
    "```python\nfrom shop.billing import InvoiceBuilder\nInvoiceBuilder().build()\n```\n\n"
    "The ledger lives in `shop/ledger.py`.\n"
)


def bench(tmp_path: Path, repo: Path, *args: str) -> dict[str, Any]:
    return run_bench("analyze", tmp_path, repo, *args)


def test_planted_renames_and_moves_are_found_with_their_exact_evidence(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "shop")
    commit(repo, "2024-01-01", {**CODE, "README.md": README})
    head = commit(repo, "2024-02-01", {"shop/ledger.py": CODE["shop/ledger.py"] + "\nLIMIT = 3\n"})
    out = bench(tmp_path, repo, "--plant", "3", "--plant-paths", "1", "--seed", "7")
    assert out["commit"] == head and out["findings_by_kind"].get("missing_identifier") is None
    assert (out["link_check"]["broken"], out["link_check"]["recall"], out["link_check"]["missed"]) == (
        0,
        None,
        [],
    )
    assert "rules" in out["history"] and "docs" in out["history"]
    planted = out["planted"]
    assert planted["head"] == head and planted["planted"] == 4, planted
    assert planted["found"] == 4 and planted["item_recall"] == 1.0, planted["items"]
    assert planted["evidence_ok"] == 4 and planted["renamed_to_ok"] == 4, planted["items"]
    assert planted["doc_recall"] == 1.0 and planted["other_findings"] == 0, planted["items"]
    assert planted["line_recall"] == 0.8  # InvoiceBuilder's second fence line: once per doc
    olds = {item["old"] for item in planted["items"]}
    assert olds == {"compute_total", "apply_discount", "InvoiceBuilder", "shop/ledger.py"}
    forms = planted["lines_by_form"]
    assert {"code", "role", "fence"} <= set(forms), forms
    moved = next(i for i in planted["items"] if i["kind"] == "path")
    assert moved["new"] == "shop/relocated/ledger.py"
    # the user's repository is untouched: the plants were committed in a scratch clone
    assert git(repo, "rev-parse", "HEAD").strip() == head
    assert not git(repo, "status", "--porcelain").strip()


def test_a_detached_checkout_is_refused_not_analysed_at_another_branch(tmp_path: Path) -> None:
    """A detached HEAD has no branch to index: the bench says so instead of analysing ``main``."""
    repo = init_repo(tmp_path / "shop")
    commit(repo, "2024-01-01", {**CODE, "README.md": README})
    commit(repo, "2024-01-02", {"shop/later.py": "def later():\n    pass\n"})
    git(repo, "checkout", "-q", "--detach", "HEAD~1")
    proc = bench_process("analyze", tmp_path, repo, timeout=300)
    assert proc.returncode == 2, proc.stderr[-3000:]
    assert f"{repo}: HEAD is detached (on no branch)" in proc.stderr
    assert proc.stdout == ""
