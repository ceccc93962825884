"""The shared git log reader: lineage rules, skipped commits, and chunk boundaries anywhere."""

from __future__ import annotations

import pytest

from palimpsest.core.git_errors import GitError, GitFailure
from palimpsest.core.gitlog import GitLogReader, LogCommit

A, B, C, D = ("a" * 40, "b" * 40, "c" * 40, "d" * 40)

# newest first: D renames old.py to new.py; C deletes gone.py; B is a skipped boundary that
# "adds" everything; A (older) touched old.py and gone.py
LOG = (
    f"{D} 2024-01-04T00:00:00+00:00\0\nR100\0old.py\0new.py\0M\0keep.py\0".encode()
    + f"{C} 2024-01-03T00:00:00+00:00\0\nD\0gone.py\0".encode()
    + f"{B} 2024-01-02T00:00:00+00:00\0\nA\0old.py\0A\0gone.py\0A\0keep.py\0".encode()
    + f"{A} 2024-01-01T00:00:00+00:00\0\nM\0old.py\0M\0gone.py\0M\0keep.py\0M\0keep.py\0".encode()
)


def read(chunks: list[bytes], skip: set[str]) -> list[LogCommit]:
    reader = GitLogReader(skip_commits=skip)
    commits = [c for chunk in chunks for c in reader.feed(chunk)]
    return commits + reader.close()


def test_renames_fold_forward_deletions_end_lineages_and_skipped_commits_are_not_read() -> None:
    commits = read([LOG], {B})
    assert [(c.sha, c.skipped, c.touched, c.paths) for c in commits] == [
        (D, False, 2, ["new.py", "keep.py"]),
        (C, False, 1, []),  # a deleted path is not current
        (B, True, 0, []),  # its "added" files do not end any lineage
        (A, False, 4, ["new.py", "keep.py"]),  # old.py is new.py now; gone.py is dead; once each
    ]


def test_chunk_boundaries_may_fall_anywhere() -> None:
    whole = read([LOG], {B})
    assert read([LOG[i : i + 1] for i in range(len(LOG))], {B}) == whole


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"M\0a.py\0", "before any commit"),
        (b"xyz 2024-01-01T00:00:00+00:00\0", "header is malformed"),
        (f"{A} yesterday\0".encode(), "date is malformed"),
        (f"{A} 2024-01-01T00:00:00+00:00\0\nM\0".encode(), "mid-record"),
    ],
)
def test_malformed_output_is_a_parse_error(data: bytes, message: str) -> None:
    with pytest.raises(GitError) as caught:
        read([data], set())
    assert caught.value.reason == GitFailure.PARSE_ERROR
    assert message in str(caught.value)
