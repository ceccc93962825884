"""Tenant creation as the application role: RLS admits the new row because the tenant is set first."""

from __future__ import annotations

from uuid import UUID

import psycopg

from palimpsest.core.db import Pool, tenant_tx
from palimpsest.core.errors import PalimpsestError
from palimpsest.core.ids import uuid7


class TenantNameTaken(PalimpsestError):
    """Another tenant has this name (names are unique, letter case aside: migration 0050)."""


async def create_tenant(pool: Pool, name: str) -> UUID:
    tenant_id = uuid7()
    try:
        async with tenant_tx(pool, tenant_id) as conn:
            await conn.execute("INSERT INTO tenants (tenant_id, name) VALUES (%s, %s)", (tenant_id, name))
    except psycopg.errors.UniqueViolation as exc:
        raise TenantNameTaken(f"a tenant named {name!r} exists already") from exc
    return tenant_id
