"""The embedder's Provider, backed by the LLM gateway: routing, usage, budgets — and our retries.

The gateway resolves the tenant's ``embeddings`` route (no route: :class:`NoModel`, no default),
records usage per call and enforces the tenant's spend budget. It is built here with its own
retries turned off, so the engine's backoff — which heart-beats the message while it waits —
is the only retry loop. Gateway failures are translated at this boundary into the engine's
Provider errors: rate limits and transient failures are retried, a request rejected as too
large is split, anything else ends the run as ``embedding_failed``.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from uuid import UUID

from palimpsest.core.errors import BudgetExceeded, ModelCallFailed, NoModelConfigured
from palimpsest.core.llm import Gateway, LLMSettings, Route
from palimpsest.core.service import Infra
from palimpsest.embedder.engine import Embedded, Provider
from palimpsest.embedder.errors import (
    BatchTooLarge,
    NoModel,
    ProviderError,
    ProviderUnavailable,
    RateLimited,
    SpendBudgetExceeded,
)

_TRANSIENT = frozenset({"timeout", "connection_error", "server_error", "malformed_response"})
# how providers say "this request is too big" (OpenAI, Voyage, Cohere, Azure, vLLM …)
_TOO_LARGE = re.compile(
    r"too (many|large|long)|maximum (context|input|batch|request)|max(imum)? .*tokens|exceed|payload",
    re.IGNORECASE,
)


def translate(exc: ModelCallFailed) -> ProviderError:
    if exc.reason == "rate_limited":
        return RateLimited(str(exc))
    if exc.reason in _TRANSIENT:
        return ProviderUnavailable(str(exc))
    if exc.reason == "context_window_exceeded" or exc.status == 413:
        return BatchTooLarge(str(exc))
    if exc.reason == "bad_request" and _TOO_LARGE.search(exc.detail or ""):
        return BatchTooLarge(str(exc))
    return ProviderError(str(exc))


@dataclass(slots=True)
class GatewayProvider:
    """One tenant's routed embeddings model, as the engine's Provider."""

    gateway: Gateway
    tenant_id: UUID
    route: Route
    reference: str | None = None

    @property
    def model(self) -> str:
        return self.route.model

    async def embed(self, texts: list[str]) -> Embedded:
        try:
            result = await self.gateway.embed(
                self.tenant_id, texts, route=self.route, reference=self.reference
            )
        except BudgetExceeded as exc:
            raise SpendBudgetExceeded(str(exc)) from exc
        except NoModelConfigured as exc:
            raise NoModel(str(exc)) from exc
        except ModelCallFailed as exc:
            raise translate(exc) from exc
        return Embedded(result.vectors, result.usage.prompt_tokens, result.usage.cost_usd)


def embedder_gateway(infra: Infra, settings: LLMSettings, timeout_s: float) -> Gateway:
    """A gateway whose own retries are off (the engine retries, heart-beating the message)."""
    llm = settings.model_copy(update={"llm_max_retries": 0, "llm_timeout_s": timeout_s})
    return Gateway(infra.pool, llm)


async def provider_for(gateway: Gateway, tenant_id: UUID, reference: str | None = None) -> Provider:
    route = await gateway.embeddings_route(tenant_id)
    if route is None:
        raise NoModel(
            "no embeddings model is routed for this tenant (llm_routes or PALIMPSEST_LLM_EMBEDDINGS_MODEL)"
        )
    return GatewayProvider(gateway, tenant_id, route, reference)


def gateway_providers(gateway: Gateway) -> Callable[[UUID, str], Awaitable[Provider]]:
    """The service's ProviderFactory: the tenant's routed model, usage tagged with ``reference``."""

    async def providers(tenant_id: UUID, reference: str) -> Provider:
        return await provider_for(gateway, tenant_id, reference)

    return providers
