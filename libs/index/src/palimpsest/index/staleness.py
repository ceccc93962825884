"""The one staleness rule, shared by the analyzer, the reviewer and the CLI (docs/architecture.md).

A doc (``.md``, ``.mdx``, ``.txt``, ``.rst``, except files that only carry the extension:
``requirements*.txt``, ``LICENSE.txt``, ``CMakeLists.txt``, test fixtures, templates — see
:func:`is_doc`) is **stale** when its ``last_modified_at`` is more
than six calendar months older than the median code-file date of the set in hand. A file whose
date is unknown (``None``) is never stale and never annotated, and a set with no dated code file
has no median, so nothing in it is stale. Everything that is not a doc counts as code.

Keeping the rule in one module means "stale" means the same thing in an analysis, a review and
``palimpsest recency``; callers pass the set they hold (a repository's indexed files, a review's
context) and get the same verdict for the same dates.
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Iterable
from datetime import datetime
from typing import Literal

__all__ = [
    "DOC_SUFFIXES",
    "STALE_AFTER_MONTHS",
    "FileKind",
    "file_kind",
    "is_doc",
    "is_history_doc",
    "is_history_file",
    "is_stale",
    "median_code_date",
    "months_between",
    "relative_age_phrase",
    "stale_annotation",
    "stale_line",
]

DOC_SUFFIXES = (".md", ".mdx", ".txt", ".rst")
STALE_AFTER_MONTHS = 6

FileKind = Literal["doc", "code"]


# Files with a doc extension that are not documentation, by name (the stem, lower case) …
_NOT_DOC_STEMS = re.compile(
    r"^(?:requirements|constraints|dev-requirements|test-requirements)([._-].*)?$"
    r"|^(?:licen[cs]e|copying|copyright|notice|patents|third[._-]party[._-]notices)([._-].*)?$"
    r"|^(?:cmakelists|robots|humans|version|build)$"
    # community and ownership files: not about the code
    r"|^(?:code[._-]of[._-]conduct|authors|contributors|maintainers|codeowners|funding|backers|sponsors)$"
    r"|^(?:pull[._-]request[._-]template|issue[._-]template)$"
)
# … and by place: fixtures, golden files, templates and vendored trees hold data, not prose.
_NOT_DOC_DIRS = frozenset(
    {
        "fixtures", "fixture", "testdata", "test-data", "test_data", "__snapshots__", "snapshots",
        "golden", "goldens", "expected", "templates", "template", "vendor", "vendored", "third_party",
        "third-party", "node_modules", "site-packages", "testcases", "test-cases", "corpus",
        "issue_template", "pull_request_template", "discussion_template", "playground", "playgrounds",
        "public", "static", "views", "assets", "files", "data",
    }
)  # fmt: skip
_TEST_DIRS = frozenset({"test", "tests", "testing", "spec", "specs", "__tests__", "t"})
_SAMPLE_DIRS = frozenset({"samples", "sample"})
_ABOUT_FOLDER = frozenset({"readme", "contributing", "howto", "guide"})
# Changelogs and release notes are history by design: what they name was true once, on purpose.
_HISTORY_STEMS = re.compile(
    r"^(?:changes|changelog|change[._-]log|history|news|releases?|release[._-]?notes|whats[._-]?new"
    r"|upgrading|migrating|migration|migration[._-]guide|breaking[._-]changes|deprecated|deprecations"
    r"|deprecation|removals)([._-].*)?$"
)
_HISTORY_DIRS = frozenset(
    {
        "changelog", "changelogs", "changes", "changelog.d", "changes.d", "newsfragments", "news",
        "release-notes", "release_notes", "releasenotes", "releases", "whatsnew", "whats_new",
        "history", "upgrading", "migrations", "blog", "_posts", "posts", "announcements",
        # enhancement proposals record a design as it was proposed (ADRs stay docs: their
        # Governs: lines are checked)
        "sep", "seps", "pep", "peps", "rfc", "rfcs", "kep", "keps", "proposals", "enhancements",
    }
)  # fmt: skip


def is_doc(path: str) -> bool:
    """Whether ``path`` is documentation by the shared rule: a doc suffix (case-insensitive),
    unless its name or place says it is data with a doc extension (requirements, licences,
    ``CMakeLists.txt``, test fixtures, templates, vendored trees)."""
    lowered = path.lower()
    if not lowered.endswith(DOC_SUFFIXES):
        return False
    parts = lowered.split("/")
    stem = parts[-1].rsplit(".", 1)[0]
    if _NOT_DOC_STEMS.match(stem) or any(_data_dir(p) for p in parts[:-1]):
        return False
    if stem.startswith("test_") or stem.endswith(("_test", ".test")):
        return False  # a test's input or expected output
    if stem not in _ABOUT_FOLDER and any(p in _TEST_DIRS or p in _SAMPLE_DIRS for p in parts[:-1]):
        return False  # pages a test or a sample site reads as input; their README is a doc
    # a .txt in a tool's hidden folder is data (word lists, vocabularies)
    return not (lowered.endswith(".txt") and any(p.startswith(".") for p in parts[:-1]))


def _data_dir(part: str) -> bool:
    """A folder of fixtures, templates (``template-vue-ts``), playgrounds or vendored code."""
    return part in _NOT_DOC_DIRS or part.startswith(("template-", "template_", "templates-"))


def is_history_file(path: str) -> bool:
    """A changelog kept as a file of its own (``CHANGES``, ``NEWS``, ``HISTORY.rst``): by its name,
    with a doc suffix or none. Unlike :func:`is_history_doc`, a code file never is one, wherever it
    lives and whatever it is called (``blog/views.py``, ``utils/deprecated.py`` are code)."""
    name = path.rsplit("/", 1)[-1]
    stem = name.split(".", 1)[0] if not name.startswith(".") else name
    return bool(_HISTORY_STEMS.match(stem.lower())) and ("." not in name.lstrip(".") or is_doc(path))


def is_history_doc(path: str) -> bool:
    """A changelog or release notes (any case, any extension): history by design, no findings."""
    parts = path.lower().split("/")
    stem = parts[-1].split(".", 1)[0] if not parts[-1].startswith(".") else parts[-1]
    return bool(_HISTORY_STEMS.match(stem)) or any(p in _HISTORY_DIRS for p in parts[:-1])


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
