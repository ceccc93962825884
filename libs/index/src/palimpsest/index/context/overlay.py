"""Turning a submitted diff into a head commit, without touching the repository it applies to.

The API accepts a review of ``{base, diff}``: a unified diff against a commit of a registered
repository. The review core works on two commits, so the diff becomes one: in a temporary bare
repository whose object store borrows the source repository's objects (``objects/info/alternates``,
read-only), the base tree is read into a temporary index (``GIT_INDEX_FILE``), the diff is applied
to that index (``git apply --cached``), and ``write-tree`` + ``commit-tree`` write the new tree and
commit into the temporary object store. The user's repository — objects, refs, index, work tree —
is never written; the temporary repository is removed however the review ends.

The commit is deterministic (fixed identity, the base commit's date, a fixed message), so the same
diff on the same base is the same head: a repeated submission finds the stored review.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

from palimpsest.core.git import run_git, temporary_clone_dir
from palimpsest.core.git_errors import GitError
from palimpsest.index.context.errors import ReviewFailed
from palimpsest.index.context.source import rev_parse

__all__ = ["COMMIT_MESSAGE", "applied_diff", "head_commit"]

COMMIT_MESSAGE = "Submitted diff (reviewed by Palimpsest)\n"
_IDENTITY = {
    "GIT_AUTHOR_NAME": "Palimpsest",
    "GIT_AUTHOR_EMAIL": "palimpsest@localhost",
    "GIT_COMMITTER_NAME": "Palimpsest",
    "GIT_COMMITTER_EMAIL": "palimpsest@localhost",
}


async def _objects_dir(git_dir: Path) -> Path:
    out = await run_git(["rev-parse", "--git-path", "objects"], cwd=git_dir)
    return (git_dir / out.decode().strip()).resolve()


@contextlib.asynccontextmanager
async def applied_diff(git_dir: Path, base_sha: str, diff: str) -> AsyncIterator[tuple[Path, str]]:
    """A temporary git directory that has everything ``git_dir`` has plus ``base_sha`` + ``diff``
    as a commit; yields (that directory, the new head sha). ReviewFailed("diff_does_not_apply")
    when the diff does not apply to the base tree."""
    async with contextlib.AsyncExitStack() as stack:
        try:
            tmp = await stack.enter_async_context(temporary_clone_dir())
            overlay, head = await _commit_diff(git_dir, tmp, base_sha, diff)
        except GitError as exc:
            raise ReviewFailed(f"diff_{exc.reason}", str(exc)) from exc
        yield overlay, head


async def _commit_diff(git_dir: Path, tmp: Path, base_sha: str, diff: str) -> tuple[Path, str]:
    overlay = tmp / "overlay.git"
    await run_git(["init", "--quiet", "--bare", str(overlay)])
    alternates = overlay / "objects" / "info" / "alternates"
    alternates.write_text(f"{await _objects_dir(git_dir)}\n", encoding="utf-8")
    env = {"GIT_INDEX_FILE": str(tmp / "index")}
    await run_git(["read-tree", "--end-of-options", base_sha], cwd=overlay, extra_env=env)
    try:
        await run_git(
            ["apply", "--cached", "--whitespace=nowarn", "-"],
            cwd=overlay,
            extra_env=env,
            stdin=diff.encode("utf-8", "surrogateescape"),
        )
    except GitError as exc:
        raise ReviewFailed("diff_does_not_apply", _first_line(str(exc))) from exc
    tree = (await run_git(["write-tree"], cwd=overlay, extra_env=env)).decode().strip()
    when = (await run_git(["show", "-s", "--format=%ct", base_sha], cwd=overlay)).decode().strip()
    dated = {**_IDENTITY, "GIT_AUTHOR_DATE": f"@{when} +0000", "GIT_COMMITTER_DATE": f"@{when} +0000"}
    head = await run_git(
        ["commit-tree", tree, "-p", base_sha], cwd=overlay, extra_env=dated, stdin=COMMIT_MESSAGE.encode()
    )
    return overlay, head.decode().strip()


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0][:300] if text.strip() else "git apply refused the diff"


@contextlib.asynccontextmanager
async def head_commit(
    git_dir: Path, base_sha: str, head: str | None, diff: str | None
) -> AsyncIterator[tuple[Path, str]]:
    """Where the review reads the head, and its sha: ``head`` resolved in ``git_dir``, or, for a
    submitted diff, the commit :func:`applied_diff` makes of it."""
    if diff is not None:
        async with applied_diff(git_dir, base_sha, diff) as found:
            yield found
        return
    if not head:
        raise ReviewFailed("missing_head", "the request names no head commit")
    yield git_dir, await rev_parse(git_dir, head)
