"""Constant-time checks of webhook signatures and shared tokens.

GitHub (`X-Hub-Signature-256`) and Bitbucket Cloud (`X-Hub-Signature`) send
`sha256=<hex HMAC-SHA256 of the raw body>`; GitLab sends the configured secret token verbatim
in `X-Gitlab-Token`. Both checks compare with `hmac.compare_digest`, treat an empty secret as
"never valid", and never raise: any malformed input is simply not a match.
"""

from __future__ import annotations

import hashlib
import hmac


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
