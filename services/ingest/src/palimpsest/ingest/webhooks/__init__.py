"""Webhook verification and parsing for GitHub, GitLab and Bitbucket Cloud (pure, no I/O).

Typical use by the HTTP layer::

    provider = get_provider("github")
    delivery = provider.delivery_id(headers)                # 400 when absent
    key = provider.installation_key(headers, decode_payload(body))
    secret = <look the secret up by key>                      # the service's job
    parsed = provider.receive(secret, headers, body, bot_name="palimpsest")

Every failure is a `WebhookError` whose `status` is the HTTP answer (401 signature, 400
malformed, 413 too large); an `Ignored` intent is answered 202.
"""

from palimpsest.ingest.webhooks._payload import decode_payload
from palimpsest.ingest.webhooks.errors import WebhookError
from palimpsest.ingest.webhooks.models import (
    FeedbackIntent,
    Ignored,
    IndexCandidates,
    IndexIntent,
    InstallationKey,
    Intent,
    ParsedDelivery,
    Ping,
    Provider,
    RepoRef,
    ReposChanged,
    ReviewIntent,
    ReviewTrigger,
    Suspension,
    Visibility,
)
from palimpsest.ingest.webhooks.providers import PROVIDERS, WebhookProvider, get_provider
from palimpsest.ingest.webhooks.signatures import verify_hmac_sha256, verify_token

__all__ = [
    "PROVIDERS",
    "FeedbackIntent",
    "Ignored",
    "IndexCandidates",
    "IndexIntent",
    "InstallationKey",
    "Intent",
    "ParsedDelivery",
    "Ping",
    "Provider",
    "RepoRef",
    "ReposChanged",
    "ReviewIntent",
    "ReviewTrigger",
    "Suspension",
    "Visibility",
    "WebhookError",
    "WebhookProvider",
    "decode_payload",
    "get_provider",
    "verify_hmac_sha256",
    "verify_token",
]
