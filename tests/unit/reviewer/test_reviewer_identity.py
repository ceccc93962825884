"""Finding identity and positions: fingerprints that survive moved lines, positions on multi-hunk
diffs with renames (added, removed and context lines), read from a real git repository."""

from __future__ import annotations

from pathlib import Path

import pytest

from palimpsest.index.context.finding import Finding
from palimpsest.reviewer.identity import anchor_present, enclosing_symbol, identify, normalise_message
from palimpsest.reviewer.positions import diff_map, locate
from tests.support.fake_providers import shown_lines
from tests.support.gitrepo import commit, git, init_repo

CODE = """import os


class Cart:
    def total(self, items):
        total = 0
        for item in items:
            total += item.price
        return total
"""


def finding(path: str, start: int, end: int, message: str = "total may be None", **kw: object) -> Finding:
    return Finding(path, start, end, "major", kw.pop("category", "bug"), message, **kw)  # type: ignore[arg-type]


def test_the_fingerprint_survives_lines_moving_above_it() -> None:
    first = identify(finding("cart.py", 6, 6), CODE)
    moved = "# a header comment\n# and another\n\n" + CODE
    again = identify(finding("cart.py", 9, 9, "Total may be None!"), moved)
    assert first.fingerprint == again.fingerprint and first.fingerprint is not None
    assert first.symbol == again.symbol == "total"
    assert first.anchor_lines == 1 and anchor_present(moved, str(first.anchor_hash), first.anchor_lines)


def test_the_fingerprint_changes_with_the_anchor_category_or_meaning() -> None:
    base = identify(finding("cart.py", 6, 6), CODE)
    fixed = CODE.replace("total = 0", "total = 0.0")
    assert identify(finding("cart.py", 6, 6), fixed).fingerprint != base.fingerprint
    assert not anchor_present(fixed, str(base.anchor_hash), base.anchor_lines)
    assert identify(finding("cart.py", 6, 6, category="style"), CODE).fingerprint != base.fingerprint
    assert identify(finding("cart.py", 6, 6, "items may be empty"), CODE).fingerprint != base.fingerprint
    assert identify(finding("other.py", 6, 6), CODE).fingerprint != base.fingerprint


def test_messages_are_normalised_and_symbols_enclose() -> None:
    assert normalise_message("Line 12: `x` is None!") == normalise_message("line 14 — x is none")
    lines = CODE.splitlines()
    assert enclosing_symbol(lines, 8) == "total"
    assert enclosing_symbol(lines, 5) == "total"  # the definition line itself
    assert enclosing_symbol(lines, 1) is None


OLD = "".join(f"value_{i} = {i}\n" for i in range(1, 41))


@pytest.fixture(scope="module")
def renamed(tmp_path_factory: pytest.TempPathFactory) -> str:
    """``src/calc.py`` renamed to ``src/compute.py`` with two hunks: line 5 replaced by two lines,
    a line added after line 30; and a second file with one added line."""
    repo = init_repo(tmp_path_factory.mktemp("positions") / "repo")
    base = commit(repo, "2024-01-01T00:00:00+00:00", {"src/calc.py": OLD, "src/other.py": "a = 1\n"})
    lines = OLD.splitlines(keepends=True)
    lines[4:5] = ["value_5 = compute(5)\n", "value_5b = 55\n"]
    lines.insert(31, "extra = 31\n")  # after old line 30 (now line 31)
    git(repo, "mv", "src/calc.py", "src/compute.py")
    head = commit(
        repo,
        "2024-01-02T00:00:00+00:00",
        {"src/compute.py": "".join(lines), "src/other.py": "a = 1\nb = 2\n"},
    )
    return git(repo, "diff", "--no-color", "-M", base, head)


def test_positions_on_a_multi_hunk_renamed_file(renamed: str) -> None:
    files = diff_map(renamed)
    assert files["src/compute.py"].old_path == "src/calc.py"
    added = locate(files, finding("src/compute.py", 5, 6))
    assert added is not None
    assert (added["side"], added["start"], added["end"], added["kind"]) == ("new", 5, 6, "added")
    assert added["new_line"] == 6 and added["old_line"] is None and added["exact"]
    removed = locate(files, finding("src/compute.py", 5, 5, side="old"))
    assert removed is not None
    assert (removed["side"], removed["end"], removed["kind"], removed["old_line"]) == ("old", 5, "removed", 5)
    assert removed["new_line"] is None and removed["old_path"] == "src/calc.py"
    context = locate(files, finding("src/compute.py", 3, 3))
    assert context is not None
    assert (context["kind"], context["new_line"], context["old_line"]) == ("context", 3, 3)
    second = locate(files, finding("src/compute.py", 32, 32))  # old line 30 + 1 (line 5 became two)
    assert second is not None and second["kind"] == "added" and second["new_line"] == 32
    after = locate(files, finding("src/compute.py", 33, 33))  # context after the second hunk
    assert after is not None and (after["new_line"], after["old_line"]) == (33, 31)
    # a range starting in the first hunk and ending in the second: pulled into the second hunk
    spanning = locate(files, finding("src/compute.py", 6, 32))
    assert spanning is not None and spanning["start"] < spanning["end"] == 32 and not spanning["exact"]
    assert locate(files, finding("src/compute.py", 18, 18)) is None  # between the hunks: not shown
    assert locate(files, finding("src/calc.py", 5, 5)) is None  # the old name is not the file's path
    other = locate(files, finding("src/other.py", 2, 2))
    assert other is not None and other["path"] == other["old_path"] == "src/other.py"


def test_the_fakes_reading_of_the_diff_agrees(renamed: str) -> None:
    """The fake providers validate positions with their own reader; both read the same lines."""
    ours = diff_map(renamed)
    theirs = shown_lines(renamed)
    assert set(ours) == set(theirs)
    for path, fmap in ours.items():
        assert fmap.old_path == theirs[path].old_path
        assert {n for h in fmap.hunks for n in h.new} == set(theirs[path].new)
        assert {n for h in fmap.hunks for n in h.old} == set(theirs[path].old)


def test_a_repository_path_is_not_needed(tmp_path: Path) -> None:
    assert diff_map("") == {}
    assert locate({}, finding("x.py", 1, 1)) is None
