"""Exception types of the shared core; third-party errors are translated into these at the boundary."""

from __future__ import annotations


class PalimpsestError(Exception):
    """Base of every error Palimpsest raises on purpose."""


class SettingsError(PalimpsestError):
    """A setting is missing or invalid; the message names the environment variable."""


class DatabaseError(PalimpsestError):
    """The database could not be reached or a statement failed in a way callers must see."""


class MigrationError(DatabaseError):
    """A migration could not be applied."""


class BusError(PalimpsestError):
    """NATS JetStream could not be reached or refused a declaration or publish."""


class DuplicateEvent(PalimpsestError):
    """The consumer's inbox already holds this event: it was applied before."""


class UnhandledEvent(PalimpsestError):
    """A consumer received an event type it has no handler for (its subscription and code disagree)."""


class CredentialError(PalimpsestError):
    """A stored secret cannot be decrypted with the configured encryption key."""


class EmbeddedStackError(PalimpsestError):
    """The embedded PostgreSQL or NATS server could not be started or stopped."""


class LLMError(PalimpsestError):
    """A model call through the LLM gateway (palimpsest.core.llm) did not produce a result."""


class NoModelConfigured(LLMError):
    """No model is routed for this tenant and feature (the caller may degrade, e.g. mechanical analysis)."""

    def __init__(self, feature: str) -> None:
        super().__init__(f"no model is configured for {feature}")
        self.feature = feature


class BudgetExceeded(LLMError):
    """The tenant's model spend for the current month has reached its budget; no call was made."""

    def __init__(self, spent_usd: float, budget_usd: float) -> None:
        super().__init__(f"monthly model budget reached: spent ${spent_usd:.2f} of ${budget_usd:.2f}")
        self.spent_usd = spent_usd
        self.budget_usd = budget_usd


class ModelCallFailed(LLMError):
    """The model call failed, after retries when the failure was transient (429, 5xx, timeouts).

    ``reason`` is a short stable code (``rate_limited``, ``timeout``, ``server_error``,
    ``connection_error``, ``context_window_exceeded``, ``authentication``, ``bad_request``,
    ``not_found``, ``malformed_response``, ``error``); ``detail`` is the provider's message with
    any credential removed.
    """

    def __init__(self, reason: str, *, attempts: int, status: int | None = None, detail: str = "") -> None:
        status_text = f" (HTTP {status})" if status else ""
        tail = f": {detail}" if detail else ""
        super().__init__(f"{reason}{status_text} after {attempts} attempt(s){tail}")
        self.reason = reason
        self.attempts = attempts
        self.status = status
        self.detail = detail
