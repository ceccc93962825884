"""Suspension: a suspended installation or tenant is neither indexed nor reviewed, its deliveries
are recorded as ignored with that reason, and its repositories are not linked context.

GitHub's ``installation`` suspend/unsuspend events and the API both suspend; the chunker and the
reviewer skip an event that reaches them for a suspended repository (one emitted before the
suspension, or by a local CLI flow).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from uuid import UUID

import httpx

from palimpsest.cli.local import register_path
from palimpsest.core.db import tenant_tx
from palimpsest.core.events import IndexRequested, ReviewCompleted, ReviewRequested, SnapshotBuilt
from palimpsest.core.llm import Gateway
from palimpsest.core.service import Infra
from palimpsest.index.context.crossrepo import LinkConfig, resolve_links
from palimpsest.reviewer.service import Settings as ReviewerSettings
from palimpsest.reviewer.service import definition as reviewer_definition
from tests.integration.analyzer.support import _scoped, indexer_definitions, running
from tests.integration.ingest.support import (
    Served,
    admin,
    deliver,
    deliveries_of,
    drop_tenant,
    new_tenant,
    world_of,
)
from tests.support.gitrepo import commit, init_repo
from tests.support.pipeline import request_and_wait
from tests.unit.ingest.webhook_support import load


def _installation_event(action: str) -> dict[str, Any]:
    payload: dict[str, Any] = load("github", "installation_created")
    payload["action"] = action
    payload.pop("repositories", None)
    return payload


async def _push(client: httpx.AsyncClient, n: int) -> httpx.Response:
    return await deliver(client, "github", "push_default_branch", "push", delivery=f"push-{n}-{UUID(int=n)}")


async def test_a_suspended_installation_is_neither_indexed_nor_reviewed(
    client: httpx.AsyncClient, served: Served
) -> None:
    async with world_of(client, served.ctx.pool) as world:
        installation = world.installations["github"]["installation_id"]
        repo_id = world.repos["github"]["repository_id"]
        res = await deliver(
            client,
            "github",
            "installation_created",
            "installation",
            delivery="s-1",
            payload=_installation_event("suspend"),
        )
        assert res.status_code == 202 and res.json()["outcome"] == "accepted", res.text
        found = (await client.get(world.path(f"/installations/{installation}"), headers=world.auth)).json()
        assert found["suspended_at"] is not None and found["suspended_reason"] == "provider"
        entries = (await client.get(world.path("/audit"), headers=world.auth)).json()["items"]
        assert ("installation_suspend", "provider", None, {"installation_id": installation}) in [
            (e["action"], e["actor"], e["token_id"], e["target"]) for e in entries
        ]
        # deliveries for it: recorded as ignored, with the reason, nothing emitted
        res = await _push(client, 1)
        assert res.status_code == 202 and res.json()["outcome"] == "ignored", res.text
        assert res.json()["reason"] == "installation suspended" and res.json()["events"] == []
        rows = await deliveries_of(served.ctx.pool, world.tenant_id)
        assert rows[-1]["outcome"] == "ignored" and rows[-1]["reason"] == "installation suspended"
        assert rows[-1]["repository_id"] == UUID(repo_id)
        # the API refuses work on its repositories
        for method, suffix, body in (
            ("POST", f"/repositories/{repo_id}/rebuild", None),
            ("POST", f"/repositories/{repo_id}/reviews", {"base": "main", "head": "feature"}),
        ):
            res = await client.request(method, world.path(suffix), json=body, headers=world.auth)
            assert res.status_code == 409 and "installation suspended" in res.text, res.text
        # unsuspended by the provider: pushes are accepted again
        res = await deliver(
            client,
            "github",
            "installation_created",
            "installation",
            delivery="s-2",
            payload=_installation_event("unsuspend"),
        )
        assert res.json()["outcome"] == "accepted", res.text
        res = await _push(client, 2)
        assert res.json()["outcome"] == "accepted" and len(res.json()["events"]) == 1, res.text
        # the API suspends too; resume lifts either
        res = await client.post(world.path(f"/installations/{installation}/suspend"), headers=world.auth)
        assert res.status_code == 200 and res.json()["suspended_reason"] == "api", res.text
        assert (await _push(client, 3)).json()["reason"] == "installation suspended"
        res = await client.post(world.path(f"/installations/{installation}/resume"), headers=world.auth)
        assert res.status_code == 200 and res.json()["suspended_at"] is None
        # a suspended tenant: the same, with the tenant's reason
        assert (
            await client.post(f"/v1/tenants/{world.tenant_id}/suspend", headers=admin())
        ).status_code == 200
        assert (await _push(client, 4)).json()["reason"] == "tenant suspended"
        assert (
            await client.post(f"/v1/tenants/{world.tenant_id}/resume", headers=admin())
        ).status_code == 200
        assert (await _push(client, 5)).json()["outcome"] == "accepted"


async def test_a_suspended_installations_repository_is_not_linked_context(
    client: httpx.AsyncClient, served: Served
) -> None:
    async with world_of(client, served.ctx.pool) as world:
        installation = world.installations["github"]["installation_id"]
        own = UUID(world.repos["gitlab"]["repository_id"])
        linked = world.repos["github"]["full_name"]
        config = LinkConfig(state="ok", linked=[linked])

        async def reasons() -> list[str]:
            dropped: list[dict[str, Any]] = []
            async with tenant_tx(served.ctx.pool, world.tenant_id) as conn:
                assert await resolve_links(conn, own, config, dropped) == []
            return [d["reason"] for d in dropped]

        # another installation's repository: an admin link lets the config's link through (D8)
        assert await reasons() == ["other_installation"]
        body = {
            "role": "linked",
            "source_repository_id": str(own),
            "target_repository_id": world.repos["github"]["repository_id"],
        }
        assert (await client.post(world.path("/links"), json=body, headers=world.auth)).status_code == 201
        assert await reasons() == ["not_indexed"]  # allowed, but has no snapshot
        res = await client.post(world.path(f"/installations/{installation}/suspend"), headers=world.auth)
        assert res.status_code == 200, res.text
        assert await reasons() == ["suspended"]


async def test_the_chunker_and_the_reviewer_skip_a_suspended_tenants_events(
    client: httpx.AsyncClient, served: Served, infra: Infra, tmp_path: Path
) -> None:
    repo = init_repo(tmp_path / "repo")
    base = commit(repo, "2024-01-01", {"a.py": "def a():\n    return 1\n"})
    head = commit(repo, "2024-01-02", {"a.py": "def a():\n    return 2\n"})
    world = await new_tenant(client, "paused")
    try:
        repo_id = await register_path(infra.pool, world.tenant_id, repo)
        assert (
            await client.post(f"/v1/tenants/{world.tenant_id}/suspend", headers=admin())
        ).status_code == 200
        async with running(infra, indexer_definitions({world.tenant_id})):
            event = IndexRequested(tenant_id=world.tenant_id, repository_id=repo_id, reason="rebuild")  # type: ignore[arg-type]
            found = await request_and_wait(infra, event, (SnapshotBuilt,))
        assert found[SnapshotBuilt].state == "skipped" and found[SnapshotBuilt].reason == "suspended"
        values: dict[str, Any] = {"allow_local_sources": True, "ack_wait_s": 5.0, "llm_model": None}
        settings = ReviewerSettings.model_construct(**{**ReviewerSettings().model_dump(), **values})
        gateway = Gateway(infra.pool, settings)
        try:
            reviewer = _scoped(
                reviewer_definition(infra, settings, gateway=gateway), {world.tenant_id}, "reviewer"
            )
            async with running(infra, [reviewer]):
                asked = ReviewRequested(
                    tenant_id=world.tenant_id,
                    repository_id=repo_id,
                    base_sha=base,
                    head_sha=head,
                    provider="local",
                )
                done = await request_and_wait(infra, asked, (ReviewCompleted,))
        finally:
            await gateway.aclose()
        assert done[ReviewCompleted].state == "skipped"
        assert done[ReviewCompleted].reason == "tenant suspended"
    finally:
        await drop_tenant(served.ctx.pool, world.tenant_id)
