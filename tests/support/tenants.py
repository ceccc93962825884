"""Tenants for tests: a tenant's name is unique per installation (migration 0050) and a test session
shares one database, so a test's tenant is named ``<name>-<8 hex>`` (a test that runs twice, or
two tests that pick one name, still get two tenants)."""

from __future__ import annotations

import uuid
from uuid import UUID

from palimpsest.cli import tenants
from palimpsest.core.db import Pool


def unique_name(name: str) -> str:
    return f"{name}-{uuid.uuid4().hex[:8]}"


async def create_tenant(pool: Pool, name: str) -> UUID:
    """:func:`palimpsest.cli.tenants.create_tenant` under a name of its own (see the module)."""
    return await tenants.create_tenant(pool, unique_name(name))
