"""Where a build reads the tree from: the local repository itself, or a shallow bare clone.

The stored URL is checked against the deployment's source policy first (``source_refused`` before
git runs; see :mod:`palimpsest.core.sources`). Local sources (a path or ``file://`` URL) are read
in place when the deployment allows them (the embedded default does; a partial clone first fetches
the objects of the tree it lacks, from a promisor remote that passes the same policy); remote ones are cloned
``--bare --depth 1 --single-branch`` into a temporary directory that is removed however the build
ends. Credentials travel in the environment (see :mod:`palimpsest.core.git`), never in the URL or
the argument list.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

from palimpsest.chunker.errors import BuildFailed
from palimpsest.core.git import GitAuth, backfill, check_remote, clone_bare, resolve_ref, temporary_clone_dir
from palimpsest.core.git_errors import GitError, GitFailure, source_reason
from palimpsest.core.sources import SourcePolicy

# Failures worth another delivery (the network, a timeout); the rest are final for this request.
TRANSIENT = frozenset({GitFailure.NETWORK, GitFailure.TIMEOUT, GitFailure.DISK_FULL, GitFailure.FAILED})


@dataclass(frozen=True, slots=True)
class Source:
    git_dir: Path
    commit: str
    local: bool


@contextlib.asynccontextmanager
async def open_source(
    clone_url: str,
    branch: str,
    *,
    auth: GitAuth | None,
    policy: SourcePolicy,
    timeout_s: float,
    tmp_parent: Path | None = None,
    commit: str | None = None,
) -> AsyncIterator[Source]:
    """The tree of ``branch``'s head, or of ``commit`` (a review's base; local sources only)."""
    try:
        target = await check_remote(clone_url, policy)
        if target.local is not None:
            resolved = await resolve_ref(target.local, commit or branch, timeout_s=timeout_s)
            # a partial clone gets the tree's absent blobs in one fetch, not one fetch per blob
            await backfill(target.local, resolved, policy, auth=auth, timeout_s=timeout_s)
            yield Source(target.local, resolved, local=True)
            return
        if commit is not None:
            raise BuildFailed("source_unsupported", "a pinned commit is built from local sources only")
        async with temporary_clone_dir(tmp_parent) as tmp:
            repo = tmp / "repo.git"
            await clone_bare(target, repo, branch, auth=auth, timeout_s=timeout_s, options=("--depth", "1"))
            commit = await resolve_ref(repo, "HEAD", timeout_s=timeout_s)
            yield Source(repo, commit, local=False)
    except GitError as exc:
        raise_build_failure(exc)


def raise_build_failure(exc: GitError) -> NoReturn:
    """Re-raise a transient git failure (the request is redelivered); any other ends the build
    with ``source_<reason>``."""
    if exc.reason in TRANSIENT:
        raise exc
    raise BuildFailed(source_reason(exc.reason), str(exc)) from exc
