"""Every route answers only the scope it declares — tried on every route with every scope, and
with an expired and a revoked token.

The routes and what each declares come from the app itself (``catalog.route_access``), so a
route added later is tried the day it is added, and one that declares no access stops the app
from being built at all. For each route: a token with each scope it does not declare gets a 403
(operator routes: every tenant token); an expired and a revoked token (holding every scope) get
a 401; then a token holding exactly the declared scope is let through (no 401/403, no 5xx).
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx

from palimpsest.core.db import fetch_all, tenant_tx
from palimpsest.ingest.admin.access import ApiScope
from tests.integration.ingest.support import Served, admin, world_of
from tests.integration.security.catalog import (
    Endpoint,
    Requests,
    call,
    response_text,
    route_access,
    tenant_resources,
)

SCOPES = [s.value for s in ApiScope]
# the access every kind of route is expected to declare (a new route gets the scope its group has)
EXPECTED_MINIMUM = {"read": 10, "review": 2, "manage": 10, "operator": 4}
_ORDER = {"GET": 0, "POST": 1, "PATCH": 1, "PUT": 1, "DELETE": 2}


async def _token(client: httpx.AsyncClient, path: str, auth: dict[str, str], **body: Any) -> dict[str, Any]:
    res = await client.post(path, json=body, headers=auth)
    assert res.status_code == 201, res.text
    found: dict[str, Any] = res.json()
    return found


async def test_every_route_answers_only_its_declared_scope(client: httpx.AsyncClient, served: Served) -> None:
    access = route_access(served.ctx)
    assert "undeclared" not in access.values(), access
    counts = {a: list(access.values()).count(a) for a in EXPECTED_MINIMUM}
    assert all(counts[a] >= n for a, n in EXPECTED_MINIMUM.items()), counts
    requests = Requests(served.ctx)
    async with world_of(client, served.ctx.pool) as world:
        ids = await tenant_resources(client, served.ctx, world)
        tokens_path = world.path("/tokens")
        scoped = {
            s: (await _token(client, tokens_path, world.auth, name=s, scopes=[s]))["api_token"]
            for s in SCOPES
        }
        soon = (datetime.now(UTC) + timedelta(seconds=1)).isoformat()
        old = await _token(client, tokens_path, world.auth, name="old", scopes=SCOPES, expires_at=soon)
        expired = old["api_token"]
        revoked = await _token(client, tokens_path, world.auth, name="gone", scopes=SCOPES)
        res = await client.delete(f"{tokens_path}/{revoked['token_id']}", headers=world.auth)
        assert res.status_code == 204, res.text
        # the {token_id} the routes act on is a spare one (rotating or revoking the caller's own
        # token would end the test's session)
        spare = await _token(client, tokens_path, world.auth, name="spare", scopes=["read"])
        ids["token_id"] = str(spare["token_id"])
        await asyncio.sleep(
            (datetime.fromisoformat(old["expires_at"]) - datetime.now(UTC)).total_seconds() + 0.05
        )

        wrong: list[str] = []
        for endpoint, needed in sorted(access.items(), key=lambda item: (item[0].path, item[0].method)):
            path = endpoint.fill(ids)
            for label, token in (("expired", expired), ("revoked", revoked["api_token"])):
                res = await call(client, requests, endpoint, path, token)
                if res.status_code != 401:
                    wrong.append(
                        f"{endpoint.method} {endpoint.path} with the {label} token: {response_text(res)}"
                    )
            for scope in SCOPES:
                if scope == needed:
                    continue
                res = await call(client, requests, endpoint, path, scoped[scope])
                named = needed == "operator" or f"'{needed}'" in res.text
                if res.status_code != 403 or not named:
                    wrong.append(
                        f"{endpoint.method} {endpoint.path} ({needed}) with '{scope}': {response_text(res)}"
                    )
        assert wrong == []

        # the declared scope is enough: reads first, then changes, deletions last
        allowed = sorted(
            (e for e, a in access.items() if a != "operator"), key=lambda e: (_ORDER[e.method], e.path)
        )
        for endpoint in allowed:
            res = await call(client, requests, endpoint, endpoint.fill(ids), scoped[access[endpoint]])
            if res.status_code in (401, 403) or res.status_code >= 500:
                wrong.append(
                    f"{endpoint.method} {endpoint.path} with '{access[endpoint]}': {response_text(res)}"
                )
        # the operator's GET routes answer the operator
        for endpoint in (e for e, a in access.items() if a == "operator" and e.method == "GET"):
            res = await client.get(endpoint.fill(ids), headers=admin())
            if res.status_code != 200:
                wrong.append(f"{endpoint.method} {endpoint.path} as the operator: {response_text(res)}")
        assert wrong == []

        # the refusals on manage routes are in the audit log, with the token that tried
        async with tenant_tx(served.ctx.pool, world.tenant_id) as conn:
            rows = await fetch_all(conn, "SELECT token_name, outcome, http_status FROM audit_log")
        denied = {(r["token_name"], r["http_status"]) for r in rows if r["outcome"] == "denied"}
        assert ("read", 403) in denied and ("review", 403) in denied
        assert any(r["outcome"] == "ok" and r["token_name"] == "manage" for r in rows)


async def test_the_catalog_names_a_scope_for_every_route_kind(served: Served) -> None:
    access = route_access(served.ctx)
    assert (
        access[Endpoint("POST", "/v1/tenants/{tenant_id}/repositories/{repository_id}/reviews")] == "review"
    )
    assert access[Endpoint("GET", "/v1/tenants/{tenant_id}/repositories/{repository_id}/search")] == "read"
    assert access[Endpoint("POST", "/v1/tenants/{tenant_id}/tokens")] == "manage"
    assert access[Endpoint("DELETE", "/v1/tenants/{tenant_id}")] == "operator"
