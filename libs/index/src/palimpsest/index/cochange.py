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

A pair speaks for its partner when its lift is at least ``MIN_LIFT`` and the two shared at least
``MIN_TOGETHER`` commits. Evidence is then
**combined over the pull request's files** (issue 54): a partner's score is the mean of its pairs'
confidence over every file of the pull request that has a history (a file none of whose pairs
speaks for it counts 0). A partner that changed with most of the pull request's files, in a
large share of each one's commits, scores high; one that changed with one file out of six scores
a sixth of that pair. A partner is listed when its score is at least ``min_confidence``
(``MIN_CONFIDENCE``). For a one-file pull request the score is its one pair's confidence. Equal
scores go to the partner that changed with a pull request file last: an old coupling fades.
Partners the pull request touches, partners absent at the head, and lockfiles, generated,
vendored and CI files, changelogs and ``other`` files (licences, AUTHORS and the like: metadata
many unrelated commits touch) by the shared classifier (:mod:`palimpsest.index.codefacts`) are
never listed unless the repository's rules name their kind. At most ``limit`` are listed, best
first, each with the sentence that gives its evidence file by file; nothing clears the bar → an
empty list.

The one function every reader uses — the review summary, the brief, ``review --json``, MCP,
the web view, ``bench replay`` and ``bench cochange-warning`` — is :func:`missing_partners` (its
readers from the index are :func:`palimpsest.index.recency.cochange_evidence` and
:func:`palimpsest.index.recency.counted_paths`).

Why the mean and the bar (issue 54): the last stop kept each partner's *best* pair, so a complete
pull request of six files drew a warning from whichever of the six had a habit. Measured in a
git-only prototype of the same counts and rules (merged changes of 3-12 files, 3+ modified and
none added or deleted apart from lockfiles and the like, 16 changes x seeds 1 and 2 per repository;
the change less one random file, and the complete change; at most 5 listed), tuned on
pallets/flask, labstack/echo, expressjs/express and tokio-rs/axum: the best pair listed 703
files, named the held-out file in 36 % of changes with precision 0.07 and was silent on 16 % of
complete changes; the mean with the bar at 0.3 listed 39, precision 0.28, recall 9 %, silent on
91 %. On four repositories held out before tuning (psf/requests, gorilla/mux, sindresorhus/ky,
rust-lang/log): best pair 0.12 / 42 % / 21 % (precision / recall / silence), the mean 0.23 / 7 % /
90 %. Raw co-change counts summed over the pull request's files and cut to the same length were
as precise (0.28 and 0.26): what the combination buys is knowing when to say nothing, not a better
order. Tried and not better on the tuning four: association rules over the largest subset of the
pull request's files seen together in history (TARMAQ; precision 0.11-0.14, silence 0.38-0.66),
pooling the counts over the files, a coverage floor, a penalty for test partners of non-test pull
requests.

Through the real reviewer (``palimpsest bench cochange-warning --changes 16 --seed 1 --seed 2``,
the change less one file and complete, 64 replays per repository, load average 9-15 on 2 cores):
pooled over the eight repositories 109 files listed, precision 0.29, recall 0.13, silent on 89 %
of complete changes; raw counts summed over the pull request's files at the same length 0.28, the
last stop's order 0.29. Tuning four 0.35 / 0.16 / 88 % (raw 0.29); held-out four 0.24 / 0.09 /
90 % (raw 0.26); psf/requests alone 0.04 (1 hit in 25 listed, raw the same). Precision and silence
meet issue 54's bar on the tuning set; recall and the lead over raw counts do not.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, TypedDict

from palimpsest.index.codefacts import Kind, classify

__all__ = [
    "DEFAULT_LIMIT",
    "EXCLUDABLE_KINDS",
    "MIN_CONFIDENCE",
    "MIN_LIFT",
    "MIN_TOGETHER",
    "MissingPartner",
    "PairEvidence",
    "Support",
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
MIN_CONFIDENCE = 0.3
"""A partner is listed when its score (its pairs' confidence, mean over the PR's files) is at least this."""
MIN_LIFT = 1.5
"""A pair speaks for its partner when its share is at least this many times the partner's base rate of change, …"""
MIN_TOGETHER = 2
"""… and the two changed together in at least this many commits (one commit is not a habit)."""
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


class SupportJson(TypedDict):
    """:meth:`Support.as_dict`: one file's evidence, as stored with the co-change warning."""

    source: str
    together: int
    out_of: int
    confidence: float


@dataclass(frozen=True, slots=True)
class Support:
    """One pull request file's evidence for a partner: they changed together in ``together`` of
    the file's ``out_of`` counted commits."""

    source: str
    together: int
    out_of: int
    confidence: float  # the Wilson lower bound of together / out_of

    def as_dict(self) -> SupportJson:
        return {
            "source": self.source,
            "together": self.together,
            "out_of": self.out_of,
            "confidence": round(self.confidence, 4),
        }


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
    score: float | None = None  # the pairs' confidence, mean over the PR's files with a history
    support: tuple[Support, ...] = ()  # every PR file whose pair speaks for it, strongest first
    of_files: int = 1  # the PR's files with a history (the mean's denominator)

    @property
    def reason(self) -> str:
        since = f" since {self.since:%Y-%m}" if self.since is not None else ""
        if len(self.support) <= 1 and self.of_files <= 1:
            return (
                f"changed in {self.together} of the {self.out_of} commits that changed `{self.source}`"
                f"{since} (lift {self.lift:.1f})"
            )
        shown = self.support[:_REASON_FILES]
        parts = [f"in {s.together} of the {s.out_of} commits that changed `{s.source}`" for s in shown]
        more = len(self.support) - len(shown)
        tail = f" and {more} more" if more > 0 else ""
        return (
            f"changed with {len(self.support)} of the pull request's {self.of_files} files with a history:"
            f" {'; '.join(parts)}{tail} (score {self.score or self.confidence:.2f})"
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
            "score": round(self.score if self.score is not None else self.confidence, 4),
            "of_files": self.of_files,
            "support": [s.as_dict() for s in self.support],
            "reason": self.reason,
        }


_REASON_FILES = 3  # the reason names at most this many supporting files


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
    sources: Collection[str] | None = None,
    combine: bool = True,
) -> list[MissingPartner]:
    """The partners worth a warning, best first (see the module docstring).

    ``touched``: every path the pull request changes (old and new names); ``present``: whether a
    path exists at the head; ``include``: the excludable kinds the repository asks for;
    ``sources``: the pull request's files that have a history (counted commits) — the mean's
    denominator, by default the sources ``evidence`` names. ``combine=False`` scores a partner by
    its best pair alone (the last stop's scoring, kept as ``bench cochange-warning``'s baseline).
    """
    pairs: dict[str, list[MissingPartner]] = {}
    for pair in evidence:
        if pair.partner in touched or pair.together < MIN_TOGETHER or pair.total_commits <= 0:
            continue
        n = max(pair.source_commits, pair.together)
        share = pair.together / n
        base = max(pair.partner_commits, pair.together) / pair.total_commits
        lift = share / base if base > 0 else 0.0
        if lift < MIN_LIFT:
            continue
        found = MissingPartner(
            pair.partner,
            pair.source,
            pair.together,
            n,
            pair.since,
            share,
            wilson_lower(pair.together, n),
            lift,
            pair.last_at,
        )
        pairs.setdefault(pair.partner, []).append(found)
    counted = set(sources) if sources is not None else {p.source for ps in pairs.values() for p in ps}
    scored: list[MissingPartner] = []
    for found_pairs in pairs.values():
        kept = sorted(
            {p.source: p for p in sorted(found_pairs, key=_order, reverse=True)}.values(), key=_order
        )  # one pair per source (its best), best first
        best = kept[0]
        if combine:
            score = sum(p.confidence for p in kept) / max(len(counted | {p.source for p in kept}), 1)
        else:
            score = best.confidence
        if score < min_confidence:
            continue
        support = tuple(Support(p.source, p.together, p.out_of, p.confidence) for p in kept)
        of_files = max(len(counted | {p.source for p in kept}), 1)
        scored.append(replace(best, score=score, support=support, of_files=of_files))
    out: list[MissingPartner] = []
    for partner in sorted(scored, key=_ranked):
        if len(out) >= limit:
            break
        kind = excluded_kind(partner.path)
        if (kind is None or kind in include) and present(partner.path):
            out.append(partner)
    return out


def _order(p: MissingPartner) -> tuple[float, float, float, str, str]:
    """The more confident pair first; among equals, the pair that changed together last (a habit
    that is still kept), then the higher lift."""
    last = p.last_at.timestamp() if p.last_at is not None else float("-inf")
    return (-round(p.confidence, 6), -last, -p.lift, p.path, p.source)


def _ranked(p: MissingPartner) -> tuple[float, float, float, float, str]:
    """The higher score first; among equals, the partner whose best pair changed together last."""
    last = p.last_at.timestamp() if p.last_at is not None else float("-inf")
    score = p.score if p.score is not None else p.confidence
    return (-round(score, 6), -round(p.confidence, 6), -last, -p.lift, p.path)
