"""Bearer tokens: per-tenant API tokens (stored as sha256 only) and the operator admin token.

An API token is ``pal_`` + 32 random bytes (url-safe base64); the database keeps its sha256 and
the caller sees the token once, when it is issued. The admin token, which may create tenants and
act on any tenant, comes from ``PALIMPSEST_ADMIN_TOKEN``; in embedded/dev mode, when unset, one is
generated into ``$PALIMPSEST_HOME/admin-token`` (0600) for the local CLI to read.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from pathlib import Path

from palimpsest.core.secretbox import read_or_create

API_TOKEN_PREFIX = "pal_"  # noqa: S105 - a prefix, not a secret
ADMIN_TOKEN_PREFIX = "paladm_"  # noqa: S105 - a prefix, not a secret
ADMIN_TOKEN_FILE = "admin-token"  # noqa: S105 - a file name
_MAX_TOKEN_CHARS = 512


def new_api_token() -> tuple[str, bytes]:
    """A fresh API token and the sha256 to store for it."""
    raw = base64.urlsafe_b64encode(secrets.token_bytes(32)).decode("ascii").rstrip("=")
    token = API_TOKEN_PREFIX + raw
    return token, hash_token(token)


def hash_token(token: str) -> bytes:
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).digest()


def plausible_token(token: str) -> bool:
    """Cheap shape check before any lookup: bounded, printable ASCII, no spaces."""
    return 0 < len(token) <= _MAX_TOKEN_CHARS and all("!" <= ch <= "~" for ch in token)


def same_token(expected: str | None, given: str) -> bool:
    """Constant-time comparison; an unset expected token never matches."""
    if not expected:
        return False
    return hmac.compare_digest(
        expected.encode("utf-8", "surrogatepass"), given.encode("utf-8", "surrogatepass")
    )


def load_admin_token(configured: str | None, *, home: Path, generate: bool) -> str | None:
    """The operator token: configured, or generated into the home in embedded mode, else None."""
    if configured:
        return configured
    if not generate:
        return None
    made = read_or_create(home / ADMIN_TOKEN_FILE, _new_admin_token)
    return made.decode("ascii")


def read_admin_token(configured: str | None, home: Path) -> str | None:
    """What a local CLI uses: the configured token, else the embedded stack's token file."""
    if configured:
        return configured
    try:
        content = (home / ADMIN_TOKEN_FILE).read_text(encoding="ascii").strip()
    except (FileNotFoundError, PermissionError, UnicodeDecodeError):
        return None
    return content or None


def _new_admin_token() -> str:
    return ADMIN_TOKEN_PREFIX + base64.urlsafe_b64encode(secrets.token_bytes(32)).decode("ascii").rstrip("=")
