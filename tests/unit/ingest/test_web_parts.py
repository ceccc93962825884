"""The web view's pure parts: provider URL forms, safe Markdown, the freshness plot."""

from __future__ import annotations

from datetime import UTC, datetime

from palimpsest.index.staleness import is_stale, stale_line
from palimpsest.ingest.web.links import ProviderLinks
from palimpsest.ingest.web.markdown import render_markdown
from palimpsest.ingest.web.plot import FreshnessPoint, freshness_svg

SHA = "3f37d853e4011db87bfe102ffd7138fba710fd37"


def test_commit_and_file_links_take_each_providers_form() -> None:
    gh = ProviderLinks.of("github", "https://github.com/northwind/ledger.git")
    assert gh.commit(SHA) == f"https://github.com/northwind/ledger/commit/{SHA}"
    assert (
        gh.blob(SHA, "docs/a b.md", 3) == f"https://github.com/northwind/ledger/blob/{SHA}/docs/a%20b.md#L3"
    )
    gl = ProviderLinks.of("gitlab", "https://gitlab.example/platform/billing/engine.git")
    assert gl.commit(SHA) == f"https://gitlab.example/platform/billing/engine/-/commit/{SHA}"
    assert (
        gl.blob(SHA, "src/x.py", 9)
        == f"https://gitlab.example/platform/billing/engine/-/blob/{SHA}/src/x.py#L9"
    )
    bb = ProviderLinks.of("bitbucket", "https://user:secret@bitbucket.org/kestrel/routes.git")
    assert bb.commit(SHA) == f"https://bitbucket.org/kestrel/routes/commits/{SHA}"
    assert bb.blob(SHA, "README.md", 1) == f"https://bitbucket.org/kestrel/routes/src/{SHA}/README.md#lines-1"
    assert "secret" not in (bb.base or "")
    # no links for local sources, non-http clone URLs, or anything that is not a commit id
    assert ProviderLinks.of("local", "/srv/git/repo").commit(SHA) is None
    assert ProviderLinks.of("github", "git@github.com:northwind/ledger.git").blob(SHA, "a") is None
    assert gh.commit("main") is None and gh.blob("javascript:alert(1)", "a") is None


def test_markdown_keeps_raw_html_and_unsafe_links_as_text() -> None:
    html = str(
        render_markdown(
            "# T\n\n<script>window.x=1</script>\n\n<img src=x onerror=alert(1)>\n\n"
            "[a](javascript:alert(1)) [b](data:text/html,hi) [c](https://example.com/x) [d](docs/y.md)\n\n"
            "![p](https://tracker.example/p.png)\n\n| a | b |\n|---|---|\n| 1 | 2 |\n"
        )
    )
    assert "<script" not in html and "<img" not in html and "&lt;script&gt;" in html
    assert 'href="javascript:' not in html and 'href="data:' not in html
    assert 'href="https://example.com/x"' in html and 'href="docs/y.md"' in html
    assert "<table>" in html


def test_the_plot_draws_the_rules_line_and_escapes_paths() -> None:
    median = datetime(2024, 5, 1, tzinfo=UTC)
    line = stale_line(median)
    assert line == datetime(2023, 11, 1, tzinfo=UTC)
    old, fresh = datetime(2022, 1, 10, tzinfo=UTC), datetime(2024, 4, 1, tzinfo=UTC)
    assert is_stale("a.md", old, median) and not is_stale("a.md", fresh, median)
    points = [FreshnessPoint("docs/<b>x</b>.md", old, True), FreshnessPoint("docs/new.md", fresh, False)]
    svg, left_out = freshness_svg(points, median)
    assert left_out == 0 and "<b>" not in svg and "&lt;b&gt;" in svg
    assert "stale before 2023-11-01" in svg and "median code 2024-05-01" in svg
    assert svg.count("<circle") == 2 and "plot-stale" in svg and "plot-current" in svg
    assert "style=" not in svg  # presentation by class: the CSP allows no inline style
    assert freshness_svg([], median) == ("", 0)
