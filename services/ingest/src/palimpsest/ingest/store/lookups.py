"""The cross-tenant lookups, through the migration's SECURITY DEFINER functions only.

The application role cannot read another tenant's rows; these functions return exactly what is
needed to pick the tenant: a webhook sender's tenant, installation and encrypted secret, or a
token's tenant. Delivery retention is the third, a bounded delete of old delivery records.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from uuid import UUID

from palimpsest.core.db import Pool, fetch_one, system_tx


@dataclass(frozen=True, slots=True)
class SealedRoute:
    tenant_id: UUID
    installation_id: UUID
    sealed_secret: bytes


async def webhook_route(
    pool: Pool, provider: str, kind: str, external_id: str, path: str | None
) -> SealedRoute | None:
    async with system_tx(pool) as conn:
        row = await fetch_one(
            conn,
            "SELECT tenant_id, installation_id, webhook_secret FROM palimpsest_webhook_route(%s, %s, %s, %s)",
            (provider, kind, external_id, path),
        )
    if row is None:
        return None
    return SealedRoute(row["tenant_id"], row["installation_id"], bytes(row["webhook_secret"]))


async def token_owner(pool: Pool, token_hash: bytes) -> tuple[UUID, UUID] | None:
    async with system_tx(pool) as conn:
        row = await fetch_one(
            conn, "SELECT tenant_id, token_id FROM palimpsest_token_tenant(%s)", (token_hash,)
        )
    return None if row is None else (row["tenant_id"], row["token_id"])


async def prune_deliveries(pool: Pool, before: datetime, limit: int) -> int:
    async with system_tx(pool) as conn:
        row = await fetch_one(conn, "SELECT palimpsest_prune_deliveries(%s, %s) AS n", (before, limit))
    return int(row["n"]) if row is not None else 0
