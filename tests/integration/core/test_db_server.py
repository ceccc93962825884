"""The connection layer's own statements (palimpsest.core.db): the embedded stack's database
creation and what ``palimpsest status`` tells of the server — on the session's real PostgreSQL."""

from __future__ import annotations

import secrets

import psycopg

from palimpsest.core.db import ensure_database, server_facts
from tests.support.servers import ServerSet


def _exists(owner_url: str, name: str) -> bool:
    with psycopg.connect(owner_url, autocommit=True) as conn:
        return conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone() is not None


def test_a_missing_database_is_created_once(servers: ServerSet) -> None:
    name = f"palimpsest_ensure_{secrets.token_hex(4)}"
    assert not _exists(servers.owner_url, name)
    try:
        ensure_database(servers.owner_url, name)
        assert _exists(servers.owner_url, name)
        ensure_database(servers.owner_url, name)  # there already: nothing to do, no error
        assert _exists(servers.owner_url, name)
    finally:
        with psycopg.connect(servers.owner_url, autocommit=True) as conn:
            conn.execute(
                psycopg.sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(
                    psycopg.sql.Identifier(name)
                )
            )


async def test_the_server_facts(stack: ServerSet) -> None:
    """Told from other catalogs than the ones the status reads: ``SHOW``, ``pg_extension`` and
    ``pg_available_extension_versions``."""
    async with await psycopg.AsyncConnection.connect(stack.owner_url) as conn:
        facts = await server_facts(conn)
        version = await (await conn.execute("SHOW server_version")).fetchone()
        installed = await (
            await conn.execute("SELECT 1 FROM pg_extension WHERE extname = 'vector'")
        ).fetchone()
        available = await (
            await conn.execute("SELECT 1 FROM pg_available_extension_versions WHERE name = 'vector' LIMIT 1")
        ).fetchone()
    assert version is not None
    assert facts.version == version[0]
    assert facts.pgvector == (installed is not None)
    assert facts.pgvector_available == (available is not None)
