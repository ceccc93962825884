"""Why an embedding run stops, and the errors a provider adapter raises to the run.

A run never fails the snapshot: every stop becomes an embedding state on the snapshot
(``budget_exceeded``, ``embedding_failed``, ``unsupported_dimensions``) with a reason, and lexical
search keeps working. Provider adapters translate their library's exceptions into the
``Provider*`` types below at the boundary, so the batching logic knows nothing of litellm.
"""

from __future__ import annotations

from palimpsest.core.errors import PalimpsestError


class EmbedderError(PalimpsestError):
    """Base of the embedder's errors."""


class RunStopped(EmbedderError):
    """The run ends early with an embedding state and a reason (recorded, not retried)."""

    def __init__(self, state: str, reason: str) -> None:
        super().__init__(f"{state}: {reason}")
        self.state = state
        self.reason = reason


class ProviderError(EmbedderError):
    """The provider failed in a way a retry will not fix (bad key, bad request, unknown model)."""


class ProviderUnavailable(ProviderError):
    """A transient failure (timeout, 5xx, connection): retried with backoff, then fatal."""


class RateLimited(ProviderUnavailable):
    """The provider asked us to slow down (HTTP 429); ``retry_after_s`` when it said how long."""

    def __init__(self, message: str, retry_after_s: float | None = None) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class BatchTooLarge(ProviderError):
    """The provider rejected the request as too large (tokens or inputs): split it and try again."""


class SpendBudgetExceeded(EmbedderError):
    """The tenant's spend budget does not allow another request."""


class NoModel(EmbedderError):
    """The tenant has no embeddings model routed: no semantic search for it (there is no default)."""
