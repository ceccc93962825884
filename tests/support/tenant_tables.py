"""The catalog's tenant tables: every table of the schema with a ``tenant_id`` column.

Tests discover them instead of listing them, so a table a later migration adds is covered (and
must be protected) the day it appears. ``infra`` marks tables commented ``infrastructure:``.
"""

from __future__ import annotations

from typing import Any

import psycopg


def tenant_tables(conn: psycopg.Connection[Any], *, partitions: bool = False) -> list[dict[str, Any]]:
    """Every table with a tenant_id column, as ``conn`` sees the catalog (its own DDL included).

    A partitioned table's partitions (the embeddings of each repository, migration 0037) are read
    through their parent; ``partitions=True`` lists them too, for the checks of their own policy.
    ``partitioned`` marks a parent.
    """
    rows = conn.execute(
        """
        SELECT c.relname, c.relrowsecurity, c.relforcerowsecurity,
               coalesce(obj_description(c.oid, 'pg_class'), '') AS comment, c.relkind = 'p'
        FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE c.relkind IN ('r', 'p') AND n.nspname = current_schema() AND (%s OR NOT c.relispartition)
          AND EXISTS (SELECT 1 FROM pg_attribute a WHERE a.attrelid = c.oid
                      AND a.attname = 'tenant_id' AND NOT a.attisdropped)
        ORDER BY 1
        """,
        (partitions,),
    ).fetchall()
    return [
        {
            "table": r[0],
            "rls": r[1],
            "force": r[2],
            "infra": r[3].startswith("infrastructure:"),
            "partitioned": r[4],
        }
        for r in rows
    ]
