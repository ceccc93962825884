"""Receiving one webhook delivery: find the sender, verify, load, decide, apply — or refuse.

The order matters. The (still unauthenticated) payload only serves to find the sender's
installation through the cross-tenant route lookup; nothing it says is used before the signature
or token is verified with that installation's secret. A delivery for a known tenant is recorded
in that tenant's `deliveries` in the same transaction as the outbox events it causes, so the
events exist if and only if the record does. A delivery whose tenant cannot be known (malformed
before routing, unknown sender) is counted in metrics and logged, never stored.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, TypedDict
from uuid import UUID

import psycopg

from palimpsest.core import metrics
from palimpsest.core.db import tenant_tx
from palimpsest.core.ids import uuid7
from palimpsest.ingest.apply import apply
from palimpsest.ingest.context import IngestContext, Route, RouteKey
from palimpsest.ingest.decide import decide
from palimpsest.ingest.load import load
from palimpsest.ingest.store import deliveries, lookups
from palimpsest.ingest.store.deliveries import DeliveryRow
from palimpsest.ingest.webhooks import (
    PROVIDERS,
    InstallationKey,
    ParsedDelivery,
    Suspension,
    WebhookError,
    WebhookProvider,
    decode_payload,
    get_provider,
)
from palimpsest.ingest.webhooks._payload import clip

log = logging.getLogger(__name__)

# Event names used as metric labels: the events each provider's parser handles (its handler table,
# the one list of them); anything else (attacker-chosen text) is counted as "other".
KNOWN_EVENTS: Final[Mapping[str, frozenset[str]]] = {
    name: frozenset(provider.parser.handlers) for name, provider in PROVIDERS.items()
}


class AnswerBody(TypedDict):
    """The JSON body of a webhook's answer."""

    outcome: str
    reason: str | None
    delivery_id: str | None
    events: list[str]


@dataclass(frozen=True, slots=True)
class Answer:
    """The HTTP answer to a delivery."""

    status: int
    outcome: str
    reason: str | None = None
    delivery_id: str | None = None
    event_ids: tuple[UUID, ...] = ()

    def body(self) -> AnswerBody:
        return {
            "outcome": self.outcome,
            "reason": self.reason,
            "delivery_id": self.delivery_id,
            "events": [str(e) for e in self.event_ids],
        }


def event_label(provider: str, event: str | None) -> str:
    return event if event is not None and event in KNOWN_EVENTS.get(provider, frozenset()) else "other"


def _header_or_none(read: Any, headers: Mapping[str, str]) -> str | None:
    try:
        return str(read(headers))
    except WebhookError:
        return None


class Intake:
    """The webhook endpoint's logic, independent of the HTTP framework."""

    def __init__(self, ctx: IngestContext) -> None:
        self.ctx = ctx

    async def receive(self, provider_name: str, headers: Mapping[str, str], body: bytes) -> Answer:
        try:
            provider = get_provider(provider_name)
        except WebhookError as exc:
            return Answer(exc.status, "rejected", exc.reason)
        try:
            decoded = decode_payload(body)
            key = provider.installation_key(headers, decoded)
        except WebhookError as exc:
            return self._unrouted(provider, headers, exc.status, "rejected", exc.reason)
        for attempt in (1, 2):
            route = await self.route_for(key)
            if route is None:
                reason = f"unknown {provider.name} {key.kind} '{clip(key.external_id)}'"
                return self._unrouted(provider, headers, 202, "ignored", reason)
            try:
                return await self._routed(route, provider, headers, body, decoded)
            except psycopg.errors.ForeignKeyViolation:
                # the cached installation (or its tenant) was removed meanwhile: look it up afresh
                self.ctx.routes.discard(_cache_key(key))
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")

    async def _routed(
        self,
        route: Route,
        provider: WebhookProvider,
        headers: Mapping[str, str],
        body: bytes,
        decoded: dict[str, object],
    ) -> Answer:
        try:
            parsed = provider.receive(
                route.secret, headers, body, bot_name=self.ctx.settings.bot_name, decoded=decoded
            )
        except WebhookError as exc:
            return await self._rejected(route, provider, headers, exc)
        return await self._accept(route, parsed)

    async def route_for(self, key: InstallationKey) -> Route | None:
        cache_key = _cache_key(key)
        path = cache_key[3]
        hit, cached = self.ctx.routes.get(cache_key)
        if hit:
            return cached
        sealed = await lookups.webhook_route(self.ctx.pool, key.provider, key.kind, key.external_id, path)
        route = None
        if sealed is not None:
            secret = self.ctx.box.open(sealed.sealed_secret)
            route = Route(sealed.tenant_id, sealed.installation_id, secret, sealed.suspended)
        self.ctx.routes.put(cache_key, route)
        return route

    def _unrouted(
        self, provider: WebhookProvider, headers: Mapping[str, str], status: int, outcome: str, reason: str
    ) -> Answer:
        event = _header_or_none(provider.event_name, headers)
        metrics.WEBHOOK_DELIVERIES.labels(provider.name, event_label(provider.name, event), outcome).inc()
        log.info("webhook %s %s (%d): %s", provider.name, outcome, status, reason)
        return Answer(status, outcome, reason, _header_or_none(provider.delivery_id, headers))

    async def _rejected(
        self, route: Route, provider: WebhookProvider, headers: Mapping[str, str], exc: WebhookError
    ) -> Answer:
        event = _header_or_none(provider.event_name, headers)
        row = DeliveryRow(
            id=uuid7(),
            provider=provider.name,
            installation_id=route.installation_id,
            delivery_id=_header_or_none(provider.delivery_id, headers) or "",
            event=event or "",
            action=None,
            outcome="rejected",
            http_status=exc.status,
            reason=exc.reason,
        )
        async with tenant_tx(self.ctx.pool, route.tenant_id) as conn:
            await deliveries.insert(conn, route.tenant_id, row)
        metrics.WEBHOOK_DELIVERIES.labels(provider.name, event_label(provider.name, event), "rejected").inc()
        log.info(
            "webhook %s rejected for tenant %s (%d): %s",
            provider.name,
            route.tenant_id,
            exc.status,
            exc.reason,
        )
        return Answer(exc.status, "rejected", exc.reason, row.delivery_id or None)

    async def _accept(self, route: Route, parsed: ParsedDelivery) -> Answer:
        """One way down, in the tenant's transaction: read the typed rows (:func:`.load.load`),
        decide (:func:`.decide.decide`, pure: the intents) and run the intents (:func:`.apply.apply`:
        the delivery's record, its writes and its events)."""
        async with tenant_tx(self.ctx.pool, route.tenant_id) as conn:
            loaded = await load(conn, route, parsed, self.ctx.policy)
            applied = await apply(conn, decide(route, parsed, loaded))
        row = applied.delivery
        assert row is not None, "every decision records the delivery"
        if isinstance(parsed.intent, Suspension):
            self.ctx.routes.clear()  # the cached routes carry the suspension
        label = event_label(parsed.provider, parsed.event)
        metrics.WEBHOOK_DELIVERIES.labels(parsed.provider, label, row.outcome).inc()
        return Answer(row.http_status, row.outcome, row.reason, parsed.delivery_id, tuple(row.event_ids))


def _cache_key(key: InstallationKey) -> RouteKey:
    return (key.provider, key.kind, key.external_id, key.path if key.provider == "gitlab" else None)
