"""The ingest schema's cross-tenant lookups: narrow SECURITY DEFINER functions, callable by the app only.

Also runs the migrations with an owner that is NOT a superuser (as on a managed PostgreSQL),
where forced row-level security binds the owner too, and checks the lookups still find their rows
while the application role still sees only its own tenant.
"""

from __future__ import annotations

import secrets
import uuid
from collections.abc import Iterator

import psycopg
import pytest
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from palimpsest.core.db import with_user
from palimpsest.core.migrate import migrate
from tests.support.servers import APP_ROLE, ServerSet

FUNCTIONS = (
    "palimpsest_webhook_route(text,text,text,text)",
    "palimpsest_token_tenant(bytea)",
    "palimpsest_prune_deliveries(timestamp with time zone,integer)",
    "palimpsest_tenant_list()",
    "palimpsest_prune_audit(timestamp with time zone,integer)",
)


def test_lookups_are_security_definer_with_a_fixed_search_path(stack: ServerSet) -> None:
    with psycopg.connect(stack.owner_url) as conn:
        for fn in FUNCTIONS:
            row = conn.execute(
                "SELECT p.prosecdef, p.proconfig, has_function_privilege('public', p.oid, 'EXECUTE'),"
                " has_function_privilege(%s, p.oid, 'EXECUTE') FROM pg_proc p WHERE p.oid = %s::regprocedure",
                (APP_ROLE, fn),
            ).fetchone()
            assert row is not None, fn
            definer, config, public, app = row
            assert definer, fn
            assert any(c.startswith("search_path=") and "pg_temp" in c for c in config or []), (fn, config)
            assert not public, f"{fn} must not be executable by PUBLIC"
            assert app, f"{fn} must be executable by {APP_ROLE}"


def _as_app(url: str) -> psycopg.Connection[tuple[object, ...]]:
    return psycopg.connect(url, autocommit=True)


def _seed(app_url: str, tenant: uuid.UUID, external_id: str) -> None:
    with psycopg.connect(app_url) as conn:
        conn.execute("SELECT set_config('app.tenant_id', %s, true)", (str(tenant),))
        conn.execute("INSERT INTO tenants (tenant_id, name) VALUES (%s, %s)", (tenant, f"schema-{tenant}"))
        conn.execute(
            "INSERT INTO installations (tenant_id, installation_id, provider, kind, external_id, host, webhook_secret)"
            " VALUES (%s, %s, 'github', 'installation', %s, 'github.com', 'sealed')",
            (tenant, uuid.uuid4(), external_id),
        )
        conn.execute(
            "INSERT INTO api_tokens (tenant_id, token_id, token_hash) VALUES (%s, %s, %s)",
            (tenant, uuid.uuid4(), external_id.encode().ljust(32, b"x")),
        )


def _check_lookups(app_url: str) -> None:
    tenant_a, tenant_b = uuid.uuid4(), uuid.uuid4()
    ext_a, ext_b = f"a-{secrets.token_hex(4)}", f"b-{secrets.token_hex(4)}"
    _seed(app_url, tenant_a, ext_a)
    _seed(app_url, tenant_b, ext_b)
    with _as_app(app_url) as conn:
        route = conn.execute(
            "SELECT * FROM palimpsest_webhook_route('github', 'installation', %s, NULL)", (ext_b,)
        ).fetchall()
        assert len(route) == 1
        assert route[0][0] == tenant_b and bytes(route[0][2]) == b"sealed"
        assert len(route[0]) == 4, "tenant, installation, sealed secret and suspension only"
        assert route[0][3] is None
        owner = conn.execute(
            "SELECT * FROM palimpsest_token_tenant(%s)", (ext_a.encode().ljust(32, b"x"),)
        ).fetchall()
        assert [r[0] for r in owner] == [tenant_a]
        # the app role itself still reads nothing across tenants
        with conn.transaction():
            conn.execute("SELECT set_config('app.tenant_id', %s, true)", (str(tenant_a),))
            seen = conn.execute("SELECT DISTINCT tenant_id FROM installations").fetchall()
            assert seen == [(tenant_a,)]
        assert conn.execute("SELECT count(*) FROM installations").fetchone() == (0,)
        assert conn.execute("SELECT count(*) FROM api_tokens").fetchone() == (0,)


def test_lookups_find_rows_while_the_app_role_sees_one_tenant(stack: ServerSet) -> None:
    _check_lookups(stack.app_url)


@pytest.fixture
def non_superuser_owner(stack: ServerSet) -> Iterator[str]:
    """A database owned by a role that is not a superuser (the managed-PostgreSQL case)."""
    suffix = secrets.token_hex(4)
    role, dbname = f"pal_owner_{suffix}", f"palimpsest_owner_{suffix}"
    with psycopg.connect(stack.owner_url, autocommit=True) as conn:
        conn.execute(f'CREATE ROLE "{role}" LOGIN NOSUPERUSER NOBYPASSRLS')
        conn.execute(f'CREATE DATABASE "{dbname}" OWNER "{role}"')
    params = conninfo_to_dict(stack.owner_url)
    params.update({"dbname": dbname, "user": role})
    params.pop("password", None)
    try:
        yield make_conninfo("", **params)
    finally:
        with psycopg.connect(stack.owner_url, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{dbname}" WITH (FORCE)')
            conn.execute(f'DROP OWNED BY "{role}"')
            conn.execute(f'DROP ROLE IF EXISTS "{role}"')


async def test_lookups_work_with_a_non_superuser_owner(stack: ServerSet, non_superuser_owner: str) -> None:
    if stack.db_mode == "external" and "password" in conninfo_to_dict(stack.owner_url):
        pytest.skip("the external server authenticates by password; a fresh role has none")
    await migrate(non_superuser_owner, app_role=APP_ROLE)
    _check_lookups(with_user(non_superuser_owner, APP_ROLE))
