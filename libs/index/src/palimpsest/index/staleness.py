"""The one staleness rule, shared by the analyzer, the reviewer and the CLI (docs/architecture.md).

A doc (by the shared classifier, :func:`palimpsest.index.codefacts.is_doc`: a suffix of its
``DOC_SUFFIXES``, except files that only carry the extension) is **stale** when its ``last_modified_at`` is more
than six calendar months older than the median code-file date of the set in hand. A file whose
date is unknown (``None``) is never stale and never annotated, and a set with no dated code file
has no median, so nothing in it is stale. Everything that is not a doc counts as code.

Keeping the rule in one module means "stale" means the same thing in an analysis, a review and
``palimpsest recency``; callers pass the set they hold (a repository's indexed files, a review's
context) and get the same verdict for the same dates.
"""

from __future__ import annotations

import calendar
from collections.abc import Iterable
from datetime import datetime
from typing import Literal

from palimpsest.index.codefacts import is_doc

__all__ = [
    "STALE_AFTER_MONTHS",
    "FileKind",
    "file_kind",
    "is_stale",
    "median_code_date",
    "months_between",
    "relative_age_phrase",
    "stale_annotation",
    "stale_line",
]

STALE_AFTER_MONTHS = 6

FileKind = Literal["doc", "code"]


def file_kind(path: str) -> FileKind:
    return "doc" if is_doc(path) else "code"


def median_code_date(files: Iterable[tuple[str, datetime | None]]) -> datetime | None:
    """The median date of the dated code files among ``(path, last_modified_at)`` pairs.

    With an even count it is the midpoint of the two middle dates; with no dated code file,
    ``None`` (then no doc can be stale).
    """
    dates = sorted(when for path, when in files if when is not None and not is_doc(path))
    if not dates:
        return None
    middle = len(dates) // 2
    if len(dates) % 2:
        return dates[middle]
    low, high = dates[middle - 1], dates[middle]
    return low + (high - low) / 2


def months_between(earlier: datetime, later: datetime) -> int:
    """Whole calendar months from ``earlier`` to ``later`` (negative when reversed).

    A month is complete when the same day-of-month and time are reached; a date past the end
    of a shorter month counts as that month's last day (31 Jan → 28/29 Feb is one month).
    """
    if later < earlier:
        return -months_between(later, earlier)
    later = later.astimezone(earlier.tzinfo) if earlier.tzinfo and later.tzinfo else later
    months = (later.year - earlier.year) * 12 + (later.month - earlier.month)
    if months and _shifted(earlier, months) > later:
        months -= 1
    return months


def _shifted(moment: datetime, months: int) -> datetime:
    """``moment`` plus ``months`` calendar months, clamped to the target month's last day."""
    index = moment.year * 12 + (moment.month - 1) + months
    year, month = divmod(index, 12)
    return moment.replace(year=year, month=month + 1, day=min(moment.day, _days_in(year, month + 1)))


def _days_in(year: int, month: int) -> int:
    return calendar.monthrange(year, month)[1]


def is_stale(path: str, last_modified_at: datetime | None, median_code: datetime | None) -> bool:
    """The rule: a dated doc more than six months older than the median code date."""
    if last_modified_at is None or median_code is None or not is_doc(path):
        return False
    return _shifted(last_modified_at, STALE_AFTER_MONTHS) < median_code


def stale_line(median_code: datetime) -> datetime:
    """Where the rule's line falls: six calendar months before the median code date (a doc dated
    before it is stale; the web view's freshness plot draws it)."""
    return _shifted(median_code, -STALE_AFTER_MONTHS)


def relative_age_phrase(last_modified_at: datetime | None, median_code: datetime | None) -> str | None:
    """E.g. ``"14 months older than typical code in this repo"``; ``None`` when the file is not
    older than the median (or either date is unknown)."""
    if last_modified_at is None or median_code is None or last_modified_at >= median_code:
        return None
    months = months_between(last_modified_at, median_code)
    if months < 1:
        return "less than a month older than typical code in this repo"
    if months < 24:
        age = f"{months} month{'s' if months != 1 else ''}"
    else:
        years, rest = divmod(months, 12)
        age = f"{years} years" + (f" {rest} month{'s' if rest != 1 else ''}" if rest else "")
    return f"{age} older than typical code in this repo"


def stale_annotation(
    path: str, last_modified_at: datetime | None, median_code: datetime | None
) -> str | None:
    """The phrase to show beside a doc, only when the rule calls it stale."""
    if not is_stale(path, last_modified_at, median_code):
        return None
    return relative_age_phrase(last_modified_at, median_code)
