"""Installation sync: ask the provider which repositories an installation has, and catch up.

An App installed before Palimpsest existed, or a repository added while ingest was down, sends no
``installation`` delivery that registers it. Sync lists the installation's repositories with its
own credentials, following every page:

* GitHub (kind ``installation``): an installation token (minted from the App's key by
  :mod:`palimpsest.core.github_app`, or the stored token), then ``GET /installation/repositories``
  (``per_page``, the ``Link`` header's ``next``);
* GitLab: a group's projects, ``GET /groups/:id/projects?include_subgroups=true`` (``Link`` or
  ``X-Next-Page``), or the one project of a project installation (``GET /projects/:id``), with
  the ``PRIVATE-TOKEN`` header;
* Bitbucket: the workspace's repositories, ``GET /2.0/repositories/{workspace}`` (``next`` in the
  JSON page).

Then, in the tenant's transaction, the listed repositories and the registered ones the provider
no longer lists go through the cascade of an ``installation`` delivery
(:func:`palimpsest.ingest.decide.decide_repos`, applied by :func:`palimpsest.ingest.apply.apply`): missing ones are registered (an index
request each, the source policy applied), known ones brought up to date, gone ones deleted. A dry
run does the same in a transaction it rolls back. A listing that fails on any page changes
nothing, and so does an empty listing while the installation still has registered repositories
(a provider answering 200 with no repositories is more often a revoked grant or a misconfigured
token than a real removal of everything): the report names it as an error, and only
``force`` (``palimpsest installation sync --force``) removes them all; the backfill tick never forces. The report names what was added, removed and unchanged, and each provider error with its
HTTP status; the token travels only in a header and appears in no message.

The APIs are ``PALIMPSEST_GITHUB_API_URL``, ``PALIMPSEST_GITLAB_API_URL`` and
``PALIMPSEST_BITBUCKET_API_URL`` when set, else the installation host's own
(:func:`palimpsest.core.github_app.provider_api_url`). The maintenance backfill syncs each
installation once per interval, on the tick its id hashes to (:func:`sync_slice`); one
installation's failure never stops the others'.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Collection
from dataclasses import asdict, dataclass, field
from typing import Any, Final, TypeAlias, cast
from urllib.parse import quote, urlsplit
from uuid import UUID

import httpx

from palimpsest.core import metrics
from palimpsest.core.credentials import Credential, credential_token
from palimpsest.core.db import Conn, tenant_tx
from palimpsest.core.git_errors import GitError
from palimpsest.core.github_app import provider_api_url
from palimpsest.core.jsonshape import JsonObject
from palimpsest.ingest.admin.access import Scope, scoped_tx
from palimpsest.ingest.apply import apply
from palimpsest.ingest.context import IngestContext, Route
from palimpsest.ingest.decide import decide_repos
from palimpsest.ingest.errors import Conflict, NotFound
from palimpsest.ingest.load import load_added
from palimpsest.ingest.schemas import InstallationSync
from palimpsest.ingest.store import installations, lookups, repositories
from palimpsest.ingest.store.installations import SyncTarget
from palimpsest.ingest.webhooks import RepoRef, WebhookError, bitbucket, github, gitlab
from palimpsest.ingest.webhooks._payload import Node
from palimpsest.ingest.webhooks.models import Provider

log = logging.getLogger(__name__)

PER_PAGE: Final = 100  # the most each API serves per page
MAX_PAGES: Final = 200  # 20 000 repositories: a listing longer than this is refused, not cut
TIMEOUT_S: Final = 30.0
GITHUB_HEADERS: Final = {"Accept": "application/vnd.github+json", "X-GitHub-Api-Version": "2022-11-28"}
SYNCABLE: Final[dict[str, frozenset[str]]] = {
    "github": frozenset({"installation"}),
    "gitlab": frozenset({"group", "project"}),
    "bitbucket": frozenset({"workspace"}),
}


class ProviderFailure(Exception):
    """The provider refused or broke off the listing: its HTTP status (None: no answer) and why."""

    def __init__(self, status: int | None, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


Query: TypeAlias = dict[str, str | int]  # a listing's query parameters


@dataclass(frozen=True, slots=True)
class SyncFailure:
    """A provider error (or a refused listing) the sync met: the HTTP status (None: no answer, or
    not asked) and what went wrong."""

    status: int | None
    message: str


@dataclass(slots=True)
class SyncReport:
    installation_id: UUID
    provider: str
    kind: str
    dry_run: bool
    listed: int = 0  # repositories the provider listed
    pages: int = 0
    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)  # "name: why" (source policy, conflicts)
    errors: list[SyncFailure] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.errors

    def as_schema(self) -> InstallationSync:
        """The report as the API shows it."""
        out = asdict(self)
        out["installation_id"] = str(self.installation_id)
        return InstallationSync.model_validate(out)

    def line(self) -> str:
        verb = "would add" if self.dry_run else "added"
        gone = "would remove" if self.dry_run else "removed"
        text = (
            f"{self.provider} {self.kind}: {len(self.added)} {verb}, {len(self.removed)} {gone},"
            f" {len(self.unchanged)} unchanged"
        )
        if self.refused:
            text += f", {len(self.refused)} refused"
        return text + "".join(f"; error: {e.message}" for e in self.errors)


async def sync_installation(
    ctx: IngestContext, scope: Scope, installation_id: UUID, *, dry_run: bool = False, force: bool = False
) -> SyncReport:
    """Sync one installation of the tenant; NotFound when it has none such, Conflict when suspended.
    Provider errors are in the report, never raised; so is an empty listing that would remove every
    registered repository, unless ``force``."""
    tenant_id = scope.tenant_id
    async with scoped_tx(ctx, scope) as conn:
        inst = await installations.sync_target(conn, installation_id)
    if inst is None:
        raise NotFound("no such installation")
    if inst.suspended:
        raise Conflict("the installation is suspended: resume it before syncing")
    report = SyncReport(inst.installation_id, inst.provider, inst.kind, dry_run)
    try:
        listed = await _list(ctx, inst, report)
    except ProviderFailure as exc:
        report.errors.append(SyncFailure(exc.status, exc.message))
        metrics.INSTALLATION_SYNCS.labels(inst.provider, "error").inc()
        return report
    report.listed = len(listed)
    async with tenant_tx(ctx.pool, tenant_id) as conn:
        if not listed and not force and (held := await _registered(conn, inst)):
            report.errors.append(SyncFailure(None, _EMPTY_LISTING.format(held=held)))
            metrics.INSTALLATION_SYNCS.labels(inst.provider, "error").inc()
            return report
        if dry_run:
            async with conn.transaction(force_rollback=True):
                await _apply(ctx, conn, tenant_id, inst, listed, report)
        else:
            await _apply(ctx, conn, tenant_id, inst, listed, report)
    metrics.INSTALLATION_SYNCS.labels(inst.provider, "ok").inc()
    return report


_EMPTY_LISTING: Final = (
    "the provider listed no repositories while {held} are registered for this installation:"
    " nothing was removed (check the installation's access; sync with force to remove them all)"
)


async def _registered(conn: Conn, inst: SyncTarget) -> int:
    found = await repositories.list_repositories(
        conn, provider=inst.provider, installation_id=inst.installation_id
    )
    return len(found)


async def _apply(
    ctx: IngestContext,
    conn: Conn,
    tenant_id: UUID,
    inst: SyncTarget,
    listed: list[RepoRef],
    report: SyncReport,
) -> None:
    """Load the registered and the listed repositories, decide, apply (the index requests of the
    repositories registered are emitted with the writes)."""
    ids = {ref.external_id for ref in listed}
    registered = await repositories.list_repositories(
        conn, provider=inst.provider, installation_id=inst.installation_id
    )
    gone = [
        RepoRef(cast(Provider, inst.provider), r.external_id, r.full_name, r.clone_url, None, "private")
        for r in registered
        if r.external_id is not None and r.external_id not in ids
    ]
    added = await load_added(conn, inst.host, listed, ctx.policy)
    route = Route(tenant_id, inst.installation_id, "")
    reason, intents = decide_repos(route, inst.provider, added, gone)
    done = await apply(conn, intents)
    report.added, report.unchanged = done.registered, list(reason.known)
    report.refused = [*reason.refused, *done.refused]
    report.removed = done.removed


# --------------------------------------------------------------------------- listing


async def _list(ctx: IngestContext, inst: SyncTarget, report: SyncReport) -> list[RepoRef]:
    if inst.kind not in SYNCABLE.get(inst.provider, frozenset()):
        kinds = ", ".join(sorted(SYNCABLE.get(inst.provider, frozenset())))
        raise ProviderFailure(
            None, f"a {inst.provider} {inst.kind} installation cannot be listed (only {kinds})"
        )
    if inst.credentials is None or inst.credentials_kind not in ("token", "app"):
        raise ProviderFailure(
            None, "the installation has no credentials: give it an access token or App credentials"
        )
    credential = Credential(
        inst.provider, inst.credentials_kind, inst.credentials, inst.host, inst.external_id
    )
    try:
        token = await credential_token(credential, ctx.box, ctx.github_tokens)
    except GitError as exc:
        raise ProviderFailure(exc.status, exc.detail) from exc
    if token is None:
        raise ProviderFailure(
            None, f"App credentials are GitHub's; a {inst.provider} installation needs a token"
        )
    settings = ctx.settings
    override = {
        "github": settings.github_api_url,
        "gitlab": settings.gitlab_api_url,
        "bitbucket": settings.bitbucket_api_url,
    }[inst.provider]
    api = provider_api_url(inst.provider, inst.host, override)
    lister = _Lister(api, inst.provider, token, report)
    async with lister:
        if inst.provider == "github":
            items = await lister.pages("/installation/repositories", {"per_page": PER_PAGE}, "repositories")
            return _refs(items, github.api_repository)
        if inst.provider == "gitlab" and inst.kind == "project":
            items = await lister.pages(f"/projects/{quote(inst.external_id, safe='')}", {}, None)
            return _refs(items, gitlab.api_repository)
        if inst.provider == "gitlab":
            params: Query = {
                "include_subgroups": "true",
                "with_shared": "false",
                "per_page": PER_PAGE,
                "order_by": "id",
                "sort": "asc",
            }
            items = await lister.pages(f"/groups/{quote(inst.external_id, safe='')}/projects", params, None)
            return _refs(items, gitlab.api_repository)
        path = f"/repositories/{quote(inst.external_id, safe='')}"
        items = await lister.pages(path, {"pagelen": PER_PAGE}, "values")
        return _refs(items, bitbucket.api_repository)


def _refs(items: list[tuple[str, JsonObject]], read: Any) -> list[RepoRef]:
    """The listed objects as repositories (first of each provider id), or a failure naming the field."""
    found: dict[str, RepoRef] = {}
    for where, item in items:
        try:
            ref: RepoRef = read(Node(item, where))
        except WebhookError as exc:
            raise ProviderFailure(None, f"the provider's listing is not as expected: {exc.reason}") from exc
        found.setdefault(ref.external_id, ref)
    return list(found.values())


class _Lister:
    """GET the pages of one listing; the token only in a header, next pages only on the API's origin."""

    def __init__(
        self,
        api: str,
        provider: str,
        token: str,
        report: SyncReport,
    ) -> None:
        self.api = api
        self.provider = provider
        self.report = report
        headers = {"User-Agent": "palimpsest-ingest"}
        if provider == "gitlab":
            headers["PRIVATE-TOKEN"] = token
        else:
            headers["Authorization"] = f"Bearer {token}"
        if provider == "github":
            headers.update(GITHUB_HEADERS)
        self.client = httpx.AsyncClient(headers=headers, timeout=TIMEOUT_S, follow_redirects=False)
        origin = urlsplit(api)
        self.origin = (origin.scheme, origin.netloc)

    async def __aenter__(self) -> _Lister:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.client.aclose()

    async def pages(self, path: str, params: Query, key: str | None) -> list[tuple[str, JsonObject]]:
        """Every item of the listing at ``path`` (``key``: the field holding a page's items; None:
        the page is the list, or the one object)."""
        url: str | None = self.api + path
        query: Query | None = params
        items: list[tuple[str, JsonObject]] = []
        while url is not None:
            if self.report.pages >= MAX_PAGES:
                raise ProviderFailure(None, f"more than {MAX_PAGES} pages: the listing was not used")
            response = await self._get(url, query)
            self.report.pages += 1
            body = _json(response)
            page = body.get(key) if key is not None and isinstance(body, dict) else body
            if isinstance(page, dict) and key is None:
                page = [page]
            if not isinstance(page, list) or not all(isinstance(i, dict) for i in page):
                raise ProviderFailure(
                    None, "the provider's listing is not as expected: no list of repositories"
                )
            n = self.report.pages
            items.extend((f"page {n}[{i}]", item) for i, item in enumerate(page))
            url, query = self._next(response, body, url, query)
        return items

    def _next(
        self, response: httpx.Response, body: Any, url: str, query: Query | None
    ) -> tuple[str | None, Query | None]:
        found: str | None = None
        if self.provider == "bitbucket":
            found = body.get("next") if isinstance(body, dict) and isinstance(body.get("next"), str) else None
        else:
            found = response.links.get("next", {}).get("url")
        if found is None and self.provider == "gitlab":
            page = response.headers.get("x-next-page", "").strip()
            if page.isdigit():
                return url, {**(query or {}), "page": int(page)}
        if found is None:
            return None, None
        nxt = urlsplit(found)
        if (nxt.scheme, nxt.netloc) != self.origin:
            raise ProviderFailure(
                None, "the next page is on another host than the API: the listing was not used"
            )
        return found, None

    async def _get(self, url: str, query: Query | None) -> httpx.Response:
        try:
            response = await self.client.get(url, params=query)
        except httpx.TimeoutException as exc:
            raise ProviderFailure(None, f"{self.provider} API at {self.api} timed out") from exc
        except httpx.HTTPError as exc:
            raise ProviderFailure(
                None, f"{self.provider} API at {self.api} unreachable ({exc.__class__.__name__})"
            ) from exc
        if response.status_code >= 300:
            raise _failure(self.provider, response)
        return response


def _json(response: httpx.Response) -> Any:
    try:
        return response.json()
    except ValueError as exc:
        raise ProviderFailure(response.status_code, "the provider's answer is not JSON") from exc


def _retry_after(response: httpx.Response) -> str:
    after = response.headers.get("retry-after", "").strip()
    if after.isdigit():
        return f"; retry after {after} s"
    reset = response.headers.get("x-ratelimit-reset", "").strip()
    if reset.isdigit():
        return f"; retry after {max(0, int(reset) - int(time.time()))} s"
    return ""


def _failure(provider: str, response: httpx.Response) -> ProviderFailure:
    """One line per refusal, from the status and headers only (never the body, never the token). A
    rate limit is a 429, or a 403 with ``x-ratelimit-remaining: 0`` or a ``Retry-After`` (GitHub's
    primary and secondary limits)."""
    status = response.status_code
    name = {"github": "GitHub", "gitlab": "GitLab", "bitbucket": "Bitbucket"}[provider]
    remaining = response.headers.get("x-ratelimit-remaining", "").strip()
    if status == 429 or (status == 403 and (remaining == "0" or "retry-after" in response.headers)):
        return ProviderFailure(
            status, f"{name} API rate limit reached (HTTP {status}){_retry_after(response)}"
        )
    if status == 401:
        return ProviderFailure(
            status, f"{name} API answered HTTP 401: the installation's credentials were refused"
        )
    if status == 403:
        return ProviderFailure(
            status, f"{name} API answered HTTP 403: the credentials may not list these repositories"
        )
    if status == 404:
        return ProviderFailure(
            status, f"{name} API answered HTTP 404: not found, or not visible to these credentials"
        )
    if 300 <= status < 400:
        return ProviderFailure(status, f"{name} API answered a redirect (HTTP {status}): check its URL")
    return ProviderFailure(status, f"{name} API answered HTTP {status}")


# --------------------------------------------------------------------------- the backfill's share

_SYNCABLE_PAIRS: Final = [(p, k) for p, kinds in SYNCABLE.items() for k in sorted(kinds)]


async def sync_slice(
    ctx: IngestContext, slice_no: int | None, slices: int, tenants: Collection[UUID] | None = None
) -> list[SyncReport]:
    """Sync the installations of one backfill slice (None: all), tenant by tenant; a failure of one
    installation or tenant is logged and the others go on."""
    reports: list[SyncReport] = []
    for tenant in await lookups.tenant_list(ctx.pool):
        if tenant.suspended_at is not None or tenant.deleting_at is not None:
            continue
        if tenants is not None and tenant.tenant_id not in tenants:
            continue
        try:
            async with tenant_tx(ctx.pool, tenant.tenant_id) as conn:
                due = await installations.due_for_sync(conn, _SYNCABLE_PAIRS, slice_no, slices)
        except Exception as exc:
            log.warning("installation sync: tenant %s skipped (%s)", tenant.tenant_id, exc.__class__.__name__)
            continue
        for installation_id in due:
            try:
                report = await sync_installation(ctx, Scope(tenant.tenant_id, verify=False), installation_id)
            except Exception as exc:  # one installation's failure never stops the others'
                log.warning("installation sync of %s failed (%s)", installation_id, exc.__class__.__name__)
                continue
            reports.append(report)
            if report.errors or report.added or report.removed:
                log.info("installation sync of %s: %s", report.installation_id, report.line())
    return reports
