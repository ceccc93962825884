"""Posting to the fake GitHub, GitLab and Bitbucket APIs (real HTTP on 127.0.0.1): inline comments on
added, removed and context lines of a multi-hunk diff with a rename, suggestion blocks in each
provider's syntax, the summary fallback for a position that does not map or is refused, no repost
on a new push, resolution of findings whose anchor went away, the summary edited in place."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import httpx
import pytest

from palimpsest.index.context.finding import Finding
from palimpsest.reviewer.positions import diff_map, locate
from palimpsest.reviewer.posting import Target, post_review
from tests.support.fake_providers import FakeProviders
from tests.unit.reviewer.test_reviewer_identity import renamed  # noqa: F401  (the module fixture)

TOKEN = "tok-inline-7c1f"
H1, H2, BASE, MB = "1" * 40, "2" * 40, "b" * 40, "c" * 40


def _f(n: int, start: int, end: int, message: str, **kw: Any) -> Finding:
    return Finding("src/compute.py", start, end, "major", "bug", message, fingerprint=f"{n:032x}", **kw)


def _placed(diff: str, findings: list[Finding]) -> list[Finding]:
    files = diff_map(diff)
    return [f if f.position is not None else replace(f, position=locate(files, f)) for f in findings]


@pytest.mark.parametrize("provider", ["github", "gitlab", "bitbucket"])
async def test_inline_positions_suggestions_fallback_no_repost_and_resolution(
    renamed: str,  # noqa: F811
    provider: str,
) -> None:
    added = _f(1, 5, 6, "compute() may raise", suggested_change="value_5 = safe_compute(5)\nvalue_5b = 55")
    removed = _f(2, 5, 5, "value_5 was used by the report", side="old")
    context = _f(3, 3, 3, "value_3 is shadowed")
    between = _f(4, 18, 18, "unchanged line")  # not in the diff: no position
    refused = _f(5, 20, 20, "refused by the provider")
    refused = replace(
        refused,
        position={
            "path": "src/compute.py",
            "old_path": "src/calc.py",
            "side": "new",
            "start": 20,
            "end": 20,
            "kind": "added",
            "old_line": None,
            "new_line": 20,
            "exact": True,
        },
    )
    with FakeProviders(token=TOKEN) as api:
        api.diffs[7] = renamed
        target = Target(provider, api.url, "acme/shop", 7, H1, BASE, MB)
        findings = _placed(renamed, [added, removed, context, between, refused])
        assert findings[3].position is None
        first = await post_review(target, TOKEN, "Two risks.", findings)
        assert first.fresh
        assert first.inline == [f"{n:032x}" for n in (1, 2, 3)]
        assert first.in_summary == [f"{n:032x}" for n in (4, 5)]
        inline = api.inline(provider, 7)
        assert len(inline) == 3
        [summary] = api.summaries(provider, 7)
        assert "unchanged line" in summary and "refused by the provider" in summary
        assert f"head={H1}" in summary and "3 new finding(s) inline" in summary
        bodies = [c.get("body") or c["content"]["raw"] for c in inline]
        if provider == "github":
            assert [(c["path"], c["line"], c["side"], c.get("start_line")) for c in inline] == [
                ("src/compute.py", 6, "RIGHT", 5),
                ("src/compute.py", 5, "LEFT", None),
                ("src/compute.py", 3, "RIGHT", None),
            ]
            assert "```suggestion\nvalue_5 = safe_compute(5)\nvalue_5b = 55\n```" in bodies[0]
        elif provider == "gitlab":
            positions = [c["position"] for c in inline]
            assert [(p.get("new_line"), p.get("old_line")) for p in positions] == [
                (6, None),
                (None, 5),
                (3, 3),
            ]
            assert {
                (p["old_path"], p["new_path"], p["base_sha"], p["start_sha"], p["head_sha"])
                for p in positions
            } == {("src/calc.py", "src/compute.py", MB, BASE, H1)}
            assert "```suggestion:-1+0\nvalue_5 = safe_compute(5)\nvalue_5b = 55\n```" in bodies[0]
        else:
            assert [c["inline"] for c in inline] == [
                {"path": "src/compute.py", "to": 6},
                {"path": "src/compute.py", "from": 5},
                {"path": "src/compute.py", "to": 3},
            ]
            assert "Suggested change:\n```\nvalue_5 = safe_compute(5)" in bodies[0]
        assert len([r for r in api.rejected if r[:3] in ("400", "422")]) == 1  # the refused one only

        # the same head again (a redelivery): nothing is posted or edited
        again = await post_review(target, TOKEN, "Two risks.", findings)
        assert not again.fresh and len(api.items(provider, 7)) == 4 and api.edits == []

        # a new push: the added-lines finding is still there, the removed-lines one's anchor is gone,
        # a new finding appears
        new = _f(6, 32, 32, "extra is never read")
        second = replace(target, head_sha=H2)
        later = await post_review(
            second,
            TOKEN,
            "One new risk.",
            _placed(renamed, [added, new]),
            resolve=[removed.fingerprint or ""],
        )
        assert later.fresh and later.inline == [f"{6:032x}"] and later.existing == [f"{1:032x}"]
        assert later.resolved == [f"{2:032x}"]
        assert len(api.inline(provider, 7)) == 4  # only the new one was added
        [edited] = api.summaries(provider, 7)  # edited in place, not a second summary
        assert f"head={H2}" in edited and "One new risk." in edited and "1 resolved" in edited
        assert len(api.edits) == 1
        resolved = [c for c in api.inline(provider, 7) if c["resolved"]]
        assert len(resolved) == 1 and len(api.resolutions) == 1
    assert not any(TOKEN in r for r in api.rejected)


async def test_a_review_posted_before_fingerprints_existed_is_not_posted_again() -> None:
    """A merge request discussion with the old marker (one comment per head) counts as posted."""
    with FakeProviders(token=TOKEN) as api:
        url = f"{api.url}/projects/acme%2Fshop/merge_requests/7/discussions"
        old = {"body": f"Old review.\n\n<!-- palimpsest-review head={H1} -->"}
        async with httpx.AsyncClient() as http:
            made = await http.post(url, json=old, headers={"Authorization": f"Bearer {TOKEN}"})
        assert made.status_code == 201
        target = Target("gitlab", api.url, "acme/shop", 7, H1, BASE, MB)
        again = await post_review(target, TOKEN, "New review.", [])
        assert not again.fresh and len(api.items("gitlab", 7)) == 1
        fresh = await post_review(Target("gitlab", api.url, "acme/shop", 7, H2, BASE, MB), TOKEN, "Next.", [])
        assert fresh.fresh and len(api.summaries("gitlab", 7)) == 2  # the old one is not edited
