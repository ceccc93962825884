"""Web sessions: a sealed cookie naming the signed-in token by its sha256, re-checked per request.

The cookie is sealed with the service's Fernet key (encrypted and authenticated: it cannot be read
or forged, and no token is in it), carries an expiry (``PALIMPSEST_UI_SESSION_S``) and a CSRF
value for the forms. On every request the token is checked again through the same lookup cache
as a bearer token (`authenticate_hash`), so revoking it ends its sessions within that cache's
window; an operator session holds the admin token's sha256 and ends when the token changes.
The cookie is ``HttpOnly``, ``SameSite=Strict``, path ``/ui``, and ``Secure`` over TLS.
"""

from __future__ import annotations

import hmac
import json
import secrets
import time
from dataclasses import dataclass

from starlette.requests import Request
from starlette.responses import Response

from palimpsest.core.errors import CredentialError
from palimpsest.ingest.admin.access import Principal, authenticate_hash
from palimpsest.ingest.context import IngestContext
from palimpsest.ingest.errors import Unauthorized
from palimpsest.ingest.tokens import hash_token

__all__ = ["SESSION_COOKIE", "SIGN_IN_COOKIE", "Session", "principal_of", "read_sealed", "set_sealed"]

SESSION_COOKIE = "palimpsest_session"
SIGN_IN_COOKIE = "palimpsest_sign_in"  # the sign-in form's CSRF value, before any session exists
PATH = "/ui"


@dataclass(frozen=True, slots=True)
class Session:
    operator: bool
    token_hash: bytes
    csrf: str
    expires: float

    @classmethod
    def new(cls, ctx: IngestContext, *, operator: bool, token_hash: bytes) -> Session:
        lifetime = ctx.settings.ui_session_s
        return cls(operator, token_hash, secrets.token_urlsafe(24), time.time() + lifetime)

    def to_json(self) -> dict[str, object]:
        return {"o": self.operator, "h": self.token_hash.hex(), "c": self.csrf, "e": self.expires}

    @classmethod
    def from_json(cls, data: dict[str, object]) -> Session | None:
        try:
            return cls(bool(data["o"]), bytes.fromhex(str(data["h"])), str(data["c"]), float(str(data["e"])))
        except (KeyError, ValueError, TypeError):
            return None


def secure(ctx: IngestContext, request: Request) -> bool:
    configured = ctx.settings.ui_secure_cookie
    if configured is not None:
        return configured
    return request.url.scheme == "https" or request.headers.get("x-forwarded-proto", "").lower() == "https"


def set_sealed(
    ctx: IngestContext, request: Request, response: Response, name: str, data: dict[str, object], max_age: int
) -> None:
    value = ctx.box.seal(json.dumps(data, separators=(",", ":"))).decode("ascii")
    response.set_cookie(
        name, value, max_age=max_age, path=PATH, secure=secure(ctx, request), httponly=True, samesite="strict"
    )


def read_sealed(ctx: IngestContext, request: Request, name: str) -> dict[str, object] | None:
    raw = request.cookies.get(name)
    if not raw or len(raw) > 4096:
        return None
    try:
        data = json.loads(ctx.box.open(raw.encode("ascii")))
    except (CredentialError, UnicodeError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def session_of(ctx: IngestContext, request: Request) -> Session | None:
    data = read_sealed(ctx, request, SESSION_COOKIE)
    found = Session.from_json(data) if data is not None else None
    if found is None or found.expires <= time.time():
        return None
    return found


async def principal_of(ctx: IngestContext, session: Session) -> Principal:
    """The session's caller, checked now (Unauthorized when the token is revoked, expired or gone)."""
    if session.operator:
        if ctx.admin_token and hmac.compare_digest(hash_token(ctx.admin_token), session.token_hash):
            return Principal(admin=True)
        raise Unauthorized("the operator token has changed")
    return await authenticate_hash(ctx, session.token_hash)


def same(expected: str, given: str | None) -> bool:
    return bool(given) and hmac.compare_digest(expected.encode(), str(given).encode())
