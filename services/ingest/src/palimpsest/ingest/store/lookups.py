"""The cross-tenant lookups, through the migration's SECURITY DEFINER functions only.

The application role cannot read another tenant's rows; these functions return exactly what is
needed to pick the tenant: a webhook sender's tenant, installation and encrypted secret, or a
token's tenant (with its scopes and state), the operator's tenant list, and the bounded deletes
of delivery and audit retention.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

from palimpsest.core.db import Pool, fetch_all, fetch_one, system_tx


@dataclass(frozen=True, slots=True)
class SealedRoute:
    tenant_id: UUID
    installation_id: UUID
    sealed_secret: bytes
    suspended: str | None = None  # why its deliveries are ignored (suspension), or None


async def webhook_route(
    pool: Pool, provider: str, kind: str, external_id: str, path: str | None
) -> SealedRoute | None:
    async with system_tx(pool) as conn:
        row = await fetch_one(
            conn,
            "SELECT tenant_id, installation_id, webhook_secret, suspended"
            " FROM palimpsest_webhook_route(%s, %s, %s, %s)",
            (provider, kind, external_id, path),
        )
    if row is None:
        return None
    return SealedRoute(
        row["tenant_id"], row["installation_id"], bytes(row["webhook_secret"]), row["suspended"]
    )


async def token_owner(pool: Pool, token_hash: bytes) -> dict[str, Any] | None:
    """The token's tenant, id, name, scopes, expiry, revocation and its tenant's state."""
    async with system_tx(pool) as conn:
        row = await fetch_one(conn, "SELECT * FROM palimpsest_token_tenant(%s)", (token_hash,))
    return None if row is None else dict(row)


async def tenant_list(pool: Pool) -> list[dict[str, Any]]:
    """Every tenant's id, name and state (the operator's list)."""
    async with system_tx(pool) as conn:
        rows = await fetch_all(conn, "SELECT * FROM palimpsest_tenant_list()")
    return [dict(r) for r in rows]


async def prune_audit(pool: Pool, before: datetime, limit: int) -> int:
    async with system_tx(pool) as conn:
        row = await fetch_one(conn, "SELECT palimpsest_prune_audit(%s, %s) AS n", (before, limit))
    return int(row["n"]) if row is not None else 0


async def prune_deliveries(pool: Pool, before: datetime, limit: int) -> int:
    async with system_tx(pool) as conn:
        row = await fetch_one(conn, "SELECT palimpsest_prune_deliveries(%s, %s) AS n", (before, limit))
    return int(row["n"]) if row is not None else 0
