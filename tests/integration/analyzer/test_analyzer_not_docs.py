"""Not documentation, never a doc finding (issue 51, item 4): what the shared classifier says is no
doc -- a licence of one part, a fixture's README, the template ``git archive`` fills in, a
project template's page -- and the pages that make no claim about the code -- a contributing page
that only points elsewhere, a one-directive ``autoprogram`` page -- are never reported as old by age
(``stale_doc``), nor for anything they name; a page of prose nothing verified still is."""

from __future__ import annotations

from pathlib import Path

import pytest

from palimpsest.analyzer.doccheck import Judged
from palimpsest.core.service import Infra
from tests.integration.analyzer.support import (
    index_and_check,
)
from tests.support.gitrepo import commit, init_repo

NOT_DOCS = {
    "docs/ICON_LICENSE.md": "Icons by Someone, CC-BY 4.0. Drawn for `src/icons/render_icon.py`.\n",
    "test/_fixture/site/README.md": "# A fixture site\n\nCall `build_fixture_site()` on it.\n",
    ".git_archival.txt": "node: $Format:%H$\nref-names: $Format:%D$\n",
    "{{cookiecutter.name}}/README.md": "# {{cookiecutter.name}}\n\nRun `make_project()` first.\n",
}
NO_CLAIMS = {
    "CONTRIBUTING.md": "# Contributing\n\nSee the [contributor guide](https://example.org/contributing/).\n",
    "docs/pserve.rst": (
        ".. index::\n    single: pserve; --reload\n\n.. _pserve_script:\n\n``pserve``\n----------\n\n"
        ".. autoprogram:: pserve_cli:get_parser()\n    :prog: pserve\n"
    ),
}
PROSE = "# Serving\n\nThe server reads its settings once, at start, and never again.\n"


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    repo = init_repo(tmp_path_factory.mktemp("notdocs") / "repo")
    old = {"app.py": "def parser():\n    return None\n", "docs/serving.md": PROSE, **NOT_DOCS, **NO_CLAIMS}
    commit(repo, "2023-01-01T00:00:00+00:00", old)
    commit(
        repo,
        "2024-06-01T00:00:00+00:00",
        {
            "app.py": "def parser():\n    return 'parser'\n",
            "server.py": "def serve():\n    return 1\n",
            "worker.py": "def work():\n    return 2\n",
            # enough new code that the median code date is the new one, whatever counts as code
            **{f"pkg/step{n}.py": f"def step{n}():\n    return {n}\n" for n in range(8)},
        },
    )
    return repo


@pytest.fixture(scope="module")
async def judged(infra: Infra, repo: Path) -> Judged:
    return await index_and_check(infra, repo, "notdocs")


async def test_only_prose_nothing_verified_is_old_by_age(judged: Judged) -> None:
    stale = {f.doc for f in judged.findings if f.kind == "stale_doc"}
    assert stale == {"docs/serving.md"}


async def test_what_is_not_documentation_has_no_finding_and_no_state(judged: Judged) -> None:
    assert [f for f in judged.findings if f.doc in NOT_DOCS] == []
    assert set(judged.doc_states).isdisjoint(NOT_DOCS)


async def test_pages_without_claims_keep_a_state_but_are_not_old(judged: Judged) -> None:
    assert [f for f in judged.findings if f.doc in NO_CLAIMS] == []
    assert judged.doc_states["CONTRIBUTING.md"] == "unverified"
    assert judged.doc_states["docs/pserve.rst"] == "reference"
    assert judged.doc_states["docs/serving.md"] == "unverified_old"
