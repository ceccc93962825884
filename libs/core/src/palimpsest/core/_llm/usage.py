"""Usage and cost: token counts and prices of a call, and its ``llm_usage`` row and metrics.

One ``llm_usage`` row per call (tokens, cost when the price is known, attempts, outcome) and the
``LLM_TOKENS`` / ``LLM_COST_USD`` / ``LLM_REQUESTS`` metrics.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from decimal import Decimal
from types import ModuleType
from typing import TYPE_CHECKING, Any
from uuid import UUID

from palimpsest.core import metrics
from palimpsest.core._llm.features import UsageFeature
from palimpsest.core._llm.retry import Failure
from palimpsest.core._llm.routes import Route
from palimpsest.core.ids import uuid7
from palimpsest.core.stores import CORE, Owns, Store

# the models' tables: usage every service's gateway records, routes and budgets ingest's admin API sets
STORE = Store(owner=CORE, writes=(Owns("llm_usage"),))

if TYPE_CHECKING:  # the database driver loads with the first gateway call, not with the settings
    from palimpsest.core.db import Conn, Pool


@dataclass(frozen=True, slots=True)
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float | None = None  # None: the price of this model is not known


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


def priced(route: Route, prompt_tokens: int, completion_tokens: int) -> float | None:
    """The cost of the tokens at the route's own prices; None when the route names no price."""
    if route.input_usd_per_mtok is None and route.output_usd_per_mtok is None:
        return None
    return (
        prompt_tokens * (route.input_usd_per_mtok or 0.0)
        + completion_tokens * (route.output_usd_per_mtok or 0.0)
    ) / 1_000_000


def response_cost(
    litellm: ModuleType, route: Route, response: Any, prompt: int, completion: int
) -> float | None:
    """The cost of one response: the route's own price, else litellm's price map, else unknown."""
    cost = priced(route, prompt, completion)
    if cost is not None:
        return cost
    try:
        return float(litellm.completion_cost(completion_response=response, model=route.model))
    except Exception:  # the model is not in litellm's (local) price map
        return None


async def record_call(
    pool: Pool,
    tenant_id: UUID,
    route: Route,
    outcome: str,
    usage: Usage,
    attempts: int,
    started: float,
    failure: Failure | None,
    reference: str | None,
) -> None:
    """The metrics and the ``llm_usage`` row of one finished call (``started``: its monotonic start)."""
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

    async with tenant_tx(pool, tenant_id) as conn:
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
