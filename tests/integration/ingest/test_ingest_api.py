"""The /v1 API over real HTTP: tokens, installations, repositories, deliveries, and tenant isolation.

The cross-tenant test walks every /v1 route the app declares (so a new route is covered the day
it is added) with tenant A's token against tenant B's tenant id and B's resource ids.
"""

from __future__ import annotations

import re
import uuid
from typing import Any

import httpx
import pytest
from fastapi.routing import APIRoute

from palimpsest.core.db import fetch_all, fetch_one, system_tx, tenant_tx
from palimpsest.ingest.errors import SourceRefused
from palimpsest.ingest.sources import SourcePolicy, check_source
from tests.integration.ingest.support import (
    GITLAB_HOST,
    LEDGER,
    Served,
    World,
    admin,
    bearer,
    deliver,
    drop_tenant,
    new_tenant,
    populate,
    world_of,
)


async def test_creating_a_tenant_needs_the_admin_token(client: httpx.AsyncClient, served: Served) -> None:
    assert (await client.post("/v1/tenants", json={"name": "x"})).status_code == 401
    bad = await client.post("/v1/tenants", json={"name": "x"}, headers=bearer("pal_nope"))
    assert bad.status_code == 401
    assert bad.headers["www-authenticate"] == "Bearer"
    world = await new_tenant(client)
    try:
        assert (await client.post("/v1/tenants", json={"name": "x"}, headers=world.auth)).status_code == 403
        me = await client.get(world.path(), headers=world.auth)
        assert me.status_code == 200
        assert me.json()["tenant_id"] == str(world.tenant_id)
        assert world.token.startswith("pal_")
    finally:
        await drop_tenant(served.ctx.pool, world.tenant_id)


async def test_tokens_are_stored_hashed_and_can_be_revoked(client: httpx.AsyncClient, served: Served) -> None:
    async with world_of(client, served.ctx.pool, repos=False) as world:
        issued = await client.post(
            world.path("/tokens"), json={"name": "ci", "scopes": ["manage"]}, headers=world.auth
        )
        assert issued.status_code == 201
        token = issued.json()["api_token"]
        async with tenant_tx(served.ctx.pool, world.tenant_id) as conn:
            rows = await fetch_all(conn, "SELECT token_hash FROM api_tokens")
        assert all(
            token.encode() not in bytes(r["token_hash"]) and len(bytes(r["token_hash"])) == 32 for r in rows
        )
        listed = await client.get(world.path("/tokens"), headers=bearer(token))
        assert listed.status_code == 200
        assert "api_token" not in listed.text and token not in listed.text
        gone = await client.delete(world.path(f"/tokens/{issued.json()['token_id']}"), headers=world.auth)
        assert gone.status_code == 204
        assert (await client.get(world.path(), headers=bearer(token))).status_code == 401


async def test_installation_secrets_are_encrypted_and_never_returned(
    client: httpx.AsyncClient, served: Served
) -> None:
    async with world_of(client, served.ctx.pool, repos=False) as world:
        body = {
            "provider": "github",
            "kind": "organization",
            "external_id": "4242",
            "webhook_secret": "whsec_never-shown",
            "access_token": "ghp_tok_never-shown",
        }
        res = await client.post(world.path("/installations"), json=body, headers=world.auth)
        assert res.status_code == 201, res.text
        assert res.json()["has_webhook_secret"] is True and res.json()["credentials_kind"] == "token"
        app = {"app_credentials": {"app_id": "99", "private_key": "-----BEGIN RSA PRIVATE KEY-----x"}}
        patched = await client.patch(
            world.path(f"/installations/{res.json()['installation_id']}"), json=app, headers=world.auth
        )
        assert patched.json()["credentials_kind"] == "app"
        texts = [
            res.text,
            patched.text,
            (await client.get(world.path("/installations"), headers=world.auth)).text,
        ]
        texts.append((await client.get("/openapi.json")).text)
        for text in texts:
            assert not any(marker in text for marker in ("never-shown", "BEGIN RSA"))
        async with tenant_tx(served.ctx.pool, world.tenant_id) as conn:
            stored = await fetch_all(conn, "SELECT webhook_secret, credentials FROM installations")
        for row in stored:
            for value in (row["webhook_secret"], row["credentials"]):
                if value is not None:
                    assert b"never-shown" not in bytes(value) and b"BEGIN" not in bytes(value)
                    assert served.ctx.box.open(bytes(value))  # sealed with the configured key


async def test_validation_errors_never_echo_the_input(client: httpx.AsyncClient, served: Served) -> None:
    async with world_of(client, served.ctx.pool, repos=False) as world:
        body = {"provider": "github", "external_id": "1", "webhook_secret": "whsec_" + "x" * 9000}
        res = await client.post(world.path("/installations"), json=body, headers=world.auth)
        assert res.status_code == 422
        assert "whsec_" not in res.text
        body = {"provider": "github", "external_id": "1", "access_token": ["ghp_tok_in_a_list"]}
        res = await client.post(world.path("/installations"), json=body, headers=world.auth)
        assert res.status_code == 422
        assert "ghp_tok" not in res.text


async def test_installation_rules(client: httpx.AsyncClient, served: Served) -> None:
    async with world_of(client, served.ctx.pool, repos=False) as world:
        taken = {"provider": "github", "external_id": "52817364", "webhook_secret": "s"}
        assert (
            await client.post(world.path("/installations"), json=taken, headers=world.auth)
        ).status_code == 409
        for bad in (
            {"provider": "github", "kind": "workspace", "external_id": "1"},
            {"provider": "gitlab", "kind": "group", "external_id": "1"},
            {"provider": "github", "external_id": "1", "host": "evil.example"},
            {
                "provider": "github",
                "external_id": "1",
                "access_token": "a",
                "app_credentials": {"app_id": "1", "private_key": "k"},
            },
        ):
            res = await client.post(world.path("/installations"), json=bad, headers=world.auth)
            assert res.status_code == 400, (bad, res.text)


async def test_repository_lifecycle_emits_index_requests(client: httpx.AsyncClient, served: Served) -> None:
    async with world_of(client, served.ctx.pool, repos=False) as world:
        body = {"url": LEDGER, "installation_id": world.installations["github"]["installation_id"]}
        created = await client.post(world.path("/repositories"), json=body, headers=world.auth)
        assert created.status_code == 201, created.text
        repo = created.json()
        assert (repo["provider"], repo["full_name"], repo["index_mode"]) == (
            "github",
            "northwind-labs/ledger-service",
            "lexical",
        )
        path = world.path(f"/repositories/{repo['repository_id']}")
        assert (
            await client.post(world.path("/repositories"), json=body, headers=world.auth)
        ).status_code == 409
        mode = await client.patch(path, json={"index_mode": "hybrid"}, headers=world.auth)
        assert mode.json()["index_mode"] == "hybrid"
        rebuild = await client.post(f"{path}/rebuild", headers=world.auth)
        assert rebuild.status_code == 202
        off = await client.patch(path, json={"index_mode": "off"}, headers=world.auth)
        assert off.status_code == 200
        assert (await client.post(f"{path}/rebuild", headers=world.auth)).status_code == 409
        async with system_tx(served.ctx.pool) as conn:
            events = await fetch_all(
                conn, "SELECT payload FROM outbox WHERE tenant_id = %s ORDER BY id", (world.tenant_id,)
            )
        reasons = [e["payload"]["reason"] for e in events]
        assert reasons == ["register", "mode", "rebuild"]
        assert {e["payload"]["repository_id"] for e in events} == {repo["repository_id"]}
        assert (await client.delete(path, headers=world.auth)).status_code == 204
        assert (await client.get(path, headers=world.auth)).status_code == 404
        assert (await client.delete(path, headers=world.auth)).status_code == 404


@pytest.mark.parametrize(
    ("url", "installation", "message"),
    [
        ("http://github.com/a/b.git", None, "only https"),
        ("git@github.com:a/b.git", None, "only https"),
        ("https://user:pw@github.com/a/b.git", None, "credentials"),
        ("https://github.com/a/b.git?x=1", None, "query"),
        ("https://github.com:8443/a/b.git", None, "default https port"),
        ("https://github.com/onlyone", None, "owner/repository"),
        ("https://github.com/a/../b", None, "segment"),
        ("https://127.0.0.1/a/b.git", None, "not a configured provider host"),
        ("https://169.254.169.254/a/b", None, "not a configured provider host"),
        ("https://evil.example/a/b.git", None, "not a configured provider host"),
        ("https://internal.northwind.example/a/b.git", None, "private address"),
        ("https://unresolvable.example/a/b.git", None, "not a configured provider host"),
        ("https://gitlab.com/a/b.git", "github", "installation's host"),
        ("/tmp", "github", "https URL on its host"),
    ],
)
async def test_repository_urls_are_validated(
    client: httpx.AsyncClient, served: Served, url: str, installation: str | None, message: str
) -> None:
    async with world_of(client, served.ctx.pool, repos=False) as world:
        body: dict[str, Any] = {"url": url, "provider": "github"}
        if installation:
            body["installation_id"] = world.installations[installation]["installation_id"]
        res = await client.post(world.path("/repositories"), json=body, headers=world.auth)
        assert res.status_code == 400, res.text
        assert message in res.json()["detail"]


async def test_address_rules_without_http() -> None:
    policy = SourcePolicy(
        provider_hosts=frozenset({"git.corp.example", "10.1.1.1", "loop.example"}),
        private_hosts=frozenset({"git.corp.example", "loop.example"}),
        resolver=_resolves({"git.corp.example": ["10.9.8.7"], "loop.example": ["127.0.0.1"]}),
    )
    found = await check_source("https://git.corp.example/team/repo.git", policy)
    assert (found.host, found.full_name, found.provider) == ("git.corp.example", "team/repo", None)
    for url, reason in [
        ("https://10.1.1.1/a/b", "private"),
        ("https://loop.example/a/b", "loopback"),
        ("file:///tmp", "not allowed"),
    ]:
        with pytest.raises(SourceRefused, match=reason):
            await check_source(url, policy)


def _resolves(table: dict[str, list[str]]) -> Any:
    async def resolve(host: str) -> list[str]:
        return table[host]

    return resolve


async def test_local_sources_when_allowed(client: httpx.AsyncClient, served: Served, tmp_path: Any) -> None:
    async with world_of(client, served.ctx.pool, repos=False) as world:
        repo_dir = tmp_path / "service.git"
        repo_dir.mkdir()
        res = await client.post(
            world.path("/repositories"), json={"url": f"file://{repo_dir}"}, headers=world.auth
        )
        assert res.status_code == 201, res.text
        assert (res.json()["provider"], res.json()["clone_url"], res.json()["full_name"]) == (
            "local",
            str(repo_dir),
            "service",
        )
        missing = await client.post(
            world.path("/repositories"), json={"url": str(tmp_path / "nope")}, headers=world.auth
        )
        assert missing.status_code == 400


async def test_unknown_self_hosted_provider_needs_a_provider_name(
    client: httpx.AsyncClient, served: Served
) -> None:
    async with world_of(client, served.ctx.pool, repos=False) as world:
        url = f"https://{GITLAB_HOST}/platform/docs.git"
        assert (
            await client.post(world.path("/repositories"), json={"url": url}, headers=world.auth)
        ).status_code == 400
        res = await client.post(
            world.path("/repositories"), json={"url": url, "provider": "gitlab"}, headers=world.auth
        )
        assert res.status_code == 201, res.text


async def test_admin_acts_on_any_tenant_but_not_on_missing_ones(
    client: httpx.AsyncClient, served: Served
) -> None:
    async with world_of(client, served.ctx.pool) as world:
        assert (await client.get(world.path("/repositories"), headers=admin())).status_code == 200
        ghost = f"/v1/tenants/{uuid.uuid4()}"
        assert (await client.get(f"{ghost}/repositories", headers=admin())).status_code == 404
        assert (await client.get(ghost, headers=admin())).status_code == 404


async def test_deliveries_pagination_and_filters(client: httpx.AsyncClient, served: Served) -> None:
    async with world_of(client, served.ctx.pool) as world:
        for i in range(5):
            await deliver(client, "github", "push_tag", "push", delivery=f"page-{i}")
        await deliver(client, "gitlab", "push", "Push Hook", delivery="gl")
        page = (await client.get(world.path("/deliveries"), params={"limit": 2}, headers=world.auth)).json()
        assert [d["delivery_id"] for d in page["items"]] == ["gl", "page-4"]
        nxt = await client.get(
            world.path("/deliveries"), params={"limit": 2, "before": page["next_before"]}, headers=world.auth
        )
        assert [d["delivery_id"] for d in nxt.json()["items"]] == ["page-3", "page-2"]
        gitlab = await client.get(
            world.path("/deliveries"), params={"provider": "gitlab"}, headers=world.auth
        )
        assert [d["delivery_id"] for d in gitlab.json()["items"]] == ["gl"]
        repo = world.repos["gitlab"]["repository_id"]
        by_repo = await client.get(
            world.path("/deliveries"), params={"repository_id": repo}, headers=world.auth
        )
        assert [d["delivery_id"] for d in by_repo.json()["items"]] == ["gl"]
        one = await client.get(world.path(f"/deliveries/{page['items'][0]['id']}"), headers=world.auth)
        assert one.json()["delivery_id"] == "gl"


async def test_api_body_limit(client: httpx.AsyncClient) -> None:
    res = await client.post(
        "/v1/tenants",
        content=b"{" + b" " * (2 * 1024 * 1024) + b"}",
        headers={**admin(), "Content-Type": "application/json"},
    )
    assert res.status_code == 413


async def test_openapi_document(client: httpx.AsyncClient) -> None:
    doc = (await client.get("/openapi.json")).json()
    paths = set(doc["paths"])
    assert "/webhooks/{provider}" in paths
    assert "/v1/tenants/{tenant_id}/repositories/{repository_id}/rebuild" in paths
    assert "HTTPBearer" in doc["components"]["securitySchemes"]


# --------------------------------------------------------------------------- tenant isolation

SAMPLE_BODIES: dict[tuple[str, str], dict[str, Any]] = {
    ("POST", "/v1/tenants/{tenant_id}/tokens"): {"name": "stolen"},
    ("POST", "/v1/tenants/{tenant_id}/installations"): {
        "provider": "github",
        "kind": "repository",
        "external_id": "777",
        "webhook_secret": "x",
    },
    ("PATCH", "/v1/tenants/{tenant_id}/installations/{installation_id}"): {"webhook_secret": "hijacked"},
    ("POST", "/v1/tenants/{tenant_id}/repositories"): {"url": "https://github.com/acme/stolen.git"},
    ("PATCH", "/v1/tenants/{tenant_id}/repositories/{repository_id}"): {"index_mode": "off"},
}


def _tenant_routes() -> list[tuple[str, str]]:
    found = []
    for route in _app_routes():
        for method in sorted(route.methods):
            if route.path.startswith("/v1/tenants/{tenant_id}"):
                found.append((method, route.path))
    return found


def _app_routes() -> list[APIRoute]:
    from palimpsest.ingest.api import v1_repositories, v1_tenants

    return [r for r in [*v1_tenants.router.routes, *v1_repositories.router.routes] if isinstance(r, APIRoute)]


async def _victim_ids(client: httpx.AsyncClient, served: Served, victim: World) -> dict[str, str]:
    await deliver(client, "github", "push_default_branch", "push", delivery="victim")
    tokens = (await client.get(victim.path("/tokens"), headers=victim.auth)).json()["items"]
    async with tenant_tx(served.ctx.pool, victim.tenant_id) as conn:
        delivery = await fetch_one(conn, "SELECT id FROM deliveries LIMIT 1")
    assert delivery is not None
    return {
        "tenant_id": str(victim.tenant_id),
        "installation_id": victim.installations["github"]["installation_id"],
        "repository_id": victim.repos["github"]["repository_id"],
        "token_id": tokens[0]["token_id"],
        "delivery_pk": str(delivery["id"]),
    }


def _fill(path: str, ids: dict[str, str]) -> str:
    return re.sub(r"\{(\w+)\}", lambda m: ids[m.group(1)], path)


async def _snapshot(client: httpx.AsyncClient, victim: World) -> list[str]:
    return [
        (await client.get(victim.path(suffix), headers=victim.auth)).text
        for suffix in ("", "/tokens", "/installations", "/repositories", "/deliveries")
    ]


async def test_tenant_a_cannot_see_or_change_anything_of_tenant_b(
    client: httpx.AsyncClient, served: Served
) -> None:
    routes = _tenant_routes()
    assert len(routes) >= 15, routes
    victim = await populate(client, await new_tenant(client, "victim"))
    attacker = await new_tenant(client, "attacker")
    try:
        ids = await _victim_ids(client, served, victim)
        before = await _snapshot(client, victim)
        own = {**ids, "tenant_id": str(attacker.tenant_id)}
        for method, template in routes:
            body = SAMPLE_BODIES.get((method, template))
            # B's tenant in the path: A's token does not get in
            res = await client.request(method, _fill(template, ids), json=body, headers=attacker.auth)
            assert res.status_code == 404, (method, template, res.status_code, res.text)
            # A's own tenant in the path, B's resource ids: row-level security hides them
            if "{" in template.removeprefix("/v1/tenants/{tenant_id}"):
                res = await client.request(method, _fill(template, own), json=body, headers=attacker.auth)
                assert res.status_code == 404, (method, template, "own tenant", res.status_code, res.text)
        assert await _snapshot(client, victim) == before
        # and B's resources never show up in A's listings
        for suffix in ("/installations", "/repositories", "/deliveries", "/tokens"):
            listed = (await client.get(attacker.path(suffix), headers=attacker.auth)).json()["items"]
            assert all(str(victim.tenant_id) not in str(item) for item in listed)
            assert not any(
                i in str(listed) for i in (ids["installation_id"], ids["repository_id"], ids["delivery_pk"])
            )
    finally:
        await drop_tenant(served.ctx.pool, victim.tenant_id)
        await drop_tenant(served.ctx.pool, attacker.tenant_id)
