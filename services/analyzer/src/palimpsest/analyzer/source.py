"""Where the analyzer reads history from: the local repository in place, or a bare clone.

The documentation check proves each finding from git history, so it needs the repository's
history and the old blobs of its code files. A local source (a path or ``file://`` URL, when the
deployment allows them) is read in place. A remote one is cloned ``--bare --single-branch
--no-tags`` into a temporary directory that is removed however the analysis ends (a blob-less
clone would fetch every old blob one round trip at a time). The URL passes the deployment's
source policy before git runs; credentials travel in the environment (see
:mod:`palimpsest.core.git`), never in the URL, the argument list or a log line.

Whatever goes wrong yields ``None`` with the reason: the analysis then states that no drift
finding could be proved, and loses nothing else.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

from palimpsest.core.git import GitAuth, check_remote, clone_bare, run_git, scrub, temporary_clone_dir
from palimpsest.core.git_errors import GitError
from palimpsest.core.sources import SourcePolicy

log = logging.getLogger(__name__)

__all__ = ["HistorySource", "open_history"]


@dataclass(frozen=True, slots=True)
class HistorySource:
    git_dir: Path | None
    local: bool
    reason: str | None = None  # why there is no history (git_dir is None)


@contextlib.asynccontextmanager
async def open_history(
    clone_url: str,
    branch: str,
    commit: str,
    *,
    policy: SourcePolicy,
    auth: GitAuth | None = None,
    timeout_s: float = 1800.0,
    tmp_parent: Path | None = None,
) -> AsyncIterator[HistorySource]:
    """A git directory holding ``commit`` and its history, or a reason why there is none."""
    try:
        target = await check_remote(clone_url, policy)
    except GitError as exc:
        yield HistorySource(None, False, f"source refused: {exc}")
        return
    if target.local is not None:
        yield await _checked(target.local, commit, local=True)
        return
    async with temporary_clone_dir(tmp_parent) as tmp:
        repo = tmp / "repo.git"
        try:
            await clone_bare(target, repo, branch, auth=auth, timeout_s=timeout_s)
        except GitError as exc:
            reason = scrub(str(exc), auth)
            log.warning("history clone for the documentation check failed: %s", reason)
            yield HistorySource(None, False, f"clone failed: {reason}")
            return
        yield await _checked(repo, commit, local=False)


async def _checked(git_dir: Path, commit: str, *, local: bool) -> HistorySource:
    """The source, if it holds ``commit`` (a local branch may have moved past an old snapshot:
    the commit is still there; a rewritten history is not)."""
    try:
        await run_git(["cat-file", "-e", f"{commit}^{{commit}}"], cwd=git_dir, timeout_s=60)
    except GitError:
        return HistorySource(None, local, f"the source no longer holds commit {commit[:12]}")
    return HistorySource(git_dir, local)
