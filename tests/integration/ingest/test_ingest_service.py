"""The service's bootstrap (keys, socket, URL), its settings, and delivery retention."""

from __future__ import annotations

import asyncio
import socket
import stat
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest

from palimpsest.core.db import fetch_one, tenant_tx
from palimpsest.core.errors import SettingsError
from palimpsest.core.service import Infra, ServiceDefinition
from palimpsest.core.settings import load
from palimpsest.ingest.retention import prune_once
from palimpsest.ingest.service import Settings, bootstrap, prepare
from tests.integration.ingest.support import ingest_settings
from tests.support.servers import ServerSet


def _infra(infra: Infra, settings: Settings, *, standalone: bool) -> Infra:
    return Infra(settings, infra.database_url, infra.nats_url, infra.pool, infra.nc, standalone=standalone)


async def _serve_briefly(definition: ServiceDefinition, infra: Infra) -> int:
    stop = asyncio.Event()
    task = asyncio.create_task(definition.background[0](infra, stop))
    try:
        check = definition.ready_checks["ingest_http"]
        while not await check():
            assert not task.done(), task
            await asyncio.sleep(0.02)
        async with httpx.AsyncClient(base_url=str(infra.ingest_url)) as client:
            return (await client.get("/openapi.json")).status_code
    finally:
        stop.set()
        await task


async def test_embedded_bootstrap_generates_keys_and_serves(
    infra: Infra, stack: ServerSet, tmp_path: Path
) -> None:
    settings = ingest_settings(stack, home=tmp_path, encryption_key=None, admin_token=None)
    embedded = _infra(infra, settings, standalone=False)
    definition = bootstrap(embedded)
    assert definition.name == "ingest" and definition.consumer is None
    for name in ("encryption.key", "admin-token"):
        mode = stat.S_IMODE((tmp_path / name).stat().st_mode)
        assert mode == 0o600, (name, oct(mode))
    assert str(embedded.ingest_url).startswith("http://127.0.0.1:")
    assert await _serve_briefly(definition, embedded) == 200
    # a second start reuses the generated key (what was sealed stays readable)
    first = (tmp_path / "encryption.key").read_text()
    again = _infra(infra, settings, standalone=False)
    prepare(again).server.close()
    assert (tmp_path / "encryption.key").read_text() == first


async def test_standalone_service_requires_an_encryption_key(
    infra: Infra, stack: ServerSet, tmp_path: Path
) -> None:
    settings = ingest_settings(stack, home=tmp_path, encryption_key=None)
    with pytest.raises(SettingsError, match="PALIMPSEST_ENCRYPTION_KEY"):
        bootstrap(_infra(infra, settings, standalone=True))
    assert not (tmp_path / "encryption.key").exists()
    bad = ingest_settings(stack, home=tmp_path, encryption_key="not-a-fernet-key")
    with pytest.raises(SettingsError, match="not a Fernet key"):
        bootstrap(_infra(infra, bad, standalone=True))


async def test_busy_port_is_a_clear_startup_error(infra: Infra, stack: ServerSet, tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = int(taken.getsockname()[1])
        with pytest.raises(SettingsError, match="cannot listen"):
            bootstrap(_infra(infra, ingest_settings(stack, home=tmp_path, ingest_port=port), standalone=True))


def test_provider_hosts_setting_accepts_lists() -> None:
    assert load(Settings, provider_hosts="github.com, GHE.Corp.Example.").provider_hosts == (
        "github.com",
        "ghe.corp.example",
    )
    assert load(Settings, provider_hosts='["gitlab.com"]').provider_hosts == ("gitlab.com",)
    with pytest.raises(SettingsError, match="PALIMPSEST_PROVIDER_HOSTS"):
        load(Settings, provider_hosts="not a host!")


async def test_retention_deletes_old_deliveries_only(infra: Infra) -> None:
    tenant = uuid.uuid4()
    now = datetime(2026, 6, 1, tzinfo=UTC)
    async with tenant_tx(infra.pool, tenant) as conn:
        await conn.execute(
            "INSERT INTO tenants (tenant_id, name) VALUES (%s, %s)", (tenant, f"retention-{tenant}")
        )
        for age_days in (1, 29, 31, 400):
            await conn.execute(
                "INSERT INTO deliveries (tenant_id, id, provider, delivery_id, event, outcome, received_at)"
                " VALUES (%s, %s, 'github', %s, 'push', 'ignored', %s)",
                (tenant, uuid.uuid4(), f"d{age_days}", now - timedelta(days=age_days)),
            )
    deleted = await prune_once(infra.pool, 30, now=now)
    assert deleted >= 2
    async with tenant_tx(infra.pool, tenant) as conn:
        row = await fetch_one(
            conn, "SELECT array_agg(delivery_id ORDER BY delivery_id) AS ids FROM deliveries"
        )
        assert row is not None and row["ids"] == ["d1", "d29"]
        await conn.execute("DELETE FROM tenants WHERE tenant_id = %s", (tenant,))
