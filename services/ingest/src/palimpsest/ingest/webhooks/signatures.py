"""Constant-time checks of webhook signatures and shared tokens.

GitHub (`X-Hub-Signature-256`) and Bitbucket Cloud (`X-Hub-Signature`) send
`sha256=<hex HMAC-SHA256 of the raw body>`; GitLab sends the configured secret token verbatim
in `X-Gitlab-Token`. Both checks compare with `hmac.compare_digest`, treat an empty secret as
"never valid", and never raise: any malformed input is simply not a match.

`check_signature` and `check_token` are the providers' `verify`: the same checks on a
delivery's headers, raising `WebhookError(401)` with a one-line reason.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Mapping

from palimpsest.ingest.webhooks._payload import lower_headers
from palimpsest.ingest.webhooks.errors import WebhookError


def _as_bytes(text: str) -> bytes:
    # surrogatepass: header values decoded by a server may hold lone surrogates; never raise.
    return text.encode("utf-8", "surrogatepass")


def verify_hmac_sha256(secret: bytes, body: bytes, header: str | None, prefix: str = "sha256=") -> bool:
    """True when `header` is `prefix` + the hex HMAC-SHA256 of `body` under `secret`.

    Tolerates only what the providers vary: surrounding whitespace, and upper- or lower-case
    in the prefix and hex digits.
    """
    if not secret or header is None:
        return False
    value = header.strip().lower()
    expected = prefix.lower() + hmac.new(secret, body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(_as_bytes(value), expected.encode("ascii"))


def verify_token(expected: str, got: str | None) -> bool:
    """True when `got` equals the non-empty `expected` token, compared in constant time."""
    if not expected or got is None:
        return False
    return hmac.compare_digest(_as_bytes(got), _as_bytes(expected))


def _credential(headers: Mapping[str, str], header: str) -> str:
    value = lower_headers(headers).get(header.lower())
    if value is None:
        raise WebhookError(401, f"missing {header} header")
    return value


def check_signature(secret: str | bytes, headers: Mapping[str, str], body: bytes, header: str) -> None:
    """Raise WebhookError(401) unless the `header` signature signs `body` with `secret`."""
    key = secret.encode("utf-8", "surrogatepass") if isinstance(secret, str) else secret
    if not key:
        raise WebhookError(401, "no webhook secret is configured for this sender")
    if not verify_hmac_sha256(key, body, _credential(headers, header)):
        raise WebhookError(401, f"{header} does not match the body")


def check_token(secret: str | bytes, headers: Mapping[str, str], header: str) -> None:
    """Raise WebhookError(401) unless the `header` token equals the configured `secret`."""
    expected = secret.decode("utf-8", "surrogateescape") if isinstance(secret, bytes) else secret
    if not expected:
        raise WebhookError(401, "no webhook secret token is configured for this sender")
    if not verify_token(expected, _credential(headers, header)):
        raise WebhookError(401, f"{header} does not match")
