"""Applying a delivery's intents: what only the database can say (a claim taken before, a clone
URL taken between load and apply) is reported by `apply`, and nothing after a lost claim runs."""

from __future__ import annotations

from uuid import UUID

import httpx

from palimpsest.core.db import fetch_all, tenant_tx
from palimpsest.core.ids import uuid7
from palimpsest.ingest.apply import apply
from palimpsest.ingest.context import Route
from palimpsest.ingest.decide import decide_repos
from palimpsest.ingest.intents import ClaimDelivery, FinishDelivery, SetSuspended
from palimpsest.ingest.load import Added
from palimpsest.ingest.sources import Source
from palimpsest.ingest.store.deliveries import DeliveryRow
from palimpsest.ingest.store.repositories import TAKEN
from palimpsest.ingest.webhooks import RepoRef

from .support import Served, world_of

URL = "https://github.com/northwind-labs/payments-gateway.git"


async def test_a_clone_url_taken_after_load_is_refused_by_apply(
    client: httpx.AsyncClient, served: Served
) -> None:
    async with world_of(client, served.ctx.pool, repos=False) as world:
        installation_id = UUID(world.installations["github"]["installation_id"])
        route = Route(world.tenant_id, installation_id, "")
        ref = RepoRef("github", "77001", "northwind-labs/payments-gateway", URL, "main", "private")
        # loaded while the URL was free ...
        reason, intents = decide_repos(
            route, "github", (Added(ref, None, Source(URL, "github", "github.com", ref.full_name)),), ()
        )
        # ... then registered under another name before the intents are applied
        body = {"url": URL, "full_name": "custom/name"}
        assert (
            await client.post(world.path("/repositories"), json=body, headers=world.auth)
        ).status_code == 201
        async with tenant_tx(served.ctx.pool, world.tenant_id) as conn:
            done = await apply(conn, intents)
        assert (done.registered, done.events) == ([], [])
        assert done.refused == [f"northwind-labs/payments-gateway: {TAKEN}"]
        assert reason.text(0, done.refused, 0) == (
            f"repositories: 0 added, 0 already registered, 0 removed; refused northwind-labs/payments-gateway: {TAKEN}"
        )


async def test_nothing_after_a_lost_claim_runs(client: httpx.AsyncClient, served: Served) -> None:
    async with world_of(client, served.ctx.pool, repos=False) as world:
        installation_id = UUID(world.installations["github"]["installation_id"])

        def claim() -> tuple[ClaimDelivery, SetSuspended, FinishDelivery]:
            row = DeliveryRow(
                uuid7(), "github", installation_id, "once", "installation", "suspend", "accepted", 202, None
            )
            return (
                ClaimDelivery(world.tenant_id, row),
                SetSuspended(installation_id, True, "provider"),
                FinishDelivery(row.id, "installation suspended"),
            )

        async with tenant_tx(served.ctx.pool, world.tenant_id) as conn:
            first = await apply(conn, claim())
        assert first.delivery is not None
        assert (first.delivery.outcome, first.delivery.reason) == ("accepted", "installation suspended")
        async with tenant_tx(served.ctx.pool, world.tenant_id) as conn:
            await conn.execute("UPDATE installations SET suspended_at = NULL, suspended_reason = NULL")
            second = await apply(conn, claim())
            suspended = await fetch_all(
                conn,
                "SELECT 1 AS x FROM installations WHERE installation_id = %s AND suspended_at IS NOT NULL",
                (installation_id,),
            )
        assert second.delivery is not None and second.delivery.outcome == "duplicate"
        assert suspended == []  # the suspension after the lost claim did not run
