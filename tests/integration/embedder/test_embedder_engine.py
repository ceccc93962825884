"""Batching, retries, splitting and reply checks of the embedding engine, against an in-process fake.

These need no servers: the fake provider below implements the engine's Provider interface and
fails on command. The HTTP path (the LLM gateway against the fake OpenAI-compatible server) is
covered by the service tests.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from palimpsest.embedder.batching import (
    BatchLimits,
    Item,
    embedding_text,
    estimate_tokens,
    make_item,
    plan_batches,
    truncate,
)
from palimpsest.embedder.engine import BatchEmbedder, Embedded, RetryPolicy
from palimpsest.embedder.errors import BatchTooLarge, ProviderError, ProviderUnavailable, RateLimited


@dataclass
class FakeProvider:
    """Deterministic vectors; planted failures consumed in order, one per request."""

    dimension: int = 4
    max_inputs: int | None = None  # more inputs than this → BatchTooLarge
    max_chars: int | None = None  # an input longer than this → BatchTooLarge
    failures: list[Exception] = field(default_factory=list)
    calls: list[list[str]] = field(default_factory=list)
    model: str = "fake/embed"

    async def embed(self, texts: list[str]) -> Embedded:
        self.calls.append(list(texts))
        if self.failures:
            raise self.failures.pop(0)
        if self.max_inputs is not None and len(texts) > self.max_inputs:
            raise BatchTooLarge(f"{len(texts)} inputs")
        if self.max_chars is not None and any(len(t) > self.max_chars for t in texts):
            raise BatchTooLarge("input too long")
        vectors = [[float(len(t) % 7 + 1)] + [0.5] * (self.dimension - 1) for t in texts]
        return Embedded(vectors, tokens=sum(len(t) for t in texts), cost_usd=0.001 * len(texts))


class Sleeps:
    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, delay: float) -> None:
        self.delays.append(delay)


def items(n: int, size: int = 30) -> list[Item]:
    limits = BatchLimits()
    return [make_item(f"{i:040x}", 0, "x" * size, limits) for i in range(n)]


def engine(provider: FakeProvider, **policy: object) -> tuple[BatchEmbedder, Sleeps]:
    sleeps = Sleeps()
    e = BatchEmbedder(
        provider,
        BatchLimits(),
        RetryPolicy(**{"jitter": False, "base_delay_s": 1.0, **policy}),  # type: ignore[arg-type]
        sleep=sleeps,
    )
    return e, sleeps


def test_token_estimate_and_truncation_are_counted() -> None:
    assert estimate_tokens("abcdef", 3.0) == 2
    assert estimate_tokens("", 3.0) == 1
    assert truncate("a" * 10, 2, 3.0) == ("a" * 6, True)
    assert truncate("a" * 6, 2, 3.0) == ("a" * 6, False)
    item = make_item("b" * 40, 3, "y" * 100, BatchLimits(max_input_tokens=10, chars_per_token=3.0))
    assert item.truncated and len(item.text) == 30 and item.tokens == 10


def test_batches_respect_both_count_and_tokens() -> None:
    limits = BatchLimits(max_inputs=4, max_tokens=100, chars_per_token=1.0)
    many_small = [make_item("a" * 40, i, "x" * 10, limits) for i in range(10)]
    assert [len(b) for b in plan_batches(many_small, limits)] == [4, 4, 2]
    few_large = [make_item("a" * 40, i, "x" * 45, limits) for i in range(5)]
    assert [len(b) for b in plan_batches(few_large, limits)] == [2, 2, 1]
    # an input alone over the batch budget still goes (alone), never dropped
    huge = [
        make_item(
            "a" * 40, 0, "x" * 500, BatchLimits(max_input_tokens=1000, max_tokens=100, chars_per_token=1.0)
        )
    ]
    assert [len(b) for b in plan_batches(huge, limits)] == [1]


def test_embedding_text_is_blob_only() -> None:
    assert embedding_text("total", "function", "def total(): ...") == "function total\ndef total(): ..."
    assert embedding_text(None, "window", "body") == "body"
    assert embedding_text("Intro", "section", "# Intro") == "# Intro"


async def test_rate_limits_are_retried_with_backoff_and_retry_after() -> None:
    provider = FakeProvider(
        failures=[RateLimited("429"), RateLimited("429", retry_after_s=7.0), ProviderUnavailable("500")]
    )
    e, sleeps = engine(provider)
    pairs = await e.embed(items(3))
    assert len(pairs) == 3 and len(provider.calls) == 4
    assert sleeps.delays == [1.0, 7.0, 4.0]  # exponential, except where the provider said how long
    assert e.stats.retries == 3 and e.stats.rate_limited == 2


async def test_long_waits_heartbeat_the_message() -> None:
    beats: list[int] = []

    async def beat() -> None:
        beats.append(1)

    provider = FakeProvider(failures=[RateLimited("429", retry_after_s=25.0)])
    e, sleeps = engine(provider, beat_every_s=10.0)
    e.beat = beat
    await e.embed(items(1))
    assert sleeps.delays == [10.0, 10.0, 5.0] and len(beats) == 3


async def test_retries_are_bounded() -> None:
    provider = FakeProvider(failures=[RateLimited("429")] * 10)
    e, _ = engine(provider, max_retries=3)
    with pytest.raises(RateLimited):
        await e.embed(items(2))
    assert len(provider.calls) == 4


async def test_a_batch_rejected_as_too_large_is_split() -> None:
    provider = FakeProvider(max_inputs=3)
    e, _ = engine(provider)
    batch = items(10)
    pairs = await e.embed(batch)
    assert [p[0] for p in pairs] == batch  # order kept
    assert [len(c) for c in provider.calls] == [10, 5, 2, 3, 5, 2, 3]
    assert e.stats.splits == 3


async def test_a_single_input_too_large_is_cut_and_counted() -> None:
    provider = FakeProvider(max_chars=20)
    e, _ = engine(provider)
    pairs = await e.embed(items(1, size=70))
    assert len(pairs) == 1 and pairs[0][0].truncated and len(pairs[0][0].text) <= 20
    assert e.stats.truncated == 1


async def test_an_input_that_never_fits_fails_the_run() -> None:
    provider = FakeProvider(max_chars=0)
    e, _ = engine(provider, max_halvings=3)
    with pytest.raises(ProviderError, match="too large"):
        await e.embed(items(1, size=64))


async def test_replies_are_checked() -> None:
    class Wrong(FakeProvider):
        async def embed(self, texts: list[str]) -> Embedded:
            reply = await super().embed(texts)
            return Embedded(reply.vectors[:-1])

    e, _ = engine(Wrong())
    with pytest.raises(ProviderError, match="vectors for"):
        await e.embed(items(2))

    class Drifting(FakeProvider):
        async def embed(self, texts: list[str]) -> Embedded:
            self.dimension += 1
            return await super().embed(texts)

    e, _ = engine(Drifting())
    await e.embed(items(1))
    with pytest.raises(ProviderError, match="dimensions after"):
        await e.embed(items(1))

    class NotFinite(FakeProvider):
        async def embed(self, texts: list[str]) -> Embedded:
            return Embedded([[float("nan")] * 4 for _ in texts])

    e, _ = engine(NotFinite())
    with pytest.raises(ProviderError, match="non-finite"):
        await e.embed(items(1))

    class PastFloat4(FakeProvider):  # finite as a float, infinite as the float4 it is stored as
        async def embed(self, texts: list[str]) -> Embedded:
            return Embedded([[0.5, 1e39, 0.25, 0.0] for _ in texts])

    e, _ = engine(PastFloat4())
    with pytest.raises(ProviderError, match="non-finite"):
        await e.embed(items(1))


async def test_vectors_come_back_as_the_float4_they_are_stored_as() -> None:
    e, _ = engine(FakeProvider())
    [(_, vector)] = await e.embed(items(1))
    assert vector.typecode == "f"


async def test_usage_is_summed() -> None:
    e, _ = engine(FakeProvider())
    await e.embed(items(2, size=10))
    await e.embed(items(1, size=10))
    assert e.stats.tokens == 30 and e.stats.cost_usd == pytest.approx(0.003) and e.stats.cost_known
