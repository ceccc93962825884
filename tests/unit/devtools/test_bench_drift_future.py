"""The fate of flagged doc lines, from a history made here with plain git."""

from __future__ import annotations

from pathlib import Path

import pytest

from palimpsest.devtools.bench.drift_future import base_commit, doc_fates, future_report
from tests.support.gitrepo import commit, init_repo, move

GUIDE = "# Guide\n\nCall `make_cart()`.\n\nThen `pay()`.\n\nAnd `ship()`.\n\nThe end.\n"
FIXED = "# Guide\n\nCall `new_cart()`.\n\nThen `pay()`.\n\nAnd `ship()`.\n\nThe end.\n"
NOTES = "# Notes\n\nUse `old_thing`.\n\nMore.\n"


def test_base_commit_is_the_newest_first_parent_commit_old_enough(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo")
    commit(repo, "2023-01-01T00:00:00+00:00", {"a.md": "# A\n"})
    old = commit(repo, "2023-03-01T00:00:00+00:00", {"a.md": "# A\n\nmore\n"})
    commit(repo, "2023-12-01T00:00:00+00:00", {"a.md": "# A\n\nmore\n\nagain\n"})
    head = commit(repo, "2024-03-15T00:00:00+00:00", {"b.md": "# B\n"})
    assert base_commit(repo, 12) == (head, old)
    with pytest.raises(RuntimeError, match="does not reach back 36 months"):
        base_commit(repo, 36)


def test_flagged_lines_changed_since_against_the_base_rate(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo")
    base = commit(
        repo, "2023-01-01T00:00:00+00:00", {"docs/guide.md": GUIDE, "docs/notes.md": NOTES, "x.md": "# X\n"}
    )
    commit(repo, "2023-06-01T00:00:00+00:00", {"docs/guide.md": FIXED})
    move(repo, "2023-07-01T00:00:00+00:00", "docs/notes.md", "docs/notes2.md")
    head = commit(repo, "2023-08-01T00:00:00+00:00", {"x.md": None})
    fates = doc_fates(repo, base, head, {"docs/guide.md", "docs/notes.md", "x.md"})
    assert fates["docs/guide.md"].changed == {3} and fates["docs/guide.md"].lines == 5
    assert fates["docs/notes.md"].now == "docs/notes2.md" and fates["docs/notes.md"].changed == set()
    assert fates["x.md"].now is None and fates["x.md"].changed == {1}  # deleted: every line
    flagged = [
        {"doc": "docs/guide.md", "line": 3, "kind": "missing_identifier", "claim": "`make_cart()`"},
        {"doc": "docs/notes.md", "line": 3, "kind": "missing_identifier", "claim": "`old_thing`"},
    ]
    out = future_report(flagged, fates)
    # 1 of the 2 flagged lines changed; 1 of the 8 non-blank lines of their two docs changed
    assert (out["flagged_lines"], out["flagged_changed"], out["flagged_share"]) == (2, 1, 0.5)
    assert (out["doc_lines"], out["doc_lines_changed"], out["base_rate"]) == (8, 1, 0.125)
    assert out["lift"] == 4.0
    assert out["by_kind"] == {"missing_identifier": {"changed": 1, "of": 2}}
    assert [line["changed_by_now"] for line in out["lines"]] == [True, False]
    assert future_report([], fates)["lift"] is None
