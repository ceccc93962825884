"""The ``/ui`` application: sign-in, the pages, security headers, errors as HTML.

Every page URL names its tenant (``/ui/t/<tenant>/…``), so a link pasted into a chat opens the
same page for anyone who may see it; a tenant the session may not read, and anything of another
tenant, is the same 404 as a missing one. Responses carry a Content-Security-Policy with no
script source at all, ``X-Frame-Options: DENY``, ``nosniff``, ``no-store`` and no referrer.
"""

from __future__ import annotations

import logging
import secrets
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from importlib import resources
from typing import Any
from urllib.parse import quote
from uuid import UUID

from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape
from markupsafe import Markup
from starlette.applications import Starlette
from starlette.datastructures import MutableHeaders
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from palimpsest.core.db import UNAVAILABLE_ERRORS
from palimpsest.ingest.admin.access import ApiScope, Principal, scope_for
from palimpsest.ingest.admin.access import Scope as Scope_
from palimpsest.ingest.context import IngestContext
from palimpsest.ingest.errors import IngestError, NotFound, Unauthorized
from palimpsest.ingest.tokens import hash_token, plausible_token, same_token
from palimpsest.ingest.web import views
from palimpsest.ingest.web.markdown import render_inline
from palimpsest.ingest.web.session import (
    SESSION_COOKIE,
    SIGN_IN_COOKIE,
    Session,
    end_session,
    principal_of,
    read_sealed,
    same,
    session_of,
    set_sealed,
    start_session,
    token_principal,
)
from palimpsest.ingest.web.source import SOURCE_CSS

log = logging.getLogger(__name__)

PREFIX = "/ui"
SIGN_IN_S = 900
FRAGMENTS = 64  # rendered analyses kept per process
CSP = (
    "default-src 'none'; style-src 'self'; img-src 'self' data:; form-action 'self';"
    " frame-ancestors 'none'; base-uri 'none'"
)
_HEADERS = {
    "content-security-policy": CSP,
    "x-frame-options": "DENY",
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "cache-control": "no-store",
}
_HERE = resources.files("palimpsest.ingest.web")
_STYLE = (
    (_HERE / "static" / "style.css").read_bytes() + b"\n/* Pygments: source highlighting */\n" + SOURCE_CSS
)

Handler = Callable[[Request, Principal, Session], Awaitable[Response]]


def _env() -> Environment:
    env = Environment(
        loader=FileSystemLoader(str(_HERE / "templates")),
        autoescape=select_autoescape(default=True, default_for_string=True),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["short"] = lambda sha: (sha or "")[:12]
    env.filters["day"] = views.day
    env.filters["moment"] = views.moment
    env.filters["q"] = lambda value: quote(str(value), safe="")
    env.filters["inline_md"] = render_inline
    return env


class SecurityHeaders:
    """Pure ASGI: the security headers on every /ui response (pages, errors, the stylesheet)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                for name, value in _HEADERS.items():
                    if name == "cache-control" and headers.get(name):
                        continue
                    headers[name] = value
            await send(message)

        await self.app(scope, receive, sending)


class WebView:
    """The pages and forms of one ingest process (its context, its template environment)."""

    def __init__(self, ctx: IngestContext) -> None:
        self.ctx = ctx
        self.env = _env()
        self._fragments: OrderedDict[tuple[Any, ...], Markup] = OrderedDict()

    def render(self, request: Request, name: str, code: int = 200, **values: Any) -> HTMLResponse:
        values.setdefault("principal", None)
        values.setdefault("session", None)
        values.setdefault("tenant_id", None)
        body = self.env.get_template(name).render(prefix=PREFIX, **values)
        return HTMLResponse(body, status_code=code)

    def page(self, handler: Handler) -> Callable[[Request], Awaitable[Response]]:
        """A signed-in page: the session's token checked now; errors as HTML pages."""

        async def endpoint(request: Request) -> Response:
            session = session_of(self.ctx, request)
            if session is None:
                return _to_sign_in(request)
            principal = None
            try:
                principal = await principal_of(self.ctx, session)
                return await handler(request, principal, session)
            except Unauthorized:
                response = _to_sign_in(request)
                response.delete_cookie(SESSION_COOKIE, path=PREFIX)
                return response
            except IngestError as exc:
                return self.render(
                    request,
                    "error.html",
                    exc.status,
                    message=exc.message,
                    principal=principal,
                    session=session,
                    status=exc.status,
                )
            except UNAVAILABLE_ERRORS as exc:
                log.warning("web view: database unavailable: %s", exc.__class__.__name__)
                return self.render(
                    request, "error.html", 503, message="temporarily unavailable; try again", status=503
                )

        return endpoint

    def _show(
        self, request: Request, name: str, principal: Principal, session: Session, **values: Any
    ) -> HTMLResponse:
        return self.render(request, name, principal=principal, session=session, **values)

    async def home(self, request: Request, principal: Principal, session: Session) -> Response:
        if principal.admin:
            return RedirectResponse(f"{PREFIX}/tenants", status_code=303)
        return RedirectResponse(f"{PREFIX}/t/{principal.tenant_id}/", status_code=303)

    async def tenants(self, request: Request, principal: Principal, session: Session) -> Response:
        if not principal.admin:
            raise NotFound("no such page")
        found = await views.tenants_page(self.ctx)
        return self._show(request, "tenants.html", principal, session, **found)

    async def repositories(self, request: Request, principal: Principal, session: Session) -> Response:
        tenant_id, scope = _tenant_scope(request, principal)
        found = await views.repositories_page(self.ctx, scope)
        return self._show(request, "repositories.html", principal, session, tenant_id=tenant_id, **found)

    async def repository(self, request: Request, principal: Principal, session: Session) -> Response:
        tenant_id, scope = _tenant_scope(request, principal)
        found = await views.repository_page(self.ctx, scope, _uuid(request, "repository_id"))
        fragment = self._analysis_fragment(tenant_id, found)
        return self._show(
            request,
            "repository.html",
            principal,
            session,
            tenant_id=tenant_id,
            analysis_fragment=fragment,
            **found,
        )

    def _analysis_fragment(self, tenant_id: UUID, found: views.RepositoryPage) -> Markup:
        """The analysis part of the repository page. A stored analysis never changes, so it is
        rendered once per process (keyed by everything its links depend on), then reused."""
        view, repo = found["analysis"], found["repo"]
        if view is None:
            return Markup("")
        key = (view.analysis_id, tenant_id, repo.repository_id, repo.provider, repo.clone_url)
        cached = self._fragments.get(key)
        if cached is not None:
            self._fragments.move_to_end(key)
            return cached
        values = views.analysis_values(view, found["links"])
        html = self.env.get_template("_analysis.html").render(
            prefix=PREFIX, tenant_id=tenant_id, repo=repo, **values
        )
        fragment = Markup(html)  # noqa: S704 - a template of this package, autoescaped
        self._fragments[key] = fragment
        while len(self._fragments) > FRAGMENTS:
            self._fragments.popitem(last=False)
        return fragment

    async def file(self, request: Request, principal: Principal, session: Session) -> Response:
        tenant_id, scope = _tenant_scope(request, principal)
        path = request.query_params.get("path", "")
        if not path or len(path) > 1024:
            raise NotFound("name a file: ?path=<path in the repository>")
        found = await views.file_page(self.ctx, scope, _uuid(request, "repository_id"), path)
        return self._show(request, "file.html", principal, session, tenant_id=tenant_id, **found)

    async def reviews(self, request: Request, principal: Principal, session: Session) -> Response:
        tenant_id, scope = _tenant_scope(request, principal)
        found = await views.reviews_page(self.ctx, scope, _uuid(request, "repository_id"))
        return self._show(request, "reviews.html", principal, session, tenant_id=tenant_id, **found)

    async def review(self, request: Request, principal: Principal, session: Session) -> Response:
        tenant_id, scope = _tenant_scope(request, principal)
        found = await views.review_page(self.ctx, scope, _uuid(request, "review_id"))
        return self._show(request, "review.html", principal, session, tenant_id=tenant_id, **found)

    async def search(self, request: Request, principal: Principal, session: Session) -> Response:
        tenant_id, scope = _tenant_scope(request, principal)
        q = request.query_params.get("q", "").strip()[:1000] or None
        mode = "hybrid" if request.query_params.get("mode") == "hybrid" else "lexical"
        repository_id = _uuid(request, "repository_id")
        error = None
        try:
            found = await views.search_page(self.ctx, scope, repository_id, q, mode)
        except IngestError as exc:
            if exc.status not in (400, 409):
                raise
            found = await views.search_page(self.ctx, scope, repository_id, None, mode)
            error = exc.message
        return self._show(
            request, "search.html", principal, session, tenant_id=tenant_id, error=error, **found
        )

    def _sign_in_page(self, request: Request, code: int, error: str | None) -> Response:
        """The form, with a fresh CSRF value sealed in a short-lived cookie of its own."""
        csrf = secrets.token_urlsafe(24)
        response = self.render(request, "sign_in.html", code, csrf=csrf, error=error, next=_next(request))
        sealed = {"c": csrf, "e": time.time() + SIGN_IN_S}
        set_sealed(self.ctx, request, response, SIGN_IN_COOKIE, sealed, SIGN_IN_S)
        return response

    async def sign_in_form(self, request: Request) -> Response:
        return self._sign_in_page(request, 200, None)

    async def sign_in(self, request: Request) -> Response:
        form = await request.form(max_files=0, max_fields=5)
        expected = read_sealed(self.ctx, request, SIGN_IN_COOKIE) or {}
        fresh = float(str(expected.get("e", 0))) > time.time()
        if not fresh or not same(str(expected.get("c", "")), str(form.get("csrf") or "")):
            return self._sign_in_page(request, 400, "the form had expired; sign in again")
        token = str(form.get("token") or "").strip()
        if not plausible_token(token):
            return self._sign_in_page(
                request, 401, "paste a tenant API token (read scope) or the operator token"
            )
        operator = same_token(self.ctx.admin_token, token)
        token_hash = hash_token(token)
        try:
            principal = await token_principal(self.ctx, operator=operator, token_hash=token_hash)
        except Unauthorized as exc:
            return self._sign_in_page(request, 401, exc.message)
        if not principal.holds(ApiScope.READ):
            return self._sign_in_page(request, 403, "this token lacks the 'read' scope")
        session = await start_session(self.ctx, principal, token_hash)
        response = RedirectResponse(_next(request) or f"{PREFIX}/", status_code=303)
        lifetime = int(self.ctx.settings.ui_session_s)
        set_sealed(self.ctx, request, response, SESSION_COOKIE, session.to_json(), lifetime)
        response.delete_cookie(SIGN_IN_COOKIE, path=PREFIX)
        return response

    async def sign_out(self, request: Request) -> Response:
        session = session_of(self.ctx, request)
        form = await request.form(max_files=0, max_fields=5)
        if session is not None and not same(session.csrf, str(form.get("csrf") or "")):
            message = "the form was not sent from this site"
            return self.render(request, "error.html", 400, message=message, status=400)
        if session is not None:
            await end_session(self.ctx, session)
        response = RedirectResponse(f"{PREFIX}/sign-in", status_code=303)
        response.delete_cookie(SESSION_COOKIE, path=PREFIX)
        return response

    async def style(self, _: Request) -> Response:
        return Response(_STYLE, media_type="text/css", headers={"cache-control": "public, max-age=3600"})

    async def not_found(self, request: Request, _: Exception) -> Response:
        return self.render(request, "error.html", 404, message="no such page", status=404)

    def app(self) -> ASGIApp:
        routes = [
            Route("/", self.page(self.home)),
            Route("/sign-in", self.sign_in_form, methods=["GET"]),
            Route("/sign-in", self.sign_in, methods=["POST"]),
            Route("/sign-out", self.sign_out, methods=["POST"]),
            Route("/style.css", self.style),
            Route("/tenants", self.page(self.tenants)),
            Route("/t/{tenant_id}/", self.page(self.repositories)),
            Route("/t/{tenant_id}/r/{repository_id}", self.page(self.repository)),
            Route("/t/{tenant_id}/r/{repository_id}/file", self.page(self.file)),
            Route("/t/{tenant_id}/r/{repository_id}/reviews", self.page(self.reviews)),
            Route("/t/{tenant_id}/r/{repository_id}/search", self.page(self.search)),
            Route("/t/{tenant_id}/reviews/{review_id}", self.page(self.review)),
        ]
        handlers = {404: self.not_found, 405: self.not_found}
        return SecurityHeaders(Starlette(routes=routes, exception_handlers=handlers))


def create_ui(ctx: IngestContext) -> ASGIApp:
    return WebView(ctx).app()


def _tenant_scope(request: Request, principal: Principal) -> tuple[UUID, Scope_]:
    """The page's tenant and the read scope on it; another tenant (or a malformed id) is a 404."""
    tenant_id = _uuid(request, "tenant_id")
    return tenant_id, scope_for(principal, tenant_id, ApiScope.READ)


def _uuid(request: Request, name: str) -> UUID:
    try:
        return UUID(str(request.path_params[name]))
    except ValueError as exc:
        raise NotFound("no such page") from exc


def _next(request: Request) -> str | None:
    """Where to go after signing in: a /ui page of this site only (never another host)."""
    target = request.query_params.get("next", "")
    if (
        target.startswith(f"{PREFIX}/")
        and not target.startswith("//")
        and "\\" not in target
        and len(target) < 2000
    ):
        return target
    return None


def _to_sign_in(request: Request) -> Response:
    target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
    return RedirectResponse(f"{PREFIX}/sign-in?next={quote(target, safe='')}", status_code=303)
