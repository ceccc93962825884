"""Routing: where one tenant's calls of one feature go, and whether a model can serve a route.

A row of ``llm_routes`` (migration 0008) wins, then the feature's setting
(``PALIMPSEST_LLM_ANALYSIS_MODEL``…), then, for the chat features, ``PALIMPSEST_LLM_MODEL``.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Any, Literal, cast

from palimpsest.core import local_embeddings
from palimpsest.core._llm.features import FEATURES, UsageFeature
from palimpsest.core._llm.settings import LLMSettings
from palimpsest.core.stores import CORE, Store

# the models' tables: usage every service's gateway records, routes and budgets ingest's admin API sets
STORE = Store(owner=CORE, reads=("llm_routes",))

if TYPE_CHECKING:  # the database driver loads with the first gateway call, not with the settings
    from palimpsest.core.db import Conn


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
    only the configured API base does (see :meth:`~palimpsest.core._llm.client.Gateway._key`)."""
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
