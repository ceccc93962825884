"""The replay's truth and baselines, computed from git alone, on a tiny handmade history."""

from __future__ import annotations

from pathlib import Path

import pytest

from palimpsest.devtools.bench.history import (
    baselines,
    changed_definitions,
    cochange_partners,
    eligible_changes,
    grep_ranked,
    interleave,
    recall,
    sample_changes,
    truth_of,
)
from tests.support.replayrepo import replay_repository


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    path = tmp_path_factory.mktemp("replay") / "shop"
    return path, replay_repository(path)


def test_only_first_parent_changes_of_3_to_12_files_with_two_modified_code_files_are_eligible(
    repo: tuple[Path, dict[str, str]],
) -> None:
    path, shas = repo
    found = eligible_changes(path, "main")
    # the first commit has no parent; the others touch 1 or 2 files
    assert [c.sha for c in found] == [shas["change"]]
    assert found[0].parent == shas["base"]
    assert sorted(found[0].modified_code) == [
        "pkg/billing.py",
        "pkg/ledger.py",
        "pkg/tables.py",
        "tools/unrelated.py",
    ]
    assert sample_changes(found, 30, 1) == found  # fewer than asked: all of them
    assert sample_changes(found, 0, 1) == []


def test_the_seed_is_the_most_changed_code_file_and_the_truth_is_targets_plus_usages(
    repo: tuple[Path, dict[str, str]],
) -> None:
    path, _ = repo
    change = eligible_changes(path, "main")[0]
    truth = truth_of(path, change)
    assert truth.seed == "pkg/billing.py"
    assert truth.targets == ["pkg/ledger.py", "pkg/tables.py", "tools/unrelated.py"]
    assert set(truth.names) == {"compute_total", "format_invoice"}
    # report.py mentions compute_total; the seed itself is not a usage of its own names
    assert truth.usages == ["pkg/report.py"]
    assert truth.usage_by == {"pkg/report.py": ["compute_total"]}
    assert truth.both == ["pkg/ledger.py", "pkg/tables.py", "tools/unrelated.py", "pkg/report.py"]


def test_changed_definitions_read_both_sides_of_the_diff(repo: tuple[Path, dict[str, str]]) -> None:
    path, shas = repo
    assert changed_definitions(path, shas["base"], shas["change"], "pkg/ledger.py") == ["post_entry"]
    assert changed_definitions(path, shas["base"], shas["base"], "pkg/ledger.py") == []


def test_cochange_counts_commits_of_2_to_30_files_up_to_the_base_only(
    repo: tuple[Path, dict[str, str]],
) -> None:
    path, shas = repo
    # four two-file commits pair billing with ledger before the base; "start" has 7 files and
    # pairs billing with everything once; late.py's five pairings come after the base
    partners = cochange_partners(path, shas["base"], "pkg/billing.py")
    assert partners[0] == "pkg/ledger.py"
    assert set(partners[1:]) == {
        "pkg/__init__.py",
        "pkg/report.py",
        "pkg/tables.py",
        "pkg/late.py",
        "README.md",
    }
    later = cochange_partners(path, shas["head"], "pkg/billing.py")
    assert later[0] == "pkg/late.py"  # 5 + 1 commits at the head: what the replay must not see


def test_grep_ranks_files_by_how_many_changed_names_they_contain(repo: tuple[Path, dict[str, str]]) -> None:
    path, shas = repo
    assert grep_ranked(path, shas["base"], ["compute_total", "format_invoice", "abc"], "pkg/billing.py") == [
        "pkg/report.py"
    ]


def test_baselines_interleave_at_the_same_file_count(repo: tuple[Path, dict[str, str]]) -> None:
    path, _ = repo
    change = eligible_changes(path, "main")[0]
    truth = truth_of(path, change)
    out = baselines(path, change, truth, 2)
    assert out["cochange"] == ["pkg/ledger.py", cochange_partners(path, change.parent, truth.seed)[1]]
    assert out["grep"] == ["pkg/report.py"]
    assert out["mix"] == ["pkg/ledger.py", "pkg/report.py"]
    assert out["none"] == []
    assert recall(out["mix"], truth.both) == pytest.approx(2 / 4)


def test_interleave_and_recall_arithmetic() -> None:
    assert interleave(["a", "b", "c"], ["b", "d"]) == ["a", "b", "d", "c"]
    assert interleave([], ["x"]) == ["x"]
    assert recall(["a", "z"], ["a", "b"]) == 0.5
    assert recall(["a"], []) is None
