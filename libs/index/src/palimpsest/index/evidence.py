"""Co-change evidence: what the commits two files changed in together say about the pair.

A plain count treats every commit alike. A commit touching ``n`` entries pairs every one of
them, so sweeping commits (a lint pass, a dependency bump, a rename across the tree) credit
dozens of pairs with a full commit each, and years-old couplings count as much as last month's.
Evidence weighs each commit ``1 / (n - 1) ** SIZE_POWER`` per pair (a 2-file commit counts 1, a
9-file one 0.5, a 28-file one 0.33) and halves every ``HALF_LIFE_DAYS``. It is kept *as of the
pair's last co-change*, so a stored value stays valid however long it is kept: readers decay it
from ``last_at`` to the present (:func:`decayed`).

The recency scanner stores it per pair (``cochange.evidence``, migration 0016); ranking
(:mod:`palimpsest.index.graph.rank`) and the benchmark use it in place of the count. The
constants were measured with ``palimpsest bench cochange`` on nine public repositories and this
one.
"""

from __future__ import annotations

import math
from datetime import datetime

__all__ = ["HALF_LIFE_DAYS", "SIZE_POWER", "add_evidence", "add_weight", "decay", "decayed", "pair_weight"]

SIZE_POWER = 1 / 3
"""A commit of n entries counts ``1 / (n - 1) ** SIZE_POWER`` for each pair in it."""
HALF_LIFE_DAYS = 1095.0
"""Evidence halves every three years."""


def pair_weight(touched: int) -> float:
    """What one commit touching ``touched`` entries says about each pair of files in it."""
    return math.pow(max(touched - 1, 1), -SIZE_POWER)


def decay(days: float, half_life_days: float = HALF_LIFE_DAYS) -> float:
    """The factor evidence keeps over ``days``."""
    return float(0.5 ** (max(days, 0.0) / half_life_days))


def add_evidence(
    evidence: float,
    last_at: datetime | None,
    when: datetime,
    touched: int,
    half_life_days: float = HALF_LIFE_DAYS,
) -> float:
    """The pair's evidence as of ``max(last_at, when)`` after one more commit at ``when`` of
    ``touched`` entries (history may arrive newest first, as ``git log`` gives it, or oldest first)."""
    return add_weight(evidence, last_at, when, pair_weight(touched), half_life_days)


def add_weight(
    evidence: float,
    last_at: datetime | None,
    when: datetime,
    weight: float,
    half_life_days: float = HALF_LIFE_DAYS,
) -> float:
    """:func:`add_evidence` with the commit's :func:`pair_weight` already computed (the scanner
    computes it once per commit, not once per pair)."""
    if last_at is None:
        return weight
    days = (when - last_at).total_seconds() / 86400.0
    if days >= 0:
        return evidence * decay(days, half_life_days) + weight
    return evidence + weight * decay(-days, half_life_days)


def decayed(
    evidence: float, last_at: datetime | None, now: datetime, half_life_days: float = HALF_LIFE_DAYS
) -> float:
    """Stored evidence (as of ``last_at``) as of ``now``."""
    if last_at is None:
        return evidence
    return evidence * decay((now - last_at).total_seconds() / 86400.0, half_life_days)
