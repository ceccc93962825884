"""SQL access of the ingest service: one module per table, functions taking an open connection.

Every function runs inside the caller's transaction — a tenant transaction for tenant tables, so
row-level security scopes each statement — except `lookups`, whose SECURITY DEFINER functions
find a tenant before one is known. Unique violations become `Conflict` here, at the boundary.
Each module declares the tables it writes (``STORE``, :mod:`palimpsest.core.stores`).
"""
