"""Operating Palimpsest for an organisation: token lifecycle, the audit log, the operator's tenant
list/show/suspend/resume, and index mode ``off`` deleting a repository's index data."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from pathlib import Path
from uuid import UUID

import httpx

from palimpsest.cli.local import register_path
from palimpsest.core.db import fetch_all, tenant_tx
from palimpsest.core.service import Infra
from palimpsest.ingest.admin import audit
from tests.integration.analyzer.support import index, indexer_definitions, running
from tests.integration.ingest.support import Served, admin, bearer, drop_tenant, new_tenant, world_of
from tests.support.gitrepo import commit, init_repo


async def test_a_token_lives_expires_rotates_and_is_revoked(
    client: httpx.AsyncClient, served: Served
) -> None:
    async with world_of(client, served.ctx.pool, repos=False) as world:
        soon = (datetime.now(UTC) + timedelta(days=2)).isoformat()
        res = await client.post(
            world.path("/tokens"),
            json={"name": "ci", "scopes": ["review", "read"], "expires_at": soon},
            headers=world.auth,
        )
        assert res.status_code == 201, res.text
        issued = res.json()
        token, token_id = issued["api_token"], issued["token_id"]
        assert issued["scopes"] == ["read", "review"] and issued["expires_at"] is not None
        listed = (await client.get(world.path("/tokens"), headers=world.auth)).json()["items"]
        mine = next(t for t in listed if t["token_id"] == token_id)
        assert mine["last_used_at"] is None and "api_token" not in mine and token not in str(listed)
        # use records the time; it shows in the list
        assert (await client.get(world.path("/repositories"), headers=bearer(token))).status_code == 200
        listed = (await client.get(world.path("/tokens"), headers=world.auth)).json()["items"]
        assert next(t for t in listed if t["token_id"] == token_id)["last_used_at"] is not None
        # manage is not among its scopes
        res = await client.get(world.path("/tokens"), headers=bearer(token))
        assert res.status_code == 403 and "'manage'" in res.text
        # rotation: same id, name and scopes, a new secret; the old one is refused at once
        res = await client.post(world.path(f"/tokens/{token_id}/rotate"), headers=world.auth)
        assert res.status_code == 200, res.text
        rotated = res.json()
        assert rotated["token_id"] == token_id and rotated["scopes"] == ["read", "review"]
        assert rotated["api_token"] != token and rotated["rotated_at"] is not None
        assert (await client.get(world.path("/repositories"), headers=bearer(token))).status_code == 401
        assert (
            await client.get(world.path("/repositories"), headers=bearer(rotated["api_token"]))
        ).status_code == 200
        # revocation: refused, gone from the list, listed with include_revoked; twice is fine
        for _ in range(2):
            res = await client.delete(world.path(f"/tokens/{token_id}"), headers=world.auth)
            assert res.status_code == 204, res.text
        res = await client.get(world.path("/repositories"), headers=bearer(rotated["api_token"]))
        assert res.status_code == 401
        listed = (await client.get(world.path("/tokens"), headers=world.auth)).json()["items"]
        assert token_id not in {t["token_id"] for t in listed}
        listed = (
            await client.get(world.path("/tokens"), params={"include_revoked": "true"}, headers=world.auth)
        ).json()["items"]
        assert next(t for t in listed if t["token_id"] == token_id)["revoked_at"] is not None
        assert (
            await client.post(world.path(f"/tokens/{token_id}/rotate"), headers=world.auth)
        ).status_code == 409
        # expiry: a token past its time is refused with that reason
        res = await client.post(
            world.path("/tokens"), json={"name": "short", "expires_in_days": 0.00001}, headers=world.auth
        )
        assert res.status_code == 201, res.text
        short = res.json()["api_token"]
        served.ctx.tokens.clear()
        deadline = datetime.fromisoformat(res.json()["expires_at"])
        await asyncio.sleep((deadline - datetime.now(UTC)).total_seconds() + 0.05)
        res = await client.get(world.path("/repositories"), headers=bearer(short))
        assert res.status_code == 401 and "expired" in res.text
        # bad requests: an unknown scope, both expiries
        past = (datetime.now(UTC) - timedelta(minutes=1)).isoformat()
        bad = [
            {"scopes": ["admin"]},
            {"scopes": []},
            {"expires_at": soon, "expires_in_days": 1},
            {"expires_at": past},
            {"expires_at": "2030-01-01T00:00:00"},
        ]
        for body in bad:
            res = await client.post(world.path("/tokens"), json=body, headers=world.auth)
            assert res.status_code in (400, 422), (body, res.text)


async def test_admin_actions_are_in_the_audit_log(client: httpx.AsyncClient, served: Served) -> None:
    async with world_of(client, served.ctx.pool, repos=False) as world:
        res = await client.post(world.path("/tokens"), json={"name": "reader"}, headers=world.auth)
        reader = res.json()
        assert (
            await client.delete(
                world.path(f"/tokens/{reader['token_id']}"), headers=bearer(reader["api_token"])
            )
        ).status_code == 403
        assert (
            await client.delete(world.path(f"/tokens/{reader['token_id']}"), headers=world.auth)
        ).status_code == 204
        assert (
            await client.delete(world.path(f"/tokens/{UUID(int=7)}"), headers=world.auth)
        ).status_code == 404
        res = await client.get(world.path("/audit"), headers=world.auth)
        assert res.status_code == 200, res.text
        entries = res.json()["items"]
        seen = [(e["action"], e["outcome"], e["http_status"], e["token_name"], e["actor"]) for e in entries]
        assert ("revoke_token", "ok", 204, "initial", "token") in seen
        assert ("revoke_token", "denied", 403, "reader", "token") in seen
        assert ("revoke_token", "failed", 404, "initial", "token") in seen
        assert ("issue_token", "ok", 201, "initial", "token") in seen
        assert ("create_tenant", "ok", 201, None, "operator") in seen
        revoked = next(e for e in entries if e["action"] == "revoke_token" and e["outcome"] == "ok")
        assert revoked["target"] == {"token_id": reader["token_id"]}
        assert (
            revoked["route"] == "/v1/tenants/{tenant_id}/tokens/{token_id}" and revoked["method"] == "DELETE"
        )
        assert all("api_token" not in str(e) and reader["api_token"] not in str(e) for e in entries)
        # reads are not audited; filters work; the log is manage-only
        assert not any(e["action"] in ("list_tokens", "list_audit") for e in entries)
        only = (
            await client.get(world.path("/audit"), params={"outcome": "denied"}, headers=world.auth)
        ).json()
        assert {e["outcome"] for e in only["items"]} == {"denied"}
        # retention: entries older than the period go, newer ones stay
        async with tenant_tx(served.ctx.pool, world.tenant_id) as conn:
            await conn.execute(
                "UPDATE audit_log SET at = now() - interval '40 days' WHERE action = 'issue_token'"
            )
        assert await audit.prune_once(served.ctx.pool, 30.0) >= 1
        async with tenant_tx(served.ctx.pool, world.tenant_id) as conn:
            left = await fetch_all(conn, "SELECT action FROM audit_log")
        assert "issue_token" not in {r["action"] for r in left} and "revoke_token" in {
            r["action"] for r in left
        }


async def test_the_operator_lists_shows_suspends_and_resumes_tenants(
    client: httpx.AsyncClient, served: Served
) -> None:
    world = await new_tenant(client, "listed")
    try:
        listed = (await client.get("/v1/tenants", headers=admin())).json()["items"]
        found = next(t for t in listed if t["tenant_id"] == str(world.tenant_id))
        assert found["name"].startswith("listed-") and found["state"] == "active"
        assert (await client.get("/v1/tenants", headers=world.auth)).status_code == 403
        shown = (await client.get(world.path(), headers=world.auth)).json()
        assert shown["repositories"] == 0 and shown["index_bytes"] == 0 and shown["state"] == "active"
        assert shown["last_activity_at"] is not None  # the token's own use
        res = await client.post(f"/v1/tenants/{world.tenant_id}/suspend", headers=admin())
        assert res.status_code == 200 and res.json()["state"] == "suspended", res.text
        assert (
            await client.post(f"/v1/tenants/{world.tenant_id}/suspend", headers=world.auth)
        ).status_code == 403
        assert (await client.get(world.path(), headers=world.auth)).json()["state"] == "suspended"
        res = await client.post(f"/v1/tenants/{world.tenant_id}/resume", headers=admin())
        assert res.status_code == 200 and res.json()["state"] == "active"
        assert (await client.post(f"/v1/tenants/{UUID(int=5)}/suspend", headers=admin())).status_code == 404
    finally:
        await drop_tenant(served.ctx.pool, world.tenant_id)


async def test_index_mode_off_deletes_the_index_data(
    client: httpx.AsyncClient, served: Served, infra: Infra, tmp_path: Path
) -> None:
    repo = init_repo(tmp_path / "repo")
    commit(
        repo, "2024-01-01", {"src/a.py": "def a():\n    return 1\n", "src/b.py": "def b():\n    return 2\n"}
    )
    world = await new_tenant(client, "modes")
    try:
        repo_id = await register_path(infra.pool, world.tenant_id, repo)
        async with running(infra, indexer_definitions({world.tenant_id})):
            await index(infra, world.tenant_id, repo_id)
        tables = (
            "code_index_snapshots",
            "code_index_files",
            "code_blobs",
            "code_chunks",
            "file_recency",
            "recency_scans",
        )

        async def counts() -> dict[str, int]:
            async with tenant_tx(infra.pool, world.tenant_id) as conn:
                return {t: len(await fetch_all(conn, f"SELECT 1 FROM {t}")) for t in tables}

        counts_before = await counts()
        assert all(counts_before.values()), counts_before
        shown = (await client.get(world.path(), headers=world.auth)).json()
        assert shown["repositories"] == 1 and shown["index_bytes"] > 0
        res = await client.patch(
            world.path(f"/repositories/{repo_id}"), json={"index_mode": "off"}, headers=world.auth
        )
        assert res.status_code == 200, res.text
        assert await counts() == dict.fromkeys(tables, 0)
        assert (await client.get(world.path(), headers=world.auth)).json()["index_bytes"] == 0
    finally:
        await drop_tenant(served.ctx.pool, world.tenant_id)


async def test_operator_routes_answer_a_malformed_tenant_id_with_a_validation_error(
    client: httpx.AsyncClient, served: Served
) -> None:
    for method, path in (("POST", "/v1/tenants/not-a-uuid/suspend"), ("DELETE", "/v1/tenants/not-a-uuid")):
        res = await client.request(method, path, headers=admin())
        assert res.status_code == 422, res.text
