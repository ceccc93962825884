"""Tenant creation as the application role: RLS admits the new row because the tenant is set first.

The row is written by the ingest service's store (it owns ``tenants``)."""

from __future__ import annotations

from uuid import UUID

from palimpsest.core.db import Pool, tenant_tx
from palimpsest.core.errors import PalimpsestError
from palimpsest.core.ids import uuid7
from palimpsest.ingest.errors import Conflict
from palimpsest.ingest.store.tenants import insert_tenant


class TenantNameTaken(PalimpsestError):
    """Another tenant has this name (names are unique, letter case aside: migration 0050)."""


async def create_tenant(pool: Pool, name: str) -> UUID:
    tenant_id = uuid7()
    try:
        async with tenant_tx(pool, tenant_id) as conn:
            await insert_tenant(conn, tenant_id, name)
    except Conflict as exc:  # the name is taken (the store turns the unique violation into this)
        raise TenantNameTaken(f"a tenant named {name!r} exists already") from exc
    return tenant_id
