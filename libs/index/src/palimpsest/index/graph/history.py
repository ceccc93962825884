"""A repository's first-parent history as change sets, for the co-change benchmark.

The recency scanner keeps only aggregates (last change per file, co-change counts); the
benchmark needs each commit's own file list, so it can leave the trial commit — and everything
after it — out of the history a strategy sees. This reads the same ``git log`` the scanner
reads (``-z --name-status --first-parent --diff-merges=first-parent``, see the scanner's
``logparse``), with full rename detection (``-M``; local clones have every blob), and applies
the scanner's rules: newest first, renames fold a file's older history onto its current path,
and a path that was added, deleted or renamed *to* names a different, dead file before that
commit. Every commit keeps the number of entries it touched (deletions and dead paths
included), so "touching 2..30 files" means what it says.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from palimpsest.core.git import decode_path, stream_git
from palimpsest.core.git_errors import GitError, GitFailure

__all__ = ["Change", "HistoryParser", "log_argv", "read_history"]


@dataclass(frozen=True, slots=True)
class Change:
    """One commit: when, how many entries it touched, and the current paths among them."""

    sha: str
    when: datetime
    touched: int
    paths: tuple[str, ...]


def log_argv(rev: str) -> list[str]:
    return [
        "-c",
        "log.showSignature=false",
        "log",
        "-z",
        "--no-color",
        "--no-ext-diff",
        "--no-relative",
        "--format=%H %cI",
        "--name-status",
        "--first-parent",
        "--diff-merges=first-parent",
        "-M",
        "--end-of-options",
        rev,
        "--",
    ]


@dataclass(slots=True)
class _Open:
    sha: str
    when: datetime
    touched: int = 0
    live: list[str] = field(default_factory=list)
    born: list[str] = field(default_factory=list)
    renamed: list[tuple[str, str | None]] = field(default_factory=list)


class HistoryParser:
    """Feed ``git log`` output (:func:`log_argv`) in chunks; :meth:`close` returns the commits."""

    def __init__(self) -> None:
        self._rest = b""
        self._alias: dict[str, str | None] = {}
        self._commits: list[Change] = []
        self._open: _Open | None = None
        self._status = b""
        self._need = 0
        self._paths: list[bytes] = []

    def feed(self, chunk: bytes) -> None:
        data = self._rest + chunk if self._rest else chunk
        tokens = data.split(b"\0")
        self._rest = tokens.pop()
        for token in tokens:
            if self._need:
                self._paths.append(token)
                self._need -= 1
                if not self._need:
                    self._entry()
                continue
            field = token[1:] if token[:1] == b"\n" else token
            if field and field[:1].isupper():
                self._status, self._need, self._paths = field, 2 if field[:1] in b"RC" else 1, []
            elif field:
                self._finish()
                self._begin(field)

    def close(self) -> list[Change]:
        if self._rest or self._need:
            raise GitError(GitFailure.PARSE_ERROR, "git log output ended mid-record")
        self._finish()
        return self._commits

    def _begin(self, token: bytes) -> None:
        raw_sha, _, raw_date = token.partition(b" ")
        try:
            self._open = _Open(raw_sha.decode("ascii"), datetime.fromisoformat(raw_date.decode("ascii")))
        except (UnicodeDecodeError, ValueError) as exc:
            raise GitError(GitFailure.PARSE_ERROR, "git log commit header is malformed") from exc

    def _entry(self) -> None:
        commit = self._open
        if commit is None:
            raise GitError(GitFailure.PARSE_ERROR, "git log file entry before any commit")
        commit.touched += 1
        kind = self._status[:1]
        if kind in (b"R", b"C"):
            new = decode_path(self._paths[1])
            current = self._alias.get(new, new)
            if current is not None:
                commit.live.append(current)
            commit.born.append(new)
            if kind == b"R":
                commit.renamed.append((decode_path(self._paths[0]), current))
            return
        path = decode_path(self._paths[0])
        if kind == b"D":
            commit.born.append(path)
            return
        current = self._alias.get(path, path)
        if current is not None:
            commit.live.append(current)
        if kind == b"A":
            commit.born.append(path)

    def _finish(self) -> None:
        commit = self._open
        if commit is None:
            return
        self._commits.append(
            Change(commit.sha, commit.when, commit.touched, tuple(dict.fromkeys(commit.live)))
        )
        renamed_from = {old for old, _ in commit.renamed}
        for path in commit.born:
            if path not in renamed_from:
                self._alias[path] = None
        for old, current in commit.renamed:
            self._alias[old] = current
        self._open = None


async def read_history(repo: Path, rev: str, *, timeout_s: float = 600.0) -> list[Change]:
    """Every first-parent commit reachable from ``rev``, newest first."""
    parser = HistoryParser()
    stream = stream_git(log_argv(rev), cwd=repo, timeout_s=timeout_s)
    async with contextlib.aclosing(stream) as chunks:
        async for chunk in chunks:
            parser.feed(chunk)
    return parser.close()
