"""CLI: ``palimpsest model route set|list|remove`` and ``palimpsest budget set|show`` — a tenant's
model routes and monthly model budget, through the ingest API (:mod:`palimpsest.cli.api`).

Changing them needs a token with the ``manage`` scope (or the operator admin token); a ``read``
token lists and shows. The API checks a route's model with litellm's local price map before it
stores it (:func:`palimpsest.core.llm.model_problem`); ``route set`` then warns when this shell's
environment holds no key for the model (:func:`palimpsest.core.llm.missing_credentials`).
"""

from __future__ import annotations

from typing import Any

import click

from palimpsest.cli.api import api_command, connect, json_option, tenant_option
from palimpsest.cli.api_records import BudgetJson, ModelRouteJson
from palimpsest.cli.output import emit, fail, progress
from palimpsest.cli.runtime import run_async
from palimpsest.core.llm import FEATURES, LLMSettings, load_litellm, missing_credentials
from palimpsest.core.settings import load

_FEATURE = click.Choice(FEATURES)


@click.group()
def model() -> None:
    """A tenant's model routes (which model serves which feature)."""


@model.group()
def route() -> None:
    """Per tenant and feature (analysis, summary, review, embeddings, rerank): which model, where,
    at what price. A route wins over the services' PALIMPSEST_LLM_*_MODEL settings."""


def _price(value: Any) -> str:
    return "-" if value is None else f"{float(value):g}"


def _route_line(r: ModelRouteJson) -> str:
    base = r["api_base"] or "(PALIMPSEST_LLM_API_BASE)"
    if r["input_usd_per_mtok"] is None and r["output_usd_per_mtok"] is None:
        prices = "litellm's price"
    else:
        prices = f"in {_price(r['input_usd_per_mtok'])} out {_price(r['output_usd_per_mtok'])} USD/Mtok"
    return f"{r['feature']:<10} {r['model']}  {base}  {prices}  (updated {r['updated_at']})"


@route.command("set")
@tenant_option
@click.argument("feature", type=_FEATURE)
@click.argument("model_name", metavar="MODEL")
@click.option(
    "--api-base", default=None, help="OpenAI-compatible base URL (default: PALIMPSEST_LLM_API_BASE)."
)
@click.option("--input-usd-per-mtok", type=click.FloatRange(min=0), default=None, help="Price override.")
@click.option("--output-usd-per-mtok", type=click.FloatRange(min=0), default=None, help="Price override.")
@click.option(
    "--allow-unpriced",
    is_flag=True,
    help="Accept a model litellm cannot price (its calls then count nothing against the budget).",
)
@json_option
@run_async
async def route_set(
    tenant: str,
    feature: str,
    model_name: str,
    api_base: str | None,
    input_usd_per_mtok: float | None,
    output_usd_per_mtok: float | None,
    allow_unpriced: bool,
    as_json: bool,
) -> None:
    """Route the tenant's FEATURE calls to MODEL (litellm form, e.g. openai/gpt-4o-mini)."""
    body: dict[str, Any] = {"model": model_name, "allow_unpriced": allow_unpriced}
    for key, value in (
        ("api_base", api_base),
        ("input_usd_per_mtok", input_usd_per_mtok),
        ("output_usd_per_mtok", output_usd_per_mtok),
    ):
        if value is not None:
            body[key] = value
    async with connect(writes=True) as api:
        tenant = await api.tenant(tenant)
        found = await api.call("PUT", f"/v1/tenants/{tenant}/model-routes/{feature}", body)
    emit(found, as_json=as_json, text=_route_line(found))
    problem = missing_credentials(await load_litellm(), load(LLMSettings), model_name, api_base)
    if problem is not None:  # a warning: the services may hold the key this shell does not
        progress(f"warning: {problem} (checked in this shell's environment; the services read their own)")


api_command(
    route,
    "list",
    "GET",
    "/v1/tenants/{tenant}/model-routes",
    help="The tenant's model routes (a feature without one uses the services' settings).",
    text=_route_line,
    empty="no model routes: every feature uses the services' PALIMPSEST_LLM_* settings",
)


@route.command("remove")
@tenant_option
@click.argument("feature", type=_FEATURE)
@json_option
@run_async
async def route_remove(tenant: str, feature: str, as_json: bool) -> None:
    """Remove the tenant's FEATURE route (the services' settings apply again)."""
    async with connect(writes=True) as api:
        tenant = await api.tenant(tenant)
        await api.call("DELETE", f"/v1/tenants/{tenant}/model-routes/{feature}")
    emit({"removed": feature}, as_json=as_json, text=f"removed {feature}")


# --------------------------------------------------------------------------- budget


@click.group()
def budget() -> None:
    """A tenant's monthly model budget (USD, UTC calendar month; a soft limit checked before each call)."""


def _budget_text(b: BudgetJson) -> str:
    own = (
        f"{b['monthly_usd']:g} USD a month"
        if b["monthly_usd"] is not None
        else "none of its own (the services' PALIMPSEST_LLM_MONTHLY_BUDGET_USD applies)"
    )
    return f"budget      {own}\nspent       {b['spent_usd']:.4f} USD this month"


@budget.command("set")
@tenant_option
@click.argument("monthly_usd", type=click.FloatRange(min=0, max=1e9), required=False)
@click.option("--inherit", is_flag=True, help="Drop the tenant's own budget (the services' default applies).")
@json_option
@run_async
async def budget_set(tenant: str, monthly_usd: float | None, inherit: bool, as_json: bool) -> None:
    """Set the tenant's monthly model budget to MONTHLY_USD (or --inherit)."""
    if (monthly_usd is None) == (not inherit):
        fail("give MONTHLY_USD or --inherit (one of them)")
    async with connect(writes=True) as api:
        tenant = await api.tenant(tenant)
        found = await api.call("PUT", f"/v1/tenants/{tenant}/budget", {"monthly_usd": monthly_usd})
    emit(found, as_json=as_json, text=_budget_text(found))


api_command(
    budget,
    "show",
    "GET",
    "/v1/tenants/{tenant}/budget",
    help="The tenant's monthly model budget and what it spent this month.",
    text=_budget_text,
)
