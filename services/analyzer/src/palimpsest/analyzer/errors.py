"""Exception types of the analyzer service."""

from __future__ import annotations

from palimpsest.core.errors import PalimpsestError


class AnalysisError(PalimpsestError):
    """Base of the analyzer's errors."""


class NoReadySnapshot(AnalysisError):
    """The repository has no ready snapshot to analyse (index it first)."""


class AnalysisNotFound(AnalysisError):
    """No stored analysis has the requested id (or it belongs to another tenant)."""
