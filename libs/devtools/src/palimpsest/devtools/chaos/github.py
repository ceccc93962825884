"""GitHub, as the soak and ``bench fleet`` meet it: signed webhook deliveries out, and the REST API
reviews go to.

The deliveries follow GitHub's documented ``push``, ``pull_request``, ``installation`` and
``installation_repositories`` shapes (trimmed to the fields a consumer reads, plus the identifying
ones); :func:`delivery_headers` are the headers GitHub sends with each. The fake REST API serves
what the reviewer posts through (a summary issue comment edited in place per pull request, review
comments per finding; see :class:`FakeGitHubAPI`) and an installation's repository listing
(``GET /installation/repositories``, what installation sync reads) on 127.0.0.1, checks the
installation token in the ``Authorization`` header (401 otherwise), and records every post and
edit with its time, so the soak can prove that each pull request got one summary and each head
was posted exactly once, and the fleet benchmark can time each review.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import secrets
import threading
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Protocol
from urllib.parse import parse_qs, urlsplit

import httpx

from palimpsest.core.wire import FINDING_MARKER, SUMMARY_MARKER
from palimpsest.devtools.chaos.repos import Commit

GITHUB_WEB = "https://github.com"
LISTING_PAGE = 100  # repositories per page of GET /installation/repositories (GitHub's maximum)


class HostedRepo(Protocol):
    """What a delivery says about a repository (the soak's and the fleet's repositories alike)."""

    @property
    def external_id(self) -> int: ...

    @property
    def name(self) -> str: ...

    @property
    def full_name(self) -> str: ...


_REVIEWS = re.compile(r"^/repos/([^/]+/[^/]+)/pulls/(\d+)/reviews$")


def sign(secret: str, body: bytes) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def delivery_headers(event: str, delivery_id: str, secret: str, body: bytes) -> dict[str, str]:
    """The headers of one GitHub App delivery, signed with the installation's webhook ``secret``."""
    return {
        "Content-Type": "application/json",
        "User-Agent": "GitHub-Hookshot/palimpsest-devtools",
        "X-GitHub-Event": event,
        "X-GitHub-Delivery": delivery_id,
        "X-GitHub-Hook-ID": "1",
        "X-GitHub-Hook-Installation-Target-Type": "integration",
        "X-GitHub-Hook-Installation-Target-ID": "1",
        "X-Hub-Signature-256": sign(secret, body),
    }


def repository_object(repo: HostedRepo, installation_login: str, web: str = GITHUB_WEB) -> dict[str, Any]:
    """The full repository object of push and pull-request deliveries and of the REST listing;
    ``web``: the GitHub instance's scheme and host (an Enterprise Server's, or a loopback fake's)."""
    return {
        "id": repo.external_id,
        "name": repo.name,
        "full_name": repo.full_name,
        "private": True,
        "visibility": "private",
        "owner": {"login": installation_login, "id": 1000, "type": "Organization"},
        "html_url": f"{web}/{repo.full_name}",
        "clone_url": f"{web}/{repo.full_name}.git",
        "default_branch": "main",
    }


def _installation(installation_id: int, login: str, web: str) -> dict[str, Any]:
    return {
        "id": installation_id,
        "account": {"login": login, "id": 1000, "type": "Organization", "html_url": f"{web}/{login}"},
        "repository_selection": "selected",
        "target_type": "Organization",
    }


def _listed(repo: HostedRepo) -> dict[str, Any]:
    """The short repository object of installation events."""
    return {"id": repo.external_id, "name": repo.name, "full_name": repo.full_name, "private": True}


def installation_payload(
    action: str, installation_id: int, login: str, repos: Sequence[HostedRepo], web: str = GITHUB_WEB
) -> dict[str, Any]:
    """An ``installation`` delivery (``created``: the App installed on these repositories)."""
    return {
        "action": action,
        "installation": _installation(installation_id, login, web),
        "repositories": [_listed(r) for r in repos],
        "sender": {"login": f"{login}-admin", "id": 2002, "type": "User"},
    }


def installation_repositories_payload(
    action: str,
    installation_id: int,
    login: str,
    added: Sequence[HostedRepo],
    removed: Sequence[HostedRepo] = (),
    web: str = GITHUB_WEB,
) -> dict[str, Any]:
    """An ``installation_repositories`` delivery (``added``/``removed``: the selection changed)."""
    return {
        "action": action,
        "installation": _installation(installation_id, login, web),
        "repository_selection": "selected",
        "repositories_added": [_listed(r) for r in added],
        "repositories_removed": [_listed(r) for r in removed],
        "sender": {"login": f"{login}-admin", "id": 2002, "type": "User"},
    }


def push_payload(
    repo: HostedRepo, installation_id: int, login: str, commit: Commit, web: str = GITHUB_WEB
) -> dict[str, Any]:
    entry = {
        "id": commit.sha,
        "tree_id": commit.sha,
        "distinct": True,
        "message": "chaos change",
        "timestamp": commit.timestamp,
        "url": f"{web}/{repo.full_name}/commit/{commit.sha}",
        "author": {"name": "Palimpsest Chaos", "email": "chaos@palimpsest.invalid"},
        "committer": {"name": "Palimpsest Chaos", "email": "chaos@palimpsest.invalid"},
        "added": commit.added,
        "removed": commit.removed,
        "modified": commit.modified,
    }
    return {
        "ref": "refs/heads/main",
        "before": commit.parent or "0" * 40,
        "after": commit.sha,
        "created": False,
        "deleted": False,
        "forced": False,
        "base_ref": None,
        "compare": f"{web}/{repo.full_name}/compare/{(commit.parent or '')[:12]}...{commit.sha[:12]}",
        "commits": [entry],
        "head_commit": entry,
        "repository": repository_object(repo, login, web),
        "pusher": {"name": "chaos", "email": "chaos@palimpsest.invalid"},
        "sender": {"login": "chaos-bot", "id": 2000, "type": "User"},
        "installation": {"id": installation_id, "account": {"login": login}},
    }


def pull_request_payload(
    repo: HostedRepo,
    installation_id: int,
    login: str,
    action: str,
    number: int,
    base: str,
    head: str,
    web: str = GITHUB_WEB,
) -> dict[str, Any]:
    return {
        "action": action,
        "number": number,
        "pull_request": {
            "id": repo.external_id * 1000 + number,
            "number": number,
            "state": "open",
            "locked": False,
            "title": f"Chaos change {number}",
            "body": "Generated by palimpsest chaos.",
            "draft": False,
            "user": {"login": "chaos-dev", "id": 2001, "type": "User"},
            "base": {"label": f"{login}:main", "ref": "main", "sha": base},
            "head": {"label": f"{login}:pr-{number}", "ref": f"pr-{number}", "sha": head},
            "html_url": f"{web}/{repo.full_name}/pull/{number}",
        },
        "repository": repository_object(repo, login, web),
        "sender": {"login": "chaos-dev", "id": 2001, "type": "User"},
        "installation": {"id": installation_id, "account": {"login": login}},
    }


_SUMMARIES = re.compile(r"^/repos/([^/]+/[^/]+)/issues/(\d+)/comments$")
_SUMMARY_EDIT = re.compile(r"^/repos/([^/]+/[^/]+)/issues/comments/(\d+)$")
_INLINE = re.compile(r"^/repos/([^/]+/[^/]+)/pulls/(\d+)/comments$")


@dataclass
class FakeGitHubAPI:
    """The endpoints the reviewer posts through, recording what was posted (thread-safe).

    Summaries are issue comments (``GET|POST /repos/{o}/{r}/issues/{n}/comments``, ``PATCH
    /repos/{o}/{r}/issues/comments/{id}``), findings review comments (``GET|POST
    /repos/{o}/{r}/pulls/{n}/comments``); ``GET …/pulls/{n}/reviews`` lists the reviews of
    earlier versions (legacy markers), ``POST /graphql`` answers review-thread queries. ``posts``
    counts, per (repository, number, head), how often a summary was created or edited to name
    that head, and ``posted_at`` when (wall clock) it first was; ``summaries_created`` how many
    summary comments each pull request got; ``findings_posted`` how often each finding
    (fingerprint) was posted on a pull request. ``GET /installation/repositories`` lists, to the
    bearer of an installation's token, the repository objects in ``listings`` under that token,
    ``per_page`` at a time with GitHub's ``Link: <…>; rel="next"``.
    """

    tokens: dict[str, str] = field(default_factory=dict)  # full name → the installation's token
    reviews: dict[tuple[str, int], list[dict[str, Any]]] = field(default_factory=dict)  # legacy
    summaries: dict[tuple[str, int], list[dict[str, Any]]] = field(default_factory=dict)
    inline: dict[tuple[str, int], list[dict[str, Any]]] = field(default_factory=dict)
    posts: Counter[tuple[str, int, str]] = field(default_factory=Counter)  # (repo, number, head) → posts
    summaries_created: Counter[tuple[str, int]] = field(default_factory=Counter)
    findings_posted: Counter[tuple[str, int, str]] = field(default_factory=Counter)
    posted_at: dict[tuple[str, int, str], float] = field(default_factory=dict)  # first post of a head
    listings: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # token → repositories
    unauthorized: int = 0
    next_id: int = 1
    lock: threading.Lock = field(default_factory=threading.Lock)

    def _new_id(self) -> int:
        self.next_id += 1
        return self.next_id

    def _posted(self, key: tuple[str, int, str]) -> None:
        self.posts[key] += 1
        self.posted_at.setdefault(key, time.time())

    def handler(self) -> type[BaseHTTPRequestHandler]:
        api = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                return

            def _reply(self, status: int, payload: Any) -> None:
                body = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def _route(self) -> tuple[str, str, int] | None:
                """(kind, repository, number or comment id), answering 404/401 itself."""
                path = self.path.split("?", 1)[0]
                routes = (
                    ("reviews", _REVIEWS),
                    ("summaries", _SUMMARIES),
                    ("summary", _SUMMARY_EDIT),
                    ("inline", _INLINE),
                )
                found = next(((k, m) for k, p in routes if (m := p.match(path)) is not None), None)
                if found is None:
                    if path == "/graphql":
                        return self._authorized("graphql", "", 0)
                    self._reply(404, {"message": "Not Found"})
                    return None
                kind, match = found
                return self._authorized(kind, match.group(1), int(match.group(2)))

            def _authorized(self, kind: str, full_name: str, number: int) -> tuple[str, str, int] | None:
                given = self.headers.get("Authorization", "")
                tokens = [api.tokens.get(full_name)] if full_name else list(api.tokens.values())
                if not any(t and hmac.compare_digest(given, f"Bearer {t}") for t in tokens):
                    with api.lock:
                        api.unauthorized += 1
                    self._reply(401, {"message": "Bad credentials"})
                    return None
                return kind, full_name, number

            def _body(self) -> dict[str, Any]:
                length = int(self.headers.get("Content-Length") or 0)
                data = json.loads(self.rfile.read(length) or b"{}")
                return data if isinstance(data, dict) else {}

            def _listing(self) -> None:
                """One page of ``GET /installation/repositories`` for the bearer's installation."""
                given = self.headers.get("Authorization", "")
                token = next((t for t in api.listings if hmac.compare_digest(given, f"Bearer {t}")), None)
                if token is None:
                    with api.lock:
                        api.unauthorized += 1
                    self._reply(401, {"message": "Bad credentials"})
                    return
                query = parse_qs(urlsplit(self.path).query)
                per_page = min(LISTING_PAGE, int(query.get("per_page", [str(LISTING_PAGE)])[0]))
                page = max(1, int(query.get("page", ["1"])[0]))
                with api.lock:
                    repos = list(api.listings[token])
                items = repos[(page - 1) * per_page : page * per_page]
                body = json.dumps({"total_count": len(repos), "repositories": items}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                if page * per_page < len(repos):
                    host = self.headers.get("Host", "")
                    nxt = f"http://{host}/installation/repositories?per_page={per_page}&page={page + 1}"
                    self.send_header("Link", f'<{nxt}>; rel="next"')
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self) -> None:
                if self.path.split("?", 1)[0] == "/installation/repositories":
                    self._listing()
                    return
                route = self._route()
                if route is None:
                    return
                kind, full_name, number = route
                store = {"reviews": api.reviews, "summaries": api.summaries, "inline": api.inline}.get(kind)
                if store is None:
                    self._reply(404, {"message": "Not Found"})
                    return
                with api.lock:
                    self._reply(200, list(store.get((full_name, number), [])))

            def do_POST(self) -> None:
                body = self._body()
                route = self._route()
                if route is None:
                    return
                kind, full_name, number = route
                text = str(body.get("body") or "")
                with api.lock:
                    if kind == "graphql":
                        self._reply(
                            200, {"data": {"repository": {"pullRequest": {"reviewThreads": {"nodes": []}}}}}
                        )
                    elif kind == "summaries" and SUMMARY_MARKER.search(text):
                        made = {"id": api._new_id(), "body": text}
                        api.summaries.setdefault((full_name, number), []).append(made)
                        api.summaries_created[(full_name, number)] += 1
                        api._posted((full_name, number, SUMMARY_MARKER.search(text).group(1)))  # type: ignore[union-attr]
                        self._reply(201, made)
                    elif (
                        kind == "inline"
                        and FINDING_MARKER.search(text)
                        and body.get("commit_id")
                        and body.get("line")
                    ):
                        made = {
                            "id": api._new_id(),
                            "body": text,
                            "path": body.get("path"),
                            "line": body["line"],
                        }
                        api.inline.setdefault((full_name, number), []).append(made)
                        api.findings_posted[(full_name, number, FINDING_MARKER.search(text).group(1))] += 1  # type: ignore[union-attr]
                        self._reply(201, made)
                    else:
                        self._reply(422, {"message": "Validation Failed"})

            def do_PATCH(self) -> None:
                body = self._body()
                route = self._route()
                if route is None:
                    return
                kind, full_name, ident = route
                text = str(body.get("body") or "")
                marker = SUMMARY_MARKER.search(text)
                with api.lock:
                    for (name, number), items in api.summaries.items():
                        for item in items:
                            if kind == "summary" and name == full_name and item["id"] == ident and marker:
                                before = SUMMARY_MARKER.search(item["body"])
                                item["body"] = text
                                if before is None or before.group(1) != marker.group(1):
                                    api._posted((name, number, marker.group(1)))
                                self._reply(200, item)
                                return
                    self._reply(404 if marker else 422, {"message": "Not Found"})

        return Handler


@contextmanager
def serving(api: FakeGitHubAPI) -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), api.handler())
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, name="fake-github", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


async def api_call(http: httpx.AsyncClient, method: str, url: str, token: str, body: Any = None) -> Any:
    """One call of Palimpsest's HTTP API with a bearer token; an error status raises, naming the
    route (never the token) and the start of the answer."""
    r = await http.request(method, url, headers={"Authorization": f"Bearer {token}"}, json=body)
    if r.status_code >= 300:
        raise RuntimeError(f"{method} {url.split('/v1', 1)[-1]} answered {r.status_code}: {r.text[:200]}")
    return r.json() if r.content else None


@dataclass(frozen=True, slots=True)
class InstalledTenant:
    """A tenant made through the admin API with its GitHub App installation (tenant API): the
    secrets the fake GitHub signs webhooks with and hands out as the installation's token."""

    tenant_id: str
    api_token: str
    installation_id: str
    installation_external_id: int
    webhook_secret: str
    access_token: str


async def install_tenant(
    http: httpx.AsyncClient,
    ingest_url: str,
    admin_token: str,
    name: str,
    external_id: int,
    *,
    host: str | None = None,
) -> InstalledTenant:
    """Make tenant ``name`` and register its GitHub installation ``external_id`` (on ``host``, an
    Enterprise Server host, when given); the webhook secret and access token are fresh."""
    made = await api_call(http, "POST", f"{ingest_url}/v1/tenants", admin_token, {"name": name})
    webhook_secret = secrets.token_urlsafe(24)
    access_token = "ghs_" + secrets.token_urlsafe(27)
    inst = await api_call(
        http,
        "POST",
        f"{ingest_url}/v1/tenants/{made['tenant_id']}/installations",
        made["api_token"],
        {
            "provider": "github",
            "external_id": str(external_id),
            **({"host": host} if host else {}),
            "webhook_secret": webhook_secret,
            "access_token": access_token,
        },
    )
    return InstalledTenant(
        tenant_id=made["tenant_id"],
        api_token=made["api_token"],
        installation_id=inst["installation_id"],
        installation_external_id=external_id,
        webhook_secret=webhook_secret,
        access_token=access_token,
    )
