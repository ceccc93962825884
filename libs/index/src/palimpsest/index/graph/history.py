"""A repository's first-parent history as change sets, for the co-change benchmark.

The recency scanner keeps only aggregates (last change per file, co-change counts); the
benchmark needs each commit's own file list, so it can leave the trial commit — and everything
after it — out of the history a strategy sees. This reads the same ``git log`` the scanner
reads, with the same reader (:mod:`palimpsest.core.gitlog`: newest first, renames fold a
file's older history onto its current path, and a path that was added, deleted or renamed *to*
names a different, dead file before that commit), with full rename detection (``-M``; local
clones have every blob). Every commit keeps the number of entries it touched (deletions and
dead paths included), so "touching 2..30 files" means what it says.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from palimpsest.core.git import stream_git
from palimpsest.core.gitlog import GitLogReader, LogCommit, log_args

__all__ = ["Change", "HistoryParser", "log_argv", "read_history"]


@dataclass(frozen=True, slots=True)
class Change:
    """One commit: when, how many entries it touched, and the current paths among them."""

    sha: str
    when: datetime
    touched: int
    paths: tuple[str, ...]


def log_argv(rev: str) -> list[str]:
    return log_args(rev, renames="full")


class HistoryParser:
    """Feed ``git log`` output (:func:`log_argv`) in chunks; :meth:`close` returns the commits."""

    def __init__(self) -> None:
        self._reader = GitLogReader()
        self._commits: list[Change] = []

    def feed(self, chunk: bytes) -> None:
        self._take(self._reader.feed(chunk))

    def close(self) -> list[Change]:
        self._take(self._reader.close())
        return self._commits

    def _take(self, commits: Iterable[LogCommit]) -> None:
        self._commits.extend(Change(c.sha, c.when, c.touched, tuple(c.paths)) for c in commits)


async def read_history(repo: Path, rev: str, *, timeout_s: float = 600.0) -> list[Change]:
    """Every first-parent commit reachable from ``rev``, newest first."""
    parser = HistoryParser()
    stream = stream_git(log_argv(rev), cwd=repo, timeout_s=timeout_s)
    async with contextlib.aclosing(stream) as chunks:
        async for chunk in chunks:
            parser.feed(chunk)
    return parser.close()
