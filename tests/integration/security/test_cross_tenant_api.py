"""A token of tenant A does nothing on any route of tenant B — tried on every route the app has.

The routes come from the FastAPI app itself (see ``catalog.py``), so a route added later is tried
without editing this file; one whose path parameters cannot be filled fails the test. Every
method of every ``{tenant_id}`` route is called with A's token on B's path (403 or 404, and none
of B's rows changes), and every route that names a resource is called on A's own path with B's
resource ids (404: another tenant's resource looks exactly like a missing one).
"""

from __future__ import annotations

import httpx

from palimpsest.core.service import Infra
from tests.integration.ingest.support import Served, drop_tenant, new_tenant, world_of
from tests.integration.security.catalog import (
    Requests,
    call,
    response_text,
    tenant_endpoints,
    tenant_resources,
    tenant_state,
)
from tests.support.servers import ServerSet


async def test_a_token_of_one_tenant_acts_on_no_route_of_another(
    client: httpx.AsyncClient, served: Served, stack: ServerSet, infra: Infra
) -> None:
    routes = tenant_endpoints(served.ctx)
    requests = Requests(served.ctx)
    intruder = await new_tenant(client, "intruder")
    try:
        async with world_of(client, served.ctx.pool) as victim:
            ids = await tenant_resources(client, served.ctx, victim)
            before = tenant_state(stack.owner_url, victim.tenant_id)
            wrong: list[str] = []
            for endpoint in routes:
                res = await call(client, requests, endpoint, endpoint.fill(ids), intruder.token)
                if res.status_code not in (403, 404):
                    wrong.append(f"{endpoint.method} {endpoint.path} on B's path: {response_text(res)}")
            own_path = {**ids, "tenant_id": str(intruder.tenant_id)}
            named = [e for e in routes if len(e.resources) > 1]
            assert named, "no route names a resource"
            for endpoint in named:
                res = await call(client, requests, endpoint, endpoint.fill(own_path), intruder.token)
                if res.status_code != 404:
                    wrong.append(f"{endpoint.method} {endpoint.path} with B's ids: {response_text(res)}")
            assert wrong == []
            assert tenant_state(stack.owner_url, victim.tenant_id) == before
            # the refusals mean something: B's own token is accepted on B's GET routes, and the
            # ids are real (a seed or query may legitimately match nothing: a 404 with a reason)
            answers = []
            for endpoint in (e for e in routes if e.method == "GET"):
                res = await call(client, requests, endpoint, endpoint.fill(ids), victim.token)
                assert res.status_code not in (401, 403) and res.status_code < 500, response_text(res)
                answers.append(res.status_code)
            assert answers.count(200) >= 0.8 * len(answers), answers
    finally:
        await drop_tenant(served.ctx.pool, intruder.tenant_id)
