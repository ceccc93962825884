"""The text formats that cross a boundary: the posted markers and the hunk header."""

from __future__ import annotations

import pytest

from palimpsest.core.wire import (
    SUMMARY_MARKER,
    Hunk,
    finding_marker,
    marker_fingerprint,
    parse_hunk_header,
    summary_marker,
)

FP = "0123456789abcdef0123456789abcdef"


def test_a_finding_marker_reads_back_as_its_fingerprint() -> None:
    posted = f"**Left behind**: docs/a.md names `old`.\n\n{finding_marker(FP)}"
    assert marker_fingerprint(posted) == FP
    assert marker_fingerprint("a reply that quotes no marker") is None
    assert marker_fingerprint("<!-- palimpsest-finding fp=short -->") is None


def test_a_summary_marker_names_its_head() -> None:
    found = SUMMARY_MARKER.search(f"summary\n{summary_marker('deadbeef12')}")
    assert found is not None and found.group(1) == "deadbeef12"


@pytest.mark.parametrize(
    ("line", "hunk"),
    [
        ("@@ -10,3 +12,4 @@ def f():", Hunk(10, 3, 12, 4, " def f():")),
        ("@@ -7 +7 @@", Hunk(7, 1, 7, 1, "")),
        ("@@ -40,0 +41,2 @@\n", Hunk(40, 0, 41, 2, "")),
        ("@@ -1,2 +0,0 @@", Hunk(1, 2, 0, 0, "")),
    ],
)
def test_hunk_headers_parse_as_git_writes_them(line: str, hunk: Hunk) -> None:
    assert parse_hunk_header(line) == hunk


def test_an_insertion_hunk_stands_after_its_old_line() -> None:
    parsed = parse_hunk_header("@@ -40,0 +41,2 @@")
    assert parsed is not None and parsed.old_line == 41
    parsed = parse_hunk_header("@@ -40,2 +41,2 @@")
    assert parsed is not None and parsed.old_line == 40


@pytest.mark.parametrize("line", ["@@ -a,b +c,d @@", "@@ -1,2 +3,4", " @@ -1 +1 @@", "+@@ -1 +1 @@", ""])
def test_anything_else_is_not_a_hunk_header(line: str) -> None:
    assert parse_hunk_header(line) is None
