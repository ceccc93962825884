"""Errors of the index read side."""

from __future__ import annotations

from palimpsest.core.errors import PalimpsestError


class IndexError_(PalimpsestError):
    """Base of index read-side errors."""


class InvalidQuery(IndexError_):
    """The query cannot be searched (no words, bad filter)."""


class IndexNotReady(IndexError_):
    """The repository has no ready snapshot to query."""


class UnknownSeed(IndexError_):
    """A graph seed matched no file or symbol (never silently ignored)."""


class SemanticUnavailable(IndexError_):
    """Semantic search cannot run here; ``reason`` says why (lexical search still works)."""

    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(f"semantic search unavailable: {reason}" + (f" ({detail})" if detail else ""))
        self.reason = reason
        self.detail = detail
