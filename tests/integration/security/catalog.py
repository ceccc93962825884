"""The /v1 route catalog of the ingest app, and real resources to fill every path parameter.

Route-level security tests iterate over the FastAPI app's routes instead of a hand-written list,
so a route added later is covered the day it is added. A path parameter this module cannot fill
fails the test loudly (add a factory to :func:`tenant_resources`): a route that cannot be tried
is a route that is not checked.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from uuid import UUID

import httpx
import psycopg
from fastapi.routing import APIRoute
from psycopg import sql
from starlette.routing import BaseRoute

from palimpsest.core.db import fetch_all, tenant_tx
from palimpsest.core.ids import uuid7
from palimpsest.ingest.api.app import SIGNED_PREFIX, create_api
from palimpsest.ingest.api.deps import declared_access
from palimpsest.ingest.context import IngestContext
from tests.integration.ingest.support import World, deliver
from tests.support.tenant_tables import tenant_tables

_PARAM = re.compile(r"{([^}:]+)(?::[^}]*)?}")
# /v1 routes that are not scoped to one tenant, on purpose; anything else without {tenant_id} fails
UNSCOPED_V1 = {("POST", "/v1/tenants"), ("GET", "/v1/tenants")}
# optional fields a body needs because of a rule the schema cannot express (by schema name)
BODY_EXTRAS: dict[str, dict[str, Any]] = {"ReviewCreate": {"head": "main"}}
# path parameters that name a fixed kind (a model route's feature), not a resource of some tenant
NAME_PARAMS = frozenset({"feature"})


@dataclass(frozen=True)
class Endpoint:
    method: str
    path: str

    @property
    def params(self) -> list[str]:
        return _PARAM.findall(self.path)

    @property
    def resources(self) -> list[str]:
        """The path parameters that are ids of a tenant's resources (the tenant's own included)."""
        return [p for p in self.params if p not in NAME_PARAMS]

    def fill(self, values: dict[str, str]) -> str:
        missing = [p for p in self.params if p not in values]
        if missing:
            raise AssertionError(
                f"{self.method} {self.path}: no test resource for path parameter(s) {missing}; "
                "add a factory to tests/integration/security/catalog.py:tenant_resources"
            )
        return _PARAM.sub(lambda m: values[m.group(1)], self.path)


def endpoints(ctx: IngestContext) -> list[Endpoint]:
    """Every (method, path) of the app's API routes, included routers walked (schema or not)."""
    found: list[Endpoint] = []
    _walk(create_api(ctx).routes, "", found)
    api_paths = set(create_api(ctx).openapi()["paths"])
    assert api_paths <= {e.path for e in found}, "the route walk missed documented paths"
    return found


def _walk(
    routes: Sequence[BaseRoute], prefix: str, found: list[Endpoint], access: dict[Endpoint, str] | None = None
) -> None:
    for route in routes:
        if isinstance(route, APIRoute):
            methods = sorted((route.methods or set()) - {"HEAD", "OPTIONS"})
            here = [Endpoint(m, prefix + route.path) for m in methods]
            found.extend(here)
            if access is not None:
                declared = declared_access(route)
                for endpoint in here:
                    access[endpoint] = ",".join(d.describe() for d in declared) or "undeclared"
        elif (included := getattr(route, "original_router", None)) is not None:
            context = getattr(route, "include_context", None)
            _walk(included.routes, prefix + str(getattr(context, "prefix", "")), found, access)


def route_access(ctx: IngestContext) -> dict[Endpoint, str]:
    """What each bearer-authenticated route declares: 'read', 'review', 'manage' or 'operator'."""
    found: list[Endpoint] = []
    access: dict[Endpoint, str] = {}
    _walk(create_api(ctx).routes, "", found, access)
    return {e: a for e, a in access.items() if not e.path.startswith(SIGNED_PREFIX)}


def tenant_endpoints(ctx: IngestContext) -> list[Endpoint]:
    """The routes that act on one tenant; fails when a /v1 route is neither scoped nor exempt."""
    every = endpoints(ctx)
    scoped = [e for e in every if "{tenant_id}" in e.path]
    stray = [
        e
        for e in every
        if e.path.startswith("/v1/") and e not in scoped and (e.method, e.path) not in UNSCOPED_V1
    ]
    assert stray == [], f"/v1 routes without a {{tenant_id}} scope: {stray}"
    assert len(scoped) >= 10, "the catalog found too few tenant routes"
    return scoped


class Requests:
    """Valid-looking query strings and bodies for each endpoint, from the app's OpenAPI document.

    Only required query parameters and required body fields are filled (with plain sample values):
    enough for a request to pass validation and reach the authorization and lookup under test.
    """

    def __init__(self, ctx: IngestContext) -> None:
        self.doc: dict[str, Any] = create_api(ctx).openapi()

    def args(self, endpoint: Endpoint) -> dict[str, Any]:
        operation = self.doc["paths"].get(endpoint.path, {}).get(endpoint.method.lower(), {})
        query = {
            p["name"]: self._sample(p.get("schema", {}))
            for p in operation.get("parameters", [])
            if p.get("in") == "query" and p.get("required")
        }
        body = operation.get("requestBody")
        args: dict[str, Any] = {"params": query}
        if body is not None:
            schema = body.get("content", {}).get("application/json", {}).get("schema", {})
            args["json"] = self._sample(schema)
        elif endpoint.method in ("POST", "PUT", "PATCH"):
            args["json"] = {}
        return args

    def _sample(self, schema: dict[str, Any]) -> Any:
        if "$ref" in schema:
            sample = self._sample(self._resolve(schema["$ref"]))
            return {**sample, **BODY_EXTRAS.get(schema["$ref"].rsplit("/", 1)[-1], {})}
        for key in ("anyOf", "oneOf", "allOf"):
            if key in schema:
                options = [o for o in schema[key] if o.get("type") != "null"]
                return self._sample(options[0]) if options else None
        if "enum" in schema:
            return schema["enum"][0]
        if "default" in schema:
            return schema["default"]
        kind = schema.get("type")
        if kind == "object" or "properties" in schema:
            props = schema.get("properties", {})
            return {name: self._sample(props.get(name, {})) for name in schema.get("required", [])}
        if kind == "array":
            count = int(schema.get("minItems", 0))
            return [self._sample(schema.get("items", {})) for _ in range(count)]
        if kind == "integer":
            return max(1, int(schema.get("minimum", 1)))
        if kind == "number":
            return 1.0
        if kind == "boolean":
            return False
        if schema.get("format") == "uuid":
            return str(uuid7())
        return "main"

    def _resolve(self, ref: str) -> dict[str, Any]:
        node: Any = self.doc
        for part in ref.removeprefix("#/").split("/"):
            node = node[part]
        return dict(node)


async def call(
    client: httpx.AsyncClient, requests: Requests, endpoint: Endpoint, path: str, token: str
) -> httpx.Response:
    return await client.request(
        endpoint.method, path, headers={"Authorization": f"Bearer {token}"}, **requests.args(endpoint)
    )


async def tenant_resources(client: httpx.AsyncClient, ctx: IngestContext, world: World) -> dict[str, str]:
    """Real ids of one resource of every kind a /v1 path can name, for ``world``'s tenant."""
    tenant = world.tenant_id
    values: dict[str, str] = {"tenant_id": str(tenant)}
    values["installation_id"] = str(world.installations["github"]["installation_id"])
    repository_id = UUID(str(world.repos["github"]["repository_id"]))
    values["repository_id"] = str(repository_id)
    other = UUID(str(world.repos["gitlab"]["repository_id"]))
    link = {"role": "linked", "source_repository_id": str(repository_id), "target_repository_id": str(other)}
    res = await client.post(world.path("/links"), json=link, headers=world.auth)
    assert res.status_code == 201, res.text
    values["link_id"] = str(res.json()["link_id"])
    res = await client.get(world.path("/tokens"), headers=world.auth)
    assert res.status_code == 200, res.text
    values["token_id"] = str(res.json()["items"][0]["token_id"])
    values["feature"] = "review"  # a model route: /model-routes/{feature}
    res = await deliver(client, "github", "push_default_branch", "push", delivery=f"cat-{uuid7().hex}")
    assert res.status_code == 202, res.text
    async with tenant_tx(ctx.pool, tenant) as conn:
        rows = await fetch_all(conn, "SELECT id FROM deliveries ORDER BY id DESC LIMIT 1")
        values["delivery_pk"] = str(rows[0]["id"])
        snapshot, analysis, review = uuid7(), uuid7(), uuid7()
        await conn.execute(
            "INSERT INTO code_index_snapshots (tenant_id, repository_id, snapshot_id, commit_sha, state)"
            " VALUES (%s, %s, %s, %s, 'ready')",
            (tenant, repository_id, snapshot, "a" * 40),
        )
        await conn.execute(
            "INSERT INTO analyses (tenant_id, analysis_id, repository_id, snapshot_id) VALUES (%s, %s, %s, %s)",
            (tenant, analysis, repository_id, snapshot),
        )
        await conn.execute(
            "INSERT INTO reviews (tenant_id, review_id, repository_id) VALUES (%s, %s, %s)",
            (tenant, review, repository_id),
        )
    values.update(snapshot_id=str(snapshot), analysis_id=str(analysis), review_id=str(review))
    return values


def tenant_rows(owner_url: str, tenant: UUID, *, infrastructure: bool = True) -> dict[str, list[str]]:
    """Every row the tenant owns, as text, per table with a tenant_id column (read as the owner;
    a partitioned table's rows through its parent).

    ``infrastructure=False`` shows rows of infrastructure tables (the outbox, whose rows the relay
    marks published) as empty strings: counted, not compared.
    """
    found: dict[str, list[str]] = {}
    with psycopg.connect(owner_url) as conn:
        tables = [(t["table"], t["infra"]) for t in tenant_tables(conn)]
        for table, infra in tables:
            shown = sql.SQL("''") if infra and not infrastructure else sql.SQL("t::text")
            rows = conn.execute(
                sql.SQL("SELECT {} FROM {} t WHERE tenant_id = %s").format(shown, sql.Identifier(table)),
                (tenant,),
            ).fetchall()
            found[table] = sorted(r[0] for r in rows)
    return found


def tenant_state(owner_url: str, tenant: UUID) -> dict[str, str]:
    """A digest of the tenant's rows per table, to prove that nothing changed."""
    return {
        table: f"{len(rows)}:{hashlib.sha256(chr(10).join(rows).encode()).hexdigest()[:16]}"
        for table, rows in tenant_rows(owner_url, tenant, infrastructure=False).items()
    }


def response_text(res: httpx.Response) -> str:
    return f"{res.status_code} {dict(res.headers)} {res.text}"


def as_json(res: httpx.Response) -> Any:
    return res.json() if res.headers.get("content-type", "").startswith("application/json") else None
