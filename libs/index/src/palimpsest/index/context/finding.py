"""A review finding: where it is on the change, how severe, what it says (the reviewer's model, its
model-free checks such as :mod:`palimpsest.index.context.leftbehind`, storage and posting share it)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# typing_extensions' TypedDict: pydantic (the MCP tools' result models) reads it on Python 3.11
from typing_extensions import TypedDict

__all__ = ["Finding", "FindingJson"]


class FindingJson(TypedDict):
    """A finding as the MCP tools and the JSON outputs show it (:meth:`Finding.as_dict`)."""

    path: str
    start_line: int
    end_line: int
    side: str
    severity: str
    category: str
    message: str
    suggested_change: str | None
    fingerprint: str | None
    symbol: str | None


@dataclass(frozen=True, slots=True)
class Finding:
    path: str
    start_line: int
    end_line: int
    severity: str
    category: str
    message: str
    suggested_change: str | None = None
    side: str = "new"  # new: head-side lines (added or context); old: removed lines (base side)
    fingerprint: str | None = None  # see palimpsest.reviewer.identity
    anchor_hash: str | None = None
    anchor_lines: int = 0
    symbol: str | None = None
    position: dict[str, Any] | None = None  # where it shows on the PR's diff (None: summary only)
    posted_as: str | None = None  # inline | summary | existing

    def as_dict(self) -> FindingJson:
        return {
            "path": self.path,
            "start_line": self.start_line,
            "end_line": self.end_line,
            "side": self.side,
            "severity": self.severity,
            "category": self.category,
            "message": self.message,
            "suggested_change": self.suggested_change,
            "fingerprint": self.fingerprint,
            "symbol": self.symbol,
        }
