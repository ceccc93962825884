"""Scan a repository's history for recency: a cheap clone, then one streamed ``git log``.

Remote repositories are cloned bare, blob-less and single-branch (``--filter=blob:none``):
commits and trees only, so the cost follows the number of commits, not the size of the code.
An optional window (``--shallow-since``, e.g. "2 years ago") bounds that further; files last
changed before it stay absent from the result (age unknown). The log is parsed while git
writes it — never buffered whole — and the temporary clone is removed however the scan ends.

A window needs care: git shows each shallow-boundary commit as a root whose every file is
"added", and makes a merge a boundary as soon as one parent is older than the window (hiding
the in-window history behind it). One ``fetch --deepen=1`` after the clone plus a pruned
``shallow`` list repair that (see :func:`_complete_window_history`); the log then applies the
same window with ``--since``, so a file last changed before it stays absent — never misdated.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Collection, Sequence
from pathlib import Path
from typing import NamedTuple

from palimpsest.core.git import (
    NO_LAZY_FETCH,
    GitAuth,
    is_partial_clone,
    read_blobs,
    run_git,
    shallow_commits,
    stream_git,
    temporary_clone_dir,
    validate_remote_url,
)
from palimpsest.core.git_errors import GitError, GitFailure
from palimpsest.recency_scanner.logparse import (
    DEFAULT_MAX_FILES_PER_COMMIT,
    DEFAULT_PAIR_CAP,
    LogParser,
    RecencyResult,
    RenameMode,
    log_args,
)

__all__ = ["DEFAULT_SCAN_TIMEOUT_S", "clone_args", "scan_local", "scan_remote"]

DEFAULT_SCAN_TIMEOUT_S = 600.0
DEFAULT_PROTOCOLS = ("https", "http")


def _check_branch(branch: str | None) -> None:
    if branch is not None and (
        not branch or branch.startswith("-") or any(ch in branch for ch in " \t\r\n\0~^:?*[\\")
    ):
        raise GitError(GitFailure.INVALID_ARGUMENT, "branch name is malformed")


def _check_window(window: str | None) -> None:
    if window is not None and (
        not window.strip() or window.startswith("-") or len(window) > 64 or not window.isprintable()
    ):
        raise GitError(GitFailure.INVALID_ARGUMENT, "history window is malformed")


def clone_args(url: str, branch: str | None, target: Path, *, window: str | None = None) -> list[str]:
    """argv for the bare, blob-less, single-branch (optionally shallow) clone."""
    args = ["clone", "--bare", "--quiet", "--no-tags", "--filter=blob:none", "--single-branch"]
    if branch is not None:
        args += ["--branch", branch]
    if window is not None:
        args.append(f"--shallow-since={window}")
    return [*args, "--", url, str(target)]


class _Transport(NamedTuple):
    protocols: tuple[str, ...]
    pins: tuple[str, ...]


class _Deadline:
    def __init__(self, timeout_s: float) -> None:
        self._timeout_s = timeout_s
        self._at = asyncio.get_running_loop().time() + timeout_s

    def remaining(self) -> float:
        left = self._at - asyncio.get_running_loop().time()
        if left <= 0:
            raise GitError(GitFailure.TIMEOUT, f"recency scan did not finish within {self._timeout_s:g}s")
        return left


async def scan_remote(
    url: str,
    branch: str | None,
    *,
    auth: GitAuth | None = None,
    window: str | None = None,
    max_files_per_commit: int = DEFAULT_MAX_FILES_PER_COMMIT,
    pair_cap: int = DEFAULT_PAIR_CAP,
    timeout_s: float = DEFAULT_SCAN_TIMEOUT_S,
    tmp_parent: Path | None = None,
    allowed_protocols: Collection[str] = DEFAULT_PROTOCOLS,
    pins: Sequence[str] = (),
) -> RecencyResult:
    """Recency and co-change of ``branch`` (``None``: the remote's default) of ``url``.

    ``timeout_s`` bounds clone and log together. Every failure is a ``GitError`` with a
    reason code and a message free of the credential. A window that selects no commit is not
    a failure: the result is empty (every age unknown).
    """
    validate_remote_url(url)
    _check_branch(branch)
    _check_window(window)
    deadline = _Deadline(timeout_s)
    async with temporary_clone_dir(tmp_parent) as tmp:
        target = tmp / "repo.git"
        try:
            await run_git(
                clone_args(url, branch, target, window=window),
                auth=auth,
                timeout_s=deadline.remaining(),
                allowed_protocols=allowed_protocols,
                pins=pins,
            )
        except GitError as exc:
            if exc.reason is GitFailure.EMPTY_WINDOW:
                return RecencyResult()
            raise
        boundaries = await shallow_commits(target, timeout_s=deadline.remaining())
        if boundaries:
            boundaries = await _complete_window_history(
                target, branch, auth, _Transport(tuple(allowed_protocols), tuple(pins)), deadline
            )
        return await _parse_history(
            target,
            "HEAD",
            window=window,
            renames="exact",
            skip_commits=boundaries,
            max_files_per_commit=max_files_per_commit,
            pair_cap=pair_cap,
            deadline=deadline,
        )


async def _complete_window_history(
    repo: Path,
    branch: str | None,
    auth: GitAuth | None,
    transport: _Transport,
    deadline: _Deadline,
) -> frozenset[str]:
    """Make every in-window commit of a shallow clone show its real diff.

    git shows a shallow-boundary commit as a root (every file "added"), and
    ``--shallow-since`` makes a merge a boundary as soon as *one* parent is older than the
    window, hiding in-window history that was in fact transferred. One ``--deepen=1`` round
    trip fetches the missing parents; a boundary whose parents are now all present is then
    dropped from the ``shallow`` list (a documented plain list of grafted roots), because a
    commit present in a shallow clone is either a boundary or has all its parents. What stays
    a boundary is older than the window; it is returned so the parser ignores its file list.
    """
    ref = f"refs/heads/{branch}" if branch is not None else "HEAD"
    await run_git(
        ["fetch", "--quiet", "--no-tags", "--deepen=1", "--", "origin", ref],
        cwd=repo,
        auth=auth,
        timeout_s=deadline.remaining(),
        allowed_protocols=transport.protocols,
        pins=transport.pins,
    )
    boundaries = await shallow_commits(repo, timeout_s=deadline.remaining())
    parents: dict[str, list[str]] = {}
    commits = read_blobs(repo, boundaries, lazy_fetch=False, timeout_s=deadline.remaining())
    async with contextlib.aclosing(commits) as objects:
        async for sha, body in objects:
            parents[sha] = _parents(body)
    wanted = {p for ps in parents.values() for p in ps}
    present: set[str] = set()
    found = read_blobs(
        repo, sorted(wanted), missing_ok=True, lazy_fetch=False, timeout_s=deadline.remaining()
    )
    async with contextlib.aclosing(found) as objects:
        async for sha, _ in objects:
            present.add(sha)
    keep = frozenset(b for b in boundaries if not set(parents[b]) <= present)
    if keep != boundaries:
        await asyncio.to_thread(_write_shallow, repo, keep)
    return keep


def _parents(commit_object: bytes) -> list[str]:
    head, _, _ = commit_object.partition(b"\n\n")
    return [
        line[len(b"parent ") :].decode("ascii") for line in head.split(b"\n") if line.startswith(b"parent ")
    ]


def _write_shallow(repo: Path, boundaries: frozenset[str]) -> None:
    path = repo / "shallow"
    if not boundaries:
        path.unlink(missing_ok=True)
        return
    staged = repo / "shallow.palimpsest-tmp"
    staged.write_text("".join(f"{sha}\n" for sha in sorted(boundaries)), encoding="ascii")
    staged.replace(path)


async def scan_local(
    path: Path,
    branch: str | None,
    *,
    window: str | None = None,
    max_files_per_commit: int = DEFAULT_MAX_FILES_PER_COMMIT,
    pair_cap: int = DEFAULT_PAIR_CAP,
    timeout_s: float = DEFAULT_SCAN_TIMEOUT_S,
) -> RecencyResult:
    """Recency and co-change of a repository already on disk (no clone).

    Blobs are local, so renames are detected by similarity too (``-M``), unless the
    repository is itself a partial clone. ``window`` becomes ``--since``.
    """
    _check_branch(branch)
    _check_window(window)
    deadline = _Deadline(timeout_s)
    partial = await _maybe_partial(path, deadline)
    boundaries = await shallow_commits(path, timeout_s=deadline.remaining())
    return await _parse_history(
        path,
        branch or "HEAD",
        window=window,
        renames="exact" if partial else "full",
        skip_commits=boundaries,
        max_files_per_commit=max_files_per_commit,
        pair_cap=pair_cap,
        deadline=deadline,
    )


async def _maybe_partial(path: Path, deadline: _Deadline) -> bool:
    """Whether ``path`` may lack blobs; when git cannot say (e.g. a bare repository without a
    ``config`` file), assume it may, so the log never needs a blob (exact renames only)."""
    try:
        return await is_partial_clone(path, timeout_s=deadline.remaining())
    except GitError as exc:
        if exc.reason is not GitFailure.FAILED:
            raise
        return True


async def _parse_history(
    repo: Path,
    rev: str,
    *,
    window: str | None,
    renames: RenameMode,
    skip_commits: frozenset[str],
    max_files_per_commit: int,
    pair_cap: int,
    deadline: _Deadline,
) -> RecencyResult:
    parser = LogParser(
        max_files_per_commit=max_files_per_commit, pair_cap=pair_cap, skip_commits=skip_commits
    )
    stream = stream_git(
        log_args(rev, window=window, renames=renames),
        cwd=repo,
        timeout_s=deadline.remaining(),
        extra_env=NO_LAZY_FETCH,  # a log must never fetch: one request per blob
    )
    async with contextlib.aclosing(stream) as chunks:
        async for chunk in chunks:
            parser.feed(chunk)
    return parser.close()
