"""The LLM gateway against the local fake model server: routing, keys, retries, usage, budgets."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator
from typing import Any
from uuid import UUID

import pytest
from pydantic import SecretStr

from palimpsest.core import metrics
from palimpsest.core.db import tenant_tx
from palimpsest.core.errors import BudgetExceeded, ModelCallFailed, NoModelConfigured
from palimpsest.core.llm import Gateway, LLMSettings
from palimpsest.core.service import Infra
from palimpsest.devtools.fakes.llm import FakeLLM
from tests.support.tenants import create_tenant

KEY = "sk-gateway-test-91b2e4"
MESSAGES = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "one two three"}]


class Sleeps:
    """A sleep that records the requested delays instead of waiting (retries stay instant)."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, delay: float) -> None:
        self.delays.append(delay)


@pytest.fixture
def fake() -> Iterator[FakeLLM]:
    with FakeLLM(reply="four words of reply", api_key=KEY, hang_s=3.0) as server:
        yield server


def settings(fake: FakeLLM, **overrides: Any) -> LLMSettings:
    values: dict[str, Any] = {
        "llm_model": "openai/fake-chat",
        "llm_api_base": fake.base_url,
        "llm_api_key": SecretStr(KEY),
        "llm_timeout_s": 0.5,
        "llm_max_retries": 3,
        "llm_retry_base_s": 1.0,
        "llm_retry_max_s": 8.0,
    }
    values.update(overrides)
    return LLMSettings.model_construct(**{**LLMSettings().model_dump(), **values})


@pytest.fixture
async def tenant(infra: Infra) -> UUID:
    return await create_tenant(infra.pool, "gateway")


@pytest.fixture
async def closing(infra: Infra) -> AsyncIterator[list[Gateway]]:
    gateways: list[Gateway] = []
    yield gateways
    for gateway in gateways:
        await gateway.aclose()


def gateway_for(
    infra: Infra, closing: list[Gateway], s: LLMSettings, sleeps: Sleeps | None = None
) -> Gateway:
    gateway = Gateway(infra.pool, s, sleep=sleeps or Sleeps())
    closing.append(gateway)
    return gateway


async def usage(infra: Infra, tenant: UUID) -> list[dict[str, Any]]:
    async with tenant_tx(infra.pool, tenant) as conn:
        cur = await conn.execute(
            "SELECT feature, model, outcome, prompt_tokens, completion_tokens, cost_usd, attempts, error, reference"
            " FROM llm_usage ORDER BY created_at"
        )
        return [dict(r) for r in await cur.fetchall()]


async def test_chat_records_usage_cost_and_metrics(
    infra: Infra, tenant: UUID, fake: FakeLLM, closing: list[Gateway]
) -> None:
    s = settings(fake, llm_input_usd_per_mtok=2.0, llm_output_usd_per_mtok=10.0)
    gateway = gateway_for(infra, closing, s)
    before = metrics.LLM_TOKENS.labels("review", str(tenant), "input")._value.get()
    result = await gateway.chat(tenant, "review", MESSAGES, max_tokens=64, reference="r-1")
    assert result.text == "four words of reply"
    assert (result.usage.prompt_tokens, result.usage.completion_tokens) == (5, 4)
    assert result.usage.cost_usd == pytest.approx((5 * 2.0 + 4 * 10.0) / 1e6)
    [request] = fake.requests("chat")
    assert request.body["model"] == "fake-chat" and request.body["max_tokens"] == 64
    assert request.headers["authorization"] == f"Bearer {KEY}"
    [row] = await usage(infra, tenant)
    assert (row["feature"], row["outcome"], row["attempts"], row["reference"]) == ("review", "ok", 1, "r-1")
    assert float(row["cost_usd"]) == pytest.approx(50 / 1e6)
    assert metrics.LLM_TOKENS.labels("review", str(tenant), "input")._value.get() == before + 5


async def test_routing_tenant_row_then_feature_setting_then_default(
    infra: Infra, tenant: UUID, fake: FakeLLM, closing: list[Gateway]
) -> None:
    gateway = gateway_for(infra, closing, settings(fake, llm_summary_model="openai/fake-summary"))
    assert (await gateway.route(tenant, "analysis")).model == "openai/fake-chat"  # type: ignore[union-attr]
    assert (await gateway.route(tenant, "summary")).model == "openai/fake-summary"  # type: ignore[union-attr]
    assert await gateway.route(tenant, "embeddings") is None  # no fall-back to the chat model
    async with tenant_tx(infra.pool, tenant) as conn:
        await conn.execute(
            "INSERT INTO llm_routes (tenant_id, feature, model) VALUES (%s, 'analysis', 'openai/tenant-model')",
            (tenant,),
        )
    route = await gateway.route(tenant, "analysis")
    assert route is not None and route.model == "openai/tenant-model" and route.source == "tenant"
    await gateway.chat(tenant, "analysis", MESSAGES, max_tokens=10)
    assert fake.requests("chat")[-1].body["model"] == "tenant-model"
    other = await create_tenant(infra.pool, "gateway-other")
    assert (await gateway.route(other, "analysis")).model == "openai/fake-chat"  # type: ignore[union-attr]
    with pytest.raises(NoModelConfigured):
        await gateway.rerank(tenant, "q", ["d"])  # no rerank model anywhere


async def test_the_key_is_only_sent_to_the_configured_api_base(
    infra: Infra, tenant: UUID, fake: FakeLLM, closing: list[Gateway]
) -> None:
    with FakeLLM(reply="elsewhere") as elsewhere:
        async with tenant_tx(infra.pool, tenant) as conn:
            await conn.execute(
                "INSERT INTO llm_routes (tenant_id, feature, model, api_base) VALUES (%s, 'review', 'openai/x', %s)",
                (tenant, elsewhere.base_url),
            )
        gateway = gateway_for(infra, closing, settings(fake))
        await gateway.chat(tenant, "review", MESSAGES, max_tokens=10)
        [request] = elsewhere.requests("chat")
        assert KEY not in str(request.headers)
        assert request.headers["authorization"] == "Bearer no-key"  # not even a provider variable
        assert fake.requests() == []


async def test_retries_back_off_and_honour_retry_after(
    infra: Infra, tenant: UUID, fake: FakeLLM, closing: list[Gateway]
) -> None:
    sleeps = Sleeps()
    gateway = gateway_for(infra, closing, settings(fake), sleeps)
    fake.fail(429, retry_after=5)
    fake.fail(503)
    fake.fail("timeout")
    result = await gateway.chat(tenant, "analysis", MESSAGES, max_tokens=10)
    assert result.attempts == 4
    assert [c.failed for c in fake.requests("chat")] == ["429", "503", "timeout", None]
    assert sleeps.delays[0] >= 5.0  # Retry-After beats the 1 s first backoff
    assert 1.6 <= sleeps.delays[1] <= 2.4 and 3.2 <= sleeps.delays[2] <= 4.8  # exponential, ±20 %
    [row] = await usage(infra, tenant)
    assert row["attempts"] == 4 and row["outcome"] == "ok"


async def test_exhausted_retries_raise_with_a_stable_reason_and_no_key(
    infra: Infra, tenant: UUID, fake: FakeLLM, closing: list[Gateway]
) -> None:
    gateway = gateway_for(infra, closing, settings(fake, llm_max_retries=1))
    fake.fail(500, times=2)
    with pytest.raises(ModelCallFailed) as failed:
        await gateway.chat(tenant, "analysis", MESSAGES, max_tokens=10)
    assert failed.value.reason == "server_error" and failed.value.status == 500 and failed.value.attempts == 2
    assert KEY not in str(failed.value)
    [row] = await usage(infra, tenant)
    assert row["outcome"] == "error" and row["attempts"] == 2 and KEY not in row["error"]


@pytest.mark.parametrize(
    ("failure", "reason"), [("oversize", "context_window_exceeded"), (400, "bad_request")]
)
async def test_client_errors_are_not_retried(
    infra: Infra, tenant: UUID, fake: FakeLLM, closing: list[Gateway], failure: Any, reason: str
) -> None:
    gateway = gateway_for(infra, closing, settings(fake))
    fake.fail(failure)
    with pytest.raises(ModelCallFailed) as failed:
        await gateway.chat(tenant, "analysis", MESSAGES, max_tokens=10)
    assert failed.value.reason == reason and failed.value.attempts == 1
    assert len(fake.requests("chat")) == 1


async def test_a_wrong_key_is_an_authentication_failure(
    infra: Infra, tenant: UUID, fake: FakeLLM, closing: list[Gateway]
) -> None:
    gateway = gateway_for(infra, closing, settings(fake, llm_api_key=SecretStr("sk-wrong-key-000")))
    with pytest.raises(ModelCallFailed) as failed:
        await gateway.chat(tenant, "analysis", MESSAGES, max_tokens=10)
    assert failed.value.reason == "authentication" and failed.value.attempts == 1
    assert "sk-wrong-key-000" not in str(failed.value)


async def test_no_key_at_all_is_an_authentication_failure_and_not_retried(
    infra: Infra, tenant: UUID, fake: FakeLLM, closing: list[Gateway]
) -> None:
    """The client refuses to send a request without a key (litellm calls it a 500): retrying cannot
    bring one, so it fails at once and says which setting is missing."""
    if "OPENAI_API_KEY" in os.environ:
        pytest.skip("OPENAI_API_KEY is set in this environment: the call would carry it")
    sleeps = Sleeps()
    gateway = gateway_for(infra, closing, settings(fake, llm_api_key=None), sleeps)
    with pytest.raises(ModelCallFailed) as failed:
        await gateway.chat(tenant, "analysis", MESSAGES, max_tokens=10)
    assert failed.value.reason == "authentication" and failed.value.attempts == 1
    assert sleeps.delays == [] and fake.requests() == []
    assert "PALIMPSEST_LLM_API_KEY" in str(failed.value) and "Missing credentials" in str(failed.value)
    [row] = await usage(infra, tenant)
    assert (row["outcome"], row["attempts"]) == ("error", 1)


async def test_the_monthly_budget_stops_calls_before_they_are_made(
    infra: Infra, tenant: UUID, fake: FakeLLM, closing: list[Gateway]
) -> None:
    s = settings(
        fake, llm_input_usd_per_mtok=1000.0, llm_output_usd_per_mtok=1000.0, llm_monthly_budget_usd=1.0
    )
    gateway = gateway_for(infra, closing, s)
    async with tenant_tx(infra.pool, tenant) as conn:  # the tenant's own budget wins over the setting
        await conn.execute("INSERT INTO llm_budgets (tenant_id, monthly_usd) VALUES (%s, 0.005)", (tenant,))
    first = await gateway.chat(tenant, "analysis", MESSAGES, max_tokens=10)
    assert first.usage.cost_usd == pytest.approx(0.009)
    before = metrics.LLM_REQUESTS.labels("analysis", "budget_exceeded")._value.get()
    with pytest.raises(BudgetExceeded) as exceeded:
        await gateway.chat(tenant, "analysis", MESSAGES, max_tokens=10)
    assert exceeded.value.budget_usd == pytest.approx(0.005)
    assert len(fake.requests("chat")) == 1  # no call was made
    assert [r["outcome"] for r in await usage(infra, tenant)] == ["ok", "budget_exceeded"]
    assert metrics.LLM_REQUESTS.labels("analysis", "budget_exceeded")._value.get() == before + 1
    # what PalimpsestModelBudgetNearlyExhausted alerts on: the share spent, as of the last check
    assert metrics.LLM_BUDGET_USED_RATIO.labels(str(tenant))._value.get() == pytest.approx(0.009 / 0.005)


async def test_rerank_entry_point(infra: Infra, tenant: UUID, fake: FakeLLM, closing: list[Gateway]) -> None:
    gateway = gateway_for(
        infra, closing, settings(fake, llm_rerank_model="cohere/fake-rerank", llm_api_base=fake.url)
    )
    result = await gateway.rerank(
        tenant, "billing invoice", ["ledger", "invoice billing total", "billing"], top_n=2
    )
    assert [index for index, _ in result.ranking] == [1, 2]
    assert fake.requests("rerank")[0].body["query"] == "billing invoice"
    assert [r["feature"] for r in await usage(infra, tenant)] == ["rerank"]


async def test_a_malformed_response_is_retried(
    infra: Infra, tenant: UUID, fake: FakeLLM, closing: list[Gateway]
) -> None:
    gateway = gateway_for(infra, closing, settings(fake))
    fake.fail("malformed")
    result = await gateway.chat(tenant, "analysis", MESSAGES, max_tokens=10)
    assert result.attempts == 2 and result.text == "four words of reply"


async def test_a_closed_gateway_leaves_no_closed_client_to_the_others(
    infra: Infra, tenant: UUID, fake: FakeLLM
) -> None:
    """litellm and the gateway keep HTTP clients per process (per event loop): a gateway's close
    closes them, and a call of another gateway, open or new, must then get a working one."""
    s = settings(fake, llm_max_retries=1)
    chat_gateway, embed_gateway, other = (Gateway(infra.pool, s, sleep=Sleeps()) for _ in range(3))
    embed_settings = settings(fake, llm_embeddings_model="openai/fake-embed", llm_max_retries=1)
    embedder = Gateway(infra.pool, embed_settings, sleep=Sleeps())
    await chat_gateway.chat(tenant, "analysis", MESSAGES, max_tokens=10)
    await embedder.embed(tenant, ["one", "two"])
    await chat_gateway.aclose()
    assert (await other.chat(tenant, "analysis", MESSAGES, max_tokens=10)).attempts == 1
    assert len((await embedder.embed(tenant, ["three"])).vectors) == 1
    for gateway in (embed_gateway, other, embedder):
        await gateway.aclose()
    later = Gateway(infra.pool, s, sleep=Sleeps())
    try:
        assert (await later.chat(tenant, "analysis", MESSAGES, max_tokens=10)).attempts == 1
    finally:
        await later.aclose()
    assert len(fake.requests("chat")) == 3
