"""Text formats that cross a boundary, each written once.

- The markers the reviewer hides in what it posts on a pull request (an HTML comment, invisible on
  every provider) and that ingest reads back when a provider tells it about a reply, a resolved
  thread or a reaction: a finding's fingerprint, and the summary comment's head commit.
- The unified diff's hunk header, which the reviewer, ingest's diff check, the review context and
  the benchmarks all parse.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

__all__ = [
    "FINDING_MARKER",
    "HUNK_HEADER",
    "LEGACY_SUMMARY_MARKER",
    "SUMMARY_MARKER",
    "Hunk",
    "finding_marker",
    "marker_fingerprint",
    "parse_hunk_header",
    "summary_marker",
]

FINDING_MARKER: Final = re.compile(r"<!-- palimpsest-finding fp=([0-9a-f]{32}) -->")
"""A posted finding's marker; group 1 is its fingerprint (32 hex digits)."""

SUMMARY_MARKER: Final = re.compile(r"<!-- palimpsest-summary head=([0-9a-f]{7,64}) -->")
"""The summary comment's marker; group 1 is the head commit it reviewed."""

LEGACY_SUMMARY_MARKER: Final = re.compile(r"<!-- palimpsest-review head=([0-9a-f]{7,64}) -->")
"""The summary's marker before issue 21 (still read, so an old summary is recognised, never written)."""

HUNK_HEADER: Final = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@(.*)$")
"""``@@ -a[,b] +c[,d] @@ section``: groups old start, old count, new start, new count, the rest."""


def finding_marker(fingerprint: str) -> str:
    return f"<!-- palimpsest-finding fp={fingerprint} -->"


def summary_marker(head_sha: str) -> str:
    return f"<!-- palimpsest-summary head={head_sha} -->"


def marker_fingerprint(text: str) -> str | None:
    """The fingerprint of the first finding marker in ``text``, or None."""
    found = FINDING_MARKER.search(text)
    return found.group(1) if found else None


@dataclass(frozen=True, slots=True)
class Hunk:
    """One parsed hunk header; a count left out of the header is 1, as in git's format."""

    old_start: int
    old_count: int
    new_start: int
    new_count: int
    section: str  # what follows the second "@@" (git's enclosing-definition line), may be ""

    @property
    def old_line(self) -> int:
        """The old line the hunk's first line stands at: ``-40,0`` removes nothing and keeps no
        context, so what it adds goes after old line 40, at 41."""
        return self.old_start + (1 if self.old_count == 0 else 0)


def parse_hunk_header(line: str) -> Hunk | None:
    """The hunk header on ``line`` (trailing newline allowed), or None when it is not one."""
    found = HUNK_HEADER.match(line.rstrip("\r\n"))
    if found is None:
        return None
    old_start, old_count, new_start, new_count, section = found.groups()
    return Hunk(
        int(old_start),
        1 if old_count is None else int(old_count),
        int(new_start),
        1 if new_count is None else int(new_count),
        section,
    )
