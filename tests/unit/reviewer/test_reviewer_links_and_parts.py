"""The reviewer's pure rules for cross-repository links and for diffs reviewed in parts."""

from __future__ import annotations

import pytest

from palimpsest.index.context.crossrepo import MAX_CONFIG_BYTES, may_receive, parse_config
from palimpsest.index.context.finding import Finding
from palimpsest.reviewer.parts import CUT_NOTE, merge, plan_parts
from palimpsest.reviewer.review import Outcome


def test_a_config_declares_linked_and_pattern_repositories() -> None:
    config = parse_config(
        "other: 1\nreview:\n  linked_repositories: [acme/a, ' acme/b ']\n"
        "  pattern_repositories:\n    - acme/template\n"
    )
    assert (config.state, config.linked, config.pattern) == ("ok", ["acme/a", "acme/b"], ["acme/template"])


@pytest.mark.parametrize(
    ("text", "state"),
    [
        (None, "absent"),
        ("", "ok"),
        ("other: true\n", "ok"),
        ("review:\n", "ok"),
    ],
)
def test_no_links(text: str | None, state: str) -> None:
    config = parse_config(text)
    assert (config.state, config.linked, config.pattern) == (state, [], [])


@pytest.mark.parametrize(
    ("text", "detail"),
    [
        ("review: [unclosed\n", "not valid YAML (line 2, column 1)"),
        ("- a\n- b\n", "the top level must be a mapping"),
        ("review: acme/a\n", "'review' must be a mapping"),
        ("review:\n  linked_repositories: acme/a\n", "'review.linked_repositories' must be a list"),
        ("review:\n  linked_repositories: [acme/a, 3]\n", "'review.linked_repositories' must be a list"),
        ("review:\n  pattern_repositories: [{name: x}]\n", "'review.pattern_repositories' must be a list"),
        ("review:\n  pattern_repositories: ['']\n", "'review.pattern_repositories' must be a list"),
        ("review:\n  linked_repositories: [!!python/name:os.system x]\n", "not valid YAML"),
        ("#" * (MAX_CONFIG_BYTES + 1), "larger than"),
    ],
)
def test_malformed_yaml_and_wrong_types_make_the_config_invalid(text: str, detail: str) -> None:
    config = parse_config(text)
    assert config.state == "invalid" and config.linked == [] and config.pattern == []
    assert config.detail is not None and config.detail.startswith(".palimpsest/config.yml: ")
    assert detail in config.detail


@pytest.mark.parametrize(
    ("receiver", "giver", "allowed"),
    [
        ("public", "public", True),
        ("public", "internal", False),
        ("public", "private", False),
        ("internal", "public", True),
        ("internal", "internal", True),
        ("internal", "private", False),
        ("private", "public", True),
        ("private", "internal", True),
        ("private", "private", True),
        ("unknown", "public", False),
    ],
)
def test_the_visibility_matrix(receiver: str, giver: str, allowed: bool) -> None:
    assert may_receive(receiver, giver) is allowed


def _file(name: str, lines: int) -> str:
    body = "".join(f"+line {i} of {name}\n" for i in range(lines))
    return f"diff --git a/{name} b/{name}\nnew file mode 100644\n--- /dev/null\n+++ b/{name}\n@@ -0,0 +1,{lines} @@\n{body}"


def test_a_diff_within_the_limit_is_one_part() -> None:
    text = _file("a.py", 3) + _file("b.py", 3)
    plan = plan_parts(text, 10_000, 4)
    assert [p.paths for p in plan.parts] == [["a.py", "b.py"]] and plan.parts[0].text == text
    assert plan.cut == [] and plan.left_out == []


def test_a_huge_diff_is_split_at_file_boundaries_cut_and_capped() -> None:
    text = (
        _file("a.py", 20) + _file("b.py", 20) + _file("huge.py", 400) + _file("c.py", 20) + _file("d.py", 20)
    )
    size = len(_file("a.py", 20))
    plan = plan_parts(text, 2 * size + 10, 2)
    assert [p.paths for p in plan.parts] == [["a.py", "b.py"], ["huge.py"]]
    assert all(len(p.text) <= 2 * size + 10 for p in plan.parts)
    assert plan.parts[1].text.endswith(CUT_NOTE) and plan.cut == ["huge.py"]
    assert plan.left_out == ["c.py", "d.py"]


def test_merged_findings_are_deduplicated_and_capped() -> None:
    text = _file("a.py", 20) + _file("b.py", 20)
    plan = plan_parts(text, len(text) - 1, 4)
    assert len(plan.parts) == 2
    same = Finding("a.py", 1, 1, "major", "bug", "Same  thing")
    first = Outcome("first", [same, Finding("a.py", 2, 2, "minor", "style", "x")], findings_dropped=1)
    second = Outcome(
        "second",
        [Finding("a.py", 1, 1, "major", "bug", "same thing"), Finding("b.py", 1, 1, "info", "i", "y")],
    )
    out = merge(plan, [(1, first), (2, second)], [], max_findings=2)
    assert [f.message for f in out.findings] == ["Same  thing", "x"]
    assert out.findings_dropped == 2  # the one part 1 dropped, and b.py's over the cap
    assert "reviewed in 2 parts" in out.summary and "Part 2 (b.py): second" in out.summary
    assert not out.partial_diff
