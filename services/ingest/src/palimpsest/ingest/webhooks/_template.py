"""The one parse template of the three providers: event -> handler table -> normalized intent.

A provider module supplies how its headers name the delivery and the event, its table of event
handlers, and where its payload keeps the action and the installation; `DeliveryParser.parse`
does the rest the same way for all of them (decode once, dispatch by event, an unknown event
is `Ignored`). Verification comes before parsing (`WebhookProvider.receive`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from palimpsest.ingest.webhooks._payload import Node, clip, decode_payload
from palimpsest.ingest.webhooks.models import Ignored, Intent, ParsedDelivery, Provider, RepoRef

Handled = tuple[RepoRef | None, Intent]
Handler = Callable[[Node, str, str], Handled]
"""An event's handler: (payload, event name, bot name) -> (repository, intent)."""


def _nothing(_payload: Node) -> str | None:
    return None


@dataclass(frozen=True, slots=True)
class DeliveryParser:
    """What differs between providers when a verified delivery is normalised."""

    provider: Provider
    label: str  # how the provider is named in reasons ("GitHub")
    delivery_id: Callable[[Mapping[str, str]], str]
    event_name: Callable[[Mapping[str, str]], str]
    handlers: Mapping[str, Handler]
    action: Callable[[Node], str | None] = _nothing  # read only after the handler succeeded
    installation_id: Callable[[Node], str | None] = _nothing

    def parse(
        self,
        headers: Mapping[str, str],
        body: bytes,
        *,
        bot_name: str,
        decoded: dict[str, object] | None = None,
    ) -> ParsedDelivery:
        """Normalise one (already verified) delivery; WebhookError(400) when it is malformed.

        `decoded` is `decode_payload(body)` when the caller already has it.
        """
        delivery, event = self.delivery_id(headers), self.event_name(headers)
        payload = Node(decoded if decoded is not None else decode_payload(body))
        handler = self.handlers.get(event)
        repo: RepoRef | None
        intent: Intent
        if handler is None:
            repo, intent = None, Ignored(f"unsupported {self.label} event '{clip(event)}'")
        else:
            repo, intent = handler(payload, event, bot_name)
        installation_id = self.installation_id(payload)
        return ParsedDelivery(
            provider=self.provider,
            delivery_id=delivery,
            event=event,
            action=self.action(payload),
            installation_external_id=installation_id,
            repo=repo,
            intent=intent,
        )
