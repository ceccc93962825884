"""Sending batches to the provider: retries with backoff, splitting what is too large, checking replies.

The engine talks to a :class:`Provider` — one tenant's model, already routed — so it can be tested
with a fake and used with the LLM gateway alike. Rate limits and transient failures are retried
with exponential backoff (the provider's ``Retry-After`` wins when it gives one), heart-beating
the message while it waits. A batch the provider rejects as too large is split in half, and a
single input still too large is cut in half again, a bounded number of times. Replies are checked:
one finite vector per input, all of one dimension.
"""

from __future__ import annotations

import asyncio
import math
import random
from array import array
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from palimpsest.embedder.batching import BatchLimits, Item, halve
from palimpsest.embedder.errors import BatchTooLarge, ProviderError, ProviderUnavailable, RateLimited

Sleep = Callable[[float], Awaitable[None]]
Beat = Callable[[], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class Embedded:
    """A provider's reply: one vector per input, in order, and what it cost when known."""

    vectors: list[list[float]]
    tokens: int = 0
    cost_usd: float | None = None


class Provider(Protocol):
    """One tenant's embeddings model, reached through the LLM gateway (or a fake in tests)."""

    @property
    def model(self) -> str: ...

    async def embed(self, texts: list[str]) -> Embedded: ...


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    max_retries: int = 6
    base_delay_s: float = 1.0
    max_delay_s: float = 60.0
    max_halvings: int = 6
    jitter: bool = True
    beat_every_s: float = 10.0

    def delay(self, attempt: int, exc: ProviderUnavailable) -> float:
        if isinstance(exc, RateLimited) and exc.retry_after_s is not None:
            return min(max(exc.retry_after_s, 0.0), self.max_delay_s)
        delay = min(self.base_delay_s * 2.0 ** (attempt - 1), self.max_delay_s)
        return delay * (0.5 + random.random() / 2) if self.jitter else delay  # noqa: S311 - not crypto


@dataclass(slots=True)
class EngineStats:
    requests: int = 0
    retries: int = 0
    rate_limited: int = 0
    splits: int = 0
    truncated: int = 0
    tokens: int = 0
    cost_usd: float = 0.0
    cost_known: bool = True
    waits_s: list[float] = field(default_factory=list)


async def _no_beat() -> None:
    return None


@dataclass(slots=True)
class BatchEmbedder:
    provider: Provider
    limits: BatchLimits = field(default_factory=BatchLimits)
    policy: RetryPolicy = field(default_factory=RetryPolicy)
    sleep: Sleep = asyncio.sleep
    beat: Beat = _no_beat
    stats: EngineStats = field(default_factory=EngineStats)
    dimension: int | None = None

    async def embed(self, batch: Sequence[Item], _halvings: int = 0) -> list[tuple[Item, array[float]]]:
        """Vectors for every item of ``batch`` (split or cut as the provider demands)."""
        try:
            reply = await self._with_retries(list(batch))
        except BatchTooLarge:
            if len(batch) > 1:
                self.stats.splits += 1
                mid = len(batch) // 2
                return await self.embed(batch[:mid], _halvings) + await self.embed(batch[mid:], _halvings)
            if _halvings >= self.policy.max_halvings or len(batch[0].text) <= 1:
                raise ProviderError("one input stays too large for the provider even when cut") from None
            return await self.embed([halve(batch[0], self.limits)], _halvings + 1)
        pairs = list(zip(batch, self._checked(reply, len(batch)), strict=True))
        self.stats.truncated += sum(1 for item, _ in pairs if item.truncated)
        return pairs

    async def _with_retries(self, batch: list[Item]) -> Embedded:
        attempt = 0
        while True:
            self.stats.requests += 1
            try:
                reply = await self.provider.embed([i.text for i in batch])
            except ProviderUnavailable as exc:
                attempt += 1
                self.stats.rate_limited += isinstance(exc, RateLimited)
                if attempt > self.policy.max_retries:
                    raise
                self.stats.retries += 1
                await self._wait(self.policy.delay(attempt, exc))
                continue
            self.stats.tokens += reply.tokens
            if reply.cost_usd is None:
                self.stats.cost_known = False
            else:
                self.stats.cost_usd += reply.cost_usd
            return reply

    async def _wait(self, delay: float) -> None:
        """Sleep ``delay`` seconds, heart-beating the message so JetStream does not redeliver it."""
        self.stats.waits_s.append(delay)
        left = delay
        while left > 0:
            step = min(left, self.policy.beat_every_s)
            await self.sleep(step)
            await self.beat()
            left -= step

    def _checked(self, reply: Embedded, expected: int) -> list[array[float]]:
        """The reply's vectors as they are stored, float4 (``array('f')``, one C conversion each),
        once each is known to be one, finite, of the run's dimension: a value past float4's range
        becomes infinite in the conversion and is refused with the non-finite ones."""
        if len(reply.vectors) != expected:
            raise ProviderError(f"the provider returned {len(reply.vectors)} vectors for {expected} inputs")
        vectors = [array("f", vector) for vector in reply.vectors]
        for vector in vectors:
            if not vector or not all(map(math.isfinite, vector)):
                raise ProviderError("the provider returned an empty or non-finite vector (as float4)")
            if self.dimension is None:
                self.dimension = len(vector)
            elif len(vector) != self.dimension:
                raise ProviderError(f"the provider returned {len(vector)} dimensions after {self.dimension}")
        return vectors
