"""The web view's pure parts: provider URL forms, safe Markdown, the freshness plot, times, source."""

from __future__ import annotations

import re
from datetime import UTC, datetime

from palimpsest.index.staleness import is_stale, stale_line
from palimpsest.ingest.web.links import ProviderLinks
from palimpsest.ingest.web.markdown import render_inline, render_markdown
from palimpsest.ingest.web.plot import FreshnessPoint, freshness_svg
from palimpsest.ingest.web.source import (
    HIGHLIGHT_LINES,
    MAX_SOURCE_CHARS,
    MAX_SOURCE_LINES,
    SOURCE_CSS,
    hit_lines,
    source_view,
)
from palimpsest.ingest.web.views import day, moment

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


def test_pull_request_links_take_each_providers_form() -> None:
    assert ProviderLinks.of("github", "https://github.com/n/l.git").pull(7) == "https://github.com/n/l/pull/7"
    gl = ProviderLinks.of("gitlab", "https://gitlab.example/p/e.git")
    assert gl.pull(7) == "https://gitlab.example/p/e/-/merge_requests/7"
    bb = ProviderLinks.of("bitbucket", "https://bitbucket.org/k/r.git")
    assert bb.pull(7) == "https://bitbucket.org/k/r/pull-requests/7"
    assert ProviderLinks.of("local", "/srv/git/repo").pull(7) is None and gl.pull(None) is None


def test_paths_and_dunder_names_are_code_never_emphasis() -> None:
    html = str(
        render_markdown(
            "- src/jinja2/__init__.py (modified)\n\nThe __init__ method; see docs/extensions.rst.\n\n"
            "Kept: `a/__b__.py`, [the guide](https://example.com/__x__/y), https://example.com/__z__/q,"
            " and/or **bold**.\n\n```\nsrc/__main__.py\n```\n"
        )
    )
    assert "<strong>init</strong>" not in html and "<strong>x</strong>" not in html
    assert "<code>src/jinja2/__init__.py</code>" in html and "<code>__init__</code>" in html
    assert "<code>docs/extensions.rst</code>." in html  # the sentence's full stop stays outside
    assert "<code>a/__b__.py</code>" in html and "`" not in html  # code spans untouched
    assert 'href="https://example.com/__x__/y"' in html and 'href="https://example.com/__z__/q"' in html
    assert "and/or <strong>bold</strong>" in html  # words with a slash, and emphasis, as before
    assert str(render_markdown("on 2024/01/02")) == "<p>on 2024/01/02</p>\n"  # a date is no path
    assert "<pre><code>src/__main__.py\n</code></pre>" in html  # fenced code untouched
    reason = str(render_inline("changed in 2 of the 3 commits that changed `src/a.py` <b>x</b>"))
    assert reason == "changed in 2 of the 3 commits that changed <code>src/a.py</code> &lt;b&gt;x&lt;/b&gt;"


def test_a_doc_inside_the_stale_zone_is_never_drawn_as_current() -> None:
    median = datetime(2024, 5, 1, tzinfo=UTC)
    old = datetime(2022, 1, 10, tzinfo=UTC)  # left of the line: inside the stale zone
    points = [
        FreshnessPoint("docs/verified.md", old, False, "verified"),  # the doc check found its claims hold
        FreshnessPoint("docs/stale.md", old, True, "unverified_old"),
        FreshnessPoint("docs/new.md", datetime(2024, 4, 1, tzinfo=UTC), False),
    ]
    svg = str(freshness_svg(points, median)[0])
    dots = dict(re.findall(r'<circle class="plot-dot plot-(\w+)"[^>]*><title>([^:]+):', svg))
    assert {path: kind for kind, path in dots.items()} == {
        "docs/verified.md": "old",
        "docs/stale.md": "stale",
        "docs/new.md": "current",
    }
    assert "docs/verified.md: 2022-01-10 (old, verified)" in svg


def test_moments_carry_seconds_in_utc() -> None:
    from datetime import timedelta, timezone

    a = datetime(2026, 12, 7, 11, 37, 5, tzinfo=UTC)
    b = datetime(2026, 12, 7, 12, 37, 48, tzinfo=timezone(timedelta(hours=1)))  # 11:37:48 UTC
    assert moment(a) == "2026-12-07 11:37:05 UTC" and moment(b) == "2026-12-07 11:37:48 UTC"
    assert moment(a.isoformat()) == moment(a)  # the API's JSON (reviews, feedback) reads the same
    assert moment(None) == "—" and moment("not a time") == "—"
    assert day(b) == "2026-12-07" and day(b.isoformat()) == "2026-12-07" and day(None) == "—"


def test_hit_lines_are_numbered_with_the_query_words_marked_and_escaped() -> None:
    lines = hit_lines("window.__pwned = 1\n<script>getUserName()</script>", 41, "pwned getUserName")
    assert [line.number for line in lines] == [41, 42]
    assert str(lines[0].html) == "window.__<mark>pwned</mark> = 1"
    assert str(lines[1].html) == "&lt;script&gt;<mark>getUserName</mark>()&lt;/script&gt;"


def test_the_source_is_numbered_highlighted_escaped_and_capped() -> None:
    shown = source_view("src/app.py", 'import os\n\n\ndef f():\n    return "<script>x</script>"\n')
    html = str(shown.html)
    assert shown.language == "Python" and shown.total == 5  # the final newline ends line 5
    assert re.findall(r'<span class="linenos">\s*(\d+)</span>', html) == ["1", "2", "3", "4", "5"]
    assert '<span class="kn">import</span>' in html and '<span class="k">def</span>' in html
    assert "<script>" not in html and "&lt;script&gt;" in html and "style=" not in html
    assert shown.highlighted
    huge = source_view("data.txt", "\n".join("x" * 50 for _ in range(MAX_SOURCE_LINES + 10)))
    assert huge.lines == MAX_SOURCE_LINES and huge.total == MAX_SOURCE_LINES + 10
    long = source_view("long.py", "x = 1\n" * (HIGHLIGHT_LINES + 1))  # numbered, not lexed
    assert not long.highlighted and long.language == "Python" and 'class="n"' not in str(long.html)
    assert str(long.html).count('class="linenos"') == HIGHLIGHT_LINES + 1
    wide = source_view("min.js", "a" * (MAX_SOURCE_CHARS * 2))  # one huge line: cut, still shown
    assert wide.lines == 1 and len(str(wide.html)) < MAX_SOURCE_CHARS
    assert source_view("blob.unknownext", "\x00\x01 binary-ish").language == "Text only"
    assert b".source .k " in SOURCE_CSS and b"pre {" not in SOURCE_CSS  # scoped: tables keep their look
