"""Links resolved the way the site a doc is published in resolves them (codefacts.sites).

The repository the test builds publishes three sites, each configured its own way, and its
docs' links resolve only under that site's rules (none of them from the doc's folder or the
repository's root, as GitHub would read them):

* MkDocs (``mkdocs.yml``: ``docs_dir: handbook``, with ``!!python/name:`` tags): ``/img/logo.png``
  is ``handbook/img/logo.png``; ``/img/old.png`` was there once and was deleted: drift, proved
  at the path the site resolves, not an unresolved link;
* Sphinx (``docs/conf.py``, ``html_extra_path``): an image glob ``_static/flow.*``, a link to the
  built page ``../api.html``, a file served from ``_extra/``, a ``_modules/`` page Sphinx writes;
* Docusaurus (``website/docusaurus.config.js``: docs at ``../manual`` served under ``/guide``):
  a route ``/guide/api/client``, a static image ``/img/site.svg``, an ``@site/`` path.

A link no site resolves and history never had is still an unresolved link, off the findings.

Cross-references resolve to the repository's own objects and labels: ``:func:`` to a function
history shows removed is drift, ``:class:`int``` (no object of this repository) is nothing; a
``:ref:`` resolves to an RST target, a MyST ``(label)=`` or (``autosectionlabel`` in conf.py) a
section title; one no doc defines is an unresolved link, never drift.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from palimpsest.analyzer.doccheck import Judged
from palimpsest.core.service import Infra
from tests.integration.analyzer.support import (
    index_and_check,
)
from tests.support.gitrepo import commit, init_repo

MKDOCS = """\
site_name: Shop
docs_dir: handbook
nav:
  - index.md
markdown_extensions:
  - pymdownx.emoji:
      emoji_index: !!python/name:material.extensions.emoji.twemoji
"""
HANDBOOK = (
    "# Shop\n\n![logo](/img/logo.png)\n\nThe cart is `shop.cart.add_item`.\n\n"
    "![old logo](/img/old.png)\n\nSee [nowhere](/img/never.png).\n"
)
CONF = (
    'project = "Shop"\nextensions = ["sphinx.ext.autodoc", "sphinx.ext.autosectionlabel", "myst_parser"]\n'
    'html_extra_path = ["_extra"]\n'
)
DOCS_INDEX = """\
.. _shop-intro:

Shop
====

.. image:: _static/flow.*

See the `API <guide/api.html>`_, the `robots file <robots.txt>`_ and
the `source <_modules/shop/cart.html>`_.

.. autofunction:: shop.cart.add_item
"""
DOCS_API = """\
API
===

Call :func:`shop.cart.add_item`, not :func:`shop.cart.remove_item`; it returns :class:`int`.

See :ref:`the intro <shop-intro>`, :ref:`api`, :ref:`narrative` and :ref:`missing-label`.
"""
NARRATIVE = (
    "(narrative)=\n# Narrative\n\nBack to {ref}`shop-intro`.\n\n"
    "MyST reads [the intro](shop-intro), [adding](shop.cart.add_item) and [removing](shop.cart.remove_item)\n"
    "as cross-references; [a page](gone-page) is a link.\n"
    "\nSo is [the design](md/design), a target another page defines.\n"
)
DESIGN = "(md/design)=\n\n# Design\n\nPrinciples.\n"  # MyST labels may hold a slash
DOCUSAURUS = """\
module.exports = {
  title: 'Shop',
  presets: [['classic', { docs: { path: '../manual', routeBasePath: 'guide' } }]],
};
"""
MANUAL = (
    "# Intro\n\nRead [the client](/guide/api/client), with ![logo](/img/site.svg),\n"
    "built by [this script](@site/scripts/build.js).\n"
)
CART = "def add_item(cart, item):\n    cart.append(item)\n    return cart\n"
OLD_CART = CART + "\n\ndef remove_item(cart, item):\n    cart.remove(item)\n    return cart\n"


@pytest.fixture(scope="module")
def sites_repo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    repo = init_repo(tmp_path_factory.mktemp("docsites") / "shop")
    shas: dict[str, str] = {}
    shas["first"] = commit(
        repo,
        "2023-01-01T00:00:00+00:00",
        {
            "shop/__init__.py": "",
            "shop/cart.py": OLD_CART,
            "mkdocs.yml": MKDOCS,
            "handbook/index.md": HANDBOOK,
            "handbook/img/logo.png": b"\x89PNG logo",
            "handbook/img/old.png": b"\x89PNG old",
            "docs/conf.py": CONF,
            "docs/index.rst": DOCS_INDEX,
            "docs/guide/api.rst": DOCS_API,
            "docs/narrative.md": NARRATIVE,
            "docs/design.md": DESIGN,
            "docs/_static/flow.svg": "<svg/>",
            "docs/_extra/robots.txt": "User-agent: *\n",
            "website/docusaurus.config.js": DOCUSAURUS,
            "website/static/img/site.svg": "<svg/>",
            "website/scripts/build.js": "console.log('build');\n",
            "manual/intro.md": MANUAL,
            "manual/api/client.md": "# Client\n\nAdd with `add_item()`.\n",
        },
    )
    shas["removal"] = commit(
        repo, "2023-06-01T00:00:00+00:00", {"handbook/img/old.png": None, "shop/cart.py": CART}
    )
    return repo, shas


@pytest.fixture(scope="module")
async def judged(infra: Infra, sites_repo: tuple[Path, dict[str, str]]) -> Judged:
    repo, _ = sites_repo
    return await index_and_check(infra, repo, "docsites")


async def test_links_resolve_only_under_their_sites_rules(judged: Judged) -> None:
    """Every link of the three sites holds except the two about images that are not there."""
    unresolved = [(u.doc, u.claim) for u in judged.unresolved_links]
    assert unresolved == [
        ("docs/guide/api.rst", "`:ref:missing-label`"),
        ("docs/narrative.md", "`gone-page`"),
        ("handbook/index.md", "`/img/never.png`"),
    ]
    assert judged.rules["link.image_glob"] == 1
    assert judged.rules["link.sphinx_page"] == 1
    for doc in ("handbook/index.md", "docs/index.rst", "manual/intro.md"):
        assert judged.doc_states[doc] in ("verified", "drift"), doc


async def test_a_removed_image_is_drift_at_the_path_the_site_resolves(
    judged: Judged, sites_repo: tuple[Path, dict[str, str]]
) -> None:
    _, shas = sites_repo
    [finding] = [f for f in judged.findings if f.kind == "missing_path"]
    assert (finding.doc, finding.line, finding.claim) == ("handbook/index.md", 7, "`/img/old.png`")
    assert finding.evidence is not None and finding.evidence.removed_in_commit == shas["removal"]
    assert finding.detail is not None and finding.detail.startswith("handbook/img/old.png existed until")
    assert judged.doc_states["handbook/index.md"] == "drift"


async def test_roles_resolve_to_the_repositorys_objects_and_labels(
    judged: Judged, sites_repo: tuple[Path, dict[str, str]]
) -> None:
    _, shas = sites_repo
    found = [f for f in judged.findings if f.kind == "missing_identifier"]
    assert [(f.doc, f.line, f.claim) for f in found] == [
        ("docs/guide/api.rst", 4, "`shop.cart.remove_item`"),  # :func:
        ("docs/narrative.md", 6, "`shop.cart.remove_item`"),  # a MyST link to the object
    ]
    assert all(f.evidence is not None and f.evidence.removed_in_commit == shas["removal"] for f in found)
    # the RST target (from RST, from a MyST role, from a MyST link), the section title
    # (autosectionlabel), the MyST target, and another page's MyST target with a slash
    assert judged.rules["label.exists"] == 6
    assert not [f for f in judged.findings if "int" in f.claim or "label" in f.claim]
