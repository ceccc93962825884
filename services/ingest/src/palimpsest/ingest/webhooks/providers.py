"""One table of the three providers, so the HTTP layer dispatches on a path segment.

`WebhookProvider.receive` is the safe order of operations in one call: verify the signature
or token first, parse only what verified. The HTTP layer looks the secret up with
`installation_key` on the decoded (still unauthenticated) payload before calling it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Final, Protocol

from palimpsest.ingest.webhooks import bitbucket, github, gitlab
from palimpsest.ingest.webhooks.errors import WebhookError
from palimpsest.ingest.webhooks.models import InstallationKey, ParsedDelivery, Provider


class _Parse(Protocol):
    def __call__(
        self,
        headers: Mapping[str, str],
        body: bytes,
        *,
        bot_name: str,
        decoded: dict[str, object] | None = None,
    ) -> ParsedDelivery: ...


@dataclass(frozen=True, slots=True)
class WebhookProvider:
    """The pure webhook functions of one provider."""

    name: Provider
    delivery_id: Callable[[Mapping[str, str]], str]
    event_name: Callable[[Mapping[str, str]], str]
    installation_key: Callable[[Mapping[str, str], object], InstallationKey]
    verify: Callable[[str | bytes, Mapping[str, str], bytes], None]
    parse: _Parse

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
    module.PROVIDER: WebhookProvider(
        name=module.PROVIDER,
        delivery_id=module.delivery_id,
        event_name=module.event_name,
        installation_key=module.installation_key,
        verify=module.verify,
        parse=module.parse,
    )
    for module in (github, gitlab, bitbucket)
}


def get_provider(name: str) -> WebhookProvider:
    """The provider called `name`; WebhookError(404) for any other name."""
    found = PROVIDERS.get(name)
    if found is None:
        raise WebhookError(404, "unknown webhook provider")
    return found
