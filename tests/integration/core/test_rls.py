"""Tenant isolation is enforced by PostgreSQL, tried on every tenant table found in the catalog.

Tables are discovered, not listed: every table in the schema with a ``tenant_id`` column must have
row-level security enabled and forced. For each one the test, connected as the application role,
writes a row for tenant A and then, as tenant B, tries to read, update, delete and insert A's rows;
with no tenant set a tenant table shows nothing, while an infrastructure table (outbox, inbox, …,
commented ``infrastructure:``) shows everything — the relay and the schedulers work across tenants
in such system transactions (migration 0014; before it, tenant A could read B's outbox events).
"""

from __future__ import annotations

import re
import uuid
from typing import Any

import psycopg
import pytest
from psycopg import sql

from palimpsest.core.db import tenant_tx
from palimpsest.core.service import Infra
from tests.support.servers import ServerSet
from tests.support.tenant_tables import tenant_tables


def _tenant_tables(owner_url: str) -> list[dict[str, Any]]:
    with psycopg.connect(owner_url) as conn:
        return tenant_tables(conn)


def _insertable_row(conn: psycopg.Connection[Any], table: str, tenant: uuid.UUID) -> dict[str, Any]:
    """A minimal valid row for ``table``: required columns filled by type, FKs satisfied by parents."""
    cols = conn.execute(
        """
        SELECT a.attname, format_type(a.atttypid, a.atttypmod), a.attnotnull,
               pg_get_expr(d.adbin, d.adrelid) IS NOT NULL OR a.attidentity <> '' OR a.attgenerated <> ''
        FROM pg_attribute a LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
        WHERE a.attrelid = %s::regclass AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum
        """,
        (table,),
    ).fetchall()
    checks = conn.execute(
        "SELECT pg_get_constraintdef(oid) FROM pg_constraint WHERE conrelid = %s::regclass AND contype = 'c'",
        (table,),
    ).fetchall()
    row: dict[str, Any] = {}
    for name, typ, notnull, has_default in cols:
        if name == "tenant_id":
            row[name] = tenant
        elif notnull and not has_default:
            row[name] = _allowed(name, [c[0] for c in checks]) or _value_for(typ, name)
    return row


def _allowed(column: str, checks: list[str]) -> str | None:
    """The first value an ``IN (...)`` check on ``column`` admits."""
    for definition in checks:
        if re.search(rf"\b{re.escape(column)}\b.*ANY", definition):
            found = re.findall(r"'([^']*)'::text", definition)
            if found:
                return str(found[0])
    return None


def _value_for(typ: str, name: str) -> Any:
    if typ == "uuid":
        return uuid.uuid4()
    if typ in ("integer", "bigint", "smallint"):
        return 1
    if typ in ("real", "double precision") or typ.startswith("numeric"):
        return 1.0
    if typ == "boolean":
        return False
    if typ.startswith("timestamp"):
        return "2026-01-01T00:00:00Z"
    if typ in ("jsonb", "json"):
        return psycopg.types.json.Jsonb({})
    if typ == "bytea":
        return b"x"
    if typ.endswith("[]"):
        return []
    return f"rls-{name}-{uuid.uuid4().hex[:8]}"


@pytest.fixture(scope="module")
def tables(stack: ServerSet) -> list[dict[str, Any]]:
    found = _tenant_tables(stack.owner_url)
    assert any(t["table"] == "repositories" for t in found), "catalog discovery found no tenant tables"
    return found


def test_every_tenant_table_forces_rls(stack: ServerSet, tables: list[dict[str, Any]]) -> None:
    with psycopg.connect(stack.owner_url) as conn:  # partitions too: the app role may be granted them
        everything = tenant_tables(conn, partitions=True)
    unprotected = [t["table"] for t in everything if not (t["rls"] and t["force"])]
    assert unprotected == []
    assert {"outbox", "inbox", "dead_letters"} <= {t["table"] for t in tables if t["infra"]}


def test_a_table_a_later_migration_adds_is_caught_until_it_is_made_a_tenant_table(stack: ServerSet) -> None:
    """The check above reads the live catalog: a new table with tenant_id fails it by itself."""
    with psycopg.connect(stack.owner_url) as conn:  # one transaction, rolled back: nobody else sees it
        conn.execute("CREATE TABLE rls_probe_later (tenant_id uuid NOT NULL, note text)")
        found = {t["table"]: t for t in tenant_tables(conn)}
        assert not (found["rls_probe_later"]["rls"] or found["rls_probe_later"]["force"])
        conn.execute("SELECT palimpsest_tenant_table('rls_probe_later')")
        found = {t["table"]: t for t in tenant_tables(conn)}
        assert found["rls_probe_later"]["rls"] and found["rls_probe_later"]["force"]
        conn.rollback()


def test_app_role_cannot_bypass(stack: ServerSet) -> None:
    with psycopg.connect(stack.app_url) as conn:
        row = conn.execute(
            "SELECT rolsuper, rolbypassrls FROM pg_roles WHERE rolname = current_user"
        ).fetchone()
        assert row == (False, False)
        owner = conn.execute(
            "SELECT count(*) FROM pg_tables WHERE schemaname = current_schema() AND tableowner = current_user"
        ).fetchone()
        assert owner == (0,)
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("SELECT * FROM schema_migrations")


async def _seed(
    infra: Infra, owner_url: str, table: str, tenant: uuid.UUID, *, partitioned: bool = False
) -> dict[str, Any]:
    """Insert one row of ``table`` for ``tenant`` as the app role (parents created as needed); a
    ``partitioned`` table (by repository: the embeddings, migration 0037) gets its partition first."""
    with psycopg.connect(owner_url) as conn:
        row = _insertable_row(conn, table, tenant)
        fks = conn.execute(
            """
            SELECT k.conname, a.attname, cf.relname, af.attname
            FROM pg_constraint k
            JOIN LATERAL unnest(k.conkey, k.confkey) AS u(src, dst) ON true
            JOIN pg_attribute a ON a.attrelid = k.conrelid AND a.attnum = u.src
            JOIN pg_class cf ON cf.oid = k.confrelid
            JOIN pg_attribute af ON af.attrelid = k.confrelid AND af.attnum = u.dst
            WHERE k.conrelid = %s::regclass AND k.contype = 'f'
            """,
            (table,),
        ).fetchall()
    parents: dict[str, dict[str, Any]] = {}  # one parent row per foreign key constraint
    for constraint, col, parent, parent_col in fks:
        if col == "tenant_id":
            continue
        if constraint not in parents:
            parents[constraint] = await _seed(infra, owner_url, parent, tenant)
        row[col] = parents[constraint][parent_col]
    if table != "tenants":
        await _ensure_tenant(infra, tenant)
    if partitioned:
        row["repository_id"] = (await _seed(infra, owner_url, "repositories", tenant))["repository_id"]
    async with tenant_tx(infra.pool, tenant) as conn:
        if partitioned:
            await conn.execute("SELECT palimpsest_embedding_partition(%s)", (row["repository_id"],))
        stmt = sql.SQL("INSERT INTO {} ({}) VALUES ({}) ON CONFLICT DO NOTHING").format(
            sql.Identifier(table),
            sql.SQL(", ").join(map(sql.Identifier, row)),
            sql.SQL(", ").join(sql.Placeholder() * len(row)),
        )
        await conn.execute(stmt, list(row.values()))
    return row


async def _ensure_tenant(infra: Infra, tenant: uuid.UUID) -> None:
    async with tenant_tx(infra.pool, tenant) as conn:
        await conn.execute(
            "INSERT INTO tenants (tenant_id, name) VALUES (%s, %s) ON CONFLICT DO NOTHING",
            (tenant, f"rls-{tenant}"),
        )


async def test_tenants_cannot_touch_each_other(
    infra: Infra, stack: ServerSet, tables: list[dict[str, Any]]
) -> None:
    tenant_a, tenant_b = uuid.uuid4(), uuid.uuid4()
    await _ensure_tenant(infra, tenant_b)
    checked = []
    for t in tables:
        table = t["table"]
        seeded = await _seed(infra, stack.owner_url, table, tenant_a, partitioned=t["partitioned"])
        ident = sql.Identifier(table)
        # as tenant A: the row is there
        async with tenant_tx(infra.pool, tenant_a) as conn:
            cur = await conn.execute(sql.SQL("SELECT count(*) AS n FROM {}").format(ident))
            assert (await cur.fetchone())["n"] >= 1, table  # type: ignore[index]
        # as tenant B: invisible, and cannot be changed or deleted
        async with tenant_tx(infra.pool, tenant_b) as conn:
            cur = await conn.execute(
                sql.SQL("SELECT count(*) AS n FROM {} WHERE tenant_id = %s").format(ident), (tenant_a,)
            )
            assert (await cur.fetchone())["n"] == 0, table  # type: ignore[index]
            cur = await conn.execute(
                sql.SQL("UPDATE {} SET tenant_id = tenant_id WHERE tenant_id = %s").format(ident), (tenant_a,)
            )
            assert cur.rowcount == 0, table
            cur = await conn.execute(
                sql.SQL("DELETE FROM {} WHERE tenant_id = %s").format(ident), (tenant_a,)
            )
            assert cur.rowcount == 0, table
        # as tenant B: cannot insert a row that claims to be A's
        with psycopg.connect(stack.owner_url) as oc:
            forged = _insertable_row(oc, table, tenant_a)
        if t["partitioned"]:  # into A's partition (a row no partition takes is refused before the policy)
            forged["repository_id"] = seeded["repository_id"]
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            async with tenant_tx(infra.pool, tenant_b) as conn:
                await conn.execute(
                    sql.SQL("INSERT INTO {} ({}) VALUES ({})").format(
                        ident,
                        sql.SQL(", ").join(map(sql.Identifier, forged)),
                        sql.SQL(", ").join(sql.Placeholder() * len(forged)),
                    ),
                    list(forged.values()),
                )
        # with no tenant set: nothing visible at all — except to the system, in infrastructure tables
        async with infra.pool.connection() as conn:
            cur = await conn.execute(
                sql.SQL("SELECT count(*) AS n FROM {} WHERE tenant_id = %s").format(ident), (tenant_a,)
            )
            assert ((await cur.fetchone())["n"] >= 1) == t["infra"], table  # type: ignore[index]
            await conn.rollback()
        if t["infra"]:  # an outbox row with a made-up subject would keep the relay retrying
            with psycopg.connect(stack.owner_url) as oc:
                oc.execute(sql.SQL("DELETE FROM {} WHERE tenant_id = %s").format(ident), (tenant_a,))
        checked.append(table)
    assert "tenants" in checked and "repositories" in checked
