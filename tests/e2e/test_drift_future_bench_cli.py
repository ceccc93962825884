"""``palimpsest bench drift-future`` as a user runs it, on a history the test makes.

A year before the head the README named a function the code had already renamed; the
maintainers fixed that line later, and left the rest of the README alone. Analysed as it was
twelve months ago, the check flags that line; by now it changed, while one in five of the
README's lines did: a lift of 5.
"""

from __future__ import annotations

from pathlib import Path

from tests.support.bench import run_bench
from tests.support.gitrepo import commit, init_repo

CART = "def make_cart(owner):\n    return {'owner': owner}\n\n\ndef pay_now(cart):\n    return cart\n"
README = "# Shop\n\nCall `make_cart()` first.\n\nPay with `pay_now()`.\n\nShip it.\n\nDone.\n"


def test_flagged_lines_from_a_year_ago_against_the_base_rate(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "shop")
    commit(
        repo, "2023-01-01T00:00:00+00:00", {"shop/__init__.py": "", "shop/cart.py": CART, "README.md": README}
    )
    removal = commit(
        repo, "2023-03-01T00:00:00+00:00", {"shop/cart.py": CART.replace("make_cart", "new_cart")}
    )
    base = commit(repo, "2023-05-01T00:00:00+00:00", {"shop/util.py": "def helper():\n    return 1\n"})
    commit(repo, "2024-02-01T00:00:00+00:00", {"README.md": README.replace("make_cart", "new_cart")})
    head = commit(repo, "2024-06-01T00:00:00+00:00", {"shop/util.py": "def helper():\n    return 2\n"})
    out = run_bench("drift-future", tmp_path, repo, "--at-months-ago", "12")
    assert (out["head"], out["base"], out["months"]) == (head, base, 12)
    assert [(f["doc"], f["line"], f["kind"], f["changed_by_now"]) for f in out["lines"]] == [
        ("README.md", 3, "missing_identifier", True)
    ]
    assert removal[:12] in out["lines"][0]["detail"]
    assert (out["flagged_lines"], out["flagged_changed"], out["flagged_share"]) == (1, 1, 1.0)
    assert (out["doc_lines"], out["doc_lines_changed"], out["base_rate"]) == (5, 1, 0.2)
    assert out["lift"] == 5.0
