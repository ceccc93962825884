"""Helpers for the ingest tests: a served app, a tenant "world" with installations, signed deliveries.

The world mirrors the webhook fixtures: the GitHub App installation 52817364 (and the App 914203
for its ping), the GitLab project 4821 on gitlab.northwind.example, the Bitbucket workspace
{a7e41c08-…} — each with the fixtures' secret — and the three repositories the fixtures are about.
Route keys are unique across tenants, so a world is removed (tenant and all) after each test.
"""

from __future__ import annotations

import base64
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

import httpx
from nats.aio.client import Client as NATS
from nats.js import api

from palimpsest.core.bus import STREAM
from palimpsest.core.db import Pool, fetch_all, system_tx, tenant_tx
from palimpsest.core.relay import Relay
from palimpsest.core.service import Infra
from palimpsest.ingest.context import IngestContext
from palimpsest.ingest.errors import SourceRefused
from palimpsest.ingest.settings import Settings
from tests.conftest import settings_for
from tests.support.servers import ServerSet
from tests.support.tenants import unique_name
from tests.unit.ingest.webhook_support import BOT, SECRET, TOKEN, encode, headers_for, load

ADMIN_TOKEN = "paladm_integration-test-admin-token"
ENCRYPTION_KEY = base64.urlsafe_b64encode(b"palimpsest-ingest-test-key-32byt").decode()
GITLAB_HOST = "gitlab.northwind.example"
PROVIDER_HOSTS = ("github.com", "gitlab.com", "bitbucket.org", GITLAB_HOST, "internal.northwind.example")
WORKSPACE = "{a7e41c08-92d3-4f6b-b15e-0c8d3a9f6e21}"
RESOLVES: dict[str, list[str]] = {
    GITLAB_HOST: ["93.184.216.34"],
    "internal.northwind.example": ["10.20.30.40"],
}

LEDGER = "https://github.com/northwind-labs/ledger-service.git"
INVOICES = f"https://{GITLAB_HOST}/platform/billing/invoice-engine.git"
ROUTES = "https://bitbucket.org/kestrel-freight/route-planner.git"


async def fake_resolver(host: str) -> list[str]:
    """DNS for the tests: nothing leaves the machine."""
    if host in RESOLVES:
        return RESOLVES[host]
    raise SourceRefused(f"cannot resolve host '{host}'")


def admin() -> dict[str, str]:
    return {"Authorization": f"Bearer {ADMIN_TOKEN}"}


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


@dataclass
class World:
    tenant_id: UUID
    token: str
    installations: dict[str, dict[str, Any]] = field(default_factory=dict)
    repos: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def auth(self) -> dict[str, str]:
        return bearer(self.token)

    def path(self, suffix: str = "") -> str:
        return f"/v1/tenants/{self.tenant_id}{suffix}"


async def new_tenant(client: httpx.AsyncClient, name: str = "northwind") -> World:
    """A tenant named ``<name>-<8 hex>``: names are unique and the session shares one database."""
    res = await client.post("/v1/tenants", json={"name": unique_name(name)}, headers=admin())
    assert res.status_code == 201, res.text
    body = res.json()
    return World(UUID(body["tenant_id"]), body["api_token"])


INSTALLATIONS: dict[str, dict[str, Any]] = {
    "github": {"provider": "github", "external_id": "52817364", "webhook_secret": SECRET.decode()},
    "github-app": {
        "provider": "github",
        "kind": "app",
        "external_id": "914203",
        "webhook_secret": SECRET.decode(),
    },
    "gitlab": {"provider": "gitlab", "external_id": "4821", "host": GITLAB_HOST, "webhook_secret": TOKEN},
    "bitbucket": {"provider": "bitbucket", "external_id": WORKSPACE, "webhook_secret": SECRET.decode()},
}
REPOS: dict[str, tuple[str, str]] = {
    "github": ("github", LEDGER),
    "gitlab": ("gitlab", INVOICES),
    "bitbucket": ("bitbucket", ROUTES),
}


async def populate(client: httpx.AsyncClient, world: World, *, repos: bool = True) -> World:
    for name, spec in INSTALLATIONS.items():
        res = await client.post(world.path("/installations"), json=spec, headers=world.auth)
        assert res.status_code == 201, res.text
        world.installations[name] = res.json()
    if repos:
        for name, (installation, url) in REPOS.items():
            body = {"url": url, "installation_id": world.installations[installation]["installation_id"]}
            res = await client.post(world.path("/repositories"), json=body, headers=world.auth)
            assert res.status_code == 201, res.text
            world.repos[name] = res.json()
    return world


async def drop_tenant(pool: Pool, tenant_id: UUID) -> None:
    async with tenant_tx(pool, tenant_id) as conn:
        await conn.execute("DELETE FROM tenants WHERE tenant_id = %s", (tenant_id,))


@asynccontextmanager
async def world_of(client: httpx.AsyncClient, pool: Pool, *, repos: bool = True) -> AsyncIterator[World]:
    world = await new_tenant(client)
    try:
        yield await populate(client, world, repos=repos)
    finally:
        await drop_tenant(pool, world.tenant_id)


def signed(
    provider: str, name: str, event: str, *, delivery: str, payload: dict[str, Any] | None = None
) -> tuple[bytes, dict[str, str]]:
    body = encode(payload if payload is not None else load(provider, name))
    return body, headers_for(provider, event, body, delivery=delivery)


async def deliver(
    client: httpx.AsyncClient,
    provider: str,
    name: str,
    event: str,
    *,
    delivery: str,
    payload: dict[str, Any] | None = None,
) -> httpx.Response:
    body, headers = signed(provider, name, event, delivery=delivery, payload=payload)
    return await client.post(f"/webhooks/{provider}", content=body, headers=headers)


async def outbox_ids(pool: Pool, tenant_id: UUID) -> list[UUID]:
    async with system_tx(pool) as conn:
        rows = await fetch_all(conn, "SELECT id FROM outbox WHERE tenant_id = %s ORDER BY id", (tenant_id,))
    return [r["id"] for r in rows]


async def deliveries_of(pool: Pool, tenant_id: UUID) -> list[dict[str, Any]]:
    async with tenant_tx(pool, tenant_id) as conn:
        rows = await fetch_all(conn, "SELECT * FROM deliveries ORDER BY id")
    return [dict(r) for r in rows]


async def stream_events(nc: NATS, pool: Pool, listen_url: str, tenant_id: UUID) -> list[dict[str, Any]]:
    """Publish what the outbox holds, then read the tenant's events back from the stream."""
    await Relay(pool, nc, listen_url=listen_url).drain()
    js = nc.jetstream()
    last = (await js.stream_info(STREAM)).state.last_seq
    found: list[dict[str, Any]] = []
    if not last:
        return found
    sub = await js.subscribe("pal.>", ordered_consumer=True, deliver_policy=api.DeliverPolicy.ALL)
    try:
        while True:
            msg = await sub.next_msg(timeout=10)
            data = json.loads(msg.data)
            if data.get("tenant_id") == str(tenant_id):
                found.append(data)
            if msg.metadata.sequence.stream >= last:
                return found
    finally:
        await sub.unsubscribe()


def ingest_settings(servers: ServerSet, **overrides: object) -> Settings:
    values: dict[str, object] = {
        **settings_for(servers).model_dump(),
        "encryption_key": ENCRYPTION_KEY,
        "admin_token": ADMIN_TOKEN,
        "provider_hosts": PROVIDER_HOSTS,
        "ingest_host": "127.0.0.1",
        "ingest_port": 0,
        "allow_local_sources": True,
        "bot_name": BOT,
    }
    values.update(overrides)
    return Settings(**values)  # type: ignore[arg-type]


@dataclass
class Served:
    ctx: IngestContext
    url: str
    infra: Infra
