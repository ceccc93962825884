"""The summary comment's two collapsed sections on the fake GitHub, GitLab and Bitbucket APIs (real
HTTP on 127.0.0.1, each refusing a body over its provider's limit): "Context used" and "Usually
changes with these, not in this pull request", with or without a model's text, bounded in length,
written on the summary's edit in place, never as a new comment."""

from __future__ import annotations

from typing import Any

import pytest

from palimpsest.index.context.finding import Finding
from palimpsest.reviewer.details import COCHANGE_TITLE, COMMENT_LIMITS, CONTEXT_TITLE, context_sections
from palimpsest.reviewer.posting import Shown, Target, post_review
from tests.support.fake_providers import BODY_LIMITS, FakeProviders

TOKEN = "tok-sections-5d2e"
H1, H2, BASE, MB = "1" * 40, "2" * 40, "b" * 40, "c" * 40
PARTNER = {
    "path": "src/tax.py",
    "source": "src/billing.py",
    "together": 14,
    "out_of": 18,
    "reason": "changed in 14 of the 18 commits that changed `src/billing.py` since 2025-03 (lift 6.1)",
}


def _item(i: int, **kw: Any) -> dict[str, Any]:
    return {
        "source": "usage",
        "repository": None,
        "path": f"src/mod_{i}.py",
        "start_line": i + 1,
        "end_line": i + 9,
        "annotation": None,
        "score": 1.0 / (i + 1),
        "reason": f"calls compute_total (#{i})",
        **kw,
    }


def _sections(body: str) -> tuple[str, str]:
    """The two <details> blocks of a summary body, in order."""
    blocks = body.split("<details>")[1:]
    assert len(blocks) == 2, body[-2000:]
    return blocks[0], blocks[1]


@pytest.mark.parametrize("provider", ["github", "gitlab", "bitbucket"])
async def test_both_sections_close_the_summary_and_are_edited_in_place(provider: str) -> None:
    shown = Shown(
        context=[_item(2), _item(0), _item(1, source="cochange")],
        dropped=[{"path": "src/far.py", "reason": "budget"}, {"path": "src/far2.py", "reason": "budget"}],
        cochange=[PARTNER],
    )
    with FakeProviders(token=TOKEN) as api:
        first = await post_review(
            Target(provider, api.url, "acme/shop", 7, H1, BASE, MB), TOKEN, "Model text.", [], shown=shown
        )
        assert first.fresh
        [body] = api.summaries(provider, 7)
        assert body.startswith("Model text.") and body.rstrip().endswith(
            f"<!-- palimpsest-summary head={H1} -->"
        )
        used, partners = _sections(body)
        assert f"<summary>{CONTEXT_TITLE} (3 item(s))</summary>" in used
        # the top items first (by score), each with path:lines, source and why; the budget's count
        lines = [line for line in used.splitlines() if line.startswith("- ")]
        assert lines[0] == "- `src/mod_0.py:1-9` (usage) — calls compute_total (#0)"
        assert lines[1] == "- `src/mod_1.py:2-10` (cochange) — calls compute_total (#1)"
        assert "2 chunk(s) left out by the token budget" in used
        assert f"<summary>{COCHANGE_TITLE} (1)</summary>" in partners
        assert f"- `src/tax.py`: {PARTNER['reason']}" in partners
        # a new head: the same comment is edited (one summary, one edit), the sections rewritten
        later = Shown(context=[_item(5)], dropped=[], cochange=[])
        second = await post_review(
            Target(provider, api.url, "acme/shop", 7, H2, BASE, MB), TOKEN, "Brief.", [], shown=later
        )
        assert second.fresh and second.summary_ref == first.summary_ref
        [body] = api.summaries(provider, 7)
        assert len(api.edits) == 1 and f"head={H2}" in body
        used, partners = _sections(body)
        assert "src/mod_5.py" in used and "src/mod_0.py" not in used
        assert "nothing: no file's history clears the bar." in partners


@pytest.mark.parametrize("provider", ["github", "gitlab", "bitbucket"])
async def test_a_huge_summary_and_context_stay_within_the_providers_limit(provider: str) -> None:
    """A model that writes more than any provider accepts, 400 context items with long reasons and
    findings that could not be placed: the body fits the provider's limit, the sections survive
    (context lines shed first, counted), the marker closes it."""
    limit = COMMENT_LIMITS[provider]
    assert limit == BODY_LIMITS[provider]  # the fake refuses what the provider refuses
    huge = "The model rambles. " * (limit // 10)
    context = [_item(i, reason="x" * 280) for i in range(400)]
    findings = [
        Finding("src/a.py", 1, 1, "minor", "style", "m" * 2000, fingerprint=f"{i:032x}") for i in range(30)
    ]
    shown = Shown(context=context, dropped=[], cochange=[PARTNER] * 5)
    with FakeProviders(token=TOKEN) as api:
        result = await post_review(
            Target(provider, api.url, "acme/shop", 9, H1, BASE, MB), TOKEN, huge, findings, shown=shown
        )
        assert result.fresh
        [body] = api.summaries(provider, 9)
    assert len(body) <= limit
    assert body.rstrip().endswith(f"<!-- palimpsest-summary head={H1} -->")
    used, partners = _sections(body)
    assert "more item(s) not shown here" in used
    assert partners.count("- `src/tax.py`") == 5


def test_untrusted_paths_and_reasons_cannot_close_the_section() -> None:
    hostile = _item(0, path="src/</details><script>x()</script>.py", reason="</summary><img onerror=1>")
    text = context_sections([hostile], [], [{"path": "</details>.py", "reason": "<b>bold</b>"}])
    assert text.count("<details>") == 2 and text.count("</details>") == 2
    assert "<script>" not in text and "<img" not in text and "<b>" not in text
    assert "&lt;/details&gt;" in text


def test_without_context_or_partners_both_sections_say_so() -> None:
    text = context_sections([], [], [])
    assert "- nothing from the index." in text
    assert "- nothing: no file's history clears the bar." in text
