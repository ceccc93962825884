"""One table of the three providers, so the HTTP layer dispatches on a path segment.

`WebhookProvider.receive` is the safe order of operations in one call: verify the signature
or token first, parse only what verified. The HTTP layer looks the secret up with
`installation_key` on the decoded (still unauthenticated) payload before calling it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Final

from palimpsest.ingest.webhooks import bitbucket, github, gitlab
from palimpsest.ingest.webhooks._template import DeliveryParser
from palimpsest.ingest.webhooks.errors import WebhookError
from palimpsest.ingest.webhooks.models import InstallationKey, ParsedDelivery, Provider


@dataclass(frozen=True, slots=True)
class WebhookProvider:
    """The pure webhook functions of one provider: its parser, who sent a delivery, its check."""

    parser: DeliveryParser
    installation_key: Callable[[Mapping[str, str], object], InstallationKey]
    verify: Callable[[str | bytes, Mapping[str, str], bytes], None]

    @property
    def name(self) -> Provider:
        return self.parser.provider

    @property
    def delivery_id(self) -> Callable[[Mapping[str, str]], str]:
        return self.parser.delivery_id

    @property
    def event_name(self) -> Callable[[Mapping[str, str]], str]:
        return self.parser.event_name

    def parse(
        self,
        headers: Mapping[str, str],
        body: bytes,
        *,
        bot_name: str,
        decoded: dict[str, object] | None = None,
    ) -> ParsedDelivery:
        """Normalise one (already verified) delivery (:meth:`DeliveryParser.parse`)."""
        return self.parser.parse(headers, body, bot_name=bot_name, decoded=decoded)

    def receive(
        self,
        secret: str | bytes,
        headers: Mapping[str, str],
        body: bytes,
        *,
        bot_name: str,
        decoded: dict[str, object] | None = None,
    ) -> ParsedDelivery:
        """Verify, then parse: an unverified delivery never yields an intent.

        `decoded` is `decode_payload(body)` when the caller already has it (it decoded the body
        to find the secret), so the body is not parsed twice; the signature is always checked
        over the raw `body`.
        """
        self.verify(secret, headers, body)
        return self.parse(headers, body, bot_name=bot_name, decoded=decoded)


PROVIDERS: Final[Mapping[str, WebhookProvider]] = {
    module.PROVIDER: WebhookProvider(module.PARSER, module.installation_key, module.verify)
    for module in (github, gitlab, bitbucket)
}


def get_provider(name: str) -> WebhookProvider:
    """The provider called `name`; WebhookError(404) for any other name."""
    found = PROVIDERS.get(name)
    if found is None:
        raise WebhookError(404, "unknown webhook provider")
    return found
