"""What kind of page a document is, by its text: pages that only point elsewhere and pages a doc
generator fills from the code make no claim age could make stale."""

from __future__ import annotations

import pytest

from palimpsest.index.codefacts.pages import generated_reference, is_pointer_page

POINTERS = {
    "contributing, one link": (
        "# Contributing\n\nSee the [contributor guide](https://palletsprojects.com/contributing/)\n"
    ),
    "governance, rst link": (
        "Governance\n==========\n\nThis project follows the `Pylons governance\n"
        "<https://pylonsproject.org/community-governance.html>`_.\n"
    ),
    "an include": ".. include:: ../CONTRIBUTING.rst\n",
    "a myst include": "```{include} ../CONTRIBUTING.md\n:relative-docs: docs/\n```\n",
    "a link definition": "# Security\n\nPlease read [our policy][policy].\n\n[policy]: https://example.org/security\n",
}
NOT_POINTERS = {
    "no link": "# Contributing\n\nOpen an issue first, then a pull request.\n",
    "inline code": "# Contributing\n\nRun `make test` first; see https://example.org/guide.\n",
    "rst inline code": "Contributing\n============\n\nRun ``tox -e py`` first; see https://example.org/.\n",
    "a code block": "# Install\n\nSee https://example.org.\n\n```\npip install thing\n```\n",
    "a literal block": "Install\n=======\n\nSee https://example.org. Then::\n\n    pip install thing\n",
    "a guide": "# Guide\n\n"
    + "".join(f"Line {n} of a real guide, see https://example.org.\n" for n in range(10)),
}


@pytest.mark.parametrize("text", POINTERS.values(), ids=list(POINTERS))
def test_pointer_pages(text: str) -> None:
    assert is_pointer_page(text)


@pytest.mark.parametrize("text", NOT_POINTERS.values(), ids=list(NOT_POINTERS))
def test_pages_with_claims_or_prose_are_not_pointers(text: str) -> None:
    assert not is_pointer_page(text)


REFERENCE = {
    "automodule": "API\n===\n\n.. automodule:: pkg.mod\n   :members:\n",
    "mkdocstrings": "# API\n\n::: pkg.mod\n",
    # a one-directive command page, with its index entry and label (pyramid's pscripts pages)
    "autoprogram": (
        ".. index::\n    single: pserve; --reload\n\n.. _pserve_script:\n\n``pserve``\n----------\n\n"
        ".. autoprogram:: pserve:get_parser()\n    :prog: pserve\n\n"
        ".. seealso:: :ref:`running_the_project_application` and :ref:`running-pscripts`.\n"
    ),
    "sphinx-click": "CLI\n===\n\n.. click:: pkg.cli:main\n   :prog: pkg\n   :nested: full\n",
    "a myst label": "(api)=\n# API\n\n::: pkg.mod\n",
}
NOT_REFERENCE = {
    "prose": "API\n===\n\nCall the client first.\n\n.. automodule:: pkg.mod\n",
    "no directive": "API\n===\n",
    "a see-also in words": ".. autoprogram:: pserve:get_parser()\n\n.. seealso:: The guide, for more.\n",
}


@pytest.mark.parametrize("text", REFERENCE.values(), ids=list(REFERENCE))
def test_generated_reference_pages(text: str) -> None:
    assert generated_reference(text)


@pytest.mark.parametrize("text", NOT_REFERENCE.values(), ids=list(NOT_REFERENCE))
def test_pages_with_prose_are_not_generated_reference(text: str) -> None:
    assert not generated_reference(text)
