"""Posting a review back to its provider: a GitHub review with line comments, a GitLab merge
request discussion, a Bitbucket pull request comment.

The token is the installation's (sealed in ``installations.credentials``, opened with the
deployment's encryption key; for a GitHub App installation, one minted from the App's key by
:mod:`palimpsest.core.github_app`) and travels only in the ``Authorization`` header — never in a URL,
a log line or an error message. Every posted body carries a marker naming the head sha; before
posting, the provider's existing reviews/comments are read and a marked one means "already
posted", so a redelivered request (or a crash between posting and storing) posts nothing twice.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote
from uuid import UUID

import httpx

from palimpsest.core.credentials import Credential, installation_credential
from palimpsest.core.db import Conn
from palimpsest.core.github_app import api_url_for
from palimpsest.reviewer.errors import ReviewFailed
from palimpsest.reviewer.review import Finding

log = logging.getLogger(__name__)

TIMEOUT_S = 30.0


@dataclass(frozen=True, slots=True)
class Target:
    provider: str  # github | gitlab | bitbucket
    api_url: str  # e.g. https://api.github.com (no trailing slash)
    full_name: str  # owner/repo, group/project, workspace/slug
    number: int
    head_sha: str

    @property
    def marker(self) -> str:
        return f"<!-- palimpsest-review head={self.head_sha} -->"


def default_api_url(provider: str, host: str) -> str:
    if provider == "github":
        return api_url_for(host)
    if provider == "gitlab":
        return f"https://{host}/api/v4"
    return "https://api.bitbucket.org/2.0"


async def installation_target(
    conn: Conn, repository_id: UUID, number: int, head_sha: str, api_urls: dict[str, str | None]
) -> tuple[Target, Credential] | None:
    """Where to post and the installation's sealed credential; None when it has none."""
    credential = await installation_credential(conn, repository_id)
    if credential is None:
        return None
    cur = await conn.execute("SELECT full_name FROM repositories WHERE repository_id = %s", (repository_id,))
    row = await cur.fetchone()
    if row is None:
        return None
    api = api_urls.get(credential.provider) or default_api_url(credential.provider, credential.host)
    target = Target(credential.provider, api.rstrip("/"), str(row["full_name"]), number, head_sha)
    return target, credential


def render_body(target: Target, summary: str, findings: Sequence[Finding], *, inline: bool) -> str:
    lines = [summary.strip() or "Palimpsest review.", ""]
    if not inline:
        for f in findings:
            lines.append(
                f"- **{f.severity}** `{f.path}:{f.start_line}-{f.end_line}` ({f.category}): {f.message}"
            )
            if f.suggested_change:
                lines += ["  ```suggestion", *("  " + s for s in f.suggested_change.splitlines()), "  ```"]
    lines += ["", target.marker]
    return "\n".join(lines)


async def post_review(
    target: Target,
    token: str,
    summary: str,
    findings: Sequence[Finding],
    *,
    client: httpx.AsyncClient | None = None,
) -> bool:
    """Post once; returns False when a review for this head was already there."""
    own = client is None
    http = client or httpx.AsyncClient(timeout=TIMEOUT_S)
    try:
        poster = _POSTERS[target.provider]
        return await poster(http, target, _headers(target.provider, token), summary, findings)
    except httpx.HTTPStatusError as exc:
        raise ReviewFailed("post_failed", f"{target.provider} answered {exc.response.status_code}") from exc
    except httpx.HTTPError as exc:
        raise ReviewFailed("post_failed", f"{target.provider} unreachable: {type(exc).__name__}") from exc
    finally:
        if own:
            await http.aclose()


def _headers(provider: str, token: str) -> dict[str, str]:
    headers = {"Authorization": f"Bearer {token}", "User-Agent": "palimpsest-reviewer"}
    if provider == "github":
        headers.update({"Accept": "application/vnd.github+json", "X-GitHub-Api-Version": "2022-11-28"})
    return headers


async def _get(http: httpx.AsyncClient, url: str, headers: dict[str, str]) -> Any:
    response = await http.get(url, headers=headers)
    response.raise_for_status()
    return response.json()


async def _post(http: httpx.AsyncClient, url: str, headers: dict[str, str], body: dict[str, Any]) -> None:
    response = await http.post(url, headers=headers, json=body)
    response.raise_for_status()


async def _github(
    http: httpx.AsyncClient, t: Target, headers: dict[str, str], summary: str, findings: Sequence[Finding]
) -> bool:
    url = f"{t.api_url}/repos/{t.full_name}/pulls/{t.number}/reviews"
    existing = await _get(http, url + "?per_page=100", headers)
    if any(t.marker in str(r.get("body") or "") for r in existing if isinstance(r, dict)):
        return False
    comments = [_github_comment(f) for f in findings]
    body = {
        "commit_id": t.head_sha,
        "event": "COMMENT",
        "body": render_body(t, summary, findings, inline=True),
    }
    await _post(http, url, headers, {**body, "comments": comments})
    return True


def _github_comment(f: Finding) -> dict[str, Any]:
    text = f"**{f.severity}** ({f.category}): {f.message}"
    if f.suggested_change:
        text += f"\n\n```suggestion\n{f.suggested_change}\n```"
    comment: dict[str, Any] = {"path": f.path, "line": f.end_line, "side": "RIGHT", "body": text}
    if f.start_line < f.end_line:
        comment.update({"start_line": f.start_line, "start_side": "RIGHT"})
    return comment


async def _gitlab(
    http: httpx.AsyncClient, t: Target, headers: dict[str, str], summary: str, findings: Sequence[Finding]
) -> bool:
    url = f"{t.api_url}/projects/{quote(t.full_name, safe='')}/merge_requests/{t.number}/discussions"
    existing = await _get(http, url + "?per_page=100", headers)
    for discussion in existing if isinstance(existing, list) else []:
        if any(t.marker in str(n.get("body") or "") for n in discussion.get("notes", [])):
            return False
    await _post(http, url, headers, {"body": render_body(t, summary, findings, inline=False)})
    return True


async def _bitbucket(
    http: httpx.AsyncClient, t: Target, headers: dict[str, str], summary: str, findings: Sequence[Finding]
) -> bool:
    url = f"{t.api_url}/repositories/{t.full_name}/pullrequests/{t.number}/comments"
    existing = await _get(http, url + "?pagelen=100", headers)
    values = existing.get("values", []) if isinstance(existing, dict) else []
    if any(t.marker in str((c.get("content") or {}).get("raw") or "") for c in values):
        return False
    await _post(http, url, headers, {"content": {"raw": render_body(t, summary, findings, inline=False)}})
    return True


_POSTERS = {"github": _github, "gitlab": _gitlab, "bitbucket": _bitbucket}
