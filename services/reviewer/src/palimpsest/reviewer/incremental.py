"""Incremental re-review: what a push added since the last reviewed head of the same pull request.

On a new push the model is shown the commits since the last reviewed head (their diff), with the
whole pull request's diff as context, and reports findings on those changes only. The review is
full instead when there is no earlier reviewed head, when that head is not an ancestor of the new
one (a force push rewrote history) or is not in the fetched history, when a comment asked for
``@bot review full``, or when the change since then is larger than the threshold (changed lines,
``PALIMPSEST_REVIEW_INCREMENTAL_MAX_LINES``). The stored review says which (``scope``) and why.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from palimpsest.core.git import run_git
from palimpsest.core.git_errors import GitError
from palimpsest.index.context.diff import ChangedFile, parse_diff

MAX_COMMITS = 500


@dataclass(frozen=True, slots=True)
class Increment:
    since_sha: str
    commits: list[str]  # oldest first
    text: str
    files: list[ChangedFile]

    @property
    def changed_lines(self) -> int:
        return sum(len(f.added) + len(f.removed) for f in self.files)


async def increment(git_dir: Path, since: str, head: str) -> Increment | str:
    """The change from ``since`` to ``head``, or why there is none to review incrementally."""
    try:
        await run_git(["merge-base", "--is-ancestor", "--end-of-options", since, head], cwd=git_dir)
    except GitError:
        return f"the last reviewed head {since[:12]} is not an ancestor of {head[:12]} (history rewritten or not fetched)"
    try:
        out = await run_git(
            ["rev-list", "--reverse", f"--max-count={MAX_COMMITS}", "--end-of-options", f"{since}..{head}"],
            cwd=git_dir,
        )
        raw = await run_git(
            ["diff", "--no-color", "--no-ext-diff", "-M", "--end-of-options", since, head], cwd=git_dir
        )
    except GitError as exc:
        return f"the change since {since[:12]} could not be read ({exc.reason})"
    commits = out.decode().split()
    if not commits:
        return f"no commits since the last reviewed head {since[:12]}"
    text = raw.decode("utf-8", "replace")
    return Increment(since, commits, text, parse_diff(text))
