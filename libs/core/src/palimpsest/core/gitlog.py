"""One streaming reader of ``git log --name-status``: commits with their current paths.

Input is the byte stream of the command built by :func:`log_args` —
``git log -z --format='%H %cI' --name-status --first-parent --diff-merges=first-parent``.
With ``-z`` every field ends in NUL and paths are never quoted, so names with spaces, tabs,
newlines, quotes or any UTF-8 pass through untouched. The layout is::

    <sha> <iso-date> NUL [ LF <status> NUL <path> NUL [<path> NUL] { <status> NUL <path> NUL ... } ]

(a commit without file changes has no status block). :class:`GitLogReader` is a small state
machine fed arbitrary chunks; it hands back each commit once the next one begins, so memory is
O(paths ever seen), never the size of the log.

The rules every reader of this log applies (the recency scanner and the co-change benchmark):

* **Newest first.** git log runs newest first.
* **Renames** (``R<score> old new``) name the new path. Older history of ``old`` is folded
  forward onto the current path (through any chain of later renames). Copies
  (``C<score> src dst``) name ``dst`` only; ``src`` did not change.
* **Lineages.** Going back in time, a path that was added, deleted or renamed *to* in a
  commit names a different, dead file before that commit; its older mentions are dropped.
  A deleted path is not current in the commit that deletes it either.
* **Skipped commits** (``skip_commits``, e.g. a shallow clone's boundary, which git shows as
  a root whose every file is "added"): their file lists are not read and change no lineage.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal

from palimpsest.core.git import decode_path
from palimpsest.core.git_errors import GitError, GitFailure

__all__ = ["GitLogReader", "LogCommit", "RenameMode", "log_args"]

RenameMode = Literal["exact", "full", "off"]
_RENAME_FLAGS: dict[str, str] = {"exact": "-M100%", "full": "-M", "off": "--no-renames"}

_EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
_OID = re.compile(rb"[0-9a-f]{40}(?:[0-9a-f]{24})?")
_UPPER = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ")
_TWO_PATHS = frozenset(b"RC")


def log_args(rev: str, *, window: str | None = None, renames: RenameMode = "exact") -> list[str]:
    """The git argv whose output :class:`GitLogReader` reads.

    ``renames="exact"`` (``-M100%``) is for blob-less clones: exact renames are found from
    blob ids alone, while similarity detection would fetch every candidate blob lazily;
    ``"full"`` (``-M``) is for clones that have every blob. ``window`` adds ``--since`` (for
    local repositories; clones apply it with ``--shallow-since`` instead).
    """
    args = [
        "-c",
        "log.showSignature=false",
        # newer git reads HEAD:.gitattributes in bare repositories — a blob a blob-less clone
        # lacks; the empty tree as the attribute source means "no attributes" (older git
        # ignores the key)
        "-c",
        f"attr.tree={_EMPTY_TREE}",
        "log",
        "-z",
        "--no-use-mailmap",  # log.mailmap reads HEAD:.mailmap, a blob a blob-less clone lacks
        "--no-color",
        "--no-ext-diff",
        "--no-relative",
        "--format=%H %cI",
        "--name-status",
        "--first-parent",
        "--diff-merges=first-parent",
        _RENAME_FLAGS[renames],
    ]
    if window is not None:
        args.append(f"--since={window}")
    return [*args, "--end-of-options", rev, "--"]


@dataclass(slots=True)
class LogCommit:
    """One commit header of the log and what its file list says about current paths."""

    sha: str
    when: datetime
    skipped: bool = False  # in ``skip_commits``: its file list was not read
    touched: int = 0  # entries, deletions and dead paths included
    paths: list[str] = field(default_factory=list)  # current paths it changed, first seen first


class GitLogReader:
    """Feed it chunks of ``git log`` output (:func:`log_args`); each call returns the commits
    it finished, :meth:`close` the last one."""

    def __init__(self, *, skip_commits: Iterable[str] = ()) -> None:
        self._skip_commits = frozenset(skip_commits)
        self._rest = b""
        # Going back in time: path -> current path it became, or None for a dead lineage.
        self._alias: dict[str, str | None] = {}
        self._open: LogCommit | None = None
        # the open commit's current paths, and what its entries say about older lineages
        self._seen: set[str] = set()
        self._born: list[str] = []  # added, copied-to, renamed-to, deleted paths
        self._renamed: list[tuple[str, str | None]] = []  # (old path, current path of new)
        self._status = b""
        self._need = 0
        self._paths: list[bytes] = []

    def feed(self, chunk: bytes) -> list[LogCommit]:
        """Consume the next piece of output; chunk boundaries may fall anywhere."""
        data = self._rest + chunk if self._rest else chunk
        tokens = data.split(b"\0")
        self._rest = tokens.pop()
        done: list[LogCommit] = []
        for token in tokens:
            if self._need:
                self._paths.append(token)
                self._need -= 1
                if not self._need:
                    self._entry()
            else:
                self._status_or_header(token, done)
        return done

    def close(self) -> list[LogCommit]:
        """Finish the stream; the last commit, if any."""
        if self._rest or self._need:
            raise GitError(GitFailure.PARSE_ERROR, "git log output ended mid-record")
        done: list[LogCommit] = []
        self._finish(done)
        return done

    def _status_or_header(self, token: bytes, done: list[LogCommit]) -> None:
        if token[:1] == b"\n":
            token = token[1:]
        if token and token[0] in _UPPER:
            if self._open is None:
                raise GitError(GitFailure.PARSE_ERROR, "git log file entry before any commit")
            self._status = token
            self._need = 2 if token[0] in _TWO_PATHS else 1
            self._paths = []
        else:
            self._finish(done)
            self._open = self._begin(token)

    def _begin(self, token: bytes) -> LogCommit:
        raw_sha, _, raw_date = token.partition(b" ")
        if not _OID.fullmatch(raw_sha):
            raise GitError(GitFailure.PARSE_ERROR, "git log commit header is malformed")
        try:
            when = datetime.fromisoformat(raw_date.decode("ascii"))
        except (UnicodeDecodeError, ValueError) as exc:
            raise GitError(GitFailure.PARSE_ERROR, "git log commit date is malformed") from exc
        sha = raw_sha.decode("ascii")
        return LogCommit(sha, when, skipped=sha in self._skip_commits)

    def _live(self, commit: LogCommit, path: str) -> str | None:
        current = self._alias.get(path, path)
        if current is not None and current not in self._seen:
            self._seen.add(current)
            commit.paths.append(current)
        return current

    def _entry(self) -> None:
        commit = self._open
        assert commit is not None  # a status is read only inside a commit
        if commit.skipped:
            return
        commit.touched += 1
        kind = self._status[0]
        if kind in _TWO_PATHS:
            new = decode_path(self._paths[1])
            current = self._live(commit, new)
            self._born.append(new)
            if kind == ord("R"):
                self._renamed.append((decode_path(self._paths[0]), current))
            return
        path = decode_path(self._paths[0])
        if self._status.strip(b"D") == b"":
            self._born.append(path)  # deleted here: older mentions are another lineage
            return
        self._live(commit, path)
        if kind == ord("A"):
            self._born.append(path)

    def _finish(self, done: list[LogCommit]) -> None:
        commit = self._open
        if commit is None:
            return
        renamed_from = {old for old, _ in self._renamed}
        for path in self._born:
            if path not in renamed_from:
                self._alias[path] = None
        for old, current in self._renamed:
            self._alias[old] = current
        self._open = None
        self._seen, self._born, self._renamed = set(), [], []
        done.append(commit)
