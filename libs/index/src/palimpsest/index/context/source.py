"""Where the diff and the files at head come from: the repository itself, never the index.

The stored URL is checked against the deployment's source policy first (``source_refused``
before git runs; see :mod:`palimpsest.core.sources`). A local repository (a path or ``file://``
URL, when the deployment allows local sources) is read in place; a remote one is fetched — only the two commits — into a temporary bare repository that
is removed however the review ends; branch and tag names are fetched into refs of the same name,
so they resolve there as they do in a local repository. Credentials travel in the environment (see
:mod:`palimpsest.core.git`), never in a URL or an argument list.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from palimpsest.core.git import (
    GitAuth,
    check_remote,
    decode_path,
    is_object_id,
    read_blobs,
    run_git,
    temporary_clone_dir,
)
from palimpsest.core.git_errors import GitError, source_reason
from palimpsest.core.sources import SourcePolicy
from palimpsest.index.context.diff import ChangedFile, parse_diff
from palimpsest.index.context.errors import ReviewFailed

TIMEOUT_S = 300.0

# the name a revision starts with, before ``~``, ``^`` or ``@{`` suffixes (``main~2`` → ``main``)
_REF_NAME = re.compile(r"[A-Za-z0-9._/+-]+?(?=[~^]|@\{|$)")


def fetch_refspecs(revisions: Sequence[str]) -> list[str]:
    """What to fetch from a remote so that every revision resolves in the fetched repository.

    A full SHA is fetched as itself. A name (a branch, a tag, ``refs/…``, optionally with ``~``
    or ``^`` suffixes) is fetched into a local ref of the same name: ``main`` into
    ``refs/heads/main``, which ``rev-parse main`` finds (a bare ``fetch URL main`` only writes
    ``FETCH_HEAD``, so a review of ``main`` against a remote failed with ``unknown_revision``).
    A revision that is neither is refused here, before git runs.
    """
    specs: list[str] = []
    for rev in dict.fromkeys(revisions):
        if is_object_id(rev):
            specs.append(rev)
            continue
        found = _REF_NAME.match(rev)
        name = found.group(0) if found else ""
        parts = name.split("/")
        if (
            not name
            or name.startswith(("-", "/", "+"))
            or ".." in name
            or any(not p or p.startswith(".") or p.endswith(".lock") for p in parts)
            or name.endswith(".")
        ):
            raise ReviewFailed("unknown_revision", f"{rev!r} names no branch, tag or commit")
        specs.append(f"+{name}:{name if name.startswith('refs/') else 'refs/heads/' + name}")
    return list(dict.fromkeys(specs))


@dataclass(frozen=True, slots=True)
class PullRequestDiff:
    text: str
    files: list[ChangedFile]
    at_head: dict[str, str | None]  # every changed path → its text at head (None: deleted)
    start: str | None = None  # the commit the diff starts from (the merge base, or the base)


@contextlib.asynccontextmanager
async def open_repository(
    clone_url: str,
    revisions: Sequence[str],
    *,
    auth: GitAuth | None,
    policy: SourcePolicy,
    timeout_s: float = TIMEOUT_S,
) -> AsyncIterator[Path]:
    """A git directory that has ``revisions`` (the base and head: SHAs or names, see
    :func:`fetch_refspecs`)."""
    try:
        target = await check_remote(clone_url, policy)
        if target.local is not None:
            yield target.local
            return
        async with temporary_clone_dir() as tmp:
            repo = tmp / "repo.git"
            await run_git(["init", "--quiet", "--bare", str(repo)], timeout_s=timeout_s)
            await run_git(
                [
                    "fetch",
                    "--quiet",
                    "--no-tags",
                    "--depth",
                    "200",
                    "--",
                    target.url,
                    *fetch_refspecs(revisions),
                ],
                cwd=repo,
                auth=auth,
                timeout_s=timeout_s,
                allowed_protocols=target.protocols,
                pins=target.pins,
            )
            yield repo
    except GitError as exc:
        raise ReviewFailed(source_reason(exc.reason), str(exc)) from exc


async def rev_parse(git_dir: Path, rev: str) -> str:
    try:
        out = await run_git(["rev-parse", "--verify", "--end-of-options", f"{rev}^{{commit}}"], cwd=git_dir)
    except GitError as exc:
        raise ReviewFailed("unknown_revision", f"{rev!r} names no commit") from exc
    return out.decode().strip()


async def pull_request_diff(git_dir: Path, base: str, head: str) -> PullRequestDiff:
    """The pull request's diff (from the merge base, as providers show it) and its files at head."""
    try:
        start = await _merge_base(git_dir, base, head) or base
        raw = await run_git(
            ["diff", "--no-color", "--no-ext-diff", "-M", "--end-of-options", start, head], cwd=git_dir
        )
    except GitError as exc:
        raise ReviewFailed(f"diff_{exc.reason}", str(exc)) from exc
    text = raw.decode("utf-8", "replace")
    files = parse_diff(text)
    try:
        at_head = await files_at(git_dir, head, [f.path for f in files])
    except GitError as exc:
        raise ReviewFailed(f"diff_{exc.reason}", str(exc)) from exc
    for f in files:
        if f.old_path:
            at_head.setdefault(f.old_path, None)
    return PullRequestDiff(text, files, at_head, start)


async def _merge_base(git_dir: Path, base: str, head: str) -> str | None:
    try:
        out = await run_git(["merge-base", "--end-of-options", base, head], cwd=git_dir)
    except GitError:
        return None  # unrelated or shallow history: diff against the base itself
    return out.decode().strip() or None


async def files_at(git_dir: Path, rev: str, paths: Sequence[str]) -> dict[str, str | None]:
    """The text of ``paths`` at ``rev`` (None: not there)."""
    if not paths:
        return {}
    out = await run_git(["ls-tree", "-z", "--end-of-options", rev, "--", *paths], cwd=git_dir)
    shas: dict[str, str] = {}
    for record in out.split(b"\0"):
        meta, sep, raw_path = record.partition(b"\t")
        fields = meta.split()
        if sep and len(fields) == 3 and fields[1] == b"blob":
            shas[decode_path(raw_path)] = fields[2].decode()
    texts = {sha: data async for sha, data in read_blobs(git_dir, shas.values(), missing_ok=True)}
    return {
        p: (texts[shas[p]].decode("utf-8", "replace") if p in shas and shas[p] in texts else None)
        for p in paths
    }


@dataclass(frozen=True, slots=True)
class GitHead:
    """:class:`~palimpsest.index.context.assemble.HeadReader` over a git directory."""

    git_dir: Path
    head: str

    async def changed_since(self, commit: str) -> Mapping[str, str | None]:
        try:
            out = await run_git(
                ["diff", "--name-only", "-z", "--no-renames", "--end-of-options", commit, self.head],
                cwd=self.git_dir,
            )
            paths = [decode_path(p) for p in out.split(b"\0") if p]
            return await files_at(self.git_dir, self.head, paths)
        except GitError:
            return {}  # the snapshot's commit is not here (shallow fetch): only the PR's files are checked
