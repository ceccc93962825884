"""The co-change warning's scoring (palimpsest.index.cochange): conditional share with a Wilson
lower bound, lift over the partner's base rate, exclusions by the shared classifier, the bar,
the limit and the reason each line gives."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from palimpsest.index.cochange import (
    EXCLUDABLE_KINDS,
    MIN_CONFIDENCE,
    PairEvidence,
    excluded_kind,
    from_stored,
    missing_partners,
    wilson_lower,
)

SINCE = datetime(2025, 3, 4, tzinfo=UTC)


def pair(
    partner: str,
    together: int,
    out_of: int,
    partner_commits: int,
    *,
    source: str = "src/x.py",
    total: int = 400,
) -> PairEvidence:
    return PairEvidence(source, partner, together, out_of, partner_commits, total, SINCE)


def warn(evidence: list[PairEvidence], **kw: object) -> list[str]:
    kw.setdefault("touched", {"src/x.py"})
    kw.setdefault("present", lambda p: True)
    return [m.path for m in missing_partners(evidence, **kw)]  # type: ignore[arg-type]


def test_wilson_lower_bound() -> None:
    assert wilson_lower(0, 0) == 0.0
    assert wilson_lower(0, 10) == 0.0
    assert 0.0 < wilson_lower(2, 2) < wilson_lower(40, 60) < 40 / 60
    assert wilson_lower(2, 2) == pytest.approx(0.4251, abs=1e-3)


def test_forty_of_sixty_outranks_two_of_two() -> None:
    assert warn([pair("src/few.py", 2, 2, 2), pair("src/many.py", 40, 60, 45)]) == [
        "src/many.py",
        "src/few.py",
    ]


def test_a_hub_that_changes_with_everything_is_not_listed() -> None:
    # changed in 15 of x.py's 18 commits, but in 300 of the repository's 400: lift 1.1
    hub, partner = pair("src/core.py", 15, 18, 300), pair("src/tax.py", 14, 18, 20)
    assert warn([hub, partner]) == ["src/tax.py"]


def test_the_reason_names_the_evidence() -> None:
    [m] = missing_partners([pair("src/tax.py", 14, 18, 50)], touched={"src/x.py"}, present=lambda p: True)
    assert m.reason == "changed in 14 of the 18 commits that changed `src/x.py` since 2025-03 (lift 6.2)"
    d = m.as_dict()
    assert d["path"] == "src/tax.py" and d["together"] == 14 and d["out_of"] == 18 and d["reason"] == m.reason
    assert from_stored(d) == d and from_stored("src/old.py") == {"path": "src/old.py", "reason": None}


def test_nothing_clears_the_bar_says_nothing() -> None:
    assert warn([pair("src/once.py", 1, 1, 1), pair("src/rare.py", 2, 30, 2)]) == []
    assert wilson_lower(2, 30) < MIN_CONFIDENCE


def test_touched_deleted_and_absent_partners_are_never_listed() -> None:
    evidence = [
        pair("src/old_name.py", 9, 10, 9),
        pair("src/gone.py", 9, 10, 9),
        pair("src/tax.py", 9, 10, 9),
    ]
    listed = warn(evidence, touched={"src/x.py", "src/old_name.py"}, present=lambda p: p != "src/gone.py")
    assert listed == ["src/tax.py"]


def test_lockfiles_generated_ci_and_changelogs_unless_the_rules_ask() -> None:
    kinds = {
        "uv.lock": "lockfile",
        "package-lock.json": "lockfile",
        ".github/workflows/ci.yml": "ci",
        "CHANGES.rst": "changelog",
        "dist/app.min.js": "generated",
        "vendor/lib/x.go": "vendored",
        "AUTHORS.rst": "other",
        "src/tax.py": None,
        "docs/tax.md": None,
    }
    assert {p: excluded_kind(p) for p in kinds} == kinds
    assert set(kinds.values()) - {None} == set(EXCLUDABLE_KINDS)
    evidence = [pair(p, 9, 10, 9) for p in kinds]
    assert sorted(warn(evidence, limit=50)) == ["docs/tax.md", "src/tax.py"]
    assert sorted(warn(evidence, limit=50, include={"ci"})) == [
        ".github/workflows/ci.yml",
        "docs/tax.md",
        "src/tax.py",
    ]


def test_at_most_the_limit_and_the_best_pair_over_the_prs_files() -> None:
    evidence = [pair(f"src/p{i}.py", 10 - i, 10, 10) for i in range(8)]
    assert warn(evidence) == [f"src/p{i}.py" for i in range(5)]
    assert warn(evidence, limit=2) == ["src/p0.py", "src/p1.py"]
    assert warn(evidence, limit=0) == []
    # the same partner of two changed files: the stronger pair speaks for it
    weak, strong = pair("src/tax.py", 3, 9, 5), pair("src/tax.py", 8, 9, 5, source="src/y.py")
    [m] = missing_partners([weak, strong], touched={"src/x.py", "src/y.py"}, present=lambda p: True)
    assert m.source == "src/y.py" and m.together == 8


def test_a_partner_of_one_file_out_of_many_is_weak_evidence() -> None:
    # the PR changes four files with a history; lone.py changed with one of them in 9 of its 10
    # commits, ours.py with three of them in 8 of their 10 each: only ours.py speaks for the PR
    files = ["src/a.py", "src/b.py", "src/c.py", "src/d.py"]
    evidence = [pair("src/lone.py", 9, 10, 12, source="src/a.py")]
    evidence += [pair("src/ours.py", 8, 10, 12, source=f) for f in files[:3]]
    listed = missing_partners(evidence, touched=set(files), present=lambda p: True, sources=files)
    assert [m.path for m in listed] == ["src/ours.py"]
    [m] = listed
    assert m.of_files == 4 and [s.source for s in m.support] == files[:3]
    assert m.score == pytest.approx(3 * wilson_lower(8, 10) / 4)
    # the last stop's scoring (the best pair alone) keeps both, the lone pair first
    best_pair = missing_partners(
        evidence, touched=set(files), present=lambda p: True, sources=files, combine=False
    )
    assert [m.path for m in best_pair] == ["src/lone.py", "src/ours.py"]


def test_the_files_without_a_history_do_not_dilute_the_evidence() -> None:
    # a new file of the PR has no counted commit: the mean is over the two that speak
    evidence = [pair("src/ours.py", 7, 10, 12, source=f) for f in ("src/a.py", "src/b.py")]
    [m] = missing_partners(
        evidence,
        touched={"src/a.py", "src/b.py", "src/new.py"},
        present=lambda p: True,
        sources={"src/a.py", "src/b.py"},
    )
    assert m.of_files == 2 and m.score == pytest.approx(wilson_lower(7, 10))
    # without ``sources`` the denominator is the sources the evidence names
    [same] = missing_partners(evidence, touched={"src/a.py", "src/b.py"}, present=lambda p: True)
    assert same.score == m.score


def test_the_reason_gives_the_evidence_file_by_file() -> None:
    files = ["src/a.py", "src/b.py", "src/c.py", "src/d.py", "src/e.py"]
    evidence = [pair("src/ours.py", 9 - i, 10, 12, source=f) for i, f in enumerate(files)]
    [m] = missing_partners(evidence, touched=set(files), present=lambda p: True, sources=[*files, "src/f.py"])
    assert m.reason == (
        "changed with 5 of the pull request's 6 files with a history:"
        " in 9 of the 10 commits that changed `src/a.py`; in 8 of the 10 commits that changed `src/b.py`;"
        f" in 7 of the 10 commits that changed `src/c.py` and 2 more (score {m.score:.2f})"
    )
    d = m.as_dict()
    assert d["reason"] == m.reason and d["of_files"] == 6 and d["score"] == round(m.score or 0, 4)
    assert [s["source"] for s in d["support"]] == files
    assert d["support"][0] == {"source": "src/a.py", "together": 9, "out_of": 10, "confidence": 0.6523}
