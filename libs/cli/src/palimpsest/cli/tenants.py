"""Tenant creation as the application role: RLS admits the new row because the tenant is set first."""

from __future__ import annotations

from uuid import UUID

from palimpsest.core.db import Pool, tenant_tx
from palimpsest.core.ids import uuid7


async def create_tenant(pool: Pool, name: str) -> UUID:
    tenant_id = uuid7()
    async with tenant_tx(pool, tenant_id) as conn:
        await conn.execute("INSERT INTO tenants (tenant_id, name) VALUES (%s, %s)", (tenant_id, name))
    return tenant_id
