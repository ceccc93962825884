"""The LLM gateway: the one place Palimpsest talks to models.

Every model call of every service goes through :class:`Gateway`, which wraps litellm and adds what
a platform running it for many teams needs:

* **routing** per tenant and feature (``analysis``, ``summary``, ``review``, ``embeddings``,
  ``rerank``): a row of ``llm_routes`` (migration 0008) wins, then the feature's setting
  (``PALIMPSEST_LLM_ANALYSIS_MODEL``…), then, for the chat features, ``PALIMPSEST_LLM_MODEL``.
  No route means no model: callers degrade (the analyzer writes its mechanical report) instead
  of failing;
* **credentials** from ``PALIMPSEST_LLM_API_KEY`` or the mounted secret file
  ``palimpsest_llm_api_key``; the key is never logged, never put in a URL or an error message,
  and only sent to the configured API base (a tenant route pointing elsewhere gets no key);
* **timeouts and retries**: 429, 5xx, timeouts and connection errors are retried with
  exponential backoff (honouring ``Retry-After`` up to the cap); anything else fails at once,
  authentication failures included (401/403, and a missing key, which litellm reports as a 500).
  The final failure is a :class:`~palimpsest.core.errors.ModelCallFailed` with a stable reason;
* **usage and cost** per tenant and feature: one ``llm_usage`` row per call (tokens, cost when the
  price is known, attempts, outcome) and the ``LLM_TOKENS`` / ``LLM_COST_USD`` / ``LLM_REQUESTS``
  metrics;
* **budgets**: a tenant whose spend this calendar month (UTC) reached its budget
  (``llm_budgets`` row, else ``PALIMPSEST_LLM_MONTHLY_BUDGET_USD``) gets
  :class:`~palimpsest.core.errors.BudgetExceeded` before any call is made. The check is a soft
  limit: calls already in flight are not stopped.

litellm is imported lazily, in a worker thread (it takes seconds), with
``LITELLM_LOCAL_MODEL_COST_MAP=True`` set first: otherwise it downloads a price list at import.
Processes that never call a model never import it.

The module is organised by entry point: chat (analysis, summary, review), embeddings (the
embedder's ``embed`` lives in its own section) and rerank. Each entry point is a thin wrapper
around :meth:`Gateway._invoke`, which does the routing-independent part (budget, retries,
metrics, usage) for any litellm call.
"""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import importlib
import json
import logging
import os
import random
import re
import struct
import threading
import time
import warnings
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from decimal import Decimal
from types import ModuleType
from typing import TYPE_CHECKING, Any, Literal, TypeVar, cast, get_args
from urllib.parse import urlsplit
from uuid import UUID

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from palimpsest.core import local_embeddings, metrics
from palimpsest.core.errors import BudgetExceeded, ModelCallFailed, NoModelConfigured
from palimpsest.core.ids import uuid7
from palimpsest.core.settings import ENV_PREFIX, SECRETS_DIR

if TYPE_CHECKING:  # the database driver loads with the first gateway call, not with the settings
    from palimpsest.core.db import Conn, Pool

__all__ = [
    "CHAT_FEATURES",
    "FEATURES",
    "ChatResult",
    "EmbedResult",
    "Feature",
    "Gateway",
    "LLMSettings",
    "Message",
    "RerankResult",
    "Route",
    "Usage",
    "load_litellm",
]

log = logging.getLogger(__name__)

Feature = Literal["analysis", "summary", "review", "embeddings", "rerank"]
FEATURES: tuple[Feature, ...] = get_args(Feature)
# The feature a call's usage is recorded under (llm_usage.feature; migration 0012 adds `index` and
# `search`): routing says which model embeds, accounting says what the tokens were spent on.
UsageFeature = Literal["analysis", "summary", "review", "index", "search", "rerank"]
CHAT_FEATURES: frozenset[str] = frozenset({"analysis", "summary", "review"})
Message = dict[str, str]

# HTTP statuses worth another attempt: timeouts, conflicts, rate limits and server-side errors
_RETRYABLE_STATUS = frozenset({408, 409, 425, 429}) | frozenset(range(500, 600))
_T = TypeVar("_T")
_CONTEXT_WINDOW = re.compile(r"context_length_exceeded|maximum context length|context window", re.IGNORECASE)
_NO_KEY = "no-key"  # sent to endpoints that must not receive a real key (see Gateway._key)
# what the provider clients say when they have no key to send (openai, azure, and litellm's own)
_NO_CREDENTIALS = re.compile(
    r"missing credentials|api_key client option must be set|missing \w+ api key|no api key provided",
    re.IGNORECASE,
)
_NO_KEY_HINT = "no API key: set PALIMPSEST_LLM_API_KEY where the services run, or the provider's own variable"


# ============================================================================ settings


class LLMSettings(BaseSettings):
    """Model settings (``PALIMPSEST_LLM_*``); a service's Settings class may inherit them too."""

    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX,
        secrets_dir=str(SECRETS_DIR) if SECRETS_DIR.is_dir() else None,
        extra="ignore",
        case_sensitive=False,
    )

    llm_model: str | None = Field(
        default=None,
        description='Default chat model in litellm form, e.g. "openai/gpt-4o-mini"; a tenant route wins (None: no model).',
    )
    llm_analysis_model: str | None = Field(
        default=None, description="Model of the repository analysis (default: PALIMPSEST_LLM_MODEL)."
    )
    llm_summary_model: str | None = Field(
        default=None, description="Model of the analysis summary (default: PALIMPSEST_LLM_MODEL)."
    )
    llm_review_model: str | None = Field(
        default=None, description="Model of pull-request reviews (default: PALIMPSEST_LLM_MODEL)."
    )
    llm_embeddings_model: str | None = Field(
        default=None,
        description="Embeddings model of hybrid repositories, litellm form (None: no embeddings).",
    )
    llm_rerank_model: str | None = Field(
        default=None, description="Rerank model of review context (None: no reranking)."
    )
    llm_api_base: str | None = Field(default=None, description="OpenAI-compatible base URL, e.g. …/v1.")
    llm_api_key: SecretStr | None = Field(
        default=None,
        description="API key of the model provider (from the env or a mounted secret).",
    )
    llm_timeout_s: float = Field(default=120.0, gt=0, description="Seconds one model call may take.")
    llm_max_retries: int = Field(
        default=3, ge=0, le=10, description="Retries of a model call that failed for a transient reason."
    )
    llm_retry_base_s: float = Field(
        default=2.0, ge=0, description="First retry delay of a model call (doubling each retry)."
    )
    llm_retry_max_s: float = Field(default=60.0, ge=0, description="Longest retry delay of a model call.")
    llm_monthly_budget_usd: float | None = Field(
        default=None,
        ge=0,
        description="Monthly model spend per tenant in USD; calls past it are refused (None: no limit).",
    )
    llm_input_usd_per_mtok: float | None = Field(
        default=None,
        ge=0,
        description="Input price per million tokens, overriding litellm's price table.",
    )
    llm_output_usd_per_mtok: float | None = Field(
        default=None, ge=0, description="Output price per million tokens, overriding litellm's price table."
    )

    @field_validator(
        "llm_model",
        "llm_analysis_model",
        "llm_summary_model",
        "llm_review_model",
        "llm_embeddings_model",
        "llm_rerank_model",
        "llm_api_base",
    )
    @classmethod
    def _blank_is_none(cls, value: str | None) -> str | None:
        return value.strip() or None if value is not None else None

    @field_validator("llm_api_base")
    @classmethod
    def _no_credentials_in_url(cls, value: str | None) -> str | None:
        if value is not None:
            check_api_base(value)
        return value

    def model_for(self, feature: str) -> str | None:
        """The model the settings name for ``feature`` (tenant routes are not considered)."""
        specific: str | None = getattr(self, f"llm_{feature}_model", None)
        if specific is not None:
            return specific
        return self.llm_model if feature in CHAT_FEATURES else None


def check_api_base(url: str) -> None:
    """An API base must be an http(s) URL without credentials in it (keys travel in headers)."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError("the LLM API base must be an http(s) URL")
    if parts.username is not None or parts.password is not None:
        raise ValueError("the LLM API base must not contain credentials; use PALIMPSEST_LLM_API_KEY")


# ============================================================================ routing


@dataclass(frozen=True, slots=True)
class Route:
    """Where one tenant's calls of one feature go."""

    feature: str
    model: str
    api_base: str | None
    source: Literal["tenant", "settings"]
    input_usd_per_mtok: float | None = None
    output_usd_per_mtok: float | None = None
    send_key: bool = True  # False when a tenant route points away from the configured API base
    # What usage is accounted to: embedding a repository's chunks is `index` work, a query embedded
    # for a review is `review` work, and so on; None → the feature itself (embeddings → `index`).
    usage_feature: UsageFeature | None = None

    @property
    def accounted_as(self) -> UsageFeature:
        if self.usage_feature is not None:
            return self.usage_feature
        return "index" if self.feature == "embeddings" else cast(UsageFeature, self.feature)

    def describe(self) -> str:
        return f"{self.model} ({self.source} route)"


async def resolve_route(conn: Conn, settings: LLMSettings, feature: str) -> Route | None:
    """The route of ``feature`` for the tenant of ``conn``'s transaction, or None (no model)."""
    if feature not in FEATURES:
        raise ValueError(f"unknown LLM feature {feature!r}")
    cur = await conn.execute(
        "SELECT model, api_base, input_usd_per_mtok, output_usd_per_mtok FROM llm_routes WHERE feature = %s",
        (feature,),
    )
    row = await cur.fetchone()
    if row is not None:
        api_base = row["api_base"] or settings.llm_api_base
        return Route(
            feature=feature,
            model=row["model"],
            api_base=api_base,
            source="tenant",
            input_usd_per_mtok=_float(row["input_usd_per_mtok"], settings.llm_input_usd_per_mtok),
            output_usd_per_mtok=_float(row["output_usd_per_mtok"], settings.llm_output_usd_per_mtok),
            send_key=sends_key(row["api_base"], settings),
        )
    model = settings.model_for(feature)
    if model is None:
        return None
    return Route(
        feature=feature,
        model=model,
        api_base=settings.llm_api_base,
        source="settings",
        input_usd_per_mtok=settings.llm_input_usd_per_mtok,
        output_usd_per_mtok=settings.llm_output_usd_per_mtok,
    )


def sends_key(api_base: str | None, settings: LLMSettings) -> bool:
    """Whether a tenant route to ``api_base`` (None: the settings' API base) gets the services' key:
    only the configured API base does (see :meth:`Gateway._key`)."""
    return api_base is None or api_base == settings.llm_api_base


def missing_credentials(
    litellm: ModuleType, settings: LLMSettings, model: str, api_base: str | None
) -> str | None:
    """Why calls of a tenant route to ``model`` at ``api_base`` would carry no key, judged from this
    process's environment (None: they would, or need none).

    The key is ``PALIMPSEST_LLM_API_KEY`` (or its secret file), else the provider's own variable,
    which litellm names (``validate_environment``: ``OPENAI_API_KEY``…). A route away from the
    configured API base is sent a placeholder, never a key (:func:`sends_key`), so nothing here is
    missing for it.
    """
    if local_embeddings.is_local(model) or not sends_key(api_base, settings):
        return None
    key = settings.llm_api_key.get_secret_value() if settings.llm_api_key is not None else None
    found = litellm.validate_environment(model=model, api_key=key, api_base=api_base or settings.llm_api_base)
    missing = [str(k) for k in found.get("missing_keys") or []]
    if found.get("keys_in_environment") or not missing:
        return None
    return (
        f"no API key for {model}: PALIMPSEST_LLM_API_KEY is not set, and litellm misses"
        f" {', '.join(missing)}; its calls would fail (authentication)"
    )


def _float(value: Any, default: float | None) -> float | None:
    return float(value) if value is not None else default


def model_problem(litellm: ModuleType, feature: str, model: str, *, priced: bool) -> str | None:
    """Why ``model`` cannot serve a tenant route of ``feature`` (None: it can).

    A model must be one litellm routes (its provider is known) and prices (its local cost map,
    ``LITELLM_LOCAL_MODEL_COST_MAP``: nothing is downloaded), unless ``priced`` (the route brings
    its own price, or the caller accepts unpriced calls, whose spend budgets cannot count).
    ``local/…`` models embed in-process and are valid for ``embeddings`` only.
    """
    if feature not in FEATURES:
        return f"unknown feature {feature!r} (one of {', '.join(FEATURES)})"
    if local_embeddings.is_local(model):
        if feature != "embeddings":
            return f"{model!r} is a local embeddings model; it cannot serve {feature}"
        if model.removeprefix(local_embeddings.LOCAL_PREFIX) not in local_embeddings.PACKAGES:
            known = ", ".join(local_embeddings.LOCAL_PREFIX + n for n in sorted(local_embeddings.PACKAGES))
            return f"no local model {model!r} (known: {known})"
        return None
    try:
        litellm.get_llm_provider(model)
    except Exception:  # litellm raises its BadRequestError (and others) for names it cannot route
        return f"litellm cannot route {model!r}: name it as provider/model, e.g. openai/gpt-4o-mini"
    if priced:
        return None
    try:
        info = litellm.get_model_info(model)
    except Exception:  # "This model isn't mapped yet"
        info = None
    costs = ("input_cost_per_token", "output_cost_per_token", "input_cost_per_query")
    if info is None or all(info.get(k) is None for k in costs):
        return (
            f"litellm has no price for {model!r}: give --input-usd-per-mtok/--output-usd-per-mtok, or"
            " --allow-unpriced (its calls then count nothing against the budget)"
        )
    return None


# ============================================================================ usage, cost, budgets


@dataclass(frozen=True, slots=True)
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float | None = None  # None: the price of this model is not known


async def month_spend(conn: Conn) -> float:
    """What the tenant of ``conn`` spent on models this calendar month (UTC), known prices only."""
    cur = await conn.execute(
        "SELECT coalesce(sum(cost_usd), 0) AS spent FROM llm_usage"
        " WHERE created_at >= date_trunc('month', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC'"
    )
    row = await cur.fetchone()
    return float(row["spent"]) if row is not None else 0.0


async def tenant_budget(conn: Conn, settings: LLMSettings) -> float | None:
    cur = await conn.execute("SELECT monthly_usd FROM llm_budgets")
    row = await cur.fetchone()
    if row is not None:
        return float(row["monthly_usd"])
    return settings.llm_monthly_budget_usd


async def record_usage(
    conn: Conn,
    tenant_id: UUID,
    *,
    feature: UsageFeature,
    model: str,
    outcome: str,
    usage: Usage,
    attempts: int,
    duration_s: float,
    error: str | None = None,
    reference: str | None = None,
) -> None:
    await conn.execute(
        "INSERT INTO llm_usage (tenant_id, usage_id, feature, model, outcome, prompt_tokens, completion_tokens,"
        " cost_usd, attempts, duration_s, error, reference) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
        (
            tenant_id,
            uuid7(),
            feature,
            model[:200],
            outcome,
            usage.prompt_tokens,
            usage.completion_tokens,
            Decimal(str(round(usage.cost_usd, 8))) if usage.cost_usd is not None else None,
            attempts,
            round(duration_s, 3),
            error[:500] if error else None,
            reference[:200] if reference else None,
        ),
    )


def _priced(route: Route, prompt_tokens: int, completion_tokens: int) -> float | None:
    if route.input_usd_per_mtok is None and route.output_usd_per_mtok is None:
        return None
    return (
        prompt_tokens * (route.input_usd_per_mtok or 0.0)
        + completion_tokens * (route.output_usd_per_mtok or 0.0)
    ) / 1_000_000


# ============================================================================ litellm, lazily

_litellm: ModuleType | None = None
_import_lock = threading.Lock()

# litellm builds some pydantic schemas on first use; pydantic warns about their TypedDicts.
# Harmless third-party noise, silenced by message only (other warnings still surface).
_NOISE = (r".*`ReadOnly` qualifier",)


def _quiet() -> None:
    for message in _NOISE:
        warnings.filterwarnings("ignore", message=message, category=UserWarning)


def _import_litellm() -> ModuleType:
    global _litellm
    with _import_lock:
        if _litellm is None:
            # without this, importing litellm downloads a model price list from the internet
            os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                module = importlib.import_module("litellm")
            # no "Give Feedback / Get Help" banners on errors, no telemetry, no debug prints
            for name, value in (("suppress_debug_info", True), ("telemetry", False), ("set_verbose", False)):
                setattr(module, name, value)
            _litellm = module
        return _litellm


async def load_litellm() -> ModuleType:
    """The litellm module, imported once per process in a worker thread (the import is slow)."""
    if _litellm is not None:
        return _litellm
    return await asyncio.to_thread(_import_litellm)


# ============================================================================ failures and retries


@dataclass(frozen=True, slots=True)
class _Failure:
    reason: str
    status: int | None
    retryable: bool
    retry_after: float | None
    detail: str


def _classify(exc: BaseException, secret: str | None) -> _Failure:
    """Turn a litellm/OpenAI exception into a stable reason; decide whether to retry it."""
    name = type(exc).__name__
    status = getattr(exc, "status_code", None)
    status = status if isinstance(status, int) else None
    detail = _scrub(str(exc), secret)
    if isinstance(exc, TimeoutError) or name in ("Timeout", "APITimeoutError"):
        return _Failure("timeout", None, True, None, detail)
    if name == "APIConnectionError":
        return _Failure("connection_error", None, True, None, detail)
    if name == "ContextWindowExceededError" or _CONTEXT_WINDOW.search(str(exc)):
        return _Failure("context_window_exceeded", status, False, None, detail)
    if name == "AuthenticationError" or status in (401, 403):
        return _Failure("authentication", status, False, None, detail)
    if _NO_CREDENTIALS.search(str(exc)):  # the client refused to send a request without a key
        # (litellm reports OpenAI's "Missing credentials" as a 500): no retry brings a key
        return _Failure("authentication", None, False, None, f"{_NO_KEY_HINT} ({detail})")
    if name in ("APIResponseValidationError", "JSONDecodeError") or isinstance(exc, ValueError):
        return _Failure("malformed_response", status, True, None, detail)
    if status is None:
        return _Failure("error", None, False, None, detail)
    if status == 429:
        return _Failure("rate_limited", status, True, _retry_after(exc), detail)
    if status == 404:
        return _Failure("not_found", status, False, None, detail)
    if status >= 500:
        return _Failure("server_error", status, True, _retry_after(exc), detail)
    return _Failure("bad_request", status, status in _RETRYABLE_STATUS, _retry_after(exc), detail)


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


def _backoff(settings: LLMSettings, attempt: int, retry_after: float | None) -> float:
    """Delay before attempt ``attempt + 1``: exponential with ±20 % jitter, at least Retry-After."""
    delay = settings.llm_retry_base_s * (2.0 ** (attempt - 1)) * random.uniform(0.8, 1.2)  # noqa: S311
    if retry_after is not None:
        delay = max(delay, retry_after)
    return min(delay, settings.llm_retry_max_s)


# ============================================================================ results


@dataclass(frozen=True, slots=True)
class ChatResult:
    text: str
    model: str
    usage: Usage
    attempts: int
    finish_reason: str | None = None

    @property
    def truncated(self) -> bool:
        """The model stopped at the output token limit."""
        return self.finish_reason == "length"


@dataclass(frozen=True, slots=True)
class RerankResult:
    """``(index into the documents, relevance score)``, best first."""

    ranking: list[tuple[int, float]]
    model: str
    usage: Usage
    attempts: int


# ============================================================================ embeddings (issue 7)
# The embedder's part of the gateway: the result type and response helpers here, the entry
# points (embeddings_route, embed) in the embeddings section of Gateway.


@dataclass(frozen=True, slots=True)
class EmbedResult:
    """One vector per input, in input order (embedder, issue 7)."""

    vectors: list[list[float]]
    model: str
    usage: Usage
    attempts: int


@dataclass(frozen=True, slots=True)
class _Tokens:
    prompt_tokens: int


@dataclass(frozen=True, slots=True)
class _Embeddings:
    """An embeddings reply read straight from an OpenAI-compatible API (see Gateway._openai_embed)."""

    data: list[Any]
    usage: _Tokens


def _openai_compatible(route: Route, key: str | None) -> bool:
    """Whether embeddings of ``route`` go straight to its OpenAI-compatible API base: an ``openai/``
    model with an API base and a key to send (without a key litellm reads the provider's variable;
    without a base it picks the provider's default: both stay with litellm)."""
    return route.model.startswith("openai/") and bool(route.api_base) and key is not None


# AsyncOpenAI clients (their connection pools) per (API base, key, timeout), kept per process as
# litellm keeps its own, for the event loop that made them; Gateway.aclose closes them
_OPENAI_CLIENTS: dict[tuple[str, str, float], tuple[asyncio.AbstractEventLoop, Any]] = {}


def _openai_client(api_base: str, key: str, timeout_s: float) -> Any:
    loop = asyncio.get_running_loop()
    found = _OPENAI_CLIENTS.get((api_base, key, timeout_s))
    if found is not None and found[0] is loop:
        return found[1]
    openai = importlib.import_module("openai")  # loaded with litellm already
    client = openai.AsyncOpenAI(api_key=key, base_url=api_base, max_retries=0, timeout=timeout_s)
    _OPENAI_CLIENTS[(api_base, key, timeout_s)] = (loop, client)
    return client


_UNPRICED: set[str] = set()  # models litellm's local price map does not know (it never changes)


def _embedding_cost(litellm: ModuleType, route: Route, prompt_tokens: int) -> float | None:
    """The cost of ``prompt_tokens`` embedded by ``route``: its own price, else litellm's price map
    (as completion_cost prices an embeddings response: per prompt token), else unknown."""
    priced = _priced(route, prompt_tokens, 0)
    if priced is not None or route.model in _UNPRICED:
        return priced
    try:
        prompt_cost, _ = litellm.cost_per_token(
            model=route.model, prompt_tokens=prompt_tokens, completion_tokens=0, call_type="aembedding"
        )
    except Exception:  # the model is not in litellm's (local) price map
        _UNPRICED.add(route.model)
        return None
    return float(prompt_cost)


def _vectors_of(response: Any, expected: int, attempts: int) -> list[list[float]]:
    """The vectors of an embeddings response, ordered by their ``index`` (embedder, issue 7)."""
    try:
        items = list(getattr(response, "data", None) or [])
        pairs = [
            (int(_field(item, "index", position)), [float(x) for x in _field(item, "embedding", [])])
            for position, item in enumerate(items)
        ]
    except (TypeError, ValueError) as exc:
        raise ModelCallFailed(
            "malformed_response", attempts=attempts, detail="unreadable embeddings"
        ) from exc
    if len(pairs) != expected:
        raise ModelCallFailed(
            "malformed_response", attempts=attempts, detail=f"{len(pairs)} embeddings for {expected} inputs"
        )
    pairs.sort(key=lambda pair: pair[0])
    return [vector for _, vector in pairs]


def _field(item: Any, name: str, default: Any) -> Any:
    value = item.get(name, default) if isinstance(item, dict) else getattr(item, name, default)
    if name == "embedding" and isinstance(value, str):  # encoding_format=base64: little-endian float32
        raw = base64.b64decode(value)
        return struct.unpack(f"<{len(raw) // 4}f", raw)
    return value


def _quiet_base64() -> None:
    """litellm's response model declares ``list[float]``; a base64 string makes pydantic warn."""
    warnings.filterwarnings("ignore", message=r"(?s).*Expected `list\[float\]`", category=UserWarning)


def _no_sdk_retries(litellm: ModuleType) -> None:
    """Keep retries ours for embeddings too (embedder, issue 7).

    litellm's OpenAI embedding path reads ``max_retries or litellm.DEFAULT_MAX_RETRIES``, so an
    explicit 0 becomes 2 and the OpenAI SDK retries 429s, 5xx and timeouts on its own, unseen by
    our backoff, usage records and heartbeats (litellm issue #7003). Every gateway call passes
    ``max_retries`` explicitly, so a default of 0 changes nothing else.
    """
    if getattr(litellm, "DEFAULT_MAX_RETRIES", 0) != 0:
        setattr(litellm, "DEFAULT_MAX_RETRIES", 0)  # noqa: B010 - an untyped module attribute


# ============================================================================ the gateway


class Gateway:
    """Model calls for every service; one per process (it holds no per-call state)."""

    def __init__(
        self,
        pool: Pool,
        settings: LLMSettings,
        *,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self.pool = pool
        self.settings = settings
        self._sleep = sleep

    async def route(self, tenant_id: UUID, feature: Feature) -> Route | None:
        """Where ``feature`` calls of ``tenant_id`` go; None when no model is configured."""
        from palimpsest.core.db import tenant_tx

        async with tenant_tx(self.pool, tenant_id) as conn:
            return await resolve_route(conn, self.settings, feature)

    async def aclose(self) -> None:
        """Close the process's cached HTTP clients (ours and litellm's) and litellm's logging
        worker (process shutdown, tests).

        The clients also leave their caches: litellm's kept a closed client and handed it to the
        next call on the same event loop ("Cannot send a request, as the client has been closed"),
        so a gateway used after another closed failed; now such a call opens a new client.
        """
        clients = list(_OPENAI_CLIENTS.values())
        _OPENAI_CLIENTS.clear()
        for _, client in clients:
            await client.close()
        module = _litellm
        if module is None:
            return
        closer = getattr(module, "close_litellm_async_clients", None)
        if closer is not None:
            await closer()
        cache = getattr(module, "in_memory_llm_clients_cache", None)
        if cache is not None:
            cache.flush_cache()
        try:
            worker_module = importlib.import_module("litellm.litellm_core_utils.logging_worker")
            worker = getattr(worker_module, "GLOBAL_LOGGING_WORKER", None)
            if worker is not None:
                await worker.stop(discard_pending=True, timeout=2.0)
        except Exception:  # cleanup only; never fail a shutdown
            log.debug("litellm logging worker did not stop cleanly", exc_info=True)

    # ------------------------------------------------------------------------ chat

    async def chat(
        self,
        tenant_id: UUID,
        feature: Feature,
        messages: Sequence[Message],
        *,
        max_tokens: int,
        temperature: float | None = 0.0,
        route: Route | None = None,
        reference: str | None = None,
    ) -> ChatResult:
        """A chat completion for ``feature`` (analysis, summary, review).

        Raises NoModelConfigured, BudgetExceeded or ModelCallFailed (after retries).
        """
        if feature not in CHAT_FEATURES:
            raise ValueError(f"{feature!r} is not a chat feature")
        route = route or await self._require_route(tenant_id, feature)
        key = self._key(route)

        async def call(litellm: ModuleType) -> Any:
            kwargs = self._call_args(route, key, messages=[dict(m) for m in messages], max_tokens=max_tokens)
            if temperature is not None:
                kwargs["temperature"] = temperature
            return await litellm.acompletion(**kwargs)

        def usage_of(litellm: ModuleType, response: Any) -> Usage:
            raw = getattr(response, "usage", None)
            prompt = int(getattr(raw, "prompt_tokens", 0) or 0)
            completion = int(getattr(raw, "completion_tokens", 0) or 0)
            return Usage(prompt, completion, self._cost(litellm, route, response, prompt, completion))

        response, usage, attempts = await self._invoke(tenant_id, route, call, usage_of, reference)
        try:
            choice = response.choices[0]
            text = choice.message.content or ""
            finish = getattr(choice, "finish_reason", None)
        except (AttributeError, IndexError, TypeError) as exc:
            raise ModelCallFailed("malformed_response", attempts=attempts, detail="no choices") from exc
        return ChatResult(str(text), route.model, usage, attempts, str(finish) if finish else None)

    # ------------------------------------------------------------------------ embeddings
    # (issue 7: the embedder's entry point; this section is the embedder's, see EmbedResult)

    async def embeddings_route(
        self, tenant_id: UUID, model: str | None = None, *, accounted_as: UsageFeature | None = None
    ) -> Route | None:
        """The tenant's embeddings route; with ``model``, a route that uses exactly that model.

        A query must be embedded with the model of the snapshot it searches, even when the
        tenant's routing has moved on: the tenant's route (its API base, its price) is kept and
        only the model replaced; with no route at all, the settings' API base is used.
        """
        route = await self.route(tenant_id, "embeddings")
        if route is not None and model is not None and route.model != model:
            route = dataclasses.replace(route, model=model)
        elif route is None and model is not None:
            route = Route(
                feature="embeddings", model=model, api_base=self.settings.llm_api_base, source="settings"
            )
        if route is not None and accounted_as is not None:
            route = dataclasses.replace(route, usage_feature=accounted_as)
        return route

    async def embed(
        self,
        tenant_id: UUID,
        texts: Sequence[str],
        *,
        route: Route | None = None,
        reference: str | None = None,
        packed: bool | None = None,
    ) -> EmbedResult:
        """One vector per text, in order, from the tenant's embeddings model (one request).

        Models named ``local/…`` are served in-process (:mod:`palimpsest.core.local_embeddings`,
        the optional ``local-embeddings`` extra); every other model goes through litellm.
        ``packed`` asks for base64 float32 vectors (None: for ``openai/…`` models, OpenAI and
        OpenAI-compatible servers): the OpenAI client builds a Python object per float of a JSON
        reply, which costs ~6 ms per 384-float vector, and base64 avoids it.
        Batching, splitting and truncation are the caller's (the embedder knows its limits).
        Raises NoModelConfigured, BudgetExceeded or ModelCallFailed (after the gateway's retries).
        """
        route = route or await self._require_route(tenant_id, "embeddings")
        inputs = list(texts)
        if local_embeddings.is_local(route.model):
            return await self._embed_local(tenant_id, route, inputs, reference)
        key = self._key(route)
        _no_sdk_retries(await load_litellm())
        packed = route.model.startswith("openai/") if packed is None else packed

        base = route.api_base if _openai_compatible(route, key) else None

        async def call(litellm: ModuleType) -> Any:
            if base is not None and key is not None:
                return await self._openai_embed(base, key, route.model, inputs, packed=bool(packed))
            kwargs = self._call_args(route, key, input=inputs)
            if packed:
                kwargs["encoding_format"] = "base64"
                _quiet_base64()
            return await litellm.aembedding(**kwargs)

        def usage_of(litellm: ModuleType, response: Any) -> Usage:
            raw = getattr(response, "usage", None)
            prompt = int(getattr(raw, "prompt_tokens", 0) or 0)
            if isinstance(response, _Embeddings):
                return Usage(prompt, 0, _embedding_cost(litellm, route, prompt))
            return Usage(prompt, 0, self._cost(litellm, route, response, prompt, 0))

        response, usage, attempts = await self._invoke(tenant_id, route, call, usage_of, reference)
        vectors = _vectors_of(response, len(inputs), attempts)
        return EmbedResult(vectors, route.model, usage, attempts)

    async def _openai_embed(
        self, api_base: str, key: str, model: str, inputs: list[str], *, packed: bool
    ) -> _Embeddings:
        """One embeddings request to an OpenAI-compatible API base, through the OpenAI SDK that
        litellm itself would use for it, without litellm's per-call wrapper: its logging, response
        metadata and the SDK's typed response models cost ~3 ms per chunk on a 2-core machine,
        more than the rest of the embedder (``palimpsest bench embed``). The reply is read as
        JSON; errors are the SDK's (what ``_classify`` reads: status, ``Retry-After``, timeouts)."""
        client = _openai_client(api_base, key, self.settings.llm_timeout_s)
        raw = await client.embeddings.with_raw_response.create(
            model=model.split("/", 1)[1], input=inputs, encoding_format="base64" if packed else "float"
        )
        body = json.loads(raw.content)  # ValueError: a malformed response, retried
        if not isinstance(body, dict):
            raise ValueError("an embeddings reply that is not a JSON object")
        usage = body.get("usage")
        tokens = usage.get("prompt_tokens") if isinstance(usage, dict) else None
        return _Embeddings(body.get("data") or [], _Tokens(int(tokens or 0)))

    async def _embed_local(
        self, tenant_id: UUID, route: Route, inputs: list[str], reference: str | None
    ) -> EmbedResult:
        async def call(litellm: ModuleType) -> tuple[list[list[float]], int]:
            return await local_embeddings.encode(route.model, inputs)

        def usage_of(litellm: ModuleType, response: tuple[list[list[float]], int]) -> Usage:
            return Usage(response[1], 0, 0.0)

        (vectors, _), usage, attempts = await self._invoke(tenant_id, route, call, usage_of, reference)
        return EmbedResult(vectors, route.model, usage, attempts)

    # ------------------------------------------------------------------------ rerank

    async def rerank(
        self,
        tenant_id: UUID,
        query: str,
        documents: Sequence[str],
        *,
        top_n: int | None = None,
        route: Route | None = None,
        reference: str | None = None,
    ) -> RerankResult:
        """Scores of ``documents`` against ``query`` from the tenant's rerank model, best first."""
        route = route or await self._require_route(tenant_id, "rerank")
        key = self._key(route)

        async def call(litellm: ModuleType) -> Any:
            kwargs = self._call_args(route, key, num_retries=False, query=query, documents=list(documents))
            if top_n is not None:
                kwargs["top_n"] = top_n
            return await litellm.arerank(**kwargs)

        def usage_of(litellm: ModuleType, response: Any) -> Usage:
            meta = getattr(response, "meta", None) or {}
            tokens = (meta.get("tokens") or {}) if isinstance(meta, dict) else {}
            prompt = int(tokens.get("input_tokens", 0) or 0)
            return Usage(prompt, 0, self._cost(litellm, route, response, prompt, 0))

        response, usage, attempts = await self._invoke(tenant_id, route, call, usage_of, reference)
        ranking = [
            (int(r["index"]), float(r["relevance_score"])) for r in (getattr(response, "results", None) or [])
        ]
        ranking.sort(key=lambda item: (-item[1], item[0]))
        return RerankResult(ranking, route.model, usage, attempts)

    # ------------------------------------------------------------------------ shared machinery

    async def _require_route(self, tenant_id: UUID, feature: Feature) -> Route:
        route = await self.route(tenant_id, feature)
        if route is None:
            metrics.LLM_REQUESTS.labels(feature, "no_model").inc()
            raise NoModelConfigured(feature)
        return route

    def _call_args(
        self, route: Route, key: str | None, *, num_retries: bool = True, **fields: Any
    ) -> dict[str, Any]:
        """litellm's keyword arguments for one call: ``fields`` plus what every call shares — the
        route's model and API base, the key, our timeout, and no SDK retries (retries are ours:
        counted, backed off and recorded). ``arerank`` takes no ``num_retries``."""
        kwargs: dict[str, Any] = {
            "model": route.model,
            **fields,
            "timeout": self.settings.llm_timeout_s,
            "max_retries": 0,
        }
        if num_retries:
            kwargs["num_retries"] = 0
        if route.api_base:
            kwargs["api_base"] = route.api_base
        if key is not None:
            kwargs["api_key"] = key
        return kwargs

    def _key(self, route: Route) -> str | None:
        """The API key for ``route``; None lets litellm read the provider's own variable.

        A tenant route pointing away from the configured API base gets a placeholder: neither our
        key nor a provider variable (``OPENAI_API_KEY``…) may travel to an endpoint we do not run.
        """
        if not route.send_key:
            return _NO_KEY
        secret = self.settings.llm_api_key
        return secret.get_secret_value() if secret is not None else None

    def _cost(
        self, litellm: ModuleType, route: Route, response: Any, prompt: int, completion: int
    ) -> float | None:
        priced = _priced(route, prompt, completion)
        if priced is not None:
            return priced
        try:
            return float(litellm.completion_cost(completion_response=response, model=route.model))
        except Exception:  # the model is not in litellm's (local) price map
            return None

    async def _check_budget(self, tenant_id: UUID, route: Route, reference: str | None) -> None:
        from palimpsest.core.db import tenant_tx

        async with tenant_tx(self.pool, tenant_id) as conn:
            budget = await tenant_budget(conn, self.settings)
            if budget is None:
                return
            spent = await month_spend(conn)
            if budget > 0:
                metrics.LLM_BUDGET_USED_RATIO.labels(str(tenant_id)).set(spent / budget)
            if spent < budget:
                return
            await record_usage(
                conn,
                tenant_id,
                feature=route.accounted_as,
                model=route.model,
                outcome="budget_exceeded",
                usage=Usage(),
                attempts=0,
                duration_s=0.0,
                error=f"spent {spent:.4f} of {budget:.4f} USD",
                reference=reference,
            )
        metrics.LLM_REQUESTS.labels(route.feature, "budget_exceeded").inc()
        raise BudgetExceeded(spent, budget)

    async def _invoke(
        self,
        tenant_id: UUID,
        route: Route,
        call: Callable[[ModuleType], Awaitable[_T]],
        usage_of: Callable[[ModuleType, _T], Usage],
        reference: str | None,
    ) -> tuple[_T, Usage, int]:
        """Budget check, the call with retries, then usage, cost and metrics, for any entry point."""
        await self._check_budget(tenant_id, route, reference)
        litellm = await load_litellm()
        secret = self.settings.llm_api_key.get_secret_value() if self.settings.llm_api_key else None
        started = time.monotonic()
        attempts = 0
        while True:
            attempts += 1
            _quiet()
            try:
                response = await asyncio.wait_for(call(litellm), self.settings.llm_timeout_s + 5.0)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                failure = _classify(exc, secret)
                if failure.retryable and attempts <= self.settings.llm_max_retries:
                    delay = _backoff(self.settings, attempts, failure.retry_after)
                    log.warning(
                        "model call %s/%s failed (%s%s); attempt %d, retrying in %.1fs",
                        route.feature,
                        route.model,
                        failure.reason,
                        f" HTTP {failure.status}" if failure.status else "",
                        attempts,
                        delay,
                    )
                    await self._sleep(delay)
                    continue
                await self._finish(tenant_id, route, "error", Usage(), attempts, started, failure, reference)
                raise ModelCallFailed(
                    failure.reason, attempts=attempts, status=failure.status, detail=failure.detail
                ) from None
            break
        usage = usage_of(litellm, response)
        await self._finish(tenant_id, route, "ok", usage, attempts, started, None, reference)
        return response, usage, attempts

    async def _finish(
        self,
        tenant_id: UUID,
        route: Route,
        outcome: str,
        usage: Usage,
        attempts: int,
        started: float,
        failure: _Failure | None,
        reference: str | None,
    ) -> None:
        tenant = str(tenant_id)
        metrics.LLM_REQUESTS.labels(route.feature, outcome).inc()
        if usage.prompt_tokens:
            metrics.LLM_TOKENS.labels(route.accounted_as, tenant, "input").inc(usage.prompt_tokens)
        if usage.completion_tokens:
            metrics.LLM_TOKENS.labels(route.accounted_as, tenant, "output").inc(usage.completion_tokens)
        if usage.cost_usd:
            metrics.LLM_COST_USD.labels(route.accounted_as, tenant).inc(usage.cost_usd)
        error = None
        if failure is not None:
            error = failure.reason + (f" (HTTP {failure.status})" if failure.status else "")
            error += f": {failure.detail}" if failure.detail else ""
        from palimpsest.core.db import tenant_tx

        async with tenant_tx(self.pool, tenant_id) as conn:
            await record_usage(
                conn,
                tenant_id,
                feature=route.accounted_as,
                model=route.model,
                outcome=outcome,
                usage=usage,
                attempts=attempts,
                duration_s=time.monotonic() - started,
                error=error,
                reference=reference,
            )
