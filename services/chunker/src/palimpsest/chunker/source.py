"""Where a build reads the tree from: the local repository itself, or a shallow bare clone.

Local sources (a path or ``file://`` URL) are read in place when the deployment allows them (the
embedded default does); remote ones are cloned ``--bare --depth 1 --single-branch`` into a
temporary directory that is removed however the build ends. Credentials travel in the environment
(see :mod:`palimpsest.core.git`), never in the URL or the argument list.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlparse

from palimpsest.chunker.errors import BuildFailed
from palimpsest.core.git import GitAuth, resolve_ref, run_git, temporary_clone_dir
from palimpsest.core.git_errors import GitError, GitFailure

# Failures worth another delivery (the network, a timeout); the rest are final for this request.
TRANSIENT = frozenset({GitFailure.NETWORK, GitFailure.TIMEOUT, GitFailure.DISK_FULL, GitFailure.FAILED})


@dataclass(frozen=True, slots=True)
class Source:
    git_dir: Path
    commit: str
    local: bool


def local_path(clone_url: str) -> Path | None:
    """The filesystem path a clone URL names, or None for a remote URL."""
    if clone_url.startswith("file://"):
        return Path(unquote(urlparse(clone_url).path))
    if "://" in clone_url or clone_url.startswith("git@"):
        return None
    return Path(clone_url)


@contextlib.asynccontextmanager
async def open_source(
    clone_url: str,
    branch: str,
    *,
    auth: GitAuth | None,
    allow_local: bool,
    timeout_s: float,
    tmp_parent: Path | None = None,
) -> AsyncIterator[Source]:
    path = local_path(clone_url)
    try:
        if path is not None:
            if not allow_local:
                raise BuildFailed("source_refused", "local sources are not allowed in this deployment")
            if not path.is_dir():
                raise BuildFailed("source_unavailable", "the local repository path does not exist")
            commit = await resolve_ref(path, branch, timeout_s=timeout_s)
            yield Source(path, commit, local=True)
            return
        async with temporary_clone_dir(tmp_parent) as tmp:
            await run_git(
                [
                    "clone",
                    "--bare",
                    "--depth",
                    "1",
                    "--single-branch",
                    "--no-tags",
                    "--branch",
                    branch,
                    "--",
                    clone_url,
                    str(tmp / "repo.git"),
                ],
                auth=auth,
                timeout_s=timeout_s,
                allowed_protocols=("https", "http"),
            )
            repo = tmp / "repo.git"
            commit = await resolve_ref(repo, "HEAD", timeout_s=timeout_s)
            yield Source(repo, commit, local=False)
    except GitError as exc:
        if exc.reason in TRANSIENT:
            raise
        raise BuildFailed(f"source_{exc.reason}", str(exc)) from exc
