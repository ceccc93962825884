"""Per-tenant model routes and the monthly model budget (``llm_routes``, ``llm_budgets``).

The ingest service's admin API sets them (:mod:`palimpsest.ingest.admin.models`); the LLM gateway
reads them (``palimpsest.core._llm.routes`` and ``.budget``). Both are tenant tables under forced
row-level security: every function runs in the caller's tenant transaction.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Final
from uuid import UUID

from palimpsest.core.db import Conn, JsonRow, columns, fetch_all_as, fetch_one_as
from palimpsest.core.stores import Owns, Store

STORE = Store(owner="ingest", writes=(Owns("llm_routes"), Owns("llm_budgets")))

__all__ = [
    "StoredBudget",
    "StoredRoute",
    "budget",
    "delete_budget",
    "delete_route",
    "list_routes",
    "set_budget",
    "upsert_route",
]


@dataclass(frozen=True, slots=True)
class StoredRoute(JsonRow):
    """A tenant's route of one feature (prices in USD per million tokens; None: not given)."""

    feature: str
    model: str
    api_base: str | None
    input_usd_per_mtok: Decimal | None
    output_usd_per_mtok: Decimal | None
    updated_at: datetime


@dataclass(frozen=True, slots=True)
class StoredBudget:
    """The tenant's own monthly budget in USD."""

    monthly_usd: Decimal
    updated_at: datetime


_ROUTE: Final = columns(StoredRoute)


async def upsert_route(
    conn: Conn,
    tenant_id: UUID,
    feature: str,
    *,
    model: str,
    api_base: str | None,
    input_usd_per_mtok: Decimal | None,
    output_usd_per_mtok: Decimal | None,
) -> StoredRoute:
    """Set the tenant's route of ``feature`` (a new one, or over the one it had)."""
    row = await fetch_one_as(
        conn,
        StoredRoute,
        "INSERT INTO llm_routes (tenant_id, feature, model, api_base, input_usd_per_mtok, output_usd_per_mtok)"
        " VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT (tenant_id, feature) DO UPDATE SET"
        " model = EXCLUDED.model, api_base = EXCLUDED.api_base,"
        " input_usd_per_mtok = EXCLUDED.input_usd_per_mtok,"
        f" output_usd_per_mtok = EXCLUDED.output_usd_per_mtok, updated_at = now() RETURNING {_ROUTE}",
        (tenant_id, feature, model, api_base, input_usd_per_mtok, output_usd_per_mtok),
    )
    assert row is not None  # an upsert returns its row
    return row


async def list_routes(conn: Conn) -> list[StoredRoute]:
    return await fetch_all_as(conn, StoredRoute, f"SELECT {_ROUTE} FROM llm_routes ORDER BY feature")


async def delete_route(conn: Conn, feature: str) -> bool:
    """Delete the tenant's route of ``feature``; whether it had one."""
    cur = await conn.execute("DELETE FROM llm_routes WHERE feature = %s", (feature,))
    return cur.rowcount > 0


async def budget(conn: Conn) -> StoredBudget | None:
    """The tenant's own budget, or None (the services' default applies)."""
    return await fetch_one_as(conn, StoredBudget, "SELECT monthly_usd, updated_at FROM llm_budgets")


async def set_budget(conn: Conn, tenant_id: UUID, monthly_usd: Decimal) -> None:
    await conn.execute(
        "INSERT INTO llm_budgets (tenant_id, monthly_usd) VALUES (%s, %s) ON CONFLICT (tenant_id)"
        " DO UPDATE SET monthly_usd = EXCLUDED.monthly_usd, updated_at = now()",
        (tenant_id, monthly_usd),
    )


async def delete_budget(conn: Conn) -> None:
    await conn.execute("DELETE FROM llm_budgets")
