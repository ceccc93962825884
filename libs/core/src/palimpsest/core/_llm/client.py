"""The gateway: the entry points — chat (analysis, summary, review), embeddings and rerank — each a
thin wrapper around :meth:`Gateway._invoke`, which does the routing-independent part (budget,
retries, usage, metrics) for any litellm call."""

from __future__ import annotations

import asyncio
import dataclasses
import importlib
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Any, TypeVar
from uuid import UUID

from palimpsest.core import local_embeddings, metrics
from palimpsest.core._llm import embeddings
from palimpsest.core._llm.budget import check_budget
from palimpsest.core._llm.embeddings import EmbedResult
from palimpsest.core._llm.features import CHAT_FEATURES, Feature, Message, UsageFeature
from palimpsest.core._llm.loader import load_litellm, loaded_litellm, quiet
from palimpsest.core._llm.retry import GaveUp, with_retries
from palimpsest.core._llm.routes import Route, resolve_route
from palimpsest.core._llm.settings import LLMSettings
from palimpsest.core._llm.usage import Usage, record_call, response_cost
from palimpsest.core.errors import ModelCallFailed, NoModelConfigured

if TYPE_CHECKING:  # the database driver loads with the first gateway call, not with the settings
    from palimpsest.core.db import Pool

log = logging.getLogger("palimpsest.core.llm")

_T = TypeVar("_T")
_NO_KEY = "no-key"  # sent to endpoints that must not receive a real key (see Gateway._key)


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
        await embeddings.close_openai_clients()
        module = loaded_litellm()
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
            return Usage(prompt, completion, response_cost(litellm, route, response, prompt, completion))

        response, usage, attempts = await self._invoke(tenant_id, route, call, usage_of, reference)
        try:
            choice = response.choices[0]
            text = choice.message.content or ""
            finish = getattr(choice, "finish_reason", None)
        except (AttributeError, IndexError, TypeError) as exc:
            raise ModelCallFailed("malformed_response", attempts=attempts, detail="no choices") from exc
        return ChatResult(str(text), route.model, usage, attempts, str(finish) if finish else None)

    # ------------------------------------------------------------------------ embeddings
    # (issue 7: the embedder's entry point; its helpers are palimpsest.core._llm.embeddings)

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
        embeddings.no_sdk_retries(await load_litellm())
        packed = route.model.startswith("openai/") if packed is None else packed

        base = route.api_base if embeddings.openai_compatible(route, key) else None
        timeout_s = self.settings.llm_timeout_s

        async def call(litellm: ModuleType) -> Any:
            if base is not None and key is not None:
                return await embeddings.openai_embed(
                    base, key, timeout_s, route.model, inputs, packed=bool(packed)
                )
            kwargs = self._call_args(route, key, input=inputs)
            if packed:
                kwargs["encoding_format"] = "base64"
                embeddings.quiet_base64()
            return await litellm.aembedding(**kwargs)

        def usage_of(litellm: ModuleType, response: Any) -> Usage:
            raw = getattr(response, "usage", None)
            prompt = int(getattr(raw, "prompt_tokens", 0) or 0)
            if isinstance(response, embeddings.Embeddings):
                return Usage(prompt, 0, embeddings.embedding_cost(litellm, route, prompt))
            return Usage(prompt, 0, response_cost(litellm, route, response, prompt, 0))

        response, usage, attempts = await self._invoke(tenant_id, route, call, usage_of, reference)
        vectors = embeddings.vectors_of(response, len(inputs), attempts)
        return EmbedResult(vectors, route.model, usage, attempts)

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
            return Usage(prompt, 0, response_cost(litellm, route, response, prompt, 0))

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

    async def _invoke(
        self,
        tenant_id: UUID,
        route: Route,
        call: Callable[[ModuleType], Awaitable[_T]],
        usage_of: Callable[[ModuleType, _T], Usage],
        reference: str | None,
    ) -> tuple[_T, Usage, int]:
        """Budget check, the call with retries, then usage, cost and metrics, for any entry point."""
        await check_budget(self.pool, self.settings, tenant_id, route, reference)
        litellm = await load_litellm()
        secret = self.settings.llm_api_key.get_secret_value() if self.settings.llm_api_key else None
        started = time.monotonic()

        async def attempt() -> _T:
            quiet()
            return await call(litellm)

        try:
            response, attempts = await with_retries(
                attempt,
                self.settings,
                sleep=self._sleep,
                secret=secret,
                what=f"{route.feature}/{route.model}",
            )
        except GaveUp as gave_up:
            failure = gave_up.failure
            await record_call(
                self.pool, tenant_id, route, "error", Usage(), gave_up.attempts, started, failure, reference
            )
            raise ModelCallFailed(
                failure.reason, attempts=gave_up.attempts, status=failure.status, detail=failure.detail
            ) from None
        usage = usage_of(litellm, response)
        await record_call(self.pool, tenant_id, route, "ok", usage, attempts, started, None, reference)
        return response, usage, attempts
