"""The plain link checker the documentation check is measured against, on a repository made here."""

from __future__ import annotations

from pathlib import Path

from palimpsest.devtools.bench.links import broken_links
from tests.support.gitrepo import commit, init_repo

README = """\
# Project

See [the guide](docs/guide.md), [the API](docs/api) and [an anchor](#usage).
![coverage](./coverage.svg) and [the old example](test/babel/index.js).
<img src="assets/logo.png"> <a href="https://example.invalid/x">out</a> [mail](mailto:a@b.invalid)
[ref]: docs/missing-ref.md

```markdown
[inside a fence](nowhere.md)
```

    [indented code](nowhere-either.md)
"""
GUIDE = (
    "# Guide\n\nBack to [the readme](../README.md); [the API page](../api/) from its directory URL.\n"
    "The site's [API](/api) and [gone](/nowhere); rustdoc's [Service](tower::Service) names code.\n"
    "So do [state](crate#sharing-state) and [the parent](super), but [crates](crates/x.md) is a path.\n"
)
INDEX_RST = (
    "Index\n=====\n\nSee `the code <../src/app.py>`_ and `gone <../src/gone.py>`__.\n\n.. image:: ../img/arch.png\n"
    "\nA `named target <pypi_>`_ is no path.\n"
)


def test_broken_relative_links_and_images_are_found(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo")
    commit(
        repo,
        "2024-01-01T00:00:00+00:00",
        {
            "README.md": README,
            "docs/guide.md": GUIDE,
            "docs/api.md": "# API\n",
            "docs/index.rst": INDEX_RST,
            "src/app.py": "x = 1\n",
            "assets/logo.png": b"\x89PNG",
            "CHANGES.md": "- removed [old](old/thing.md)\n",  # a changelog is not checked
        },
    )
    checked, broken = broken_links(repo, "HEAD")
    found = {(b.doc, b.line, b.target) for b in broken}
    assert found == {
        ("README.md", 4, "./coverage.svg"),
        ("README.md", 4, "test/babel/index.js"),
        ("README.md", 6, "docs/missing-ref.md"),
        ("docs/index.rst", 4, "../src/gone.py"),
        ("docs/index.rst", 6, "../img/arch.png"),
        ("docs/guide.md", 4, "/nowhere"),
        ("docs/guide.md", 5, "crates/x.md"),
    }
    # guide, api (extensionless), logo, readme, api dir URL, the site's /api, the code: present
    assert checked == len(found) + 7


def test_a_docs_sites_public_folder_and_rustdocs_pages_are_not_broken(tmp_path: Path) -> None:
    """A root-relative link is served from a folder above the doc or its ``public/``/``static/``;
    a doc in a crate's ``src/`` is rendered by rustdoc, which generates the pages it links to."""
    repo = init_repo(tmp_path / "repo")
    commit(
        repo,
        "2024-01-01T00:00:00+00:00",
        {
            "site/public/logo/glow.png": b"\x89PNG",
            "site/content/index.md": '# Home\n\n<img src="/logo/glow.png"> <img src="/logo/gone.png">\n',
            "web/Cargo.toml": "[package]\nname = 'web'\n",
            "web/src/lib.rs": "pub mod routing;\n",
            "web/src/docs/routing.md": "See [backpressure](middleware/index.html#b) and [Router](struct.Router.html).\n",
            "docs/guide.md": "An [old page](middleware/index.html).\n",
        },
    )
    _, broken = broken_links(repo, "HEAD")
    assert {(b.doc, b.target) for b in broken} == {
        ("site/content/index.md", "/logo/gone.png"),
        ("docs/guide.md", "middleware/index.html"),
    }


def test_the_link_check_counts_what_the_check_reported(tmp_path: Path) -> None:
    """A broken link counts as reported by a ``missing_path`` finding or an ``unresolved_link`` on its line
    or its target (the check reports a target once per doc), or inside a ``versioned_manual``."""
    from palimpsest.devtools.bench.analyze import link_check

    repo = init_repo(tmp_path / "repo")
    readme = "# X\n\n![a](./gone.png)\n\nAgain ![a](gone.png) and [b](docs/b.md).\n"
    manual = "# Old\n\n[c](c.md)\n"
    commit(
        repo,
        "2024-01-01T00:00:00+00:00",
        {"README.md": readme, "docs/v1/a.md": manual, "docs/v2/a.md": "# New\n"},
    )
    from palimpsest.devtools.bench.analyze import unresolved_links

    findings = [{"doc": "docs/v1", "line": 1, "kind": "versioned_manual", "claim": "manual"}]
    # unresolved links are not findings: the analysis lists them apart, in facts.doc_check
    facts = {"doc_check": {"unresolved_links": [{"doc": "README.md", "line": 3, "claim": "`gone.png`"}]}}
    out = link_check(repo, "HEAD", findings + unresolved_links({"facts": facts}), [])
    assert (out["broken"], out["reported_by_check"]) == (4, 3)
    assert [(m["doc"], m["line"], m["target"]) for m in out["missed"]] == [("README.md", 5, "docs/b.md")]
