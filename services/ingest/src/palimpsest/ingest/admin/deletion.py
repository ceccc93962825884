"""Tenant deletion: every row of the tenant in every table with a ``tenant_id``, idempotent and
safe to retry after a crash midway.

1. The tenant is marked ``deleting_at`` (committed on its own): from then on its tokens are
   refused (401), its webhooks are ignored and nothing new is accepted for it.
2. Every table of the schema with a ``tenant_id`` column — read from the catalog at run time, so
   a table a later migration adds is covered without a change here; a partitioned table through
   its parent — is emptied of the tenant's
   rows in bounded batches, each its own short transaction (a tenant with millions of chunks
   never holds one long transaction). A batch refused by a foreign key (a child table not yet
   emptied) leaves that table for the next pass.
3. The ``tenants`` row goes last, then the tenant's (now empty) embeddings partitions.

A crash anywhere leaves the mark and some rows; running the deletion again (the same API call or
CLI command) starts from the catalog again and finishes, and a deletion of a tenant that no
longer exists sweeps the tables once more (rows an in-flight event wrote after the first run)
and succeeds. The services keep no per-tenant files: clones are temporary directories removed
when each job ends, so there is no scratch space to clear.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypedDict
from uuid import UUID

import psycopg

from palimpsest.core.db import Pool, system_tx, tenant_tx
from palimpsest.ingest.context import IngestContext
from palimpsest.ingest.store import repositories, tenants

log = logging.getLogger(__name__)

BATCH = 5000
MAX_PASSES = 20


class DeletionSummary(TypedDict):
    """``DELETE /v1/tenants/{id}`` (``schemas.TenantDeleted``): the rows deleted, per table."""

    tenant_id: UUID
    existed: bool
    deleted_rows: int
    tables: dict[str, int]


@dataclass(slots=True)
class DeletionReport:
    tenant_id: UUID
    existed: bool
    rows: dict[str, int] = field(default_factory=dict)

    def as_dict(self) -> DeletionSummary:
        return {
            "tenant_id": self.tenant_id,
            "existed": self.existed,
            "deleted_rows": sum(self.rows.values()),
            "tables": {t: n for t, n in sorted(self.rows.items()) if n},
        }


async def tenant_tables(pool: Pool) -> list[str]:
    """Every table of the schema with a tenant_id column, ``tenants`` excluded (it goes last)."""
    async with system_tx(pool) as conn:
        return await tenants.tenant_tables(conn)


async def delete_tenant(ctx: IngestContext, tenant_id: UUID) -> DeletionReport:
    """Delete the tenant (see the module docstring); this replica's token and route caches too."""
    try:
        return await delete_tenant_rows(ctx.pool, tenant_id, marked=lambda: _forget(ctx))
    finally:
        _forget(ctx)


def _forget(ctx: IngestContext) -> None:
    ctx.tokens.clear()
    ctx.routes.clear()


async def delete_tenant_rows(
    pool: Pool, tenant_id: UUID, *, marked: Callable[[], None] | None = None, batch: int = BATCH
) -> DeletionReport:
    """Mark, empty every tenant table in batches, remove the tenant row; ``marked`` runs after the mark."""
    async with tenant_tx(pool, tenant_id) as conn:
        existed = await tenants.mark_deleting(conn, tenant_id)
    if marked is not None:
        marked()
    report = DeletionReport(tenant_id, existed)
    pending = await tenant_tables(pool)
    for _ in range(MAX_PASSES):
        blocked: list[str] = []
        for table in pending:
            try:
                report.rows[table] = report.rows.get(table, 0) + await _empty(pool, tenant_id, table, batch)
            except psycopg.errors.ForeignKeyViolation:
                blocked.append(table)
        if not blocked:
            break
        pending = blocked
    else:
        raise RuntimeError(f"tenant deletion blocked by foreign keys on {', '.join(pending)}")
    async with tenant_tx(pool, tenant_id) as conn:
        report.rows["tenants"] = await tenants.delete_tenant(conn, tenant_id)
    async with tenant_tx(pool, tenant_id) as conn:
        await repositories.drop_embedding_partitions(conn)
    log.info("tenant %s deleted: %d rows", tenant_id, sum(report.rows.values()))
    return report


async def _empty(pool: Pool, tenant_id: UUID, table: str, batch: int = BATCH) -> int:
    """Delete the tenant's rows of ``table`` in batches, each its own transaction; how many."""
    total = 0
    while True:
        async with tenant_tx(pool, tenant_id) as conn:
            deleted = await tenants.delete_tenant_batch(conn, tenant_id, table, batch)
        total += deleted
        if deleted < batch:
            return total
