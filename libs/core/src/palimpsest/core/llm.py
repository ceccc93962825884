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

This module is the public face; the parts live in the private package
:mod:`palimpsest.core._llm` (settings, routes, usage, budget, loader, retry, embeddings, client),
one concern a module. Import from here.
"""

from __future__ import annotations

from palimpsest.core._llm.budget import month_spend, tenant_budget
from palimpsest.core._llm.client import ChatResult, Gateway, RerankResult
from palimpsest.core._llm.embeddings import EmbedResult
from palimpsest.core._llm.features import CHAT_FEATURES, FEATURES, Feature, Message, UsageFeature
from palimpsest.core._llm.loader import load_litellm
from palimpsest.core._llm.routes import Route, missing_credentials, model_problem, resolve_route, sends_key
from palimpsest.core._llm.settings import LLMSettings, check_api_base
from palimpsest.core._llm.usage import Usage, record_usage

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
    "UsageFeature",
    "check_api_base",
    "load_litellm",
    "missing_credentials",
    "model_problem",
    "month_spend",
    "record_usage",
    "resolve_route",
    "sends_key",
    "tenant_budget",
]
