"""Facts a platform team sees on day one, as the web view and the CLI state them (issue 52, point 8).

A repository indexed at its head, with a review's base (an older commit) built beside it as a
pinned snapshot afterwards: the repositories page shows the default branch's snapshot, and
``palimpsest index`` of the indexed head reports the snapshot that is there. Tenant names are
unique: a second ``tenant create`` of a name is refused (409, and the CLI says so), ``tenant show``
takes a name as well as an id, and a token the API refuses is reported as refused (401), whatever
the command was looking up.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from uuid import UUID

import httpx
import psycopg
import pytest

from palimpsest.cli.local import register_path
from palimpsest.cli.pipeline import Arrived, index_and_wait
from palimpsest.core.events import SnapshotBuilt
from palimpsest.core.service import Infra
from tests.integration.analyzer.support import index, indexer_definitions, running
from tests.integration.ingest.support import ADMIN_TOKEN, Served, World, admin, drop_tenant, new_tenant
from tests.integration.ingest.test_web_ui import _signed_in
from tests.support.gitrepo import commit, init_repo
from tests.support.servers import APP_ROLE, ServerSet, scratch_database
from tests.support.tenants import unique_name

CLI = [sys.executable, "-m", "palimpsest.cli.main"]


async def _cli(served: Served, *args: str, token: str | None = None) -> subprocess.CompletedProcess[str]:
    """The CLI in its own process against the served API: the operator's admin token, or ``token``
    (in a thread: the served API runs on this test's event loop)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PALIMPSEST_")}
    env["PALIMPSEST_INGEST_URL"] = served.url
    env.update(
        {"PALIMPSEST_API_TOKEN": token} if token is not None else {"PALIMPSEST_ADMIN_TOKEN": ADMIN_TOKEN}
    )
    return await asyncio.to_thread(
        subprocess.run, [*CLI, *args], env=env, capture_output=True, text=True, timeout=120, check=False
    )


# ----------------------------------------------------------------------------- snapshots


@dataclass
class Indexed:
    world: World
    repository_id: UUID
    base: str  # the review's base, built last, as a pinned snapshot
    head: str  # the default branch's head
    built: SnapshotBuilt  # the head's build
    again: Arrived  # `palimpsest index` of the indexed head, requested once more


@pytest.fixture(scope="module")
async def indexed(
    served: Served, client: httpx.AsyncClient, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[Indexed]:
    infra: Infra = served.infra
    repo = init_repo(tmp_path_factory.mktemp("facts") / "svc")
    base = commit(
        repo, "2024-01-10T00:00:00+00:00", {"README.md": "# svc\n", "svc.py": "def one():\n    return 1\n"}
    )
    head = commit(
        repo,
        "2024-02-10T00:00:00+00:00",
        {"svc.py": "def one():\n    return 1\n\n\ndef two():\n    return 2\n"},
    )
    world = await new_tenant(client, "snapshots")
    try:
        tid = world.tenant_id
        repo_id = await register_path(infra.pool, tid, repo)
        async with running(infra, indexer_definitions({tid})):
            built = await index(infra, tid, repo_id)
            assert (built.state, built.commit_sha) == ("ready", head)
            # a review's base, built afterwards beside the branch's snapshot (pinned)
            pinned = await index_and_wait(
                infra.pool, infra.nc, tid, repo_id, reason="review", commit_sha=base
            )
            assert (pinned[SnapshotBuilt].state, pinned[SnapshotBuilt].pinned) == ("ready", True)
            again = await index_and_wait(infra.pool, infra.nc, tid, repo_id, reason="cli")
        yield Indexed(world, repo_id, base, head, built, again)
    finally:
        await drop_tenant(infra.pool, world.tenant_id)


async def test_the_repositories_page_shows_the_default_branchs_newest_snapshot(
    served: Served, indexed: Indexed
) -> None:
    async with httpx.AsyncClient(base_url=served.url) as browser:
        assert (await _signed_in(browser, indexed.world.token)).status_code == 303
        page = await browser.get(f"/ui/t/{indexed.world.tenant_id}/")
    assert page.status_code == 200
    row = next(r for r in page.text.split("<tr>") if "svc</a>" in r)
    assert f"<code>{indexed.head[:12]}</code>" in row, row  # the branch's head, not the review base
    assert indexed.base[:12] not in row
    assert f"{indexed.built.files} files, {indexed.built.chunks} chunks" in row


async def test_index_of_an_indexed_head_reports_the_snapshot_there(served: Served, indexed: Indexed) -> None:
    from palimpsest.cli.commands_index import _index_text, index_result, skipped_snapshot

    built, again = indexed.built, indexed.again
    there = await skipped_snapshot(served.infra.pool, indexed.world.tenant_id, again)
    out = index_result(indexed.repository_id, again, there)
    assert (out["state"], out["reason"], out["already_indexed"]) == ("skipped", "up_to_date", True)
    assert out["snapshot_id"] == str(built.snapshot_id) and out["commit"] == indexed.head
    assert (out["files"], out["chunks"], out["symbols"]) == (built.files, built.chunks, built.symbols)
    assert out["files"] == 2 and out["chunks"] > 0 and out["parsed_blobs"] == 0
    text = _index_text(out)
    assert text.splitlines()[0] == (
        f"snapshot   {built.snapshot_id}  (already indexed at {indexed.head[:12]}: nothing to build)"
    )
    assert f"commit     {indexed.head}" in text and "None" not in text
    # a build that did happen is reported as before
    fresh = _index_text(index_result(indexed.repository_id, Arrived({SnapshotBuilt: built})))
    assert fresh.splitlines()[0] == f"snapshot   {built.snapshot_id}  (ready)"


# ----------------------------------------------------------------------------- tenants


async def test_a_tenant_name_is_unique_and_a_second_create_is_refused(
    served: Served, client: httpx.AsyncClient
) -> None:
    name = unique_name("northwind")
    first = await client.post("/v1/tenants", json={"name": name}, headers=admin())
    assert first.status_code == 201, first.text
    tid = UUID(first.json()["tenant_id"])
    try:
        for again in (name, name.upper()):  # letter case aside
            second = await client.post("/v1/tenants", json={"name": again}, headers=admin())
            assert second.status_code == 409
            assert second.json()["detail"] == (
                f"a tenant named {again!r} exists already: tenant names are unique; choose another name"
            )
        listed = (await client.get("/v1/tenants", headers=admin())).json()["items"]
        assert [t["tenant_id"] for t in listed if t["name"].lower() == name.lower()] == [str(tid)]

        refused = await _cli(served, "tenant", "create", name)
        assert refused.returncode == 2 and refused.stdout == ""
        assert refused.stderr.strip().splitlines()[-1] == (
            f"error: 409: a tenant named {name!r} exists already: tenant names are unique; choose another name"
        )
    finally:
        await drop_tenant(served.infra.pool, tid)


async def test_tenant_show_takes_a_name_and_a_refused_token_says_401(
    served: Served, client: httpx.AsyncClient
) -> None:
    world = await new_tenant(client, "shown")
    try:
        name = (await client.get(f"/v1/tenants/{world.tenant_id}", headers=admin())).json()["name"]
        by_name, by_id = (
            await _cli(served, "tenant", "show", name),
            await _cli(served, "tenant", "show", str(world.tenant_id)),
        )
        assert by_name.returncode == 0, by_name.stderr
        assert by_name.stdout == by_id.stdout and by_name.stdout.startswith(
            f"{world.tenant_id}  active    {name}  "
        )
        assert (await _cli(served, "tenant", "show", name.upper())).stdout == by_name.stdout
        missing = await _cli(served, "tenant", "show", "no-such-tenant")
        assert missing.returncode == 2 and "no tenant 'no-such-tenant'" in missing.stderr

        wrong = "pal_" + "x" * 40
        for target in (name, str(world.tenant_id)):
            refused = await _cli(served, "tenant", "show", target, token=wrong)
            assert refused.returncode == 2
            assert refused.stderr.startswith(
                "error: the token was refused (401): invalid or revoked token;"
            ), refused.stderr
            assert "cannot look tenants up by name" not in refused.stderr and wrong not in refused.stderr
        # a valid tenant token is no operator: it cannot list tenants to find a name (403), as before
        own = await _cli(served, "tenant", "show", name, token=world.token)
        assert own.stderr.strip() == (
            f"error: --tenant {name!r} is not a tenant id, and this token cannot look tenants up by name;"
            " give the id"
        )
    finally:
        await drop_tenant(served.infra.pool, world.tenant_id)


async def test_the_migration_renames_tenants_that_shared_a_name(stack: ServerSet) -> None:
    """Rows from before migration 0050 may share a name: the oldest keeps it, a later one is
    renamed with its id (and nothing else of it changes), and the index then holds."""
    from palimpsest.core import migrate as migrations

    tenants = [UUID(int=i) for i in (1, 2, 3, 4)]
    with scratch_database(stack, "palimpsest_names") as url:
        await migrations.migrate(url, app_role=APP_ROLE, until=49)
        with psycopg.connect(url) as conn:
            for n, (tenant, name) in enumerate(zip(tenants, ("acme", "ACME", "acme", "globex"), strict=True)):
                conn.execute(
                    "INSERT INTO tenants (tenant_id, name, created_at)"
                    " VALUES (%s, %s, '2024-01-01'::timestamptz + %s * interval '1 day')",
                    (tenant, name, n),
                )
        await migrations.migrate(url, app_role=APP_ROLE)
        with psycopg.connect(url) as conn:
            rows = conn.execute("SELECT tenant_id, name FROM tenants ORDER BY created_at").fetchall()
            assert [(r[0], r[1]) for r in rows] == [
                (tenants[0], "acme"),
                (tenants[1], f"ACME ({tenants[1]})"),
                (tenants[2], f"acme ({tenants[2]})"),
                (tenants[3], "globex"),
            ]
            with pytest.raises(psycopg.errors.UniqueViolation):
                conn.execute("INSERT INTO tenants (tenant_id, name) VALUES (%s, 'Globex')", (UUID(int=5),))
            conn.rollback()
            forced = conn.execute(
                "SELECT relforcerowsecurity FROM pg_class WHERE relname = 'tenants'"
            ).fetchone()
            assert forced is not None and forced[0] is True
