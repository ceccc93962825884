"""SQL access of the ingest service: one module per table, functions taking an open connection.

Every function runs inside the caller's transaction — a tenant transaction for tenant tables, so
row-level security scopes each statement — except `lookups`, whose SECURITY DEFINER functions
find a tenant before one is known. Unique violations become `Conflict` here, at the boundary.
"""

from palimpsest.core.stores import Owns, Store

# Tables of the ingest service whose statements are not yet in a store module of their own: the
# model routes and budgets (admin/models.py), listed as not yet moved by the SQL-placement test.
STORE = Store(
    owner="ingest",
    writes=(
        Owns("llm_routes"),
        Owns("llm_budgets"),
    ),
)
