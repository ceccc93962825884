"""Where a link in a doc points, as the site it is published in resolves it (codefacts.sites)."""

from __future__ import annotations

from palimpsest.index.codefacts.sites import Sites, is_site_config

MKDOCS = """\
site_name: Shop
docs_dir: handbook
nav:
  - Home: index.md
  - Guide:
      - guide/install.md
      - External: https://example.test/x
markdown_extensions:
  - pymdownx.emoji:
      emoji_index: !!python/name:material.extensions.emoji.twemoji
      emoji_generator: !!python/name:material.extensions.emoji.to_svg
  - pymdownx.superfences:
      custom_fences:
        - name: mermaid
          format: !!python/name:pymdownx.superfences.fence_code_format
extra:
  analytics: !ENV [ANALYTICS_KEY, none]
"""

SPHINX = """\
import os
import sys

sys.path.insert(0, os.path.abspath(".."))
project = "Shop"
extensions = ["sphinx.ext.autodoc", "sphinx.ext.intersphinx"]
extensions += ["sphinx.ext.autosectionlabel"]
autosectionlabel_prefix_document = True
html_static_path = ["_static"]
html_extra_path = ("_extra",)
html_theme = os.environ.get("THEME", "alabaster")  # not a literal: left out
"""

DOCUSAURUS = """\
// @ts-check
/** @type {import('@docusaurus/types').Config} */
const config = {
  title: 'Shop', // a comment with path: 'nowhere'
  url: 'https://example.test',
  presets: [
    [
      'classic',
      ({
        docs: {
          path: '../manual',
          routeBasePath: 'guide',
          sidebarPath: require.resolve('./sidebars.js'),
        },
        blog: { path: 'news' },
      }),
    ],
  ],
};
module.exports = config;
"""


def test_configs_are_found_where_their_generators_look() -> None:
    assert is_site_config("mkdocs.yml") and is_site_config("site/mkdocs.yaml")
    assert is_site_config("docs/conf.py") and is_site_config("doc/source/conf.py")
    assert not is_site_config("src/shop/conf.py")  # a module named conf, not Sphinx's
    assert is_site_config("website/docusaurus.config.ts")


def test_mkdocs_reads_docs_dir_and_nav_through_custom_tags() -> None:
    files = [
        "mkdocs.yml",
        "handbook/index.md",
        "handbook/guide/install.md",
        "handbook/img/logo.png",
        "README.md",
    ]
    sites = Sites.of(files, {"mkdocs.yml": MKDOCS})
    [site] = sites.sites
    assert (site.kind, site.source) == ("mkdocs", "handbook")
    assert site.pages == ("handbook/index.md", "handbook/guide/install.md")
    # root-relative: from docs_dir, not from the repository's root
    found = sites.resolve("handbook/guide/install.md", "/img/logo.png")
    assert (found.how, found.found) == ("exists", "handbook/img/logo.png")
    # relative to the page's source file
    assert sites.resolve("handbook/guide/install.md", "../img/logo.png#top").found == "handbook/img/logo.png"
    assert sites.resolve("handbook/index.md", "guide/").found == "handbook/guide"
    missing = sites.resolve("handbook/index.md", "/img/gone.png")
    assert missing.how == "missing" and missing.candidates[0] == "handbook/img/gone.png"
    # a README outside docs_dir is rendered by GitHub: root-relative is the repository's root
    assert sites.resolve("README.md", "/img/logo.png").how == "missing"


def test_mkdocs_inherit_gives_the_parents_settings() -> None:
    child = "INHERIT: ./base.yml\nsite_name: Shop\n"
    sites = Sites.of(
        ["mkdocs.yml", "base.yml", "pages/a.md"], {"mkdocs.yml": child, "base.yml": "docs_dir: pages\n"}
    )
    assert sites.sites[0].source == "pages"


def test_sphinx_reads_literal_assignments_and_never_runs_conf_py() -> None:
    files = [
        "docs/conf.py",
        "docs/index.rst",
        "docs/api/routing.rst",
        "docs/_static/router.svg",
        "docs/_static/router.png",
        "docs/_extra/robots.txt",
        "docs/narr/intro.md",
    ]
    sites = Sites.of(files, {"docs/conf.py": SPHINX})
    [site] = sites.sites
    assert site.kind == "sphinx" and site.source == "docs" and site.autosectionlabel and site.label_prefix
    assert site.served == (("", "docs/_extra"), ("_static", "docs/_static"))
    # an image glob: whichever candidate exists
    glob = sites.resolve("docs/narr/intro.md", "../_static/router.*")
    assert (glob.how, glob.holds) == ("glob", True)
    assert not sites.resolve("docs/narr/intro.md", "../_static/gone.*").holds
    # pages Sphinx writes itself
    for generated in (
        "../genindex.html",
        "../_modules/shop/app.html",
        "../search.html",
        "../py-modindex.html",
    ):
        assert sites.resolve("docs/narr/intro.md", generated).how == "generated"
    # a built page's URL is the source it is built from; / is the source folder
    assert sites.resolve("docs/narr/intro.md", "../api/routing.html#x").found == "docs/api/routing.rst"
    assert sites.resolve("docs/narr/intro.md", "/api/routing").found == "docs/api/routing.rst"
    # html_extra_path at the site's root, html_static_path under _static/
    assert sites.resolve("docs/index.rst", "robots.txt").found == "docs/_extra/robots.txt"
    assert sites.resolve("docs/narr/intro.md", "../_static/router.svg").found == "docs/_static/router.svg"


def test_sphinx_generated_pages_are_only_those_of_a_sphinx_site() -> None:
    sites = Sites.of(["README.md", "src/app.py"], {})
    assert sites.resolve("README.md", "genindex.html").how == "missing"
    assert sites.resolve("README.md", "img/x.*").how == "missing"  # GitHub does not glob


def test_docusaurus_routes_site_paths_and_static() -> None:
    files = [
        "website/docusaurus.config.js",
        "website/static/img/logo.svg",
        "website/src/components/Card.js",
        "manual/intro.md",
        "manual/api/index.mdx",
        "manual/api/client.mdx",
    ]
    sites = Sites.of(files, {"website/docusaurus.config.js": DOCUSAURUS})
    [site] = sites.sites
    assert (site.kind, site.source, site.route) == ("docusaurus", "manual", "guide")
    assert sites.resolve("manual/intro.md", "/guide/api/client").found == "manual/api/client.mdx"
    assert sites.resolve("manual/intro.md", "/guide/api").found == "manual/api"  # its index page
    assert sites.resolve("manual/intro.md", "/img/logo.svg").found == "website/static/img/logo.svg"
    assert (
        sites.resolve("manual/intro.md", "@site/src/components/Card.js").found
        == "website/src/components/Card.js"
    )
    assert sites.resolve("manual/api/client.mdx", "../intro.md").found == "manual/intro.md"
    assert sites.resolve("manual/intro.md", "/guide/gone").how == "missing"


def test_docusaurus_defaults_without_options() -> None:
    sites = Sites.of(
        ["docusaurus.config.ts", "docs/a.md", "docs/b/c.md"], {"docusaurus.config.ts": "export default {};"}
    )
    assert sites.resolve("docs/a.md", "/docs/b/c").found == "docs/b/c.md"


def test_no_generator_is_githubs_rendering() -> None:
    files = ["README.md", "docs/guide.md", "src/app.py", "site/public/logo.png", "site/pages/a.md"]
    sites = Sites.of(files, {})
    assert sites.resolve("docs/guide.md", "../src/app.py").found == "src/app.py"
    assert sites.resolve("docs/guide.md", "/src/app.py").found == "src/app.py"
    assert sites.resolve("docs/guide.md", "../../outside.md").how == "outside"
    assert sites.resolve("docs/guide.md", "guide").found == "docs/guide.md"  # a page by its name
    # a root-relative link in a doc no configured site holds: a site served from a folder above it
    found = sites.resolve("site/pages/a.md", "/logo.png")
    assert (found.how, found.found) == ("site_root", "site/public/logo.png")


def test_a_broken_config_is_read_as_the_defaults() -> None:
    sites = Sites.of(
        ["mkdocs.yml", "docs/conf.py", "docs/index.md"],
        {"mkdocs.yml": "nav: [\n", "docs/conf.py": "def (:\n"},
    )
    assert {(s.kind, s.source) for s in sites.sites} == {("mkdocs", "docs"), ("sphinx", "docs")}
