"""Local fake GitHub, GitLab and Bitbucket review APIs: real HTTP on 127.0.0.1, strict shapes.

Each request must carry ``Authorization: Bearer <token>`` (GitHub also its ``Accept`` and
``X-GitHub-Api-Version`` headers) and the body the real API requires; anything else answers 4xx
and is recorded as rejected. Posted reviews/comments are kept and listed back by the GET routes,
so a client can check what it already posted.

Routes (as the real APIs spell them):

* GitHub    ``GET|POST /repos/{owner}/{repo}/pulls/{n}/reviews``
* GitLab    ``GET|POST /projects/{url-encoded path}/merge_requests/{iid}/discussions``
* Bitbucket ``GET|POST /repositories/{workspace}/{slug}/pullrequests/{id}/comments``
"""

from __future__ import annotations

import json
import re
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import unquote, urlparse

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

        def _serve(self, method: str) -> None:
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
