"""Installation sync against the loopback fake providers: every page of the listing is read,
missing repositories are registered and gone ones deleted (the webhook's cascade), a dry run
changes nothing, and each provider error (401, 404, a rate limit, a failing later page) is
reported with its status, changes nothing and names no token. The backfill tick syncs too, and
one installation's failure does not stop another's. The CLI reaches the API through
``PALIMPSEST_INGEST_URL``, as it would a cluster's.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import sys
import time
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from uuid import UUID

import httpx
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from palimpsest.core.db import fetch_all, system_tx
from palimpsest.core.service import Infra
from palimpsest.ingest import backfill
from palimpsest.ingest.api.app import create_app
from palimpsest.ingest.api.server import IngestServer
from palimpsest.ingest.backfill import BackfillPolicy
from palimpsest.ingest.context import IngestContext, build_context
from palimpsest.ingest.sync import sync_slice
from tests.integration.ingest.support import (
    GITLAB_HOST,
    World,
    admin,
    bearer,
    drop_tenant,
    fake_resolver,
    ingest_settings,
    new_tenant,
)
from tests.support.fake_providers import FakeApp, FakeProviders
from tests.support.servers import ServerSet

TOKEN = "glpat-SyncFakeProviderToken0123456789"
GITHUB_INSTALLATION = "77001234"
GROUP = "9301"
WORKSPACE = "{5d1f3c2a-7b7e-4a0b-9f1e-2c3d4e5f6a7b}"
KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048)
PEM = KEY.private_bytes(
    serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
).decode()


def _github(n: int) -> dict[str, Any]:
    name = f"acme-sync/svc-{n}"
    return {
        "id": 880000 + n,
        "name": f"svc-{n}",
        "full_name": name,
        "private": True,
        "visibility": "private",
        "clone_url": f"https://github.com/{name}.git",
        "default_branch": "main",
    }


def _gitlab(n: int, *, subgroup: bool = False) -> dict[str, Any]:
    path = f"platform/{'tools/' if subgroup else ''}proj-{n}"
    item: dict[str, Any] = {
        "id": 93000 + n,
        "path_with_namespace": path,
        "http_url_to_repo": f"https://{GITLAB_HOST}/{path}.git",
        "default_branch": "trunk",
        "visibility": "internal",
    }
    if subgroup:
        item["_subgroup"] = True
    return item


def _bitbucket(n: int) -> dict[str, Any]:
    name = f"kestrel-sync/repo-{n}"
    return {
        "uuid": f"{{00000000-0000-4000-8000-{n:012d}}}",
        "full_name": name,
        "is_private": n % 2 == 0,
        "mainbranch": {"name": "master", "type": "branch"},
        "links": {"html": {"href": f"https://bitbucket.org/{name}"}},
    }


INSTALLATIONS: dict[str, dict[str, Any]] = {
    "github": {
        "provider": "github",
        "kind": "installation",
        "external_id": GITHUB_INSTALLATION,
        "app_credentials": {"app_id": "5150", "private_key": PEM},
    },
    "gitlab": {
        "provider": "gitlab",
        "kind": "group",
        "external_id": GROUP,
        "namespace": "platform",
        "host": GITLAB_HOST,
        "access_token": TOKEN,
    },
    "bitbucket": {"provider": "bitbucket", "external_id": WORKSPACE, "access_token": TOKEN},
}
LISTING = {"github": "github", "gitlab": f"gitlab:{GROUP}", "bitbucket": f"bitbucket:{WORKSPACE}"}
MAKE = {"github": _github, "gitlab": _gitlab, "bitbucket": _bitbucket}


@pytest.fixture(scope="module")
def providers() -> Iterator[FakeProviders]:
    app = FakeApp("5150", KEY.public_key(), GITHUB_INSTALLATION)
    with FakeProviders(token=TOKEN, app=app) as fake:
        yield fake


@pytest.fixture
def fake(providers: FakeProviders) -> FakeProviders:
    providers.listings.clear()
    providers.listing_answers.clear()
    providers.listing_requests.clear()
    providers.page_size, providers.gitlab_link = 100, True
    return providers


@pytest.fixture(scope="module")
async def synced(
    infra: Infra, stack: ServerSet, providers: FakeProviders
) -> AsyncIterator[tuple[IngestContext, str]]:
    """An ingest API whose provider APIs are the fake (PALIMPSEST_*_API_URL)."""
    url = providers.url
    settings = ingest_settings(stack, github_api_url=url, gitlab_api_url=url, bitbucket_api_url=url)
    ctx = build_context(settings, infra.pool, embedded=False, resolver=fake_resolver)
    server = IngestServer.bind(create_app(ctx), "127.0.0.1", 0)
    stop = asyncio.Event()
    task = asyncio.create_task(server.serve(stop))
    while not await server.ready():
        assert not task.done(), task.exception()
        await asyncio.sleep(0.02)
    try:
        yield ctx, server.url
    finally:
        stop.set()
        await task


@pytest.fixture
async def api(synced: tuple[IngestContext, str]) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=synced[1], timeout=60) as client:
        yield client


@pytest.fixture
async def world(api: httpx.AsyncClient, infra: Infra) -> AsyncIterator[World]:
    found = await new_tenant(api, "sync")
    try:
        for name, spec in INSTALLATIONS.items():
            res = await api.post(found.path("/installations"), json=spec, headers=found.auth)
            assert res.status_code == 201, res.text
            found.installations[name] = res.json()
        yield found
    finally:
        await drop_tenant(infra.pool, found.tenant_id)


async def _sync(
    api: httpx.AsyncClient, world: World, provider: str, *, dry_run: bool = False, force: bool = False
) -> dict[str, Any]:
    iid = world.installations[provider]["installation_id"]
    params = {"dry_run": str(dry_run).lower(), "force": str(force).lower()}
    res = await api.post(world.path(f"/installations/{iid}/sync"), params=params, headers=world.auth)
    assert res.status_code == 200, res.text
    return dict(res.json())


async def _names(api: httpx.AsyncClient, world: World, provider: str) -> dict[str, dict[str, Any]]:
    iid = world.installations[provider]["installation_id"]
    res = await api.get(world.path("/repositories"), params={"installation_id": iid}, headers=world.auth)
    assert res.status_code == 200, res.text
    return {r["full_name"]: r for r in res.json()["items"]}


async def _index_requests(infra: Infra, tenant: UUID) -> int:
    async with system_tx(infra.pool) as conn:
        rows = await fetch_all(
            conn, "SELECT 1 FROM outbox WHERE tenant_id = %s AND type = 'index.requested'", (tenant,)
        )
    return len(rows)


@pytest.mark.parametrize("provider", ["github", "gitlab", "bitbucket"])
async def test_sync_registers_what_the_provider_lists_and_removes_what_it_no_longer_does(
    provider: str, fake: FakeProviders, api: httpx.AsyncClient, world: World, infra: Infra
) -> None:
    make = MAKE[provider]
    items = [make(n) for n in range(1, 6)]
    if provider == "gitlab":
        items.append(_gitlab(6, subgroup=True))  # only listed with include_subgroups=true
    fake.listings[LISTING[provider]] = items
    fake.page_size = 2
    names = sorted(str(i.get("full_name") or i.get("path_with_namespace")) for i in items)

    dry = await _sync(api, world, provider, dry_run=True)
    assert (dry["dry_run"], sorted(dry["added"]), dry["removed"], dry["errors"]) == (True, names, [], [])
    assert dry["listed"] == len(items) and dry["pages"] == -(-len(items) // 2)
    assert await _names(api, world, provider) == {} and await _index_requests(infra, world.tenant_id) == 0

    first = await _sync(api, world, provider)
    assert (sorted(first["added"]), first["removed"], first["unchanged"], first["errors"]) == (
        names,
        [],
        [],
        [],
    )
    assert first["pages"] == 3
    pages = [r for r in fake.listing_requests if re.search(r"[?&]page=[23](&|$)", r)]
    assert len(pages) == 2 * 2  # the dry run's and the sync's pages 2 and 3
    stored = await _names(api, world, provider)
    assert sorted(stored) == names
    assert await _index_requests(infra, world.tenant_id) == len(items)
    one = stored[names[0]]
    assert one["installation_id"] == world.installations[provider]["installation_id"]
    assert one["default_branch"] == {"github": "main", "gitlab": "trunk", "bitbucket": "master"}[provider]
    if provider == "gitlab":
        assert one["visibility"] == "internal" and one["clone_url"].startswith(f"https://{GITLAB_HOST}/")
        fake.gitlab_link = False  # the next pages from X-Next-Page alone

    # one repository left the installation, one joined: the same cascade as the webhook's
    gone = items.pop(1)
    items.append(make(7))
    second = await _sync(api, world, provider)
    gone_name = str(gone.get("full_name") or gone.get("path_with_namespace"))
    new_name = str(items[-1].get("full_name") or items[-1].get("path_with_namespace"))
    assert (second["added"], second["removed"], len(second["unchanged"])) == (
        [new_name],
        [gone_name],
        len(items) - 1,
    )
    assert second["pages"] == 3  # GitLab: followed by X-Next-Page without a Link header
    after = await _names(api, world, provider)
    assert gone_name not in after and new_name in after and len(after) == len(items)

    again = await _sync(api, world, provider)
    assert (again["added"], again["removed"], len(again["unchanged"])) == ([], [], len(items))


@pytest.mark.parametrize("provider", ["github", "bitbucket"])
async def test_an_empty_listing_removes_nothing_unless_forced(
    provider: str, fake: FakeProviders, api: httpx.AsyncClient, world: World, infra: Infra
) -> None:
    items = [MAKE[provider](n) for n in range(1, 4)]
    fake.listings[LISTING[provider]] = items
    first = await _sync(api, world, provider)
    assert len(first["added"]) == 3 and first["errors"] == []

    fake.listings[LISTING[provider]] = []  # a revoked grant answers 200 with nothing in it
    for dry in (True, False):
        refused = await _sync(api, world, provider, dry_run=dry)
        assert [e["status"] for e in refused["errors"]] == [None], refused
        assert "listed no repositories while 3 are registered" in refused["errors"][0]["message"]
        assert (refused["added"], refused["removed"], refused["listed"]) == ([], [], 0)
        assert len(await _names(api, world, provider)) == 3

    forced = await _sync(api, world, provider, force=True)
    assert forced["errors"] == [] and len(forced["removed"]) == 3
    assert await _names(api, world, provider) == {}
    again = await _sync(api, world, provider)  # nothing registered: an empty listing is no error
    assert again["errors"] == [] and again["removed"] == []


RATE_LIMITS: dict[str, tuple[int, dict[str, str]]] = {
    "github": (403, {"x-ratelimit-remaining": "0", "x-ratelimit-reset": str(int(time.time()) + 600)}),
    "gitlab": (429, {"Retry-After": "30"}),
    "bitbucket": (429, {"Retry-After": "30"}),
}


@pytest.mark.parametrize("provider", ["github", "gitlab", "bitbucket"])
async def test_a_provider_error_is_reported_with_its_status_and_changes_nothing(
    provider: str, fake: FakeProviders, api: httpx.AsyncClient, world: World, infra: Infra
) -> None:
    fake.listings[LISTING[provider]] = [MAKE[provider](n) for n in range(1, 5)]
    fake.page_size = 2
    cases: list[tuple[list[tuple[int, dict[str, str]] | None], int, str]] = [
        ([(401, {})], 401, "credentials were refused"),
        ([(404, {})], 404, "not found"),
        ([RATE_LIMITS[provider]], RATE_LIMITS[provider][0], "rate limit reached"),
        ([None, (502, {})], 502, "HTTP 502"),  # the second page fails: the first is not used either
    ]
    if provider == "github":
        cases.append(([(429, {"Retry-After": "17"})], 429, "retry after 17 s"))
        cases.append(([(403, {"Retry-After": "60"})], 403, "rate limit reached (HTTP 403); retry after 60 s"))
        cases.append(([(403, {})], 403, "may not list"))
    for answers, status, words in cases:
        fake.listing_answers[:] = answers
        report = await _sync(api, world, provider)
        assert [e["status"] for e in report["errors"]] == [status], report
        message = report["errors"][0]["message"]
        assert words in message and TOKEN not in message and "\n" not in message
        assert (report["added"], report["removed"]) == ([], [])
    assert await _names(api, world, provider) == {}
    assert await _index_requests(infra, world.tenant_id) == 0


async def test_github_sync_mints_an_installation_token_and_reports_a_refused_mint(
    fake: FakeProviders, api: httpx.AsyncClient, world: World
) -> None:
    fake.listings["github"] = [_github(1)]
    ok = await _sync(api, world, "github")
    assert ok["added"] == ["acme-sync/svc-1"] and fake.app is not None and fake.app.mints >= 1
    other = {**INSTALLATIONS["github"], "external_id": "77009999"}  # the App is not installed there
    res = await api.post(world.path("/installations"), json=other, headers=world.auth)
    world.installations["github-other"] = res.json()
    report = await _sync(api, world, "github-other")
    assert [e["status"] for e in report["errors"]] == [404]
    assert "token request answered HTTP 404" in report["errors"][0]["message"]
    assert "404 no such installation" in fake.app.refused


async def test_sync_needs_the_manage_scope_and_a_known_installation(
    api: httpx.AsyncClient, world: World
) -> None:
    res = await api.post(world.path("/tokens"), json={"name": "ro", "scopes": ["read"]}, headers=world.auth)
    reader = res.json()["api_token"]
    iid = world.installations["gitlab"]["installation_id"]
    denied = await api.post(world.path(f"/installations/{iid}/sync"), headers=bearer(reader))
    assert denied.status_code == 403 and "manage" in denied.text
    missing = await api.post(
        world.path("/installations/01890000-0000-7000-8000-000000000000/sync"), headers=world.auth
    )
    assert missing.status_code == 404
    await api.post(world.path(f"/installations/{iid}/suspend"), headers=world.auth)
    suspended = await api.post(world.path(f"/installations/{iid}/sync"), headers=admin())
    assert suspended.status_code == 409 and "suspended" in suspended.text


async def test_the_backfill_tick_syncs_each_installation_and_one_failure_does_not_stop_another(
    fake: FakeProviders, synced: tuple[IngestContext, str], world: World, api: httpx.AsyncClient, infra: Infra
) -> None:
    ctx = synced[0]
    fake.listings[LISTING["gitlab"]] = [_gitlab(n) for n in range(1, 4)]
    fake.page_size = 2
    # github: listed fine; bitbucket: the workspace is unknown to the provider (404)
    fake.listings["github"] = [_github(9)]
    policy = BackfillPolicy(interval_s=3600, slices=1, max_per_tick=50, grace_s=600)
    tick_at = datetime.fromtimestamp(9_100_000 * 3600 + (time.time_ns() % 1000) * 3600, UTC)
    reports: list[Any] = []

    async def sync(slice_no: int, slices: int, tenants: Any) -> None:
        reports.extend(await sync_slice(ctx, slice_no, slices, tenants))

    ran = await backfill.run_tick(
        infra.pool, policy, tick_at, who="sync-test", tenants={world.tenant_id}, sync=sync
    )
    assert ran is not None
    by = {r.provider: r for r in reports}
    assert sorted(by) == ["bitbucket", "github", "gitlab"]
    assert [e.status for e in by["bitbucket"].errors] == [404]
    assert len(by["gitlab"].added) == 3 and by["gitlab"].pages == 2
    assert by["github"].added == ["acme-sync/svc-9"]
    assert sorted(await _names(api, world, "gitlab")) == [f"platform/proj-{n}" for n in range(1, 4)]


async def _cli(env: dict[str, str], *args: str) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "palimpsest.cli.main",
        *args,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), 120)
    return proc.returncode or 0, out.decode(), err.decode()


async def test_the_cli_syncs_through_the_api_it_is_pointed_at(
    fake: FakeProviders, synced: tuple[IngestContext, str], world: World, tmp_path: Path
) -> None:
    """The "check it works" of each provider: dry run, sync, and a provider error (exit 1)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PALIMPSEST_")}
    env.update(
        {
            "PALIMPSEST_HOME": str(tmp_path / "home"),
            "PALIMPSEST_INGEST_URL": synced[1],
            "PALIMPSEST_API_TOKEN": world.token,
            "PALIMPSEST_TENANT": str(world.tenant_id),
        }
    )
    fake.page_size = 2
    for provider in ("github", "gitlab", "bitbucket"):
        fake.listings[LISTING[provider]] = [MAKE[provider](n) for n in range(1, 4)]
        iid = world.installations[provider]["installation_id"]
        code, out, err = await _cli(env, "installation", "sync", iid, "--dry-run")
        assert code == 0, err
        print(f"$ palimpsest installation sync {iid} --dry-run\n{out}")
        assert out.splitlines()[-1].endswith("3 would be added, 0 would be removed, 0 unchanged")
        assert "listed in 2 page(s)" in out
        code, out, err = await _cli(env, "installation", "sync", iid)
        assert code == 0, err
        print(f"$ palimpsest installation sync {iid}\n{out}")
        assert out.splitlines()[-1].endswith("3 added, 0 removed, 0 unchanged")
        code, out, err = await _cli(env, "installation", "sync", iid, "--json")
        assert code == 0, err
        report = json.loads(out)
        assert (report["added"], len(report["unchanged"]), report["errors"]) == ([], 3, [])
        fake.listing_answers[:] = [(401, {})]
        code, out, err = await _cli(env, "installation", "sync", iid)
        print(f"$ palimpsest installation sync {iid}\n{out}(exit {code})")
        assert code == 1 and "HTTP 401" in out and TOKEN not in out + err
        assert out.splitlines()[-1].endswith("nothing changed")


async def test_a_gitlab_project_installation_lists_its_one_project(
    fake: FakeProviders, api: httpx.AsyncClient, world: World
) -> None:
    fake.listings[LISTING["gitlab"]] = [_gitlab(1), _gitlab(2)]
    spec = {**INSTALLATIONS["gitlab"], "kind": "project", "external_id": "93002"}
    del spec["namespace"]
    res = await api.post(world.path("/installations"), json=spec, headers=world.auth)
    assert res.status_code == 201, res.text
    world.installations["gitlab-project"] = res.json()
    report = await _sync(api, world, "gitlab-project")
    assert (report["added"], report["pages"], report["errors"]) == (["platform/proj-2"], 1, [])
    fake.listings.clear()  # the project is gone (or the token lost it): 404, and nothing is removed
    report = await _sync(api, world, "gitlab-project")
    assert [e["status"] for e in report["errors"]] == [404] and report["removed"] == []
    assert list(await _names(api, world, "gitlab-project")) == ["platform/proj-2"]
