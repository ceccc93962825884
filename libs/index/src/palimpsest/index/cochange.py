"""Files that usually change with a pull request's files but are not in it: scored by evidence.

A raw co-change count cannot tell a habit from a hub: the lockfile, the changelog, the CI
config and the package's main module change with everything, so they top every list. This
module scores each partner of a changed file by what its history says about *this* file:

* **share** — of the changed file's counted commits (those of 1..N files, the commits pairs are
  counted from; see the recency scanner), the part that also changed the partner;
* **confidence** — the Wilson score lower bound of that share (``Z``), so that two out of two
  commits does not outrank forty out of sixty;
* **lift** — the share over the partner's base rate of change (its counted commits over the
  repository's): a hub that changes in a third of all commits needs a far higher share than a
  file that changes once a year.

A partner counts when its confidence is at least ``min_confidence`` and its lift at least
``MIN_LIFT``, with at least ``MIN_TOGETHER`` shared commits. Over the pull request's files a
partner keeps its best pair (the changed file whose history says most about it). Equal
confidence (the same share of the same file's commits) goes to the pair that changed together
last: an old coupling fades. Partners the
pull request touches, partners absent at the head, and lockfiles, generated, vendored and CI
files, changelogs and ``other`` files (licences, AUTHORS and the like: metadata many unrelated
commits touch; none was ever the rest of a replayed change) by the shared classifier
(:mod:`palimpsest.index.codefacts`) are never listed unless the repository's rules name their kind. At most ``limit`` are listed, most confident first, each
with the sentence that says why; nothing clears the bar → an empty list.

The one function every reader uses — the review summary, the brief, ``review --json``, MCP,
the web view and ``bench replay`` — is :func:`missing_partners` (its reader from the index is
:func:`palimpsest.index.recency.cochange_evidence`). The constants were measured with
``palimpsest bench replay`` (the warning's precision and recall on real merged changes): over
158 replayed changes of ten public repositories (Go, Rust, Python, JavaScript, Java), 1.8 files
listed per change, precision 0.34 and recall 0.22 against the rest of each change — no better than
raw co-change counts cut to the same length (0.35): a one-file pull request's partners rank by the
share of that file's commits alike, so what this scoring adds is the bar (when to say nothing), the
exclusions and the reason, not a better order. Lowering the bar buys recall at the cost of
precision (``MIN_CONFIDENCE`` 0.1: 0.29 / 0.27; 0.3: 0.41 / 0.13 in a git-only prototype of the
same scoring).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from palimpsest.index.codefacts import Kind, classify

__all__ = [
    "DEFAULT_LIMIT",
    "EXCLUDABLE_KINDS",
    "MIN_CONFIDENCE",
    "MIN_LIFT",
    "MIN_TOGETHER",
    "MissingPartner",
    "PairEvidence",
    "Z",
    "excluded_kind",
    "from_stored",
    "missing_partners",
    "wilson_lower",
]

DEFAULT_LIMIT = 5
"""At most this many partners are listed (``review.cochange_max``)."""
Z = 1.645
"""The Wilson bound's z (one-sided 95 %)."""
MIN_CONFIDENCE = 0.2
"""A partner is listed when the lower bound of its share is at least this."""
MIN_LIFT = 1.5
"""… and its share at least this many times its base rate of change."""
MIN_TOGETHER = 2
"""… and it changed with the file in at least this many commits (one commit is not a habit)."""
EXCLUDABLE_KINDS = ("lockfile", "generated", "vendored", "ci", "changelog", "other")
"""Kinds never warned about unless the repository's rules include them (``review.cochange_include``)."""


@dataclass(frozen=True, slots=True)
class PairEvidence:
    """What the history up to the scan says about one (changed file, partner) pair."""

    source: str  # the pull request's file
    partner: str
    together: int  # counted commits that changed both
    source_commits: int  # counted commits that changed the source
    partner_commits: int  # counted commits that changed the partner
    total_commits: int  # counted commits of the repository
    since: datetime | None = None  # the oldest counted commit of the source
    last_at: datetime | None = None  # the last commit that changed both


@dataclass(frozen=True, slots=True)
class MissingPartner:
    """A file that usually changes with the pull request's files but is not in it."""

    path: str
    source: str  # the changed file whose history says most about it
    together: int
    out_of: int  # the source's counted commits
    since: datetime | None
    share: float
    confidence: float  # the Wilson lower bound of ``share``
    lift: float
    last_at: datetime | None = None  # the last commit that changed both

    @property
    def reason(self) -> str:
        since = f" since {self.since:%Y-%m}" if self.since is not None else ""
        return (
            f"changed in {self.together} of the {self.out_of} commits that changed `{self.source}`"
            f"{since} (lift {self.lift:.1f})"
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "source": self.source,
            "together": self.together,
            "out_of": self.out_of,
            "since": self.since.isoformat() if self.since is not None else None,
            "share": round(self.share, 4),
            "confidence": round(self.confidence, 4),
            "lift": round(self.lift, 2),
            "last_together": self.last_at.isoformat() if self.last_at is not None else None,
            "reason": self.reason,
        }


def from_stored(value: Any) -> dict[str, Any]:
    """A stored ``cochange_missing`` entry as a dict: reviews stored before issue 43 kept bare
    paths (no evidence), newer ones the :meth:`MissingPartner.as_dict` form."""
    if isinstance(value, dict):
        return value
    return {"path": str(value), "reason": None}


def wilson_lower(successes: int, trials: int, z: float = Z) -> float:
    """The Wilson score interval's lower bound of ``successes / trials`` (0 when no trials)."""
    if trials <= 0:
        return 0.0
    p = min(max(successes, 0), trials) / trials
    z2 = z * z
    centre = p + z2 / (2 * trials)
    margin = z * math.sqrt(p * (1 - p) / trials + z2 / (4 * trials * trials))
    return max(0.0, (centre - margin) / (1 + z2 / trials))


def excluded_kind(path: str) -> str | None:
    """The excludable kind of ``path`` (``EXCLUDABLE_KINDS``) by the shared classifier, or None."""
    facts = classify(path)
    if facts.lockfile:
        return "lockfile"
    if facts.ci:
        return "ci"
    if facts.kind in (Kind.GENERATED, Kind.VENDORED, Kind.CHANGELOG, Kind.OTHER):
        return str(facts.kind)
    return None


def missing_partners(
    evidence: Iterable[PairEvidence],
    *,
    touched: Collection[str],
    present: Callable[[str], bool],
    include: Collection[str] = (),
    limit: int = DEFAULT_LIMIT,
    min_confidence: float = MIN_CONFIDENCE,
) -> list[MissingPartner]:
    """The partners worth a warning, most confident first (see the module docstring).

    ``touched``: every path the pull request changes (old and new names); ``present``: whether a
    path exists at the head; ``include``: the excludable kinds the repository asks for.
    """
    best: dict[str, MissingPartner] = {}
    for pair in evidence:
        if pair.partner in touched or pair.together < MIN_TOGETHER or pair.total_commits <= 0:
            continue
        n = max(pair.source_commits, pair.together)
        share = pair.together / n
        base = max(pair.partner_commits, pair.together) / pair.total_commits
        lift = share / base if base > 0 else 0.0
        confidence = wilson_lower(pair.together, n)
        if confidence < min_confidence or lift < MIN_LIFT:
            continue
        found = MissingPartner(
            pair.partner, pair.source, pair.together, n, pair.since, share, confidence, lift, pair.last_at
        )
        held = best.get(pair.partner)
        if held is None or _order(found) < _order(held):
            best[pair.partner] = found
    out: list[MissingPartner] = []
    for partner in sorted(best.values(), key=_order):
        if len(out) >= limit:
            break
        kind = excluded_kind(partner.path)
        if (kind is None or kind in include) and present(partner.path):
            out.append(partner)
    return out


def _order(p: MissingPartner) -> tuple[float, float, float, str]:
    """Most confident first; among equals, the pair that changed together last (a habit that is
    still kept), then the higher lift."""
    last = p.last_at.timestamp() if p.last_at is not None else float("-inf")
    return (-round(p.confidence, 6), -last, -p.lift, p.path)
