"""Decisions every provider makes the same way.

Which branch a push is about and whether it is the default one, which paths a push changed (and whether that list can be trusted to be complete), whether a
comment asks the bot for a review, and whether a comment was written by the bot itself.
Keeping them here keeps the three providers consistent.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from palimpsest.ingest.webhooks._payload import Node, clip
from palimpsest.ingest.webhooks.models import Ignored, RepoRef

MAX_CHANGED_PATHS = 5000
_REVIEW_WORD = re.compile(r"\breview\b", re.IGNORECASE)
_FULL_REVIEW = re.compile(r"\breview\s+full\b|\bfull\s+review\b", re.IGNORECASE)
_FENCE = re.compile(r"^\s*(```|~~~)")


def pushed_branch(ref: str) -> str | Ignored:
    """The branch a pushed `ref` names; Ignored for a tag or any other ref."""
    if ref.startswith("refs/tags/"):
        return Ignored(f"tag push ({clip(ref.removeprefix('refs/tags/'))})")
    if not ref.startswith("refs/heads/"):
        return Ignored(f"push to '{clip(ref)}', which is not a branch")
    return ref.removeprefix("refs/heads/")


def off_default_branch(repo: RepoRef, branch: str) -> Ignored | None:
    """Ignored when the repository names its default branch and `branch` is another one."""
    if repo.default_branch is not None and branch != repo.default_branch:
        return Ignored(f"push to '{clip(branch)}', not the default branch '{clip(repo.default_branch)}'")
    return None


def collect_paths(commits: Iterable[Node]) -> tuple[tuple[str, ...], bool]:
    """Sorted union of added, modified and removed paths, and whether it is complete.

    The union stops growing at MAX_CHANGED_PATHS; hitting the bound makes it incomplete.
    """
    seen: set[str] = set()
    complete = True
    for commit in commits:
        for key in ("added", "modified", "removed"):
            for path in commit.paths(key):
                if path in seen:
                    continue
                if len(seen) >= MAX_CHANGED_PATHS:
                    complete = False
                    continue
                seen.add(path)
    return tuple(sorted(seen)), complete


def bot_handle(bot_name: str) -> str:
    """The name people type after '@': no leading '@', no GitHub App '[bot]' suffix."""
    name = bot_name.strip().removeprefix("@")
    return re.sub(r"\[bot\]$", "", name, flags=re.IGNORECASE)


def is_bot_author(author: str | None, bot_name: str) -> bool:
    """True when `author` is the bot itself (so its own comments never trigger it)."""
    handle = bot_handle(bot_name).lower()
    if author is None or not handle:
        return False
    return bot_handle(author.strip("{}")).lower() == handle


def _unquoted_lines(text: str) -> Iterable[str]:
    """The comment's own words: quoted replies ('> …') and fenced code are left out."""
    in_fence = False
    for line in text.splitlines():
        if _FENCE.match(line):
            in_fence = not in_fence
            continue
        if not in_fence and not line.lstrip().startswith(">"):
            yield line


def _asked(comment: str, bot_name: str) -> str | None:
    """The comment's own words past the bot's mentions, when it mentions the bot (else None)."""
    handle = bot_handle(bot_name)
    if not handle:
        return None
    name = re.escape(handle)
    mention = re.compile(rf"(?<![\w@/.-])@(?:{name}|\{{{name}\}})(?:\[bot\])?(?![\w-])", re.IGNORECASE)
    own_words = "\n".join(_unquoted_lines(comment))
    if mention.search(own_words) is None:
        return None
    # The bot's own name may contain "review" (palimpsest-review): look past the mentions.
    return mention.sub(" ", own_words)


def requests_review(comment: str, bot_name: str) -> bool:
    """True when the comment mentions the bot ('@name' or '@{name}') and says "review"."""
    words = _asked(comment, bot_name)
    return words is not None and _REVIEW_WORD.search(words) is not None


def requests_full_review(comment: str, bot_name: str) -> bool:
    """True when the comment asks the bot for a full review ('@bot review full', '@bot full review'):
    the whole pull request, not only the commits since the last review."""
    words = _asked(comment, bot_name)
    return words is not None and _FULL_REVIEW.search(words) is not None
