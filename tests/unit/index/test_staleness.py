"""The one staleness rule: docs more than six months older than the median code date."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from palimpsest.index.codefacts import is_doc
from palimpsest.index.staleness import (
    file_kind,
    is_stale,
    median_code_date,
    months_between,
    relative_age_phrase,
    stale_annotation,
)


def at(text: str) -> datetime:
    parsed = datetime.fromisoformat(text)
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


@pytest.mark.parametrize(
    ("path", "doc"),
    [
        ("README.md", True),
        ("docs/guide.MDX", True),
        ("notes.txt", True),
        ("docs/api.rst", True),
        ("src/app.py", False),
        ("Makefile", False),
        ("docs/diagram.svg", False),
        ("md", False),
        ("src/readme_md.py", False),
    ],
)
def test_doc_suffixes(path: str, doc: bool) -> None:
    assert is_doc(path) is doc
    assert file_kind(path) == ("doc" if doc else "code")


def test_median_uses_dated_code_files_only() -> None:
    files = [
        ("a.py", at("2024-01-01")),
        ("b.go", at("2024-03-01")),
        ("c.rs", at("2024-02-01")),
        ("README.md", at("2010-01-01")),  # docs do not move the median
        ("d.py", None),  # unknown dates neither
    ]
    assert median_code_date(files) == at("2024-02-01")


def test_median_of_an_even_count_is_the_midpoint() -> None:
    files = [("a.py", at("2024-01-01")), ("b.py", at("2024-01-03"))]
    assert median_code_date(files) == at("2024-01-02")


def test_no_dated_code_means_no_median() -> None:
    assert median_code_date([("README.md", at("2020-01-01")), ("a.py", None)]) is None
    assert median_code_date([]) is None


def test_stale_only_beyond_six_calendar_months() -> None:
    median = at("2024-07-01T12:00:00")
    assert not is_stale("guide.md", at("2024-01-01T12:00:00"), median)  # exactly six months
    assert is_stale("guide.md", at("2024-01-01T11:59:59"), median)  # a second more
    assert not is_stale("guide.md", at("2024-05-01"), median)
    assert not is_stale("guide.md", at("2025-01-01"), median)  # newer than the code


def test_month_ends_clamp() -> None:
    # 31 Aug + 6 months is the end of February: 1 March is past it
    assert is_stale("x.md", at("2023-08-31"), at("2024-03-01"))
    assert not is_stale("x.md", at("2023-08-31"), at("2024-02-29"))


def test_unknown_dates_and_code_are_never_stale() -> None:
    median = at("2024-07-01")
    assert not is_stale("guide.md", None, median)
    assert not is_stale("guide.md", at("2000-01-01"), None)
    assert not is_stale("old.py", at("2000-01-01"), median)
    assert stale_annotation("guide.md", None, median) is None
    assert stale_annotation("old.py", at("2000-01-01"), median) is None


def test_timezones_are_compared_as_instants() -> None:
    plus_two = timezone(timedelta(hours=2))
    median = at("2024-07-01T00:00:00")
    # 2024-01-01T01:00+02:00 is 2023-12-31T23:00Z: more than six months before the median
    assert is_stale("a.md", datetime(2024, 1, 1, 1, tzinfo=plus_two), median)
    assert not is_stale("a.md", datetime(2024, 1, 1, 3, tzinfo=plus_two), median)


@pytest.mark.parametrize(
    ("doc", "median", "phrase"),
    [
        ("2023-01-15", "2024-03-20", "14 months older than typical code in this repo"),
        ("2023-01-15", "2023-02-15", "1 month older than typical code in this repo"),
        ("2023-01-15", "2023-02-10", "less than a month older than typical code in this repo"),
        ("2020-01-01", "2023-01-01", "3 years older than typical code in this repo"),
        ("2019-01-01", "2023-09-16", "4 years 8 months older than typical code in this repo"),
        ("2020-01-01", "2022-02-01", "2 years 1 month older than typical code in this repo"),
    ],
)
def test_relative_age_phrase(doc: str, median: str, phrase: str) -> None:
    assert relative_age_phrase(at(doc), at(median)) == phrase


def test_no_phrase_when_not_older_or_unknown() -> None:
    assert relative_age_phrase(at("2024-01-01"), at("2024-01-01")) is None
    assert relative_age_phrase(at("2025-01-01"), at("2024-01-01")) is None
    assert relative_age_phrase(None, at("2024-01-01")) is None
    assert relative_age_phrase(at("2024-01-01"), None) is None


def test_annotation_only_for_stale_docs() -> None:
    median = at("2024-07-01")
    assert (
        stale_annotation("a.md", at("2023-01-01"), median) == "18 months older than typical code in this repo"
    )
    assert stale_annotation("a.md", at("2024-03-01"), median) is None  # older, but not stale


@pytest.mark.parametrize(
    ("earlier", "later", "months"),
    [
        ("2024-01-31", "2024-02-29", 1),
        ("2024-01-31", "2024-02-28", 0),
        ("2024-03-15T10:00:00", "2024-04-15T09:59:59", 0),
        ("2024-03-15T10:00:00", "2024-04-15T10:00:00", 1),
        ("2020-05-05", "2024-05-05", 48),
        ("2024-05-05", "2020-05-05", -48),
    ],
)
def test_months_between(earlier: str, later: str, months: int) -> None:
    assert months_between(at(earlier), at(later)) == months
