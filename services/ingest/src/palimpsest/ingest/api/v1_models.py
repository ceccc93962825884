"""/v1 routes for per-tenant model routes and the monthly model budget (``manage`` changes them,
``read`` sees them)."""

from __future__ import annotations

from fastapi import APIRouter, Response, status

from palimpsest.core.llm import Feature
from palimpsest.ingest.admin import models
from palimpsest.ingest.api.deps import Ctx, ManageScope, ReadScope
from palimpsest.ingest.schemas import Budget, BudgetSet, ModelRoute, ModelRouteList, ModelRouteSet

router = APIRouter(prefix="/v1/tenants/{tenant_id}", tags=["models"])


@router.get("/model-routes")
async def list_model_routes(ctx: Ctx, scope: ReadScope) -> ModelRouteList:
    """The tenant's model routes (features without one use the services' PALIMPSEST_LLM_* settings)."""
    return ModelRouteList(items=[ModelRoute.model_validate(r) for r in await models.list_routes(ctx, scope)])


@router.put("/model-routes/{feature}")
async def set_model_route(feature: Feature, body: ModelRouteSet, ctx: Ctx, scope: ManageScope) -> ModelRoute:
    """Route the tenant's ``feature`` calls to a model; refused when litellm cannot route it, or
    cannot price it and the body gives no price and no ``allow_unpriced``."""
    return ModelRoute.model_validate(await models.set_route(ctx, scope, feature, body))


@router.delete("/model-routes/{feature}", status_code=status.HTTP_204_NO_CONTENT)
async def remove_model_route(feature: Feature, ctx: Ctx, scope: ManageScope) -> Response:
    await models.remove_route(ctx, scope, feature)
    return Response(status_code=status.HTTP_204_NO_CONTENT)


@router.get("/budget")
async def show_budget(ctx: Ctx, scope: ReadScope) -> Budget:
    """The tenant's monthly model budget and what it spent this month."""
    return Budget.model_validate(await models.show_budget(ctx, scope))


@router.put("/budget")
async def set_budget(body: BudgetSet, ctx: Ctx, scope: ManageScope) -> Budget:
    """Set (or with ``monthly_usd`` null, drop) the tenant's monthly model budget."""
    return Budget.model_validate(await models.set_budget(ctx, scope, body))
