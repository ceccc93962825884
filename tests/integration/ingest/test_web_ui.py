"""The web view under /ui, in a real browser (Debian's chromium through chromium-driver) and over
real HTTP, on a repository indexed, analysed and reviewed by the real services.

The repository plants a drift (the README names ``compute_total()``, which a later commit renamed)
and hostile content: the guide's text and a doc's *file name* carry ``<script>`` and
``<img onerror>`` payloads that would set ``window.__pwned``, and a ``javascript:`` link. The
browser signs in with the tenant's token, opens every page, checks what it shows and that no
payload ran, checks another tenant's URLs are 404s, signs out, and saves a screenshot of each
page (into ``$PALIMPSEST_TEST_SCREENSHOTS`` when set, else the test's tmp path; the paths are
printed). The HTTP tests check the session cookie, the security headers, CSRF on the forms,
revocation ending a session, and the operator's tenant list.
"""

from __future__ import annotations

import asyncio
import os
import re
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from uuid import UUID

import httpx
import pytest

from palimpsest.cli.commands_review import review_text
from palimpsest.cli.local import register_path
from palimpsest.core.db import tenant_tx
from palimpsest.core.service import Infra
from tests.integration.analyzer.support import (
    analyzer_for,
    analyzer_settings,
    index,
    indexer_definitions,
    running,
)
from tests.integration.analyzer.test_analyzer_doccheck import INVOICE, LEDGER, README, RENAMED, REPORT
from tests.integration.ingest.read_support import poll
from tests.integration.ingest.support import (
    ADMIN_TOKEN,
    INSTALLATIONS,
    Served,
    World,
    deliver,
    drop_tenant,
    new_tenant,
)
from tests.integration.ingest.test_ingest_review_api import reviewer
from tests.integration.reviewer.conftest import TAX
from tests.support import browser
from tests.support.gitrepo import commit, git, init_repo
from tests.unit.ingest.webhook_support import edited, load

PAYLOAD_SCRIPT = "<script>window.__pwned = 'script'</script>"
PAYLOAD_IMG = "<img src=x onerror=\"window.__pwned = 'img'\">"
HOSTILE_NAME = "docs/<img src=x onerror=window.__pwned=1>.md"
NOTES = (
    f"# Notes\n\n{PAYLOAD_SCRIPT}\n\n{PAYLOAD_IMG}\n\n[open the rates](javascript:window.__pwned='link')\n"
)

PULL_TITLE = "Totals <img src=x onerror=\"window.__pwned = 'title'\"> & <b>rates</b>"
PULL_AUTHOR = "ana-author"
PULL_PUSHER = "ben-pusher"

LOGO = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256))  # binary: indexing skips it


def make_repository(path: Path) -> dict[str, str]:
    """The README names ``compute_total()``, renamed in 2024; tax and invoice change together
    (so a change of invoice alone is warned about tax)."""
    r = init_repo(path)
    commit(
        r,
        "2022-01-10T00:00:00+00:00",
        {
            "README.md": README,
            "docs/notes.md": NOTES,
            "src/invoice.py": INVOICE,
            HOSTILE_NAME: "# Old\n",
            "assets/logo.png": LOGO,
        },
    )
    commit(
        r,
        "2024-03-01T00:00:00+00:00",
        {"src/invoice.py": RENAMED, "src/tax.py": TAX, "src/ledger.py": LEDGER},
        message="rename compute_total <script>window.__pwned='commit'</script>",
    )
    for n, day in enumerate(("2024-03-15", "2024-04-01", "2024-04-15", "2024-04-16", "2024-04-17")):
        commit(r, f"{day}T00:00:00+00:00", {"src/report.py": REPORT + f"\n# v{n}\n"})  # tax's base rate
    for n, day in enumerate(("2024-04-20", "2024-04-25")):  # a habit, not a coincidence: 4 of invoice's 5
        commit(
            r,
            f"{day}T00:00:00+00:00",
            {"src/invoice.py": RENAMED + f"\n# t{n}\n", "src/tax.py": TAX + f"\n# t{n}\n"},
        )
    base = commit(
        r,
        "2024-05-01T00:00:00+00:00",
        {"src/invoice.py": RENAMED + "\n# v3\n", "src/tax.py": TAX + "\n# v3\n"},
    )
    git(r, "checkout", "-q", "-b", "feature")
    feature = commit(r, "2024-06-01T00:00:00+00:00", {"src/invoice.py": RENAMED + "\n# v4\n"}, message="v4")
    git(r, "checkout", "-q", "main")
    return {"path": str(r), "base": base, "feature": feature}


@dataclass
class Site:
    world: World
    other: World
    repository_id: UUID
    other_repository_id: UUID
    review_id: str
    analysis: dict[str, Any]
    repo: dict[str, str]

    def ui(self, suffix: str = "", tenant: UUID | None = None) -> str:
        return f"/ui/t/{tenant or self.world.tenant_id}{suffix}"

    def repo_ui(self, suffix: str = "") -> str:
        return self.ui(f"/r/{self.repository_id}{suffix}")


@pytest.fixture(scope="module")
async def site(
    client: httpx.AsyncClient, served: Served, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[Site]:
    infra: Infra = served.infra
    repo = make_repository(tmp_path_factory.mktemp("web") / "repo")
    world = await new_tenant(client, "web-view")
    other = await new_tenant(client, "web-other")
    try:
        repository_id = await register_path(infra.pool, world.tenant_id, Path(repo["path"]))
        other_repository_id = await register_path(infra.pool, other.tenant_id, Path(repo["path"]))
        async with running(infra, indexer_definitions({world.tenant_id})):
            built = await index(infra, world.tenant_id, repository_id)
        assert built.state == "ready", built
        base = f"/v1/tenants/{world.tenant_id}/repositories/{repository_id}"
        async with running(infra, [analyzer_for(infra, {world.tenant_id}, analyzer_settings())]):
            posted = await client.post(f"{base}/analyses", json={}, headers=world.auth)
            assert posted.status_code == 202, posted.text
            request_id = posted.json()["request_id"]
            listed = await poll(
                lambda: client.get(f"{base}/analyses", headers=world.auth),
                lambda r: any(i["request_id"] == request_id for i in r.json()["items"]),
            )
        analysis = next(i for i in listed.json()["items"] if i["request_id"] == request_id)
        async with reviewer(infra, world.tenant_id):
            body = {"base": repo["base"], "head": "feature", "title": PAYLOAD_SCRIPT}
            posted = await client.post(f"{base}/reviews", json=body, headers=world.auth)
            assert posted.status_code == 202, posted.text
            rid = posted.json()["request_id"]
            done = await poll(
                lambda: client.get(f"/v1/tenants/{world.tenant_id}/reviews/{rid}", headers=world.auth),
                lambda r: r.json()["state"] != "pending",
            )
        assert done.json()["state"] == "completed", done.text
        yield Site(world, other, repository_id, other_repository_id, done.json()["review_id"], analysis, repo)
    finally:
        await drop_tenant(infra.pool, world.tenant_id)
        await drop_tenant(infra.pool, other.tenant_id)


@dataclass
class Pull:
    world: World
    repository_id: UUID
    review: dict[str, Any]  # as GET /v1/…/reviews/{id} shows it


@pytest.fixture(scope="module")
async def pull(client: httpx.AsyncClient, served: Served, site: Site) -> AsyncIterator[Pull]:
    """A review a GitHub ``pull_request`` webhook asked for, through ingest, the bus and the reviewer:
    the pull request's title is hostile, its author is not the user who pushed (the sender). The
    repository is the site's git repository, registered as the GitHub repository the delivery
    names (the API takes only https URLs on GitHub for one: the row is set here, so that the
    reviewer fetches from this machine and nothing leaves 127.0.0.1)."""
    infra: Infra = served.infra
    world = await new_tenant(client, "web-pull")
    try:
        made = await client.post(
            world.path("/installations"), json=INSTALLATIONS["github"], headers=world.auth
        )
        assert made.status_code == 201, made.text
        payload = load("github", "pull_request_opened")
        repository_id = await register_path(infra.pool, world.tenant_id, Path(site.repo["path"]))
        async with tenant_tx(infra.pool, world.tenant_id) as conn:
            await conn.execute(
                "UPDATE repositories SET provider = 'github', external_id = %s, full_name = %s"
                " WHERE repository_id = %s",
                (str(payload["repository"]["id"]), payload["repository"]["full_name"], repository_id),
            )
        async with running(infra, indexer_definitions({world.tenant_id})):
            assert (await index(infra, world.tenant_id, repository_id)).state == "ready"
        payload = edited(
            payload,
            {
                "pull_request.title": PULL_TITLE,
                "pull_request.user.login": PULL_AUTHOR,
                "sender.login": PULL_PUSHER,
                "pull_request.base.sha": site.repo["base"],
                "pull_request.base.ref": "main",
                "pull_request.head.sha": site.repo["feature"],
                "pull_request.head.ref": "feature",
            },
        )
        listed = world.path(f"/repositories/{repository_id}/reviews")
        async with reviewer(infra, world.tenant_id):
            res = await deliver(client, "github", "", "pull_request", delivery="web-pull-1", payload=payload)
            assert (res.status_code, res.json()["outcome"]) == (202, "accepted"), res.text
            found = await poll(
                lambda: client.get(listed, headers=world.auth), lambda r: bool(r.json()["items"])
            )
        review_id = found.json()["items"][0]["review_id"]
        shown = await client.get(world.path(f"/reviews/{review_id}"), headers=world.auth)
        assert shown.status_code == 200, shown.text
        assert shown.json()["state"] == "completed", shown.text
        yield Pull(world, repository_id, shown.json())
    finally:
        await drop_tenant(infra.pool, world.tenant_id)


async def _signed_in(
    client: httpx.AsyncClient, token: str, *, headers: dict[str, str] | None = None
) -> httpx.Response:
    """GET the form, POST the token with the form's CSRF value; the answer (cookies land in ``client``)."""
    form = await client.get("/ui/sign-in", headers=headers)
    assert form.status_code == 200
    csrf = re.search(r'name="csrf" value="([^"]+)"', form.text)
    assert csrf is not None
    return await client.post("/ui/sign-in", data={"csrf": csrf.group(1), "token": token}, headers=headers)


def _csrf(page: str) -> str:
    found = re.search(r'name="csrf" value="([^"]+)"', page)
    assert found is not None
    return found.group(1)


# ------------------------------------------------------------------------------- over HTTP


async def test_a_webhooks_pull_request_title_and_author_reach_the_stored_review(
    client: httpx.AsyncClient, pull: Pull
) -> None:
    """What the delivery said is stored with the review and read back by the API, its list and
    ``palimpsest review show`` (whose text is made from the API's JSON)."""
    r = pull.review
    assert (r["provider"], r["number"]) == ("github", 131)
    assert (r["title"], r["author"], r["requested_by"]) == (PULL_TITLE, PULL_AUTHOR, PULL_PUSHER)
    assert (r["base_ref"], r["head_ref"]) == ("main", "feature")
    listed = await client.get(
        pull.world.path(f"/repositories/{pull.repository_id}/reviews"), headers=pull.world.auth
    )
    item = listed.json()["items"][0]
    assert (item["title"], item["author"], item["base_ref"], item["head_ref"]) == (
        PULL_TITLE,
        PULL_AUTHOR,
        "main",
        "feature",
    )
    text = review_text(r).splitlines()
    assert text[1:5] == [
        "Pull request: github #131",
        f"Title: {PULL_TITLE}",
        f"Author: {PULL_AUTHOR} (review asked by {PULL_PUSHER})",
        "Branches: base main, head feature",
    ], text


async def test_sign_in_sets_a_sealed_strict_http_only_cookie_and_pages_carry_the_headers(
    served: Served, site: Site
) -> None:
    async with httpx.AsyncClient(base_url=served.url) as c:
        # no session: every page sends to the form, keeping where it was going
        first = await c.get(site.repo_ui())
        assert first.status_code == 303 and first.headers["location"].startswith("/ui/sign-in?next=")
        answer = await _signed_in(c, site.world.token)
        assert answer.status_code == 303, answer.text
        cookie = answer.headers["set-cookie"]
        assert (
            "palimpsest_session=" in cookie
            and "HttpOnly" in cookie
            and "SameSite=strict" in cookie.replace("Strict", "strict")
        )
        assert "Path=/ui" in cookie and "Max-Age=" in cookie and "Secure" not in cookie  # plain http here
        assert site.world.token not in cookie and site.world.token.removeprefix("pal_") not in cookie
        page = await c.get(site.repo_ui())
        assert page.status_code == 200 and "compute_total" in page.text
        csp = page.headers["content-security-policy"]
        assert "script-src" not in csp and "unsafe-inline" not in csp and "default-src 'none'" in csp
        assert page.headers["x-frame-options"] == "DENY" and page.headers["cache-control"] == "no-store"
        assert site.world.token not in page.text and ADMIN_TOKEN not in page.text
        # hostile text is escaped, never markup
        assert "<script>window.__pwned" not in page.text and "onerror=" not in page.text.replace(
            "onerror=window", ""
        )
    # behind TLS (the ingress says so) the cookie is Secure
    async with httpx.AsyncClient(base_url=served.url) as c:
        tls = await _signed_in(c, site.world.token, headers={"x-forwarded-proto": "https"})
        assert "Secure" in tls.headers["set-cookie"]


async def test_forms_refuse_a_missing_csrf_value_and_wrong_tokens(served: Served, site: Site) -> None:
    async with httpx.AsyncClient(base_url=served.url) as c:
        await c.get("/ui/sign-in")
        forged = await c.post("/ui/sign-in", data={"csrf": "guess", "token": site.world.token})
        assert forged.status_code == 400 and "palimpsest_session" not in c.cookies
        wrong = await _signed_in(c, "pal_" + "x" * 43)
        assert wrong.status_code == 401 and "invalid or revoked token" in wrong.text
        assert (await _signed_in(c, site.world.token)).status_code == 303
        page = await c.get(site.ui("/"))
        assert page.status_code == 200
        kept = await c.post("/ui/sign-out", data={"csrf": "forged"})
        assert kept.status_code == 400 and (await c.get(site.ui("/"))).status_code == 200
        out = await c.post("/ui/sign-out", data={"csrf": _csrf(page.text)})
        assert out.status_code == 303
        assert (await c.get(site.ui("/"))).status_code == 303  # signed out: back to the form


async def test_another_tenants_pages_are_404_and_revoking_the_token_ends_the_session(
    client: httpx.AsyncClient, served: Served, site: Site
) -> None:
    issued = await client.post(
        f"/v1/tenants/{site.world.tenant_id}/tokens",
        json={"name": "web-reader", "scopes": ["read"]},
        headers=site.world.auth,
    )
    assert issued.status_code == 201, issued.text
    token = issued.json()
    async with httpx.AsyncClient(base_url=served.url) as c:
        assert (await _signed_in(c, token["api_token"])).status_code == 303
        for url in (
            site.ui("/", tenant=site.other.tenant_id),
            site.ui(f"/r/{site.other_repository_id}", tenant=site.other.tenant_id),
            site.ui(f"/r/{site.other_repository_id}"),
            site.ui(f"/r/{site.other_repository_id}/reviews"),
            site.ui(f"/r/{site.other_repository_id}/file?path=src/invoice.py"),
            site.ui(f"/r/{site.other_repository_id}/search?q=rate"),
            site.ui(f"/reviews/{site.review_id}", tenant=site.other.tenant_id),
            site.ui(f"/r/{uuid.uuid4()}"),
            "/ui/tenants",
        ):
            got = await c.get(url)
            assert got.status_code == 404, (url, got.status_code)
            assert "web-view" not in got.text and "compute_total" not in got.text
        assert (await c.get(site.repo_ui())).status_code == 200
        revoked = await client.delete(
            f"/v1/tenants/{site.world.tenant_id}/tokens/{token['token_id']}", headers=site.world.auth
        )
        assert revoked.status_code == 204
        deadline = time.monotonic() + served.ctx.settings.lookup_cache_s + 5
        while (await c.get(site.repo_ui())).status_code == 200:
            assert time.monotonic() < deadline, "the revoked token's session still reads pages"
            await asyncio.sleep(0.25)
        assert (await c.get(site.repo_ui())).headers["location"].startswith("/ui/sign-in")


async def test_the_operator_sees_the_tenant_list_and_any_tenants_pages(served: Served, site: Site) -> None:
    async with httpx.AsyncClient(base_url=served.url) as c:
        signed = await _signed_in(c, ADMIN_TOKEN)
        assert signed.status_code == 303
        assert (await c.get("/ui/", follow_redirects=False)).headers["location"] == "/ui/tenants"
        listed = await c.get("/ui/tenants")
        assert listed.status_code == 200 and "web-view" in listed.text and "web-other" in listed.text
        assert f"/ui/t/{site.other.tenant_id}/" in listed.text
        assert (await c.get(site.repo_ui())).status_code == 200
        assert (await c.get(site.ui("/", tenant=uuid.uuid4()))).status_code == 404
        assert ADMIN_TOKEN not in listed.text


# ---------------------------------------------------------------------------- in a browser


def _shots(tmp_path: Path) -> Path:
    configured = os.environ.get("PALIMPSEST_TEST_SCREENSHOTS")
    folder = Path(configured) if configured else tmp_path / "screenshots"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


async def test_every_page_in_a_real_browser(served: Served, site: Site, tmp_path: Path) -> None:
    why = browser.missing()
    if why is not None:
        pytest.skip(why)
    shots = _shots(tmp_path)
    saved: list[Path] = []
    with browser.chromium(tmp_path / "profile") as b:

        async def visit(url: str, name: str, *expected: str) -> str:
            await b.get(served.url + url)
            text = await b.text()
            for needle in expected:
                assert needle in text, (url, needle, text[:2000])
            assert (
                await b.script("return window.__pwned === undefined ? null : String(window.__pwned)") is None
            )
            saved.append(await b.screenshot(shots / f"{name}.png"))
            return text

        await visit(site.repo_ui(), "sign-in", "Sign in", "API token")
        await b.fill_and_submit("token", site.world.token)
        url = await b.url()
        assert url.endswith(site.repo_ui()), url  # back where it was going
        await visit(
            site.ui("/"),
            "repositories",
            "Repositories",
            "Last analysis",
            "ready",
            "Pipeline backlog",
            "chunker",
        )
        page = await visit(
            site.repo_ui(),
            "repository",
            "Documentation findings",
            "compute_total",
            "Doc freshness",
            "Selection facts",
            "Recent snapshots",
            "Newest analysis",
        )
        assert "stale before" in page and "median code" in page  # the plot's lines, drawn as SVG text
        assert await b.script("return document.querySelectorAll('svg.plot circle').length") >= 2
        assert await b.script("return document.querySelectorAll('a[href^=\"javascript:\"]').length") == 0
        assert HOSTILE_NAME.split("/")[1] in page  # the hostile file name shown as text
        await visit(
            site.repo_ui("/file?path=src/invoice.py"),
            "file",
            "src/invoice.py",
            "Usually changes with",
            "src/tax.py",
            "Graph neighbours",
        )
        await visit(site.repo_ui("/reviews"), "reviews", "Reviews of", "completed")
        await visit(
            site.ui(f"/reviews/{site.review_id}"),
            "review",
            "Context used",
            "Findings",
            "Feedback recorded",
            "src/invoice.py",
        )
        found = await visit(site.repo_ui("/search?q=pwned"), "search", "result(s)", "docs/notes.md")
        assert PAYLOAD_SCRIPT in found  # the doc's text shown literally in the result
        # another tenant's pages: not found, nothing of theirs
        others = (site.ui("/", tenant=site.other.tenant_id), site.ui(f"/r/{site.other_repository_id}"))
        for n, url in enumerate(others):
            await visit(url, f"other-tenant-{n}", "Not found")
        session = await b.cookie("palimpsest_session")
        assert session is not None and session["httpOnly"] and session.get("sameSite") == "Strict"
        await b.get(served.url + site.ui("/"))
        await b.click("form.sign-out button")
        await visit(site.repo_ui(), "signed-out", "Sign in")
    for path in saved:
        print(f"screenshot: {path}")


async def test_a_pull_requests_review_leads_with_its_title_author_and_branches(
    served: Served, pull: Pull, tmp_path: Path
) -> None:
    """The review page's header and the reviews list in the browser: the pull request's title
    (hostile: shown as text, nothing of it runs or renders), its author, and each side's branch
    with its commit. A review stored before they were recorded says so."""
    why = browser.missing()
    if why is not None:
        pytest.skip(why)
    review_id = pull.review["review_id"]
    page = f"/ui/t/{pull.world.tenant_id}/reviews/{review_id}"
    with browser.chromium(tmp_path / "profile") as b:
        await b.get(served.url + page)
        await b.fill_and_submit("token", pull.world.token)
        await b.url()
        await b.get(served.url + page)
        assert await b.script("return document.getElementById('review-title').innerText") == PULL_TITLE
        author = await b.script("return document.getElementById('review-author').innerText")
        assert author == f"{PULL_AUTHOR} (review asked by {PULL_PUSHER})", author
        head = await b.script("return document.getElementById('review-head').innerText")
        assert "github #131" in head, head
        assert f"main at {pull.review['base_sha'][:12]}" in head, head
        assert f"feature at {pull.review['head_sha'][:12]}" in head, head
        assert "not recorded" not in head, head
        print(f"screenshot: {await b.screenshot(_shots(tmp_path) / 'pull-review.png')}")
        assert await b.script("return document.querySelectorAll('main img, main b').length") == 0
        assert await b.script("return window.__pwned === undefined") is True
        await b.get(served.url + f"/ui/t/{pull.world.tenant_id}/r/{pull.repository_id}/reviews")
        listed = await b.text()
        assert f"github #131: {PULL_TITLE}" in listed and f"author: {PULL_AUTHOR}" in listed, listed
        assert "main at" in listed and "feature at" in listed, listed
        print(f"screenshot: {await b.screenshot(_shots(tmp_path) / 'pull-reviews.png')}")
        assert await b.script("return document.querySelectorAll('main img, main b').length") == 0
        assert await b.script("return window.__pwned === undefined") is True
        # a row stored before migration 0051 has none of them: "not recorded", never blank
        async with tenant_tx(served.infra.pool, pull.world.tenant_id) as conn:
            await conn.execute(
                "UPDATE reviews SET title = NULL, author = NULL, requested_by = NULL, base_ref = NULL,"
                " head_ref = NULL WHERE review_id = %s",
                (review_id,),
            )
        await b.get(served.url + page)
        for part in ("review-title", "review-author"):
            said = await b.script(f"return document.getElementById('{part}').innerText")
            assert said.startswith("not recorded"), said
        head = await b.script("return document.getElementById('review-head').innerText")
        assert pull.review["base_sha"][:12] in head and "main at" not in head, head


BROKEN_WORDS = """
const broken = new Set();
const top = (node, i) => {
  const r = document.createRange();
  r.setStart(node, i);
  r.setEnd(node, i + 1);
  const rects = r.getClientRects();
  return rects.length ? Math.round(rects[0].top) : null;
};
const walker = document.createTreeWalker(document.querySelector('main'), NodeFilter.SHOW_TEXT);
for (let n = walker.nextNode(); n; n = walker.nextNode()) {
  if (!n.parentElement.closest('td, th')) continue;
  let prev = null;
  for (let i = 0; i < n.data.length; i++) {
    const here = top(n, i);
    const inWord = i > 0 && /[A-Za-z0-9]/.test(n.data[i - 1]) && /[A-Za-z0-9]/.test(n.data[i]);
    if (inWord && prev !== null && here !== null && here > prev) broken.add(n.data);
    prev = here;
  }
}
return Array.from(broken);
"""


async def test_the_review_leads_with_its_result_and_the_file_shows_its_source(
    served: Served, site: Site, tmp_path: Path
) -> None:
    """The review page's order in the browser (header, findings, co-change warning, summary,
    context; Dropped collapsed), times to the second, no word broken mid-token on a phone-sized
    window, the file page's numbered and highlighted source, the search's marked words."""
    why = browser.missing()
    if why is not None:
        pytest.skip(why)
    with browser.chromium(tmp_path / "profile") as b:
        await b.get(served.url + site.repo_ui())
        await b.fill_and_submit("token", site.world.token)
        await b.url()
        await b.get(served.url + site.ui(f"/reviews/{site.review_id}"))
        head = await b.script("return document.getElementById('review-head').innerText")
        assert "none: a review of commits" in head, head  # a local review has no pull request
        title = await b.script("return document.getElementById('review-title').innerText")
        assert title == PAYLOAD_SCRIPT, title  # the title the API was given, as text
        assert await b.script("return document.getElementById('review-author')") is None
        assert site.repo["base"][:12] in head and re.search(r"\d\d:\d\d:\d\d UTC", head), head
        tops = await b.script(
            "return ['review-head', 'find-h', 'co-h', 'sum-h', 'ctx-h', 'fb-h'].map("
            "id => document.getElementById(id).getBoundingClientRect().top)"
        )
        assert tops == sorted(tops) and len(set(tops)) == len(tops), tops
        warning = await b.script("return document.getElementById('co-h').parentElement.innerText")
        assert "src/tax.py" in warning, warning
        # Dropped is collapsed: present, closed, its table not shown until opened (no script needed)
        dropped = await b.script(
            "const d = document.getElementById('dropped');"
            " return d && [d.open, d.querySelector('table').checkVisibility(), d.innerText.trim()]"
        )
        assert dropped is not None and dropped[0] is False and dropped[1] is False, dropped
        assert re.fullmatch(r"Dropped \(\d+\)", dropped[2]), dropped
        await b.click("details#dropped summary")
        assert await b.script("return document.querySelector('#dropped table').checkVisibility()") is True
        # the brief's "What uses it" is a paragraph of its own, not the last list item's tail
        items = await b.script(
            "return Array.from(document.querySelectorAll('article.markdown li')).map(li => li.innerText)"
        )
        assert items and not any("What uses it" in i for i in items), items
        assert await b.script("return document.querySelectorAll('[style]').length") == 0
        # on a phone-sized window, a cell's single word is never broken across lines
        await asyncio.to_thread(b.driver.set_window_size, 400, 1000)
        for url in (site.ui(f"/reviews/{site.review_id}"), site.repo_ui("/reviews"), site.repo_ui()):
            await b.get(served.url + url)
            assert await b.script(BROKEN_WORDS) == [], url
        await asyncio.to_thread(b.driver.set_window_size, 1280, 1400)
        # the reviews list: to the second, with the base
        await b.get(served.url + site.repo_ui("/reviews"))
        listed = await b.text()
        assert re.search(r"\d\d:\d\d:\d\d UTC", listed) and site.repo["base"][:12] in listed, listed
        # the file page: the source at the snapshot, every line numbered, highlighted by class
        await b.get(served.url + site.repo_ui("/file?path=src/invoice.py"))
        expected = (RENAMED + "\n# v3\n").rstrip("\n").split("\n")
        numbers = await b.script(
            "return Array.from(document.querySelectorAll('.source .linenos')).map(e => e.innerText.trim())"
        )
        assert numbers == [str(n) for n in range(1, len(expected) + 1)], numbers
        code = await b.script("return document.querySelector('.source code').innerText")
        assert "def compute_invoice_total(lines):" in code and "# v3" in code
        colours = await b.script(
            "const c = s => getComputedStyle(document.querySelector(s)).color;"
            " return [c('.source .k'), c('.source .nf'), c('.source code')]"
        )
        assert len(set(colours)) == 3, colours  # keyword, function name and plain text differ
        assert await b.script("return document.querySelectorAll('[style], script').length") == 0
        # a file indexing skipped is named with its reason, never shown; a missing path says so
        await b.get(served.url + site.repo_ui("/file?path=assets/logo.png"))
        assert "Not shown: indexing skipped this file (binary" in await b.text()
        assert await b.script("return document.querySelectorAll('.source').length") == 0
        await b.get(served.url + site.repo_ui("/file?path=src/absent.py"))
        assert "This path is not in the newest ready snapshot." in await b.text()
        # search: numbered lines, the query's word marked, the hostile doc still inert text
        await b.get(served.url + site.repo_ui("/search?q=pwned"))
        marks = await b.script(
            "return Array.from(document.querySelectorAll('ol.hits mark')).map(m => m.innerText)"
        )
        assert marks and {m.lower() for m in marks} == {"pwned"}, marks
        assert await b.script("return document.querySelectorAll('ol.hits .ln').length") > 0
        assert PAYLOAD_SCRIPT in await b.text()  # the hostile doc's text, marked yet shown literally
        assert await b.script("return window.__pwned === undefined") is True
