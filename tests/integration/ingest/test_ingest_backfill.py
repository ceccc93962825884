"""The maintenance backfill: which repositories it re-indexes and why, spread over slices, bounded
per tick, and each tick run once however many replicas try."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from pathlib import Path
from uuid import UUID

import httpx

from palimpsest.cli.local import register_path
from palimpsest.core.db import fetch_all, system_tx, tenant_tx
from palimpsest.core.git import resolve_ref
from palimpsest.core.ids import uuid7
from palimpsest.core.service import Infra
from palimpsest.ingest import backfill
from palimpsest.ingest.backfill import BackfillPolicy
from tests.integration.analyzer.support import index, indexer_definitions, running
from tests.integration.ingest.support import Served, admin, drop_tenant, new_tenant
from tests.support.gitrepo import commit, init_repo

POLICY = BackfillPolicy(interval_s=3600, slices=12, max_per_tick=50, grace_s=600, local_sources=True)


async def _head(path: str, branch: str) -> str | None:
    return await resolve_ref(Path(path), branch)


def _repo(root: Path, name: str) -> Path:
    path = init_repo(root / name)
    commit(path, "2024-01-01", {"a.py": "def a():\n    return 1\n"})
    return path


async def _requested(infra: Infra, tenant: UUID) -> dict[str, str]:
    """The tenant's index requests in the outbox: repository by outbox row (a repository can be
    requested more than once, so requests are told apart by their rows)."""
    async with system_tx(infra.pool) as conn:
        rows = await fetch_all(
            conn,
            "SELECT id::text AS id, payload->>'repository_id' AS repo FROM outbox"
            " WHERE tenant_id = %s AND type = 'index.requested'",
            (tenant,),
        )
    return {str(r["id"]): str(r["repo"]) for r in rows}


async def test_backfill_finds_what_a_missed_webhook_left_behind(
    client: httpx.AsyncClient, served: Served, infra: Infra, tmp_path: Path
) -> None:
    world = await new_tenant(client, "backfill")
    paused = await new_tenant(client, "backfill-paused")
    pool = infra.pool
    try:
        tenant = world.tenant_id
        ids: dict[str, UUID] = {}
        for name in ("missing", "behind", "failed", "permanent", "off", "fresh"):
            ids[name] = await register_path(
                pool, tenant, _repo(tmp_path, name), mode="off" if name == "off" else None
            )
        ids["suspended"] = await register_path(pool, paused.tenant_id, _repo(tmp_path, "suspended"))
        async with running(infra, indexer_definitions({tenant})):
            await index(infra, tenant, ids["behind"])
        commit(tmp_path / "behind", "2024-02-01", {"a.py": "def a():\n    return 2\n"})  # the missed push
        async with tenant_tx(pool, tenant) as conn:
            await conn.execute(
                "UPDATE repositories SET created_at = now() - interval '1 hour' WHERE repository_id <> %s",
                (ids["fresh"],),
            )
            for name, reason in (("failed", "source_network"), ("permanent", "source_not_found")):
                await conn.execute(
                    "INSERT INTO code_index_snapshots (tenant_id, repository_id, snapshot_id, commit_sha, state, reason)"
                    " VALUES (%s, %s, %s, %s, 'failed', %s)",
                    (tenant, ids[name], uuid7(), "b" * 40, reason),
                )
        async with tenant_tx(pool, paused.tenant_id) as conn:
            await conn.execute("UPDATE repositories SET created_at = now() - interval '1 hour'")
        assert (
            await client.post(f"/v1/tenants/{paused.tenant_id}/suspend", headers=admin())
        ).status_code == 200

        ours = {tenant, paused.tenant_id}
        found = await backfill.candidates(
            pool, POLICY, slice_no=None, limit=10_000, head_of=_head, tenants=ours
        )
        mine = {c.full_name: c for c in found}
        assert {n: (c.why, c.detail) for n, c in mine.items()} == {
            "missing": ("missing", None),
            "failed": ("failed", "source_network"),
            "behind": ("behind", mine["behind"].detail),
        }
        assert mine["behind"].detail is not None and " -> " in mine["behind"].detail
        # every repository in exactly one slice
        by_slice: dict[int, set[str]] = {}
        for k in range(POLICY.slices):
            for cand in await backfill.candidates(
                pool, POLICY, slice_no=k, limit=10_000, head_of=_head, tenants=ours
            ):
                assert cand.slice == k
                by_slice.setdefault(k, set()).add(cand.full_name)
        assert sorted(n for names in by_slice.values() for n in names) == sorted(mine)

        # one tick, three replicas at once: exactly one runs it, the slice's repositories requested once
        slice_no = mine["missing"].slice
        # a tick of that slice, far from any real one (the test's own claim row)
        tick_at = datetime.fromtimestamp((POLICY.slices * 9_000_000 + slice_no) * POLICY.slice_s, UTC)
        before = await _requested(infra, tenant)
        ran = await asyncio.gather(
            *(backfill.run_tick(pool, POLICY, tick_at, who=f"replica-{i}", tenants=ours) for i in range(3))
        )
        assert sum(r is not None for r in ran) == 1, ran
        # "behind" was requested once already (its first build): only this tick's rows count
        new = [repo for row, repo in (await _requested(infra, tenant)).items() if row not in before]
        assert sorted(new) == sorted(str(ids[n]) for n in by_slice[slice_no])
        assert await backfill.run_tick(pool, POLICY, tick_at, who="late", tenants=ours) is None
        # without a head resolver (the service runs no git) a local repository with a ready
        # snapshot is requested as `local`; the chunker skips it when its head is indexed
        plain = await backfill.candidates(pool, POLICY, slice_no=None, limit=10_000, tenants=ours)
        assert {c.full_name: c.why for c in plain}["behind"] == "local"
        # bounded per tick
        tight = BackfillPolicy(interval_s=3600, slices=1, max_per_tick=1, grace_s=600, local_sources=True)
        assert (
            len(await backfill.candidates(pool, tight, slice_no=0, limit=tight.max_per_tick, tenants=ours))
            == 1
        )
    finally:
        await drop_tenant(served.ctx.pool, world.tenant_id)
        await drop_tenant(served.ctx.pool, paused.tenant_id)
