"""Failures and retries: 429, 5xx, timeouts and connection errors are retried with exponential
backoff (honouring ``Retry-After`` up to the cap); anything else fails at once, authentication
failures included (401/403, and a missing key, which litellm reports as a 500)."""

from __future__ import annotations

import asyncio
import logging
import random
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

from palimpsest.core._llm.settings import LLMSettings

log = logging.getLogger("palimpsest.core.llm")

# HTTP statuses worth another attempt: timeouts, conflicts, rate limits and server-side errors
_RETRYABLE_STATUS = frozenset({408, 409, 425, 429}) | frozenset(range(500, 600))
_T = TypeVar("_T")
_CONTEXT_WINDOW = re.compile(r"context_length_exceeded|maximum context length|context window", re.IGNORECASE)
# what the provider clients say when they have no key to send (openai, azure, and litellm's own)
_NO_CREDENTIALS = re.compile(
    r"missing credentials|api_key client option must be set|missing \w+ api key|no api key provided",
    re.IGNORECASE,
)
_NO_KEY_HINT = "no API key: set PALIMPSEST_LLM_API_KEY where the services run, or the provider's own variable"


@dataclass(frozen=True, slots=True)
class Failure:
    reason: str
    status: int | None
    retryable: bool
    retry_after: float | None
    detail: str


class GaveUp(Exception):
    """The last attempt of a call failed (not retryable, or no retries left)."""

    def __init__(self, failure: Failure, attempts: int) -> None:
        super().__init__(failure.reason)
        self.failure = failure
        self.attempts = attempts


def classify(exc: BaseException, secret: str | None) -> Failure:
    """Turn a litellm/OpenAI exception into a stable reason; decide whether to retry it."""
    name = type(exc).__name__
    status = getattr(exc, "status_code", None)
    status = status if isinstance(status, int) else None
    detail = _scrub(str(exc), secret)
    if isinstance(exc, TimeoutError) or name in ("Timeout", "APITimeoutError"):
        return Failure("timeout", None, True, None, detail)
    if name == "APIConnectionError":
        return Failure("connection_error", None, True, None, detail)
    if name == "ContextWindowExceededError" or _CONTEXT_WINDOW.search(str(exc)):
        return Failure("context_window_exceeded", status, False, None, detail)
    if name == "AuthenticationError" or status in (401, 403):
        return Failure("authentication", status, False, None, detail)
    if _NO_CREDENTIALS.search(str(exc)):  # the client refused to send a request without a key
        # (litellm reports OpenAI's "Missing credentials" as a 500): no retry brings a key
        return Failure("authentication", None, False, None, f"{_NO_KEY_HINT} ({detail})")
    if name in ("APIResponseValidationError", "JSONDecodeError") or isinstance(exc, ValueError):
        return Failure("malformed_response", status, True, None, detail)
    if status is None:
        return Failure("error", None, False, None, detail)
    if status == 429:
        return Failure("rate_limited", status, True, _retry_after(exc), detail)
    if status == 404:
        return Failure("not_found", status, False, None, detail)
    if status >= 500:
        return Failure("server_error", status, True, _retry_after(exc), detail)
    return Failure("bad_request", status, status in _RETRYABLE_STATUS, _retry_after(exc), detail)


def _retry_after(exc: BaseException) -> float | None:
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    if headers is None:
        return None
    try:
        value = headers.get("retry-after")
        return max(0.0, float(value)) if value is not None else None
    except (TypeError, ValueError):
        return None  # an HTTP date: fall back to our own backoff


def _scrub(text: str, secret: str | None) -> str:
    first = text.strip().splitlines()[0] if text.strip() else ""
    if secret:
        first = first.replace(secret, "***")
    return first[:300]


def backoff(settings: LLMSettings, attempt: int, retry_after: float | None) -> float:
    """Delay before attempt ``attempt + 1``: exponential with ±20 % jitter, at least Retry-After."""
    delay = settings.llm_retry_base_s * (2.0 ** (attempt - 1)) * random.uniform(0.8, 1.2)  # noqa: S311
    if retry_after is not None:
        delay = max(delay, retry_after)
    return min(delay, settings.llm_retry_max_s)


async def with_retries(
    attempt: Callable[[], Awaitable[_T]],
    settings: LLMSettings,
    *,
    sleep: Callable[[float], Awaitable[None]],
    secret: str | None,
    what: str,
) -> tuple[_T, int]:
    """The result of ``attempt`` and how many attempts it took; retryable failures are retried
    after :func:`backoff` up to ``llm_max_retries`` times, and the last failure raises
    :class:`GaveUp`. ``what`` names the call in the log (``feature/model``)."""
    attempts = 0
    while True:
        attempts += 1
        try:
            return await asyncio.wait_for(attempt(), settings.llm_timeout_s + 5.0), attempts
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            failure = classify(exc, secret)
            if failure.retryable and attempts <= settings.llm_max_retries:
                delay = backoff(settings, attempts, failure.retry_after)
                log.warning(
                    "model call %s failed (%s%s); attempt %d, retrying in %.1fs",
                    what,
                    failure.reason,
                    f" HTTP {failure.status}" if failure.status else "",
                    attempts,
                    delay,
                )
                await sleep(delay)
                continue
            raise GaveUp(failure, attempts) from None
