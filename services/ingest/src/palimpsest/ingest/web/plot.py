"""The documentation freshness plot: each doc's last change against the median code date, with
the staleness rule's line drawn, as inline SVG made on the server (no script, no external asset).

Each row is a doc (oldest first); its dot sits at the doc's last change. Two vertical lines mark
the median code date and the rule's line six months before it (``staleness.stale_line``): dots
left of it are past the rule's line. A dot is red when the analysis calls the doc stale, amber
when it is past the line yet not called stale (the doc check's state, in its tooltip, says why:
verified, reference, or drift — a claim proved false, listed as a finding), green when it is
newer than the line: a dot inside the stale
zone is never drawn as current. Every label is escaped; the SVG uses presentation attributes and classes
of the stylesheet, never inline styles, so the page's CSP needs no ``unsafe-inline``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from markupsafe import Markup, escape

from palimpsest.index.staleness import stale_line

__all__ = ["FreshnessPoint", "freshness_svg"]

WIDTH = 760
LEFT = 280  # room for the doc names
RIGHT = 20
ROW = 16
TOP = 34
MAX_ROWS = 60


@dataclass(frozen=True, slots=True)
class FreshnessPoint:
    path: str
    last_modified_at: datetime
    stale: bool
    state: str | None = None  # the doc check's verdict (``verified``, ``unverified_old``…), when known


def _label(path: str, limit: int = 40) -> str:
    return path if len(path) <= limit else "…" + path[-(limit - 1) :]


def _kind(point: FreshnessPoint, line: datetime | None) -> str:
    """``stale`` (the analysis says so), ``old`` (past the rule's line but not stale), ``current``."""
    if point.stale:
        return "stale"
    if line is not None and point.last_modified_at < line:
        return "old"
    return "current"


def freshness_svg(points: Sequence[FreshnessPoint], median_code: datetime | None) -> tuple[Markup, int]:
    """The SVG and how many dated docs were left out (past ``MAX_ROWS``, the newest go first)."""
    rows = sorted(points, key=lambda p: (p.last_modified_at, p.path))
    left_out = max(0, len(rows) - MAX_ROWS)
    rows = rows[:MAX_ROWS]
    if not rows:
        return Markup(""), 0
    line = stale_line(median_code) if median_code is not None else None
    moments = [p.last_modified_at.timestamp() for p in rows]
    for marker in (median_code, line):
        if marker is not None:
            moments.append(marker.timestamp())
    low, high = min(moments), max(moments)
    span = max(high - low, 86400.0)
    low, high = low - span * 0.03, high + span * 0.03
    inner = WIDTH - LEFT - RIGHT
    height = TOP + ROW * len(rows) + 24

    def x(moment: datetime) -> float:
        return round(LEFT + (moment.timestamp() - low) / (high - low) * inner, 1)

    out = [
        f'<svg class="plot" viewBox="0 0 {WIDTH} {height}" role="img" aria-labelledby="plot-title"'
        ' xmlns="http://www.w3.org/2000/svg">',
        '<title id="plot-title">Documentation freshness: each doc\'s last change against the median'
        " code date; docs left of the staleness line are stale</title>",
    ]
    bottom = TOP + ROW * len(rows)
    if median_code is not None and line is not None:
        mx, lx = x(median_code), x(line)
        out.append(
            f'<rect class="plot-stale-zone" x="{LEFT}" y="{TOP - 6}" width="{max(lx - LEFT, 0)}"'
            f' height="{bottom - TOP + 6}"/>'
        )
        out.append(f'<line class="plot-median" x1="{mx}" y1="{TOP - 8}" x2="{mx}" y2="{bottom}"/>')
        out.append(f'<line class="plot-threshold" x1="{lx}" y1="{TOP - 8}" x2="{lx}" y2="{bottom}"/>')
        out.append(
            f'<text class="plot-note" x="{mx}" y="{TOP - 12}" text-anchor="middle">median code'
            f" {median_code:%Y-%m-%d}</text>"
        )
        out.append(
            f'<text class="plot-note plot-note-stale" x="{lx}" y="{TOP - 24}" text-anchor="middle">'
            f"stale before {line:%Y-%m-%d}</text>"
        )
    for i, point in enumerate(rows):
        y = TOP + ROW * i + ROW / 2
        kind = _kind(point, line)
        out.append(
            f'<text class="plot-label" x="{LEFT - 8}" y="{y + 4}" text-anchor="end">'
            f"{escape(_label(point.path))}</text>"
        )
        out.append(f'<line class="plot-row" x1="{LEFT}" y1="{y}" x2="{WIDTH - RIGHT}" y2="{y}"/>')
        out.append(
            f'<circle class="plot-dot plot-{kind}" cx="{x(point.last_modified_at)}" cy="{y}" r="5">'
            f"<title>{escape(point.path)}: {point.last_modified_at:%Y-%m-%d} ({kind}"
            f"{', ' + str(escape(point.state.replace('_', ' '))) if point.state else ''})</title></circle>"
        )
    first, last = (
        datetime.fromtimestamp(low, rows[0].last_modified_at.tzinfo),
        datetime.fromtimestamp(high, rows[0].last_modified_at.tzinfo),
    )
    out.append(f'<text class="plot-axis" x="{LEFT}" y="{bottom + 18}">{first:%Y-%m}</text>')
    out.append(
        f'<text class="plot-axis" x="{WIDTH - RIGHT}" y="{bottom + 18}" text-anchor="end">{last:%Y-%m}</text>'
    )
    out.append("</svg>")
    return Markup("".join(out)), left_out  # noqa: S704 - every label above is escaped
