"""The cross-tenant lookups, through the migration's SECURITY DEFINER functions only.

The application role cannot read another tenant's rows; these functions return exactly what is
needed to pick the tenant: a webhook sender's tenant, installation and encrypted secret, or a
token's tenant (with its scopes and state), the operator's tenant list, and the bounded deletes
of delivery and audit retention.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Final
from uuid import UUID

from palimpsest.core.db import Conn, Pool, columns, fetch_all_as, fetch_one, fetch_one_as, system_tx
from palimpsest.core.stores import Store
from palimpsest.ingest.store.tenants import Tenant

STORE = Store(owner="ingest", reads=("tenants", "api_tokens", "installations", "audit_log", "deliveries"))


@dataclass(frozen=True, slots=True)
class SealedRoute:
    tenant_id: UUID
    installation_id: UUID
    sealed_secret: bytes
    suspended: str | None = None  # why its deliveries are ignored (suspension), or None


@dataclass(frozen=True, slots=True)
class TokenTenant:
    """A token's tenant, what it may do and whether it still may (the caller checks)."""

    tenant_id: UUID
    token_id: UUID
    name: str
    scopes: list[str]
    expires_at: datetime | None
    revoked_at: datetime | None
    tenant_suspended: bool
    tenant_deleting: bool


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


async def token_owner(pool: Pool, token_hash: bytes) -> TokenTenant | None:
    """The token's tenant, id, name, scopes, expiry, revocation and its tenant's state."""
    async with system_tx(pool) as conn:
        return await fetch_one_as(
            conn,
            TokenTenant,
            f"SELECT {columns(TokenTenant)} FROM palimpsest_token_tenant(%s)",
            (token_hash,),
        )


_ACTIVE: Final = (
    f"SELECT {columns(Tenant)} FROM palimpsest_tenant_list()"
    " WHERE suspended_at IS NULL AND deleting_at IS NULL ORDER BY name, tenant_id"
)


async def active_tenants(conn: Conn) -> list[Tenant]:
    """The tenants neither suspended nor being deleted, by name (on any connection: the function
    lists every tenant whichever is set)."""
    return await fetch_all_as(conn, Tenant, _ACTIVE)


async def tenant_list(pool: Pool) -> list[Tenant]:
    """Every tenant's id, name and state (the operator's list)."""
    async with system_tx(pool) as conn:
        return await fetch_all_as(conn, Tenant, f"SELECT {columns(Tenant)} FROM palimpsest_tenant_list()")


async def prune_audit(pool: Pool, before: datetime, limit: int) -> int:
    async with system_tx(pool) as conn:
        row = await fetch_one(conn, "SELECT palimpsest_prune_audit(%s, %s) AS n", (before, limit))
    return int(row["n"]) if row is not None else 0


async def prune_deliveries(pool: Pool, before: datetime, limit: int) -> int:
    async with system_tx(pool) as conn:
        row = await fetch_one(conn, "SELECT palimpsest_prune_deliveries(%s, %s) AS n", (before, limit))
    return int(row["n"]) if row is not None else 0
