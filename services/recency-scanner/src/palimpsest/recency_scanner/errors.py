"""Why a recency scan ends without a result; the reason is what events, rows and metrics carry.

Git failures arrive as :class:`~palimpsest.core.git_errors.GitError` (reason ``auth``,
``timeout``, …); the scanner's own refusals use :class:`ScanFailed` with a reason of the same
shape. Every message is free of credentials, so it may be logged and stored.
"""

from __future__ import annotations

from palimpsest.core.errors import PalimpsestError


class ScanFailed(PalimpsestError):
    """A named, deterministic failure of one scan: reported once, never retried."""

    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(f"{detail} [{reason}]" if detail else reason)
        self.reason = reason
        self.detail = detail or reason
