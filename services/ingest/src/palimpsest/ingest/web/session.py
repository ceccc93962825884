"""Web sessions: a server-side session row, named by a sealed cookie, re-checked per request.

The cookie is sealed with the service's Fernet key (encrypted and authenticated: it cannot be read
or forged, and no token is in it). It names a session — a random id, its tenant (none for the
operator) and the signed-in token's sha256 — and carries an expiry (``PALIMPSEST_UI_SESSION_S``)
and a CSRF value for the forms. The session is a row of ``ui_sessions`` (migration 0049): signing
out deletes it, so a copy of the cookie taken before sign-out no longer reads anything; revoking or
rotating the token deletes its sessions; expired rows are pruned with the delivery retention pass.
On every request the row and the token are checked again through the lookup caches
(``PALIMPSEST_LOOKUP_CACHE_S``; the process that ends a session forgets it at once, another replica
within that window). An operator session holds the admin token's sha256 and ends when the token
changes. The cookie is ``HttpOnly``, ``SameSite=Strict``, path ``/ui``, and ``Secure`` over TLS.
"""

from __future__ import annotations

import hmac
import json
import secrets
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from uuid import UUID, uuid4

from starlette.requests import Request
from starlette.responses import Response

from palimpsest.core.errors import CredentialError
from palimpsest.ingest.admin.access import Principal, authenticate_hash
from palimpsest.ingest.context import IngestContext
from palimpsest.ingest.errors import Unauthorized
from palimpsest.ingest.store import sessions
from palimpsest.ingest.tokens import hash_token

__all__ = [
    "SESSION_COOKIE",
    "SIGN_IN_COOKIE",
    "Session",
    "end_session",
    "principal_of",
    "read_sealed",
    "set_sealed",
    "start_session",
    "token_principal",
]

SESSION_COOKIE = "palimpsest_session"
SIGN_IN_COOKIE = "palimpsest_sign_in"  # the sign-in form's CSRF value, before any session exists
PATH = "/ui"


@dataclass(frozen=True, slots=True)
class Session:
    session_id: UUID
    tenant_id: UUID | None  # None: the operator's session
    operator: bool
    token_hash: bytes
    csrf: str
    expires: float

    def to_json(self) -> dict[str, object]:
        return {
            "s": str(self.session_id),
            "t": str(self.tenant_id) if self.tenant_id is not None else None,
            "o": self.operator,
            "h": self.token_hash.hex(),
            "c": self.csrf,
            "e": self.expires,
        }

    @classmethod
    def from_json(cls, data: dict[str, object]) -> Session | None:
        try:
            tenant = data["t"]
            return cls(
                UUID(str(data["s"])),
                UUID(str(tenant)) if tenant is not None else None,
                bool(data["o"]),
                bytes.fromhex(str(data["h"])),
                str(data["c"]),
                float(str(data["e"])),
            )
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


async def token_principal(ctx: IngestContext, *, operator: bool, token_hash: bytes) -> Principal:
    """The caller a token's sha256 stands for, checked now (Unauthorized when revoked, expired or gone)."""
    if operator:
        if ctx.admin_token and hmac.compare_digest(hash_token(ctx.admin_token), token_hash):
            return Principal(admin=True)
        raise Unauthorized("the operator token has changed")
    return await authenticate_hash(ctx, token_hash)


async def start_session(ctx: IngestContext, principal: Principal, token_hash: bytes) -> Session:
    """A new session of a signed-in caller, recorded (its row is what sign-out deletes)."""
    expires = time.time() + ctx.settings.ui_session_s
    tenant = None if principal.admin else principal.tenant_id
    session = Session(uuid4(), tenant, principal.admin, token_hash, secrets.token_urlsafe(24), expires)
    await sessions.start(
        ctx.pool, session.session_id, tenant, token_hash, datetime.fromtimestamp(expires, UTC)
    )
    ctx.sessions.put(session.session_id, True)
    return session


async def end_session(ctx: IngestContext, session: Session) -> None:
    """Sign-out: the row goes, so any copy of the cookie stops working (at once in this process)."""
    await sessions.end(ctx.pool, session.session_id, session.tenant_id)
    ctx.sessions.discard(session.session_id)


async def _alive(ctx: IngestContext, session: Session) -> bool:
    hit, cached = ctx.sessions.get(session.session_id)
    if hit:
        return bool(cached)
    found = await sessions.alive(ctx.pool, session.session_id, session.tenant_id, session.token_hash)
    ctx.sessions.put(session.session_id, found)
    return found


async def principal_of(ctx: IngestContext, session: Session) -> Principal:
    """The session's caller, checked now: Unauthorized when it was signed out, or its token is
    revoked, rotated, expired or gone."""
    if not await _alive(ctx, session):
        raise Unauthorized("the session has ended; sign in again")
    principal = await token_principal(ctx, operator=session.operator, token_hash=session.token_hash)
    if (None if principal.admin else principal.tenant_id) != session.tenant_id:
        raise Unauthorized("the session has ended; sign in again")
    return principal


def same(expected: str, given: str | None) -> bool:
    return bool(given) and hmac.compare_digest(expected.encode(), str(given).encode())
