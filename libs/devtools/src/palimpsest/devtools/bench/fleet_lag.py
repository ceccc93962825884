"""Per-consumer lag over time: every service's durable JetStream consumer sampled once a second.

Each sample reads :func:`palimpsest.core.bus.consumer_lag` (what ``palimpsest status`` and KEDA's
``nats-jetstream`` trigger read: the consumer's ``num_pending``, plus ``num_ack_pending``, the
messages delivered and not yet acknowledged) and files it under the current phase (``onboarding``,
``day``, …). The report gives, per phase and consumer, p50/p95/max of the backlog (pending + ack
pending) and the maximum of pending alone (the figure KEDA's ``lagThreshold`` is compared with).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import dataclass, field
from typing import Any

from nats.aio.client import Client as NATS

from palimpsest.core import bus
from palimpsest.devtools.bench.bus import _pct


@dataclass(frozen=True, slots=True)
class LagSample:
    at: float  # monotonic
    phase: str
    consumer: str
    pending: int
    ack_pending: int


@dataclass(slots=True)
class LagSampler:
    nats_url: str
    interval_s: float = 1.0
    phase: str = "idle"
    samples: list[LagSample] = field(default_factory=list)
    errors: int = 0

    async def sample(self, nc: NATS) -> None:
        now = time.monotonic()
        for name, lag in (await bus.consumer_lag(nc)).items():
            if isinstance(lag, BaseException):
                self.errors += 1
                continue
            self.samples.append(LagSample(now, self.phase, name, lag.pending, lag.ack_pending))

    async def run(self, stop: asyncio.Event) -> None:
        nc = await bus.connect(self.nats_url, name="bench-fleet-lag")
        try:
            while not stop.is_set():
                try:
                    await self.sample(nc)
                except Exception:  # a missed sample is counted, never the end of the sampling
                    self.errors += 1
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), self.interval_s)
        finally:
            await nc.close()

    def report(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for s in self.samples:
            out.setdefault(s.phase, {}).setdefault(s.consumer, []).append(s)
        return {
            phase: {
                consumer: _figures([s.pending + s.ack_pending for s in seq], [s.pending for s in seq])
                for consumer, seq in sorted(consumers.items())
            }
            for phase, consumers in out.items()
        } | {"sample_errors": self.errors}


def _figures(backlog: list[int], pending: list[int]) -> dict[str, Any]:
    return {
        "samples": len(backlog),
        "p50": _pct([float(b) for b in backlog], 0.5),
        "p95": _pct([float(b) for b in backlog], 0.95),
        "max": max(backlog),
        "pending_max": max(pending),
    }
