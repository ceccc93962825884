"""Posting a review back to its provider: inline comments per finding, one summary kept in place.

Per pull request the provider holds:

* one **summary** comment (GitHub issue comment, GitLab merge request note, Bitbucket pull request
  comment) carrying ``<!-- palimpsest-summary head=SHA -->``; each new review edits it in place;
* one **inline comment per finding** (GitHub review comment, GitLab diff discussion, Bitbucket
  inline comment) carrying ``<!-- palimpsest-finding fp=FINGERPRINT -->``, placed on the line the
  finding's position names (added/context lines on the new side, removed lines on the old side),
  with a suggestion block (GitHub ```` ```suggestion ````, GitLab ```` ```suggestion:-N+0 ````)
  when the model proposed a replacement of exactly the finding's lines.

Before posting, the provider's comments are read: a summary already naming this head means the
review was posted (a redelivered request, or a crash between posting and storing, posts nothing
twice); a finding whose fingerprint is already there is not posted again (a new push does not
repeat it). Earlier findings whose anchor changed or vanished are resolved where the provider
supports it (GitHub review threads through GraphQL, GitLab discussions, Bitbucket comment
resolution). A finding whose position does not map — or that the provider refuses to place —
goes to the summary instead; it never fails the post.

The token is the installation's (sealed in ``installations.credentials``, opened with the
deployment's encryption key; for a GitHub App installation, one minted from the App's key by
:mod:`palimpsest.core.github_app`) and travels only in the ``Authorization`` header — never in a URL,
a log line or an error message.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol
from urllib.parse import quote

import httpx

from palimpsest.core.credentials import Credential, installation_credential
from palimpsest.core.db import Conn
from palimpsest.core.github_app import provider_api_url
from palimpsest.core.jsonshape import JsonObject
from palimpsest.core.wire import (
    FINDING_MARKER,
    LEGACY_SUMMARY_MARKER,
    SUMMARY_MARKER,
    finding_marker,
    summary_marker,
)
from palimpsest.index.context.errors import ReviewFailed
from palimpsest.index.context.finding import Finding
from palimpsest.index.context.leftbehind import SECTION_TITLE, is_left_behind
from palimpsest.reviewer.details import fit
from palimpsest.reviewer.store import RepositoryRow

log = logging.getLogger(__name__)

TIMEOUT_S = 30.0
MAX_PAGES = 20


@dataclass(frozen=True, slots=True)
class Shown:
    """What the summary's collapsed sections show: the review's stored context items, what it
    dropped (the budget's count), and its co-change warning."""

    context: Sequence[dict[str, Any]] = ()
    dropped: Sequence[dict[str, Any]] = ()
    cochange: Sequence[dict[str, Any]] = ()


@dataclass(frozen=True, slots=True)
class Target:
    provider: str  # github | gitlab | bitbucket
    api_url: str  # e.g. https://api.github.com (no trailing slash)
    full_name: str  # owner/repo, group/project, workspace/slug
    number: int
    head_sha: str
    base_sha: str | None = None  # the target branch's commit (GitLab's start_sha)
    merge_base: str | None = None  # the diff's start (GitLab's base_sha)

    @property
    def marker(self) -> str:
        return summary_marker(self.head_sha)


@dataclass(slots=True)
class Thread:
    ref: str  # GitHub comment id, GitLab discussion id, Bitbucket comment id
    resolved: bool = False
    comment: str | None = None  # GitLab: the discussion's first note id


@dataclass(slots=True)
class ProviderState:
    summary_ref: str | None = None
    summary_head: str | None = None
    legacy_heads: set[str] = field(default_factory=set)
    threads: dict[str, Thread] = field(default_factory=dict)  # fingerprint → its thread


@dataclass(slots=True)
class PostResult:
    fresh: bool  # False: this head's review was already on the provider
    inline: list[str] = field(default_factory=list)  # fingerprints posted inline now
    existing: list[str] = field(default_factory=list)  # posted by an earlier review, still there
    in_summary: list[str] = field(default_factory=list)  # could not be placed: in the summary
    resolved: list[str] = field(default_factory=list)  # earlier findings resolved now
    summary_ref: str | None = None
    # fingerprint → (thread ref, first comment ref or None): posted now, or found from earlier posts
    threads: dict[str, tuple[str, str | None]] = field(default_factory=dict)


def default_api_url(provider: str, host: str) -> str:
    return provider_api_url(provider, host)


async def installation_target(
    conn: Conn, repo: RepositoryRow, number: int, head_sha: str, api_urls: Mapping[str, str | None]
) -> tuple[Target, Credential] | None:
    """Where to post and the installation's sealed credential; None when it has none."""
    credential = await installation_credential(conn, repo.repository_id)
    if credential is None:
        return None
    api = api_urls.get(credential.provider) or default_api_url(credential.provider, credential.host)
    target = Target(credential.provider, api.rstrip("/"), repo.full_name, number, head_sha)
    return target, credential


def _label(f: Finding) -> str:
    side = " (removed lines)" if f.side == "old" else ""
    return f"`{f.path}:{f.start_line}-{f.end_line}`{side}"


def render_summary(
    target: Target,
    summary: str,
    placed_elsewhere: Sequence[Finding],
    *,
    inline: int,
    existing: int,
    resolved: int,
    shown: Shown | None = None,
) -> str:
    """The summary comment: the review's summary, what is inline, what could not be placed, and
    the two collapsed sections (:mod:`palimpsest.reviewer.details`), within the provider's limit."""
    lines = [summary.strip() or "Palimpsest review.", ""]
    counts = [f"{inline} new finding(s) inline"]
    if existing:
        counts.append(f"{existing} posted earlier and still open")
    if resolved:
        counts.append(f"{resolved} resolved since the last review (the code they pointed at changed)")
    lines.append(f"Reviewed `{target.head_sha[:12]}`: " + "; ".join(counts) + ".")
    docs = [f for f in placed_elsewhere if is_left_behind(f)]
    others = [f for f in placed_elsewhere if not is_left_behind(f)]
    for title, group in (("Findings not on a line of the diff:", others), (f"{SECTION_TITLE}:", docs)):
        if not group:
            continue
        lines += ["", title]
        for f in group:
            lines.append(f"- **{f.severity}** {_label(f)} ({f.category}): {f.message}")
            if f.suggested_change:
                lines += [
                    "  Suggested change:",
                    "  ```",
                    *("  " + s for s in f.suggested_change.splitlines()),
                    "  ```",
                ]
            if f.fingerprint:
                lines.append("  " + finding_marker(f.fingerprint))
    shown = shown or Shown()
    return fit(target.provider, "\n".join(lines), shown.context, shown.dropped, shown.cochange, target.marker)


def comment_body(provider: str, f: Finding) -> str:
    """An inline comment: the finding, its suggestion in the provider's syntax, its marker."""
    text = f"**{f.severity}** ({f.category}): {f.message}"
    position = f.position or {}
    exact = bool(position.get("exact")) and f.side == "new" and position.get("kind") != "removed"
    if f.suggested_change:
        if provider == "github" and exact:
            text += f"\n\n```suggestion\n{f.suggested_change}\n```"
        elif provider == "gitlab" and exact:
            above = int(position["end"]) - int(position["start"])
            text += f"\n\n```suggestion:-{above}+0\n{f.suggested_change}\n```"
        else:
            text += f"\n\nSuggested change:\n```\n{f.suggested_change}\n```"
    if f.fingerprint:
        text += "\n\n" + finding_marker(f.fingerprint)
    return text


class _Api(Protocol):
    async def read(self) -> ProviderState: ...

    async def inline(self, f: Finding) -> tuple[str, str | None] | None: ...  # thread, comment; None: refused

    async def resolve(self, fingerprint: str, thread: Thread) -> bool: ...

    async def summary(self, ref: str | None, body: str) -> str: ...


async def post_review(
    target: Target,
    token: str,
    summary: str,
    findings: Sequence[Finding],
    *,
    resolve: Sequence[str] = (),
    again: bool = False,
    shown: Shown | None = None,
    client: httpx.AsyncClient | None = None,
) -> PostResult:
    """Post what this head adds (see the module text); ``fresh`` False: it was already there.
    ``again``: post even when the summary names this head (a full review asked for on a head
    reviewed before: its new findings are posted, the summary is edited)."""
    own = client is None
    http = client or httpx.AsyncClient(timeout=TIMEOUT_S)
    try:
        api = _APIS[target.provider](_Http(http, _headers(target.provider, token)), target)
        return await _publish(api, target, summary, findings, resolve, again=again, shown=shown)
    except httpx.HTTPStatusError as exc:
        raise ReviewFailed("post_failed", f"{target.provider} answered {exc.response.status_code}") from exc
    except httpx.HTTPError as exc:
        raise ReviewFailed("post_failed", f"{target.provider} unreachable: {type(exc).__name__}") from exc
    finally:
        if own:
            await http.aclose()


async def _publish(
    api: _Api,
    t: Target,
    summary: str,
    findings: Sequence[Finding],
    resolve: Sequence[str],
    *,
    again: bool,
    shown: Shown | None = None,
) -> PostResult:
    state = await api.read()
    if not again and (state.summary_head == t.head_sha or t.head_sha in state.legacy_heads):
        return PostResult(False, summary_ref=state.summary_ref)
    result = PostResult(True)
    current = {f.fingerprint for f in findings if f.fingerprint}
    elsewhere: list[Finding] = []
    for f in findings:
        fp = f.fingerprint
        if fp and fp in state.threads:
            result.existing.append(fp)
            result.threads.setdefault(fp, (state.threads[fp].ref, state.threads[fp].comment))
            continue
        if fp and (fp in result.inline or fp in result.in_summary):  # the same finding twice in one review
            continue
        ref = await api.inline(f) if f.position is not None else None
        if ref is None:
            elsewhere.append(f)
            if fp:
                result.in_summary.append(fp)
            continue
        if fp:
            result.inline.append(fp)
            result.threads[fp] = ref
    for fp in dict.fromkeys(resolve):
        thread = state.threads.get(fp)
        if thread is None or thread.resolved or fp in current:
            continue
        if await api.resolve(fp, thread):
            result.resolved.append(fp)
    body = render_summary(
        t,
        summary,
        elsewhere,
        inline=len(result.inline),
        existing=len(result.existing),
        resolved=len(result.resolved),
        shown=shown,
    )
    result.summary_ref = await api.summary(state.summary_ref, body)
    return result


def _headers(provider: str, token: str) -> dict[str, str]:
    headers = {"Authorization": f"Bearer {token}", "User-Agent": "palimpsest-reviewer"}
    if provider == "github":
        headers.update({"Accept": "application/vnd.github+json", "X-GitHub-Api-Version": "2022-11-28"})
    return headers


@dataclass(slots=True)
class _Http:
    client: httpx.AsyncClient
    headers: dict[str, str]

    async def pages(self, url: str) -> list[Any]:
        """Every item of a listing: GitHub/GitLab ``Link: rel=next``, Bitbucket's ``next``."""
        items: list[Any] = []
        next_url: str | None = url
        for _ in range(MAX_PAGES):
            if next_url is None:
                break
            response = await self.client.get(next_url, headers=self.headers)
            response.raise_for_status()
            data = response.json()
            if isinstance(data, dict):  # Bitbucket
                items += data.get("values") or []
                next_url = data.get("next") if isinstance(data.get("next"), str) else None
            else:
                items += data if isinstance(data, list) else []
                next_url = response.links.get("next", {}).get("url")
        return [i for i in items if isinstance(i, dict)]

    async def send(self, method: str, url: str, body: JsonObject, *, placing: bool = False) -> Any:
        """One write; ``placing``: a 400/404/422 (the provider cannot place it) answers None."""
        response = await self.client.request(method, url, headers=self.headers, json=body)
        if placing and response.status_code in (400, 404, 422):
            log.info(
                "%s refused an inline position (%s): into the summary",
                url.split("/")[2],
                response.status_code,
            )
            return None
        response.raise_for_status()
        return response.json() if response.content else {}


def _scan(
    state: ProviderState,
    ref: str,
    body: str,
    *,
    resolved: bool = False,
    summary: bool = True,
    comment: str | None = None,
) -> None:
    found = SUMMARY_MARKER.search(body)
    if found and summary and state.summary_ref is None:
        state.summary_ref, state.summary_head = ref, found.group(1)
        return
    legacy = LEGACY_SUMMARY_MARKER.search(body)
    if legacy:
        state.legacy_heads.add(legacy.group(1))
    first = FINDING_MARKER.search(body)
    if first and not found:
        state.threads.setdefault(first.group(1), Thread(ref, resolved, comment))


class _GitHub:
    def __init__(self, http: _Http, t: Target) -> None:
        self.http, self.t = http, t
        self.repo = f"{t.api_url}/repos/{t.full_name}"
        self._known: dict[str, tuple[str, bool]] | None = None

    async def read(self) -> ProviderState:
        state = ProviderState()
        for c in await self.http.pages(f"{self.repo}/issues/{self.t.number}/comments?per_page=100"):
            _scan(state, str(c.get("id")), str(c.get("body") or ""))
        for r in await self.http.pages(f"{self.repo}/pulls/{self.t.number}/reviews?per_page=100"):
            _scan(state, str(r.get("id")), str(r.get("body") or ""), summary=False)
        for c in await self.http.pages(f"{self.repo}/pulls/{self.t.number}/comments?per_page=100"):
            if c.get("in_reply_to_id") is None:
                _scan(state, str(c.get("id")), str(c.get("body") or ""), summary=False)
        return state

    async def inline(self, f: Finding) -> tuple[str, str | None] | None:
        p = f.position or {}
        side = "LEFT" if p.get("side") == "old" else "RIGHT"
        body: JsonObject = {
            "body": comment_body("github", f),
            "commit_id": self.t.head_sha,
            "path": p["path"],
            "line": int(p["end"]),
            "side": side,
        }
        if int(p["start"]) < int(p["end"]):
            body.update({"start_line": int(p["start"]), "start_side": side})
        made = await self.http.send("POST", f"{self.repo}/pulls/{self.t.number}/comments", body, placing=True)
        return None if made is None else (str(made.get("id")), None)

    def _graphql_url(self) -> str:
        api = self.t.api_url
        return api[: -len("/v3")] + "/graphql" if api.endswith("/api/v3") else api + "/graphql"

    async def _threads(self) -> dict[str, tuple[str, bool]]:
        """Review comment id → (its thread's node id, resolved)."""
        owner, _, name = self.t.full_name.partition("/")
        query = (
            "query($owner: String!, $name: String!, $number: Int!) { repository(owner: $owner, name: $name) {"
            " pullRequest(number: $number) { reviewThreads(first: 100) { nodes { id isResolved"
            " comments(first: 1) { nodes { databaseId } } } } } } }"
        )
        data = await self.http.send(
            "POST",
            self._graphql_url(),
            {"query": query, "variables": {"owner": owner, "name": name, "number": self.t.number}},
        )
        pr = ((data.get("data") or {}).get("repository") or {}).get("pullRequest") or {}
        out: dict[str, tuple[str, bool]] = {}
        for node in (pr.get("reviewThreads") or {}).get("nodes") or []:
            first = ((node.get("comments") or {}).get("nodes") or [{}])[0]
            if first.get("databaseId") is not None:
                out[str(first["databaseId"])] = (str(node["id"]), bool(node.get("isResolved")))
        return out

    async def resolve(self, fingerprint: str, thread: Thread) -> bool:
        if self._known is None:
            self._known = await self._threads()
        found = self._known.get(thread.ref)
        if found is None or found[1]:
            return False
        mutation = (
            "mutation($id: ID!) { resolveReviewThread(input: {threadId: $id}) { thread { id isResolved } } }"
        )
        data = await self.http.send(
            "POST", self._graphql_url(), {"query": mutation, "variables": {"id": found[0]}}
        )
        if data.get("errors"):
            log.info("github did not resolve a review thread: %s", str(data["errors"])[:200])
            return False
        return True

    async def summary(self, ref: str | None, body: str) -> str:
        if ref is not None:
            await self.http.send("PATCH", f"{self.repo}/issues/comments/{ref}", {"body": body})
            return ref
        made = await self.http.send("POST", f"{self.repo}/issues/{self.t.number}/comments", {"body": body})
        return str(made.get("id"))


class _GitLab:
    def __init__(self, http: _Http, t: Target) -> None:
        self.http, self.t = http, t
        self.mr = f"{t.api_url}/projects/{quote(t.full_name, safe='')}/merge_requests/{t.number}"

    async def read(self) -> ProviderState:
        state = ProviderState()
        for d in await self.http.pages(f"{self.mr}/discussions?per_page=100"):
            notes = [n for n in d.get("notes") or [] if isinstance(n, dict)]
            if not notes:
                continue
            first = notes[0]
            body = str(first.get("body") or "")
            if SUMMARY_MARKER.search(body):
                _scan(state, str(first.get("id")), body)
            else:
                _scan(
                    state,
                    str(d.get("id")),
                    body,
                    resolved=bool(first.get("resolved")),
                    summary=False,
                    comment=str(first.get("id")),
                )
        return state

    async def inline(self, f: Finding) -> tuple[str, str | None] | None:
        p = f.position or {}
        position: JsonObject = {
            "position_type": "text",
            "base_sha": self.t.merge_base or self.t.base_sha,
            "start_sha": self.t.base_sha or self.t.merge_base,
            "head_sha": self.t.head_sha,
            "old_path": p.get("old_path") or p["path"],
            "new_path": p["path"],
        }
        if p.get("new_line") is not None:
            position["new_line"] = int(p["new_line"])
        if p.get("old_line") is not None:
            position["old_line"] = int(p["old_line"])
        body = {"body": comment_body("gitlab", f), "position": position}
        made = await self.http.send("POST", f"{self.mr}/discussions", body, placing=True)
        if made is None:
            return None
        notes = made.get("notes") or [{}]
        note = notes[0].get("id") if isinstance(notes[0], dict) else None
        return str(made.get("id")), (str(note) if note is not None else None)

    async def resolve(self, fingerprint: str, thread: Thread) -> bool:
        made = await self.http.send(
            "PUT", f"{self.mr}/discussions/{thread.ref}", {"resolved": True}, placing=True
        )
        return made is not None

    async def summary(self, ref: str | None, body: str) -> str:
        if ref is not None:
            await self.http.send("PUT", f"{self.mr}/notes/{ref}", {"body": body})
            return ref
        made = await self.http.send("POST", f"{self.mr}/notes", {"body": body})
        return str(made.get("id"))


class _Bitbucket:
    def __init__(self, http: _Http, t: Target) -> None:
        self.http, self.t = http, t
        self.pr = f"{t.api_url}/repositories/{t.full_name}/pullrequests/{t.number}"

    async def read(self) -> ProviderState:
        state = ProviderState()
        for c in await self.http.pages(f"{self.pr}/comments?pagelen=100"):
            if c.get("parent") is not None or c.get("deleted"):
                continue
            body = str((c.get("content") or {}).get("raw") or "")
            _scan(state, str(c.get("id")), body, resolved=c.get("resolution") is not None)
        return state

    async def inline(self, f: Finding) -> tuple[str, str | None] | None:
        p = f.position or {}
        where: JsonObject = {"path": p["path"]}
        if p.get("new_line") is not None:
            where["to"] = int(p["new_line"])
        else:
            where["from"] = int(p["old_line"])
        body = {"content": {"raw": comment_body("bitbucket", f)}, "inline": where}
        made = await self.http.send("POST", f"{self.pr}/comments", body, placing=True)
        return None if made is None else (str(made.get("id")), None)

    async def resolve(self, fingerprint: str, thread: Thread) -> bool:
        made = await self.http.send("POST", f"{self.pr}/comments/{thread.ref}/resolve", {}, placing=True)
        return made is not None

    async def summary(self, ref: str | None, body: str) -> str:
        if ref is not None:
            await self.http.send("PUT", f"{self.pr}/comments/{ref}", {"content": {"raw": body}})
            return ref
        made = await self.http.send("POST", f"{self.pr}/comments", {"content": {"raw": body}})
        return str(made.get("id"))


_APIS: dict[str, type[_GitHub] | type[_GitLab] | type[_Bitbucket]] = {
    "github": _GitHub,
    "gitlab": _GitLab,
    "bitbucket": _Bitbucket,
}
