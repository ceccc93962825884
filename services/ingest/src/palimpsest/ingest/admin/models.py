"""Per-tenant model routes and the monthly model budget (``llm_routes``, ``llm_budgets``).

The LLM gateway (:mod:`palimpsest.core.llm`) reads these rows in the tenant's transaction: a route
wins over the services' ``PALIMPSEST_LLM_*_MODEL`` settings, a budget over
``PALIMPSEST_LLM_MONTHLY_BUDGET_USD``. Both tables are tenant tables under forced row-level
security, so every statement here runs in :func:`scoped_tx`. A route is checked before it is
stored (:func:`palimpsest.core.llm.model_problem`): a model litellm cannot route is refused, one it
cannot price is refused unless the route brings its price or ``allow_unpriced``.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from palimpsest.core.db import fetch_all, fetch_one
from palimpsest.core.llm import CHAT_FEATURES, check_api_base, load_litellm, model_problem, month_spend
from palimpsest.ingest.admin.access import Scope, scoped_tx
from palimpsest.ingest.context import IngestContext
from palimpsest.ingest.errors import InvalidRequest, NotFound
from palimpsest.ingest.schemas import BudgetSet, ModelRouteSet

_ROUTE = "feature, model, api_base, input_usd_per_mtok, output_usd_per_mtok, updated_at"


def _price(value: float | None) -> Decimal | None:
    return None if value is None else Decimal(str(round(value, 6)))


async def set_route(ctx: IngestContext, scope: Scope, feature: str, body: ModelRouteSet) -> dict[str, Any]:
    if body.api_base is not None:
        try:
            check_api_base(body.api_base)
        except ValueError as exc:
            raise InvalidRequest(str(exc)) from exc
    prices = (body.input_usd_per_mtok, body.output_usd_per_mtok)
    if feature in CHAT_FEATURES and (prices[0] is None) != (prices[1] is None):
        # the gateway prices a route by its own two prices: a missing one would count as free
        raise InvalidRequest("give both prices (input and output USD per million tokens) or neither")
    priced = body.allow_unpriced or prices != (None, None)
    problem = model_problem(await load_litellm(), feature, body.model, priced=priced)
    if problem is not None:
        raise InvalidRequest(problem)
    async with scoped_tx(ctx, scope) as conn:
        row = await fetch_one(
            conn,
            "INSERT INTO llm_routes (tenant_id, feature, model, api_base, input_usd_per_mtok, output_usd_per_mtok)"
            " VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT (tenant_id, feature) DO UPDATE SET"
            " model = EXCLUDED.model, api_base = EXCLUDED.api_base,"
            " input_usd_per_mtok = EXCLUDED.input_usd_per_mtok,"
            f" output_usd_per_mtok = EXCLUDED.output_usd_per_mtok, updated_at = now() RETURNING {_ROUTE}",
            (
                scope.tenant_id,
                feature,
                body.model,
                body.api_base,
                _price(body.input_usd_per_mtok),
                _price(body.output_usd_per_mtok),
            ),
        )
    assert row is not None
    return row


async def list_routes(ctx: IngestContext, scope: Scope) -> list[dict[str, Any]]:
    async with scoped_tx(ctx, scope) as conn:
        return await fetch_all(conn, f"SELECT {_ROUTE} FROM llm_routes ORDER BY feature")


async def remove_route(ctx: IngestContext, scope: Scope, feature: str) -> None:
    async with scoped_tx(ctx, scope) as conn:
        cur = await conn.execute("DELETE FROM llm_routes WHERE feature = %s", (feature,))
        if cur.rowcount == 0:
            raise NotFound(f"no {feature} route for this tenant")


async def show_budget(ctx: IngestContext, scope: Scope) -> dict[str, Any]:
    async with scoped_tx(ctx, scope) as conn:
        row = await fetch_one(conn, "SELECT monthly_usd, updated_at FROM llm_budgets")
        spent = await month_spend(conn)
    return {
        "monthly_usd": None if row is None else float(row["monthly_usd"]),
        "updated_at": None if row is None else row["updated_at"],
        "spent_usd": spent,
    }


async def set_budget(ctx: IngestContext, scope: Scope, body: BudgetSet) -> dict[str, Any]:
    async with scoped_tx(ctx, scope) as conn:
        if body.monthly_usd is None:
            await conn.execute("DELETE FROM llm_budgets")
        else:
            await conn.execute(
                "INSERT INTO llm_budgets (tenant_id, monthly_usd) VALUES (%s, %s) ON CONFLICT (tenant_id)"
                " DO UPDATE SET monthly_usd = EXCLUDED.monthly_usd, updated_at = now()",
                (scope.tenant_id, Decimal(str(round(body.monthly_usd, 4)))),
            )
    return await show_budget(ctx, scope)
