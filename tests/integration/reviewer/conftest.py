"""Fixtures of the reviewer tests: one real git repository with controlled dates and branches."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.gitrepo import commit, git, head, init_repo

BILLING = """def compute_total(items):
    total = 0
    for item in items:
        total += item.price
    return total


def tax_rate(region):
    return 0.2
"""
TAX = "def apply_tax(total, region):\n    return total * (1 + region_rate(region))\n\n\ndef region_rate(region):\n    return 0.2\n"
INVOICE = "from billing import compute_total\n\n\ndef invoice_total(order):\n    return compute_total(order.items)\n"


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A 2022 design doc (stale), 2024 code and guide; billing.py and tax.py change together;
    branch ``feature`` changes compute_total; branch ``both`` changes billing.py and tax.py."""
    r = init_repo(tmp_path_factory.mktemp("reviewer") / "repo")
    commit(r, "2022-01-10T00:00:00+00:00", {"docs/design.md": "# Billing\n\n`compute_total` sums prices.\n"})
    # two commits of an unrelated file: billing.py and tax.py are a habit, not all of the history
    commit(r, "2023-02-01T00:00:00+00:00", {"NOTICE": "Copyright the authors.\n"})
    commit(r, "2023-03-01T00:00:00+00:00", {"NOTICE": "Copyright the authors, 2023.\n"})
    commit(
        r,
        "2024-03-01T00:00:00+00:00",
        {
            "src/billing.py": BILLING,
            "src/tax.py": TAX,
            "src/invoice.py": INVOICE,
            "docs/guide.md": "# Guide\n\nUse `compute_total` for totals.\n",
        },
    )
    commit(
        r,
        "2024-04-01T00:00:00+00:00",
        {"src/billing.py": BILLING + "\n# v2\n", "src/tax.py": TAX + "\n# v2\n"},
    )
    base = commit(
        r,
        "2024-05-01T00:00:00+00:00",
        {"src/billing.py": BILLING + "\n# v3\n", "src/tax.py": TAX + "\n# v3\n"},
    )
    git(r, "checkout", "-q", "-b", "feature")
    changed = BILLING.replace("    total = 0\n", "    total = discount(items)\n") + "\n# v3\n"
    feature = commit(r, "2024-06-01T00:00:00+00:00", {"src/billing.py": changed}, message="discount")
    git(r, "checkout", "-q", "-b", "both", base)
    both = commit(
        r,
        "2024-06-02T00:00:00+00:00",
        {"src/billing.py": changed, "src/tax.py": TAX + "\n# v4\n"},
        message="discount and tax",
    )
    git(r, "checkout", "-q", "main")
    assert head(r) == base
    return {"path": r, "base": base, "feature": feature, "both": both}
