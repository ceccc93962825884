"""A change opened for review: the repository, the base, the head, the diff and the base's config.

:func:`opened_change` is the one sequence of git steps both the reviewer service
(:meth:`palimpsest.reviewer.service.ReviewerService.review`) and the review context preview
(:mod:`palimpsest.index.context.preview`, the MCP server's ``review_context``) take: open the
repository under the source policy (:func:`~palimpsest.index.context.source.open_repository`), resolve
the base, read the base commit's ``.palimpsest/config.yml`` (never the head's: a change cannot
widen its own context), make the head (a revision, or a submitted diff applied to the base as a
temporary overlay commit — :mod:`palimpsest.index.context.overlay`) and take the pull request's diff
from the merge base. Everything it made is removed when the block ends.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass

from palimpsest.core.git import GitAuth
from palimpsest.core.sources import SourcePolicy
from palimpsest.index.context.crossrepo import LinkConfig, read_config
from palimpsest.index.context.overlay import head_commit
from palimpsest.index.context.source import (
    GitHead,
    PullRequestDiff,
    open_repository,
    pull_request_diff,
    rev_parse,
)

__all__ = ["OpenedChange", "opened_change"]


@dataclass(frozen=True, slots=True)
class OpenedChange:
    base_sha: str
    head_sha: str
    pr: PullRequestDiff
    head: GitHead  # the repository at head, for candidates of an older snapshot
    links: LinkConfig | None  # the base commit's cross-repository config


@asynccontextmanager
async def opened_change(
    clone_url: str,
    base: str,
    head: str | None,
    diff: str | None,
    *,
    auth: GitAuth | None,
    policy: SourcePolicy,
    resolved: Callable[[str, str], None] | None = None,
) -> AsyncIterator[OpenedChange]:
    """The change ``base``..``head`` (or ``diff`` on ``base``) of the repository at ``clone_url``;
    ``resolved(base_sha, head_sha)`` is told the commits as soon as both are known.
    ReviewFailed when the source, a revision or the diff is unusable."""
    async with open_repository(
        clone_url, [r for r in (base, head) if r], auth=auth, policy=policy
    ) as git_dir:
        base_sha = await rev_parse(git_dir, base)
        links = await read_config(git_dir, base_sha)
        async with head_commit(git_dir, base_sha, head, diff) as (work_dir, head_sha):
            if resolved is not None:
                resolved(base_sha, head_sha)
            pr = await pull_request_diff(work_dir, base_sha, head_sha)
            yield OpenedChange(base_sha, head_sha, pr, GitHead(work_dir, head_sha), links)
