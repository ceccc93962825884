"""Per-tenant model routes and the monthly model budget (``llm_routes``, ``llm_budgets``).

The LLM gateway (:mod:`palimpsest.core.llm`) reads these rows in the tenant's transaction: a route
wins over the services' ``PALIMPSEST_LLM_*_MODEL`` settings, a budget over
``PALIMPSEST_LLM_MONTHLY_BUDGET_USD``. Both tables are tenant tables under forced row-level
security, so every statement here runs in :func:`scoped_tx`. A route is checked before it is
stored (:func:`palimpsest.core.llm.model_problem`): a model litellm cannot route is refused, one it
cannot price is refused unless the route brings its price or ``allow_unpriced``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal

from palimpsest.core.llm import CHAT_FEATURES, check_api_base, load_litellm, model_problem, month_spend
from palimpsest.ingest.admin.access import Scope, scoped_tx
from palimpsest.ingest.context import IngestContext
from palimpsest.ingest.errors import InvalidRequest, NotFound
from palimpsest.ingest.schemas import BudgetSet, ModelRouteSet
from palimpsest.ingest.store import models
from palimpsest.ingest.store.models import StoredRoute


def _price(value: float | None) -> Decimal | None:
    return None if value is None else Decimal(str(round(value, 6)))


async def set_route(ctx: IngestContext, scope: Scope, feature: str, body: ModelRouteSet) -> StoredRoute:
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
        return await models.upsert_route(
            conn,
            scope.tenant_id,
            feature,
            model=body.model,
            api_base=body.api_base,
            input_usd_per_mtok=_price(body.input_usd_per_mtok),
            output_usd_per_mtok=_price(body.output_usd_per_mtok),
        )


async def list_routes(ctx: IngestContext, scope: Scope) -> list[StoredRoute]:
    async with scoped_tx(ctx, scope) as conn:
        return await models.list_routes(conn)


async def remove_route(ctx: IngestContext, scope: Scope, feature: str) -> None:
    async with scoped_tx(ctx, scope) as conn:
        if not await models.delete_route(conn, feature):
            raise NotFound(f"no {feature} route for this tenant")


@dataclass(frozen=True, slots=True)
class BudgetShown:
    """The tenant's own monthly budget (None: the services' default applies) and this month's spend."""

    monthly_usd: float | None
    updated_at: datetime | None
    spent_usd: float


async def show_budget(ctx: IngestContext, scope: Scope) -> BudgetShown:
    async with scoped_tx(ctx, scope) as conn:
        row = await models.budget(conn)
        spent = await month_spend(conn)
    return BudgetShown(
        monthly_usd=None if row is None else float(row.monthly_usd),
        updated_at=None if row is None else row.updated_at,
        spent_usd=spent,
    )


async def set_budget(ctx: IngestContext, scope: Scope, body: BudgetSet) -> BudgetShown:
    async with scoped_tx(ctx, scope) as conn:
        if body.monthly_usd is None:
            await models.delete_budget(conn)
        else:
            await models.set_budget(conn, scope.tenant_id, Decimal(str(round(body.monthly_usd, 4))))
    return await show_budget(ctx, scope)
