"""Pure ASGI middleware writing a request's audit note with its answer's status, before the answer.

The note comes from the route's access dependency (`palimpsest.ingest.api.deps.note_audit`);
requests without one pass through untouched.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from palimpsest.core.db import Pool
from palimpsest.ingest.admin import audit
from palimpsest.ingest.api.deps import AUDIT_STATE_KEY


class AuditTrail:
    def __init__(self, app: ASGIApp, pool: Pool) -> None:
        self.app = app
        self.pool = pool

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                state = scope.get("state") or {}
                note = state.pop(AUDIT_STATE_KEY, None)
                if isinstance(note, audit.AuditNote):
                    await audit.record(self.pool, note, int(message["status"]))
            await send(message)

        try:
            await self.app(scope, receive, sending)
        except Exception:
            note = (scope.get("state") or {}).pop(AUDIT_STATE_KEY, None)
            if isinstance(note, audit.AuditNote):  # an unexpected error: answered by the outer layer
                await audit.record(self.pool, note, 500)
            raise
