"""The reviewer's exception types (third-party and git failures are translated into these)."""

from __future__ import annotations

from palimpsest.core.errors import PalimpsestError


class ReviewFailed(PalimpsestError):
    """A review cannot be produced for this request; ``reason`` is a short stable code."""

    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason
        self.detail = detail
