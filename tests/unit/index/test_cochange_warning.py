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
