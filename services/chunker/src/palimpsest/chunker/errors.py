"""Why a build ends without a ready snapshot; the reason is stored on the snapshot and shown."""

from __future__ import annotations

from palimpsest.core.errors import PalimpsestError


class BuildFailed(PalimpsestError):
    """A named, deterministic failure: recorded on the snapshot, not retried."""

    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason
        self.detail = detail


class BuildSkipped(PalimpsestError):
    """Nothing to build (index mode off, repository gone, head already indexed)."""

    def __init__(self, reason: str, snapshot_id: object = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.snapshot_id = snapshot_id
