"""Checking that a submitted review diff is a unified diff, before anything is stored.

The reviewer applies the diff with ``git apply``; this check only refuses text that cannot be
a unified diff at all (no file headers, a malformed hunk header, a hunk whose lines do not add up
to its header's counts), so the caller gets a 400 at once instead of a failed review later.
Whether the diff applies to the base is the reviewer's question (``diff_does_not_apply``).
Messages name line numbers, never the diff's content.
"""

from __future__ import annotations

from palimpsest.core.wire import parse_hunk_header
from palimpsest.ingest.errors import InvalidRequest

__all__ = ["InvalidDiff", "check_unified_diff"]


class InvalidDiff(InvalidRequest):
    """The text is not a unified diff."""


def check_unified_diff(text: str) -> int:
    """The number of files the diff changes; InvalidDiff when it is not a unified diff."""
    if "\0" in text:
        raise InvalidDiff("the diff contains NUL bytes; send a text unified diff")
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    files = 0
    git_headers = 0
    i = 0
    while i < len(lines):
        line = lines[i].removesuffix("\r")
        if line.startswith("--- ") and i + 1 < len(lines) and lines[i + 1].startswith("+++ "):
            i = _hunks(lines, i + 2)
            files += 1
            git_headers = 0
            continue
        if line.startswith("@@"):
            raise InvalidDiff(f"line {i + 1}: a hunk without '--- ' and '+++ ' file headers before it")
        if line.startswith("diff --git "):
            git_headers += 1  # a header-only change (mode, rename, binary) has no ---/+++ lines
        i += 1
    files += git_headers
    if files == 0:
        raise InvalidDiff(
            "not a unified diff: no file headers ('--- a/path', '+++ b/path') followed by '@@' hunks"
        )
    return files


def _hunks(lines: list[str], i: int) -> int:
    """Consume the hunks after a file's headers; the index of the first line after them."""
    hunks = 0
    while i < len(lines) and lines[i].startswith("@@"):
        header = parse_hunk_header(lines[i])
        if header is None:
            raise InvalidDiff(f"line {i + 1}: malformed hunk header (expected '@@ -a,b +c,d @@')")
        old, new = header.old_count, header.new_count
        i += 1
        while old > 0 or new > 0:
            if i >= len(lines):
                raise InvalidDiff(f"line {i}: the diff ends inside a hunk (its header promised more lines)")
            tag = lines[i][:1]
            if tag in (" ", "", "\r"):
                old, new = old - 1, new - 1
            elif tag == "-":
                old -= 1
            elif tag == "+":
                new -= 1
            elif tag != "\\":
                raise InvalidDiff(f"line {i + 1}: not a hunk line (expected ' ', '-', '+' or '\\')")
            if old < 0 or new < 0:
                raise InvalidDiff(f"line {i + 1}: the hunk has more lines than its header says")
            i += 1
        while i < len(lines) and lines[i].startswith("\\"):  # "\ No newline at end of file"
            i += 1
        hunks += 1
    if hunks == 0:
        raise InvalidDiff(f"line {i}: file headers without a hunk")
    return i
