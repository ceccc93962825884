"""Budgets: a tenant whose spend this calendar month (UTC) reached its budget (``llm_budgets`` row,
else ``PALIMPSEST_LLM_MONTHLY_BUDGET_USD``) gets :class:`~palimpsest.core.errors.BudgetExceeded`
before any call is made. The check is a soft limit: calls already in flight are not stopped."""

from __future__ import annotations

from typing import TYPE_CHECKING
from uuid import UUID

from palimpsest.core import metrics
from palimpsest.core._llm.routes import Route
from palimpsest.core._llm.settings import LLMSettings
from palimpsest.core._llm.usage import Usage, record_usage
from palimpsest.core.errors import BudgetExceeded
from palimpsest.core.stores import CORE, Store

# the models' tables: usage every service's gateway records, routes and budgets ingest's admin API sets
STORE = Store(owner=CORE, reads=("llm_usage", "llm_budgets"))

if TYPE_CHECKING:  # the database driver loads with the first gateway call, not with the settings
    from palimpsest.core.db import Conn, Pool


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


async def check_budget(
    pool: Pool, settings: LLMSettings, tenant_id: UUID, route: Route, reference: str | None
) -> None:
    """Raise BudgetExceeded (and record the refused call) when the tenant's month is spent."""
    from palimpsest.core.db import tenant_tx

    async with tenant_tx(pool, tenant_id) as conn:
        budget = await tenant_budget(conn, settings)
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
