"""What history proves, and only that: stale uses, lines written after the removal, unresolved links.

The repository the test builds removes four functions from its code in one commit, while an
example and a test go on using some of them:

* ``make_cart`` and ``load_basket`` are still called only by ``examples/old_shop.py``, which is
  itself out of date (it uses both removed names): that use is no support, the drift is reported
  and says where the name is still used;
* ``keep_order`` is still called by ``tests/test_order.py``, which names no other removed
  function: that use counts, no finding;
* ``shop.legacy.LogAdapter`` (a deleted module) and ``set_renderer`` are named by docs written
  after the code lost them: the first is qualified by the repository's own package, the second
  was copied word for word from a doc of the time it existed; both are still wrong today (the
  same name in a line no doc held then is not a copy);
* ``fresh_idea()`` was never in the code and is written after: not a claim about this code;
* a link to a page that never existed is an unresolved link, apart from the findings.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from palimpsest.analyzer.doccheck import Judged
from palimpsest.core.service import Infra
from tests.integration.analyzer.support import (
    check_doc_claims,
    index,
    indexer_definitions,
    new_repository,
    running,
)
from tests.support.gitrepo import commit, init_repo

CART = '''"""The cart."""


def make_cart(owner):
    return {"owner": owner}


def load_basket(cart, items):
    cart["items"] = list(items)
    return cart


def keep_order(cart):
    return cart


def set_renderer(name):
    return name


def checkout_cart(cart):
    return cart
'''
CART_AFTER = '''"""The cart."""


def checkout_cart(cart):
    return cart
'''
LEGACY = "class LogAdapter:\n    def emit(self, line):\n        return line\n"
OLD_SHOP = (
    "from shop.cart import load_basket, make_cart\n\n\n"
    "def main():\n    cart = make_cart('me')\n    return load_basket(cart, [1, 2])\n"
)
TEST_ORDER = "from shop.cart import keep_order\n\n\ndef test_keep_order():\n    assert keep_order({}) == {}\n"
README = (
    "# Shop\n\nStart with `make_cart()`, then fill it with `load_basket()`.\n\n"
    "Orders are kept by `keep_order()`; pay with `checkout_cart()`.\n"
)
RENDERING_OLD = "# Rendering\n\nPick a renderer with `set_renderer()`.\n"
ADAPTERS = (
    "# Adapters\n\nWrap the log with `shop.legacy.LogAdapter` for Twisted.\n\n"
    "Or write your own `fresh_idea()` around it.\n\nSee [the old page](old-page.md).\n"
)
RENDERING_NEW = "# Views\n\nPick a renderer with `set_renderer()`.\n"
# the name again, in a line no doc held while it existed: a page written around something else
PLUGINS = "# Plugins\n\nThe mako plugin brings its own `set_renderer()` hook.\n"


@pytest.fixture(scope="module")
def shop(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    repo = init_repo(tmp_path_factory.mktemp("driftkinds") / "shop")
    shas: dict[str, str] = {}
    shas["first"] = commit(
        repo,
        "2023-01-01T00:00:00+00:00",
        {
            "shop/__init__.py": "",
            "shop/cart.py": CART,
            "shop/legacy.py": LEGACY,
            "examples/old_shop.py": OLD_SHOP,
            "tests/test_order.py": TEST_ORDER,
            "README.md": README,
            "docs/rendering.md": RENDERING_OLD,
        },
    )
    shas["removal"] = commit(
        repo,
        "2023-06-01T00:00:00+00:00",
        {"shop/cart.py": CART_AFTER, "shop/legacy.py": None, "docs/rendering.md": None},
    )
    shas["later"] = commit(
        repo,
        "2024-01-01T00:00:00+00:00",
        {"docs/adapters.md": ADAPTERS, "docs/views.md": RENDERING_NEW, "docs/plugins.md": PLUGINS},
    )
    return repo, shas


@pytest.fixture(scope="module")
async def judged(infra: Infra, shop: tuple[Path, dict[str, str]]) -> Judged:
    repo, _ = shop
    tenant, repo_id = await new_repository(infra, repo, "driftkinds")
    async with running(infra, indexer_definitions({tenant})):
        await index(infra, tenant, repo_id)
    return await check_doc_claims(infra, tenant, repo_id, repo)


async def test_a_use_only_in_a_stale_example_does_not_hide_drift(
    judged: Judged, shop: tuple[Path, dict[str, str]]
) -> None:
    _, shas = shop
    found = {f.claim: f for f in judged.findings if f.doc == "README.md"}
    assert set(found) == {"`make_cart`", "`load_basket`"}
    for claim, other in (("`make_cart`", "load_basket"), ("`load_basket`", "make_cart")):
        f = found[claim]
        assert f.kind == "missing_identifier" and f.line == 3
        assert f.evidence is not None and f.evidence.removed_in_commit == shas["removal"]
        assert f.detail is not None
        assert (
            f"still used only in `examples/old_shop.py`, itself out of date (it names removed `{other}`)"
            in (f.detail)
        )


async def test_a_use_in_a_current_test_still_counts(judged: Judged) -> None:
    """``tests/test_order.py`` uses ``keep_order`` and no other removed name: support."""
    assert not [f for f in judged.findings if "keep_order" in f.claim]
    assert judged.rules["identifier.used_current"] == 1
    assert judged.doc_states["README.md"] == "drift"


async def test_lines_written_after_the_removal_that_are_about_this_code(
    judged: Judged, shop: tuple[Path, dict[str, str]]
) -> None:
    _, shas = shop
    adapters = [f for f in judged.findings if f.doc == "docs/adapters.md"]
    assert [(f.line, f.kind, f.claim) for f in adapters] == [
        (3, "missing_identifier", "`shop.legacy.LogAdapter`")
    ]
    e = adapters[0].evidence
    assert e is not None and e.removed_in_commit == shas["removal"] and e.written_while_existed is False
    [views] = [f for f in judged.findings if f.doc == "docs/views.md"]
    assert (views.line, views.claim) == (3, "`set_renderer`")
    assert views.evidence is not None and views.evidence.written_while_existed is False
    assert views.detail is not None
    assert "copied in or restored: `docs/rendering.md` named it while it existed" in views.detail
    assert not [f for f in judged.findings if f.doc == "docs/plugins.md"]  # reworded: not a copy


async def test_a_name_never_in_the_code_and_a_link_never_in_history_are_not_drift(judged: Judged) -> None:
    assert not [f for f in judged.findings if "fresh_idea" in f.claim]
    assert [(u.doc, u.line, u.kind, u.claim) for u in judged.unresolved_links] == [
        ("docs/adapters.md", 7, "unresolved_link", "`old-page.md`")
    ]
    assert all(f.kind != "unresolved_link" for f in judged.findings)
