"""Local fake GitHub, GitLab and Bitbucket review APIs: real HTTP on 127.0.0.1, strict shapes.

Each request must carry ``Authorization: Bearer <token>`` (GitHub also its ``Accept`` and
``X-GitHub-Api-Version`` headers) and the body the real API requires; anything else answers 4xx
and is recorded as rejected. Posted reviews/comments are kept and listed back by the GET routes,
so a client can check what it already posted.

Routes (as the real APIs spell them):

* GitHub    ``GET|POST /repos/{owner}/{repo}/pulls/{n}/reviews``
* GitLab    ``GET|POST /projects/{url-encoded path}/merge_requests/{iid}/discussions``
* Bitbucket ``GET|POST /repositories/{workspace}/{slug}/pullrequests/{id}/comments``
* GitHub App ``POST /app/installations/{id}/access_tokens`` (when ``app`` is set): the request
  must carry ``Authorization: Bearer <JWT>`` signed RS256 by the App's key, with ``iss`` the app
  id and a lifetime of at most ten minutes; it answers ``token`` (one hour) and counts the mints.
"""

from __future__ import annotations

import base64
import json
import re
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import unquote, urlparse

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import padding, rsa

_APP_TOKENS = re.compile(r"^/app/installations/(\d+)/access_tokens$")
_ROUTES = {
    "github": re.compile(r"^/repos/([^/]+/[^/]+)/pulls/(\d+)/reviews$"),
    "gitlab": re.compile(r"^/projects/([^/]+)/merge_requests/(\d+)/discussions$"),
    "bitbucket": re.compile(r"^/repositories/([^/]+/[^/]+)/pullrequests/(\d+)/comments$"),
}


@dataclass
class FakeProviders:
    token: str
    posted: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # provider → bodies
    rejected: list[str] = field(default_factory=list)
    requests: list[tuple[str, str, str]] = field(default_factory=list)  # (method, provider, repo)
    fail_posts: int = 0  # the next N well-formed POSTs answer 503
    app: FakeApp | None = None  # answer App installation token requests (and mint ``token``)
    _server: ThreadingHTTPServer | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __enter__(self) -> FakeProviders:
        server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        server.daemon_threads = True
        self._server = server
        threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    @property
    def url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def check(self, provider: str, method: str, headers: Any, body: Any) -> str | None:
        """Why the request would be refused by the real API (None: it is fine)."""
        if headers.get("Authorization") != f"Bearer {self.token}":
            return "401 bad credentials"
        if provider == "github":
            if headers.get("Accept") != "application/vnd.github+json" or not headers.get(
                "X-GitHub-Api-Version"
            ):
                return "415 github headers"
            if method == "POST":
                return _github_body(body)
        if method == "POST" and provider == "gitlab" and not isinstance(body.get("body"), str):
            return "400 gitlab body"
        if (
            method == "POST"
            and provider == "bitbucket"
            and not isinstance((body.get("content") or {}).get("raw"), str)
        ):
            return "400 bitbucket content.raw"
        return None

    def listing(self, provider: str) -> Any:
        items = self.posted.get(provider, [])
        if provider == "gitlab":
            return [{"id": i, "notes": [{"body": b["body"]}]} for i, b in enumerate(items)]
        if provider == "bitbucket":
            return {"values": [{"id": i, "content": b["content"]} for i, b in enumerate(items)]}
        return [{"id": i, "body": b["body"], "commit_id": b["commit_id"]} for i, b in enumerate(items)]


@dataclass
class FakeApp:
    """A GitHub App as the fake knows it: its id, public key and installation id."""

    app_id: str
    public_key: rsa.RSAPublicKey
    installation: str
    mints: int = 0
    refused: list[str] = field(default_factory=list)

    def check(self, installation: str, headers: Any) -> str | None:
        if installation != self.installation:
            return "404 no such installation"
        if headers.get("Accept") != "application/vnd.github+json":
            return "415 github headers"
        auth = headers.get("Authorization") or ""
        if not auth.startswith("Bearer ") or auth.count(".") != 2:
            return "401 a JWT is required"
        header, payload, signature = auth.removeprefix("Bearer ").split(".")
        try:
            self.public_key.verify(
                _unb64(signature), f"{header}.{payload}".encode(), padding.PKCS1v15(), hashes.SHA256()
            )
        except InvalidSignature:
            return "401 bad JWT signature"
        if json.loads(_unb64(header)) != {"alg": "RS256", "typ": "JWT"}:
            return "401 bad JWT header"
        claims = json.loads(_unb64(payload))
        now = time.time()
        if claims.get("iss") != self.app_id:
            return "401 wrong issuer"
        if not claims["iat"] <= now < claims["exp"] or claims["exp"] - claims["iat"] > 600:
            return "401 JWT expired or too long"
        return None


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _github_body(body: dict[str, Any]) -> str | None:
    if not isinstance(body.get("commit_id"), str) or body.get("event") not in (
        "COMMENT",
        "APPROVE",
        "REQUEST_CHANGES",
    ):
        return "422 github review fields"
    for comment in body.get("comments", []):
        if not isinstance(comment.get("path"), str) or not isinstance(comment.get("line"), int):
            return "422 github comment path/line"
        if comment.get("side") not in ("LEFT", "RIGHT") or not comment.get("body"):
            return "422 github comment side/body"
    return None


def _handler(fake: FakeProviders) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:  # quiet
            pass

        def _route(self) -> tuple[str, str] | None:
            path = urlparse(self.path).path
            for provider, pattern in _ROUTES.items():
                match = pattern.match(path)
                if match:
                    return provider, unquote(match.group(1))
            return None

        def _answer(self, status: int, payload: Any) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _mint(self) -> bool:
            found = _APP_TOKENS.match(urlparse(self.path).path)
            if found is None or fake.app is None or self.command != "POST":
                return False
            with fake._lock:
                problem = fake.app.check(found.group(1), self.headers)
                if problem is not None:
                    fake.app.refused.append(problem)
                    self._answer(int(problem[:3]), {"message": problem})
                    return True
                fake.app.mints += 1
            expires = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 3600))
            self._answer(201, {"token": fake.token, "expires_at": expires})
            return True

        def _serve(self, method: str) -> None:
            if self._mint():
                return
            route = self._route()
            if route is None:
                self._answer(404, {"message": "Not Found"})
                return
            provider, repo = route
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}") if method == "POST" else {}
            with fake._lock:
                fake.requests.append((method, provider, repo))
                problem = fake.check(provider, method, self.headers, body)
                if problem is not None:
                    fake.rejected.append(problem)
                    self._answer(int(problem[:3]), {"message": problem})
                    return
                if method == "POST" and fake.fail_posts > 0:
                    fake.fail_posts -= 1
                    self._answer(503, {"message": "unavailable"})
                    return
                if method == "POST":
                    fake.posted.setdefault(provider, []).append(body)
                    self._answer(201, {"id": len(fake.posted[provider])})
                else:
                    self._answer(200, fake.listing(provider))

        def do_GET(self) -> None:
            self._serve("GET")

        def do_POST(self) -> None:
            self._serve("POST")

    return Handler
