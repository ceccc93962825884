"""``palimpsest bench tenant-delete``: how long deleting a tenant takes, with a real index in it.

Two tenants get the same generated TypeScript repository (``bench index``'s generator), indexed
through the bus by the in-process services on a scratch embedded stack. Measured: switching one
repository's index mode off (its index data deleted, ADR-0017 D7), then deleting one whole tenant
the way the API does (mark, every tenant table of the catalog in batches, the tenant row last):
wall time, rows removed (counted before and after, cascades included; ``deleted_rows_direct``
counts only what the deletion's own statements deleted), rows of the tenant left in any table
(must be 0) and whether the other tenant's row count is unchanged.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from pathlib import Path
from typing import Any
from uuid import UUID

from psycopg import sql

from palimpsest.cli.local import register_path
from palimpsest.cli.pipeline import index_and_wait
from palimpsest.cli.runner import running_services
from palimpsest.cli.stack import open_stack, scratch_settings
from palimpsest.cli.tenants import create_tenant
from palimpsest.core.db import Pool, fetch_one, tenant_tx
from palimpsest.core.events import SnapshotBuilt
from palimpsest.core.ids import uuid7
from palimpsest.core.settings import BaseServiceSettings
from palimpsest.devtools.bench.index import make_repository
from palimpsest.ingest.admin.deletion import BATCH, delete_tenant_rows, tenant_tables
from palimpsest.ingest.store.repositories import delete_index_data


async def _rows(pool: Pool, tenant: UUID) -> int:
    total = 0
    async with tenant_tx(pool, tenant) as conn:
        for table in [*await tenant_tables(pool), "tenants"]:
            row = await fetch_one(conn, sql.SQL("SELECT count(*) AS n FROM {}").format(sql.Identifier(table)))
            total += int(row["n"]) if row is not None else 0
    return total


async def run_bench_delete(
    settings: BaseServiceSettings, *, files: int, total_bytes: int, batch: int = BATCH
) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="palimpsest-bench-delete-") as tmp:
        root = Path(tmp)
        repo, _, _ = make_repository(root, files, total_bytes)
        s = scratch_settings(settings, root / "home")
        async with open_stack(s) as stack, running_services(s, stack) as infra:
            pool, nc = infra.pool, infra.nc
            doomed, kept = (
                await create_tenant(pool, f"doomed-{uuid7().hex[-8:]}"),
                await create_tenant(pool, f"kept-{uuid7().hex[-8:]}"),
            )
            repos: dict[UUID, UUID] = {}
            for tenant in (doomed, kept):
                repos[tenant] = await register_path(pool, tenant, repo)
                built = (await index_and_wait(pool, nc, tenant, repos[tenant]))[SnapshotBuilt]
                if built.state != "ready":
                    return {"error": f"build {built.state}: {built.reason}"}
            # index mode off on a second, equal repository of the doomed tenant
            twin = root / "twin.git"
            shutil.copytree(repo, twin)
            twin_id = await register_path(pool, doomed, twin)
            await index_and_wait(pool, nc, doomed, twin_id)
            with_twin = await _rows(pool, doomed)
            t = time.perf_counter()
            async with tenant_tx(pool, doomed) as conn:
                await conn.execute(
                    "UPDATE repositories SET index_mode = 'off' WHERE repository_id = %s", (twin_id,)
                )
                await delete_index_data(conn, twin_id)
            off_s = time.perf_counter() - t
            kept_before = await _rows(pool, kept)
            doomed_before = await _rows(pool, doomed)
            off_rows = with_twin - doomed_before
            t = time.perf_counter()
            report = await delete_tenant_rows(pool, doomed, batch=batch)
            delete_s = time.perf_counter() - t
            left = await _rows(pool, doomed)
            kept_after = await _rows(pool, kept)
        deleted = sum(report.rows.values())
        return {
            "benchmark": "tenant-delete",
            "postgres": "embedded" if stack.embedded_db else "external",
            "files": files,
            "batch": batch,
            "index_off_s": round(off_s, 3),
            "index_off_rows": off_rows,
            "tenant_rows_before": doomed_before,
            "delete_s": round(delete_s, 3),
            "rows_removed": doomed_before - left,
            "rows_removed_per_s": round((doomed_before - left) / delete_s) if delete_s else None,
            "deleted_rows_direct": deleted,
            "tables_direct": report.as_dict()["tables"],
            "rows_left": left,
            "other_tenant_rows_unchanged": kept_before == kept_after,
        }
