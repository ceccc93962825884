"""Local fake GitHub, GitLab and Bitbucket review APIs: real HTTP on 127.0.0.1, strict shapes.

Each request must carry ``Authorization: Bearer <token>`` (GitHub also its ``Accept`` and
``X-GitHub-Api-Version`` headers) and the body the real API requires; anything else answers 4xx
and is recorded as rejected. Comments are kept per pull request and listed back by the GET routes,
so a client can check what it already posted; edits, resolutions and GraphQL calls act on them.

Routes (as the real APIs spell them; ``{pr}`` is the pull/merge request):

* GitHub    ``GET|POST /repos/{o}/{r}/issues/{n}/comments``, ``PATCH /repos/{o}/{r}/issues/comments/{id}``,
            ``GET|POST /repos/{o}/{r}/pulls/{n}/comments`` (review comments: ``line``/``side``,
            optional ``start_line``/``start_side``), ``GET|POST /repos/{o}/{r}/pulls/{n}/reviews``,
            ``POST /graphql`` (``reviewThreads`` of a pull request, ``resolveReviewThread``)
* GitLab    ``GET|POST /projects/{id}/merge_requests/{iid}/discussions`` (a ``position`` with
            ``new_line``/``old_line``), ``PUT …/discussions/{id}`` (``resolved``),
            ``POST …/notes``, ``PUT …/notes/{id}``
* Bitbucket ``GET|POST /repositories/{w}/{s}/pullrequests/{id}/comments`` (``inline`` ``to``/``from``),
            ``PUT …/comments/{id}``, ``POST …/comments/{id}/resolve``
* GitHub App ``POST /app/installations/{id}/access_tokens`` (when ``app`` is set): the request
  must carry ``Authorization: Bearer <JWT>`` signed RS256 by the App's key, with ``iss`` the app
  id and a lifetime of at most ten minutes; it answers ``token`` (one hour) and counts the mints.

Installation listings (``listings``, what installation sync reads; see ``installed``), paginated as the real APIs:

* GitHub    ``GET /installation/repositories`` (``listings["github"]``): ``Bearer`` installation
            token and the GitHub headers; ``per_page`` (default 30, at most 100), ``page``; a
            ``Link`` header with ``next``/``last``; ``{"total_count", "repositories"}``
* GitLab    ``GET /groups/{id}/projects`` (``listings["gitlab:{id}"]``): the ``PRIVATE-TOKEN``
            header; ``per_page`` (default 20), ``page``; ``X-Page``/``X-Next-Page``/``X-Total``…
            and (unless ``gitlab_link`` is off) a ``Link`` header; projects marked ``_subgroup``
            only with ``include_subgroups=true``. ``GET /projects/{id}``: one project of any listing
* Bitbucket ``GET /repositories/{workspace}`` (``listings["bitbucket:{workspace}"]``): ``Bearer``;
            ``pagelen`` (default 10, at most 100), ``page``; ``{"values", "next", "page", …}``

``page_size`` caps every page whatever the client asks (so tests see several pages), and each
listing request first takes the next entry of ``listing_answers``: ``None`` serves the page, a
``(status, headers)`` pair answers that instead (401, 404, a rate limit with its headers).

Positions: when the diff of a pull request is registered (``diffs[number] = git diff text``), an
inline comment must name a line the diff shows as the real APIs require — GitHub ``RIGHT`` on an
added or context line and ``LEFT`` on a removed or context line, a range inside one hunk; GitLab
``new_line`` alone for an added line, ``old_line`` alone for a removed one, both (matching) for a
context line, on the file's new and old paths; Bitbucket ``to`` for a new-side line, ``from`` for
a removed one — or it answers 422 (GitHub) / 400 (GitLab, Bitbucket).
"""

from __future__ import annotations

import base64
import itertools
import json
import re
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlparse

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import padding, rsa

_APP_TOKENS = re.compile(r"^/app/installations/(\d+)/access_tokens$")
# (provider, kind, pattern): group 1 the repository, group 2 the pull request (or the item id)
_ROUTES: list[tuple[str, str, re.Pattern[str]]] = [
    ("github", "summary", re.compile(r"^/repos/([^/]+/[^/]+)/issues/(\d+)/comments$")),
    ("github", "summary_edit", re.compile(r"^/repos/([^/]+/[^/]+)/issues/comments/(\d+)$")),
    ("github", "inline", re.compile(r"^/repos/([^/]+/[^/]+)/pulls/(\d+)/comments$")),
    ("github", "reviews", re.compile(r"^/repos/([^/]+/[^/]+)/pulls/(\d+)/reviews$")),
    ("github", "graphql", re.compile(r"^/()()graphql$")),
    ("gitlab", "inline", re.compile(r"^/projects/([^/]+)/merge_requests/(\d+)/discussions$")),
    ("gitlab", "resolve", re.compile(r"^/projects/([^/]+)/merge_requests/(\d+)/discussions/([0-9a-f]+)$")),
    ("gitlab", "summary", re.compile(r"^/projects/([^/]+)/merge_requests/(\d+)/notes$")),
    ("gitlab", "summary_edit", re.compile(r"^/projects/([^/]+)/merge_requests/(\d+)/notes/(\d+)$")),
    ("bitbucket", "inline", re.compile(r"^/repositories/([^/]+/[^/]+)/pullrequests/(\d+)/comments$")),
    (
        "bitbucket",
        "summary_edit",
        re.compile(r"^/repositories/([^/]+/[^/]+)/pullrequests/(\d+)/comments/(\d+)$"),
    ),
    (
        "bitbucket",
        "resolve",
        re.compile(r"^/repositories/([^/]+/[^/]+)/pullrequests/(\d+)/comments/(\d+)/resolve$"),
    ),
]


@dataclass
class DiffLines:
    """What a diff shows per file (by new path): new-side and old-side lines, with their hunk."""

    old_path: str
    new: dict[int, tuple[str, int, int | None]] = field(default_factory=dict)  # line → (kind, hunk, old)
    old: dict[int, tuple[str, int, int | None]] = field(default_factory=dict)  # line → (kind, hunk, new)


def shown_lines(diff: str) -> dict[str, DiffLines]:
    """The fake's own reading of a ``git diff`` (independent of the reviewer's)."""
    files: dict[str, DiffLines] = {}
    current: DiffLines | None = None
    path = ""
    hunk = -1
    old = new = 0
    in_hunk = False
    for line in diff.split("\n"):
        if line.startswith("diff --git "):
            a, _, b = line[len("diff --git a/") :].partition(" b/")
            path, current, hunk, in_hunk = b, DiffLines(a), -1, False
            files[path] = current
        elif current is None:
            continue
        elif line.startswith("rename to "):
            del files[path]
            path = line[len("rename to ") :]
            files[path] = current
        elif line.startswith("rename from "):
            current.old_path = line[len("rename from ") :]
        elif line.startswith("@@ "):
            m = re.match(r"@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@", line)
            assert m is not None
            old, new, hunk, in_hunk = int(m.group(1)), int(m.group(2)), hunk + 1, True
        elif in_hunk and line.startswith("+"):
            current.new[new] = ("added", hunk, None)
            new += 1
        elif in_hunk and line.startswith("-"):
            current.old[old] = ("removed", hunk, None)
            old += 1
        elif in_hunk and line.startswith(" "):
            current.new[new] = ("context", hunk, old)
            current.old[old] = ("context", hunk, new)
            old, new = old + 1, new + 1
    return files


# what each provider accepts in one comment's body, in characters (GitHub's issue comment, GitLab's
# note, Bitbucket Cloud's pull request comment): a longer body is refused, as the real APIs do
BODY_LIMITS = {"github": 65_536, "gitlab": 1_000_000, "bitbucket": 32_768}


@dataclass
class FakeProviders:
    token: str
    posted: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # provider → created bodies
    rejected: list[str] = field(default_factory=list)
    requests: list[tuple[str, str, str]] = field(default_factory=list)  # (method, provider, repo)
    fail_posts: int = 0  # the next N well-formed POSTs answer 503
    app: FakeApp | None = None  # answer App installation token requests (and mint ``token``)
    diffs: dict[int, str] = field(default_factory=dict)  # pull request number → its diff (positions)
    # provider → pull request → comments in creation order (each a dict as the API lists it)
    comments: dict[str, dict[int, list[dict[str, Any]]]] = field(default_factory=dict)
    edits: list[tuple[str, str]] = field(default_factory=list)  # (provider, id) of edited summaries
    resolutions: list[tuple[str, str]] = field(default_factory=list)  # (provider, thread id)
    listings: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # see the module docstring
    page_size: int = 100
    listing_answers: list[tuple[int, dict[str, str]] | None] = field(default_factory=list)
    listing_requests: list[str] = field(default_factory=list)  # the paths and queries asked for
    gitlab_link: bool = True
    _ids: Any = field(default_factory=lambda: itertools.count(1001))
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

    # ------------------------------------------------------------------ what tests look at

    def items(self, provider: str, number: int) -> list[dict[str, Any]]:
        return self.comments.get(provider, {}).get(number, [])

    def summaries(self, provider: str, number: int) -> list[str]:
        """The bodies of the pull request's summary-kind comments (not inline)."""
        return [_text(c) for c in self.items(provider, number) if c["_kind"] == "summary"]

    def inline(self, provider: str, number: int) -> list[dict[str, Any]]:
        """The pull request's inline comments (GitHub review comments, GitLab diff discussions'
        first notes, Bitbucket inline comments), with ``resolved``."""
        return [c for c in self.items(provider, number) if c["_kind"] == "inline"]

    # ------------------------------------------------------------------ checks

    def check(self, provider: str, method: str, headers: Any, body: Any) -> str | None:
        """Why the request would be refused by the real API (None: it is fine)."""
        if headers.get("Authorization") != f"Bearer {self.token}":
            return "401 bad credentials"
        github_headers = headers.get("Accept") == "application/vnd.github+json" and headers.get(
            "X-GitHub-Api-Version"
        )
        if provider == "github" and not github_headers:
            return "415 github headers"
        return None

    def _position(self, provider: str, number: int, body: dict[str, Any]) -> str | None:
        diff = self.diffs.get(number)
        if diff is None:
            return None
        files = shown_lines(diff)
        if provider == "github":
            f = files.get(body["path"])
            lines = None if f is None else (f.old if body["side"] == "LEFT" else f.new)
            end = lines.get(body["line"]) if lines is not None else None
            if lines is None or end is None:
                return "422 line could not be resolved"
            if "start_line" in body:
                start = lines.get(body["start_line"]) if body.get("start_side") == body["side"] else None
                if start is None or start[1] != end[1] or body["start_line"] > body["line"]:
                    return "422 start_line must be in the same hunk"
            return None
        if provider == "gitlab":
            pos = body["position"]
            f = files.get(pos.get("new_path"))
            if f is None or f.old_path != pos.get("old_path"):
                return "400 position paths"
            new, old = pos.get("new_line"), pos.get("old_line")
            if new is not None and old is None:
                ok = f.new.get(new, ("",))[0] == "added"
            elif old is not None and new is None:
                ok = f.old.get(old, ("",))[0] == "removed"
            else:
                found = f.new.get(new) if new is not None else None
                ok = found is not None and found[0] == "context" and found[2] == old
            return None if ok else "400 line_code can't be blank (position not in the diff)"
        inline = body["inline"]
        f = files.get(inline.get("path"))
        if f is None:
            return "400 inline path"
        if "to" in inline:
            return None if inline["to"] in f.new else "400 inline to not in the diff"
        return None if f.old.get(inline.get("from"), ("",))[0] == "removed" else "400 inline from"

    def _create(self, provider: str, kind: str, number: int, body: dict[str, Any]) -> str | None:
        """Validate and keep a new comment; the refusal (status + why) or None."""
        if len(_text(body)) > BODY_LIMITS[provider]:
            return f"422 {provider} body is too long (maximum is {BODY_LIMITS[provider]} characters)"
        if provider == "github" and kind == "inline":
            if not isinstance(body.get("commit_id"), str) or not isinstance(body.get("path"), str):
                return "422 github comment commit_id/path"
            if not isinstance(body.get("line"), int) or body.get("side") not in ("LEFT", "RIGHT"):
                return "422 github comment line/side"
            if not body.get("body"):
                return "422 github comment body"
        elif provider == "github":
            if not isinstance(body.get("body"), str) or not body["body"]:
                return "422 github body"
        elif provider == "gitlab":
            if not isinstance(body.get("body"), str) or not body["body"]:
                return "400 gitlab body"
            pos = body.get("position")
            if kind == "inline" and pos is not None:
                need = ("base_sha", "start_sha", "head_sha", "old_path", "new_path")
                if pos.get("position_type") != "text" or not all(isinstance(pos.get(k), str) for k in need):
                    return "400 gitlab position fields"
        elif not isinstance((body.get("content") or {}).get("raw"), str):
            return "400 bitbucket content.raw"
        positioned = (
            (provider == "github" and kind == "inline")
            or (provider == "gitlab" and body.get("position") is not None)
            or (provider == "bitbucket" and body.get("inline") is not None)
        )
        if positioned:
            problem = self._position(provider, number, body)
            if problem is not None:
                return problem
        ident = next(self._ids)
        item: dict[str, Any] = {
            "_kind": "inline" if positioned else "summary",
            "id": ident,
            "resolved": False,
        }
        if provider == "github":
            item.update(body)
            item["node_id"] = f"PRRC_{ident}"
        elif provider == "gitlab":
            item.update({"id": f"{ident:040x}", "note_id": ident, "body": body["body"]})
            item["position"] = body.get("position")
        else:
            item.update({"content": body["content"], "inline": body.get("inline")})
        self.comments.setdefault(provider, {}).setdefault(number, []).append(item)
        self.posted.setdefault(provider, []).append(body)
        return None

    def listing(self, provider: str, kind: str, number: int) -> Any:
        items = self.items(provider, number)
        if provider == "github":
            if kind == "reviews":
                return []
            want = "summary" if kind == "summary" else "inline"
            return [_public(c) for c in items if c["_kind"] == want]
        if provider == "gitlab":
            return [
                {
                    "id": c["id"] if c["_kind"] == "inline" else f"{c['note_id']:040x}",
                    "individual_note": c["_kind"] == "summary",
                    "notes": [
                        {
                            "id": c["note_id"],
                            "body": c["body"],
                            "position": c.get("position"),
                            "resolvable": c["_kind"] == "inline",
                            "resolved": c["resolved"],
                        }
                    ],
                }
                for c in items
            ]
        return {
            "values": [
                {
                    "id": c["id"],
                    "content": c["content"],
                    "inline": c.get("inline"),
                    "resolution": {"type": "comment_resolution"} if c["resolved"] else None,
                }
                for c in items
            ]
        }

    def created(self, provider: str, kind: str, number: int) -> Any:
        """The answer to a create, shaped as the real API's (GitLab: a discussion, or a note)."""
        made = self.items(provider, number)[-1]
        if provider == "gitlab" and kind == "summary":
            return {"id": made["note_id"], "body": made["body"]}
        if provider == "gitlab":
            return {
                "id": made["id"],
                "individual_note": False,
                "notes": [{"id": made["note_id"], "body": made["body"]}],
            }
        return _public(made)

    def graphql(self, body: dict[str, Any]) -> tuple[int, Any]:
        query = str(body.get("query") or "")
        variables = body.get("variables") or {}
        if "resolveReviewThread" in query:
            thread = str(variables.get("id") or "")
            for prs in self.comments.get("github", {}).values():
                for c in prs:
                    if c["_kind"] == "inline" and f"PRRT_{c['id']}" == thread:
                        c["resolved"] = True
                        self.resolutions.append(("github", thread))
                        return 200, {
                            "data": {"resolveReviewThread": {"thread": {"id": thread, "isResolved": True}}}
                        }
            return 200, {"errors": [{"type": "NOT_FOUND", "message": "Could not resolve to a node"}]}
        if "reviewThreads" in query:
            number = int(variables.get("number") or 0)
            nodes = [
                {
                    "id": f"PRRT_{c['id']}",
                    "isResolved": c["resolved"],
                    "comments": {"nodes": [{"databaseId": c["id"]}]},
                }
                for c in self.inline("github", number)
                if c.get("in_reply_to") is None
            ]
            return 200, {"data": {"repository": {"pullRequest": {"reviewThreads": {"nodes": nodes}}}}}
        return 200, {"errors": [{"message": "unsupported query"}]}

    def edit(self, provider: str, kind: str, number: int, ident: str, body: dict[str, Any]) -> str | None:
        if len(_text(body)) > BODY_LIMITS[provider]:
            return f"422 {provider} body is too long (maximum is {BODY_LIMITS[provider]} characters)"
        for prs in (
            self.comments.get(provider, {}).values() if number == 0 else [self.items(provider, number)]
        ):
            for c in prs:
                key = str(c["note_id"]) if provider == "gitlab" and kind == "summary_edit" else str(c["id"])
                if key != ident:
                    continue
                if kind == "resolve":
                    if provider == "gitlab" and body.get("resolved") is not True:
                        return "400 resolved must be true or false"
                    if c["_kind"] != "inline":
                        return "400 not resolvable"
                    if provider == "bitbucket" and c["resolved"]:
                        return "409 already resolved"
                    c["resolved"] = True
                    self.resolutions.append((provider, ident))
                    return None
                if provider == "bitbucket":
                    if not isinstance((body.get("content") or {}).get("raw"), str):
                        return "400 bitbucket content.raw"
                    c["content"] = body["content"]
                else:
                    if not isinstance(body.get("body"), str) or not body["body"]:
                        return "422 body"
                    c["body"] = body["body"]
                self.edits.append((provider, ident))
                return None
        return "404 not found"

    def installed(
        self, path: str, query: dict[str, list[str]], headers: Any
    ) -> tuple[int, Any, dict[str, str]]:
        """An installation listing's page: (status, body, headers); (0, …) when not a listing."""

        def one(name: str, default: str) -> str:
            return (query.get(name) or [default])[0]

        gitlab_group = re.match(r"^/groups/([^/]+)/projects$", path)
        gitlab_project = re.match(r"^/projects/(\d+)$", path)
        bitbucket_ws = re.match(r"^/repositories/([^/]+)$", path)
        if path == "/installation/repositories":
            provider, key, default, limit = "github", "github", 30, "per_page"
        elif gitlab_group is not None:
            provider, key, default, limit = (
                "gitlab",
                f"gitlab:{unquote(gitlab_group.group(1))}",
                20,
                "per_page",
            )
        elif gitlab_project is not None:
            provider, key, default, limit = "gitlab", "", 20, "per_page"
        elif bitbucket_ws is not None:
            provider, key, default, limit = (
                "bitbucket",
                f"bitbucket:{unquote(bitbucket_ws.group(1))}",
                10,
                "pagelen",
            )
        else:
            return 0, None, {}
        self.listing_requests.append(
            path + ("?" + "&".join(f"{k}={v[0]}" for k, v in sorted(query.items())) if query else "")
        )
        if provider == "gitlab":
            if headers.get("PRIVATE-TOKEN") != self.token:
                return 401, {"message": "401 Unauthorized"}, {}
        else:
            problem = self.check(provider, "GET", headers, {})
            if problem is not None:
                return int(problem[:3]), {"message": problem}, {}
        if self.listing_answers:
            answer = self.listing_answers.pop(0)
            if answer is not None:
                return answer[0], {"message": f"fake answer {answer[0]}"}, answer[1]
        if gitlab_project is not None:
            for name, items in self.listings.items():
                for item in items:
                    if name.startswith("gitlab:") and str(item["id"]) == gitlab_project.group(1):
                        return 200, _public(item), {}
            return 404, {"message": "404 Project Not Found"}, {}
        if key not in self.listings:
            return 404, {"message": "Not Found"}, {}
        items = [
            _public(i)
            for i in self.listings[key]
            if not i.get("_subgroup") or one("include_subgroups", "false") == "true"
        ]
        per = min(int(one(limit, str(default))), 100, self.page_size)
        page = int(one("page", "1"))
        chunk = items[(page - 1) * per : page * per]
        last = max(1, -(-len(items) // per))
        base = f"http://{headers.get('Host')}{path}"
        rest = "&".join(f"{k}={v[0]}" for k, v in sorted(query.items()) if k not in ("page",))

        def link(n: int) -> str:
            return f"{base}?{rest + '&' if rest else ''}page={n}"

        if provider == "bitbucket":
            body: dict[str, Any] = {"pagelen": per, "page": page, "size": len(items), "values": chunk}
            if page < last:
                body["next"] = link(page + 1)
            return 200, body, {}
        out: dict[str, str] = {}
        links = [f'<{link(page + 1)}>; rel="next"'] if page < last else []
        links.append(f'<{link(last)}>; rel="last"')
        if provider == "gitlab":
            out = {
                "X-Page": str(page),
                "X-Per-Page": str(per),
                "X-Total": str(len(items)),
                "X-Total-Pages": str(last),
                "X-Next-Page": str(page + 1) if page < last else "",
            }
            if self.gitlab_link:
                out["Link"] = ", ".join(links)
            return 200, chunk, out
        out = {"Link": ", ".join(links)}
        return (
            200,
            {"total_count": len(items), "repository_selection": "selected", "repositories": chunk},
            out,
        )


def _text(c: dict[str, Any]) -> str:
    return str(c.get("body") or (c.get("content") or {}).get("raw") or "")


def _public(c: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in c.items() if not k.startswith("_")}


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

        def _route(self) -> tuple[str, str, str, int, str] | None:
            """(provider, kind, repository, pull request number, item id)."""
            path = urlparse(self.path).path
            for provider, kind, pattern in _ROUTES:
                match = pattern.match(path)
                if match:
                    groups = match.groups()
                    number = int(groups[1]) if groups[1] else 0
                    if kind == "summary_edit" and provider == "github":
                        return provider, kind, unquote(groups[0]), 0, groups[1]
                    return provider, kind, unquote(groups[0]), number, groups[2] if len(groups) > 2 else ""
            return None

        def _answer(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            for name, value in (headers or {}).items():
                self.send_header(name, value)
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
            if method == "GET":
                parts = urlparse(self.path)
                with fake._lock:
                    status, payload, headers = fake.installed(parts.path, parse_qs(parts.query), self.headers)
                if status:
                    self._answer(status, payload, headers)
                    return
            route = self._route()
            if route is None:
                self._answer(404, {"message": "Not Found"})
                return
            provider, kind, repo, number, ident = route
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}") if method != "GET" else {}
            with fake._lock:
                fake.requests.append((method, provider, repo))
                problem = fake.check(provider, method, self.headers, body)
                if problem is None and not isinstance(body, dict):
                    problem = "400 body must be an object"
                if problem is not None:
                    fake.rejected.append(problem)
                    self._answer(int(problem[:3]), {"message": problem})
                    return
                if method == "POST" and fake.fail_posts > 0:
                    fake.fail_posts -= 1
                    self._answer(503, {"message": "unavailable"})
                    return
                if kind == "graphql" and method == "POST":
                    status, payload = fake.graphql(body)
                    self._answer(status, payload)
                    return
                if method == "GET" and kind in ("summary", "inline", "reviews"):
                    self._answer(200, fake.listing(provider, kind, number))
                    return
                if method == "POST" and kind in ("summary", "inline", "reviews"):
                    problem = fake._create(provider, "summary" if kind == "reviews" else kind, number, body)
                    if problem is None:
                        self._answer(201, fake.created(provider, kind, number))
                        return
                elif (kind == "resolve" and method in ("PUT", "POST")) or (
                    kind == "summary_edit" and method in ("PATCH", "PUT")
                ):
                    problem = fake.edit(provider, kind, number, ident, body)
                else:
                    problem = "405 method not allowed"
                if problem is not None:
                    fake.rejected.append(problem)
                    self._answer(int(problem[:3]), {"message": problem})
                    return
                self._answer(200, {"ok": True})

        def do_GET(self) -> None:
            self._serve("GET")

        def do_POST(self) -> None:
            self._serve("POST")

        def do_PUT(self) -> None:
            self._serve("PUT")

        def do_PATCH(self) -> None:
            self._serve("PATCH")

    return Handler
