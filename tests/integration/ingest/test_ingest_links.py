"""Admin links and organisation-wide pattern repositories: the API, and what the reviewer makes of
them beside ``.palimpsest/config.yml`` (same visibility rules, same limits, removed with either
repository)."""

from __future__ import annotations

from typing import Any
from uuid import UUID

import httpx

from palimpsest.core.db import tenant_tx
from palimpsest.index.context.crossrepo import LinkConfig, resolve_links
from tests.integration.ingest.support import Served, World, bearer, world_of


async def _repo(client: httpx.AsyncClient, world: World, name: str, visibility: str) -> str:
    body = {
        "url": f"https://github.com/northwind-labs/{name}.git",
        "visibility": visibility,
        "index_mode": "off",
    }
    res = await client.post(world.path("/repositories"), json=body, headers=world.auth)
    assert res.status_code == 201, res.text
    return str(res.json()["repository_id"])


async def _link(client: httpx.AsyncClient, world: World, **body: Any) -> httpx.Response:
    return await client.post(world.path("/links"), json=body, headers=world.auth)


async def _dropped(
    served: Served, world: World, repository_id: str, config: LinkConfig
) -> list[tuple[str, str]]:
    dropped: list[dict[str, Any]] = []
    async with tenant_tx(served.ctx.pool, world.tenant_id) as conn:
        links = await resolve_links(conn, UUID(repository_id), config, dropped)
    assert links == []  # nothing is indexed here: every allowed link ends as not_indexed
    return [(str(d["repository"]), str(d["reason"])) for d in dropped]


async def test_admin_links_join_the_config_links_under_the_same_rules(
    client: httpx.AsyncClient, served: Served
) -> None:
    async with world_of(client, served.ctx.pool, repos=False) as world:
        app = await _repo(client, world, "app", "public")
        protos = await _repo(client, world, "protos", "private")
        template = await _repo(client, world, "template", "public")
        sdks = [await _repo(client, world, f"sdk{i}", "public") for i in range(6)]
        # the API's rules
        assert (await _link(client, world, role="linked", target_repository_id=protos)).status_code == 400
        res = await _link(client, world, role="linked", source_repository_id=app, target_repository_id=app)
        assert res.status_code == 400
        res = await _link(
            client, world, role="linked", source_repository_id=app, target_repository_id=str(UUID(int=9))
        )
        assert res.status_code == 404
        res = await _link(client, world, role="linked", source_repository_id=app, target_repository_id=protos)
        assert res.status_code == 201, res.text
        assert (
            res.json()["source"] == "northwind-labs/app" and res.json()["target"] == "northwind-labs/protos"
        )
        again = await _link(
            client, world, role="linked", source_repository_id=app, target_repository_id=protos
        )
        assert again.status_code == 409
        res = await _link(client, world, role="pattern", target_repository_id=template)
        assert res.status_code == 201 and res.json()["source"] is None, res.text
        for sdk in sdks:
            assert (
                await _link(client, world, role="linked", source_repository_id=app, target_repository_id=sdk)
            ).status_code == 201
        # a read token may not see or change links
        reader = (
            await client.post(world.path("/tokens"), json={"scopes": ["read"]}, headers=world.auth)
        ).json()
        assert (
            await client.get(world.path("/links"), headers=bearer(reader["api_token"]))
        ).status_code == 403

        # the reviewer: the file's links first, then the admin ones; one limit for both (5 linked);
        # a public repository gets nothing from a private one; the org-wide pattern applies
        config = LinkConfig(state="ok", linked=["northwind-labs/sdk0"])
        dropped = await _dropped(served, world, app, config)
        assert ("northwind-labs/protos", "visibility") in dropped
        assert ("northwind-labs/sdk0", "not_indexed") in dropped
        assert ("northwind-labs/template", "not_indexed") in dropped
        assert [r for _, r in dropped].count("limit") == 2  # sdk0, protos, sdk1-3 counted; sdk4, sdk5 past 5
        assert sum(1 for n, _ in dropped if n == "northwind-labs/sdk0") == 1  # not twice
        # an invalid file still lets the admin links through
        dropped = await _dropped(
            served, world, app, LinkConfig(state="invalid", path=".palimpsest/config.yml")
        )
        assert ("None", "config_invalid") in dropped and ("northwind-labs/template", "not_indexed") in dropped
        # the pattern repository is not its own pattern
        assert ("northwind-labs/template", "self") not in await _dropped(
            served, world, template, LinkConfig()
        )

        # a link goes with either repository
        listed = (
            await client.get(world.path("/links"), params={"repository_id": app}, headers=world.auth)
        ).json()
        assert len(listed["items"]) == 8
        assert (
            await client.delete(world.path(f"/repositories/{protos}"), headers=world.auth)
        ).status_code == 204
        assert (
            await client.delete(world.path(f"/repositories/{template}"), headers=world.auth)
        ).status_code == 204
        listed = (await client.get(world.path("/links"), headers=world.auth)).json()["items"]
        assert {link["target"] for link in listed} == {f"northwind-labs/sdk{i}" for i in range(6)}
        link_id = listed[0]["link_id"]
        assert (await client.delete(world.path(f"/links/{link_id}"), headers=world.auth)).status_code == 204
        assert (await client.get(world.path(f"/links/{link_id}"), headers=world.auth)).status_code == 404


async def test_config_links_reach_only_the_same_installation_unless_an_admin_links_them(
    client: httpx.AsyncClient, served: Served
) -> None:
    """ADR D8: a repository's config reaches its own installation's repositories; another
    installation's (or one registered without any) is dropped as ``other_installation``, and an
    admin link lets it through."""
    async with world_of(client, served.ctx.pool, repos=False) as world:
        home = world.installations["github"]["installation_id"]
        other = world.installations["github-app"]["installation_id"]

        async def repo(name: str, installation: str | None) -> str:
            body: dict[str, Any] = {
                "url": f"https://github.com/northwind-labs/{name}.git",
                "index_mode": "off",
            }
            if installation is not None:
                body["installation_id"] = installation
            res = await client.post(world.path("/repositories"), json=body, headers=world.auth)
            assert res.status_code == 201, res.text
            return str(res.json()["repository_id"])

        app = await repo("app", home)
        await repo("protos", home)
        elsewhere = await repo("elsewhere", other)
        await repo("loose", None)
        names = ["northwind-labs/protos", "northwind-labs/elsewhere", "northwind-labs/loose"]
        config = LinkConfig(state="ok", linked=names, pattern=["northwind-labs/elsewhere"])
        assert sorted(await _dropped(served, world, app, config)) == [
            ("northwind-labs/elsewhere", "other_installation"),
            ("northwind-labs/elsewhere", "other_installation"),
            ("northwind-labs/loose", "other_installation"),
            ("northwind-labs/protos", "not_indexed"),  # same installation: allowed (and not indexed)
        ]
        res = await _link(
            client, world, role="linked", source_repository_id=app, target_repository_id=elsewhere
        )
        assert res.status_code == 201, res.text
        assert sorted(await _dropped(served, world, app, config)) == [
            ("northwind-labs/elsewhere", "not_indexed"),  # the admin link admits it as linked…
            ("northwind-labs/elsewhere", "other_installation"),  # …not as a pattern repository
            ("northwind-labs/loose", "other_installation"),
            ("northwind-labs/protos", "not_indexed"),
        ]
