"""The embeddings of each repository in their own partition (migration 0037): who may create,
index and drop one, the bulk load that builds the HNSW index after the rows, and the migration
that moves existing vectors into partitions."""

from __future__ import annotations

import secrets
import uuid
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from palimpsest.core import migrate as migrations
from palimpsest.core.db import tenant_tx
from palimpsest.core.service import Infra
from palimpsest.embedder.store import index_partition, open_partition, write_vectors
from palimpsest.ingest.store.repositories import drop_embedding_partitions
from tests.integration.embedder.support import has_pgvector
from tests.support.servers import APP_ROLE, ServerSet
from tests.support.tenants import create_tenant

MODEL = "fake/partition-384"


def _vector(i: int) -> list[float]:
    return [((i * 7 + d) % 13) / 13.0 + 0.01 for d in range(384)]


async def _repository(infra: Infra, name: str) -> tuple[uuid.UUID, uuid.UUID]:
    tenant = await create_tenant(infra.pool, name)
    repo = uuid.uuid4()
    async with tenant_tx(infra.pool, tenant) as conn:
        await conn.execute(
            "INSERT INTO repositories (tenant_id, repository_id, provider, full_name, clone_url, index_mode)"
            " VALUES (%s, %s, 'local', %s, %s, 'hybrid')",
            (tenant, repo, f"part/{repo.hex[:8]}", f"file:///nowhere/{repo.hex}"),
        )
        await conn.execute(
            "INSERT INTO code_blobs (tenant_id, repository_id, blob_sha, chunk_count) VALUES (%s, %s, 'b1', 1200)",
            (tenant, repo),
        )
        await conn.execute(
            "INSERT INTO code_chunks (tenant_id, repository_id, blob_sha, ordinal, content)"
            " SELECT %s, %s, 'b1', g, 'chunk ' || g FROM generate_series(0, 1199) g",
            (tenant, repo),
        )
    return tenant, repo


def _partition(stack: ServerSet, repo: uuid.UUID) -> dict[str, Any]:
    """The repository's partition as the catalog has it: present, its HNSW indexes, its comment."""
    name = f"embeddings_{repo.hex}"
    with psycopg.connect(stack.owner_url) as conn:
        row = conn.execute(
            "SELECT c.relispartition, c.relforcerowsecurity, obj_description(c.oid, 'pg_class')"
            " FROM pg_class c WHERE c.relname = %s",
            (name,),
        ).fetchone()
        indexes = conn.execute(
            "SELECT indexname FROM pg_indexes WHERE tablename = %s AND indexdef LIKE '%%hnsw%%' ORDER BY 1",
            (name,),
        ).fetchall()
    if row is None:
        return {"exists": False}
    return {
        "exists": True,
        "attached": row[0],
        "forced": row[1],
        "comment": row[2],
        "hnsw": [r[0] for r in indexes],
    }


async def test_a_tenant_opens_only_its_own_repositories_partition(infra: Infra, stack: ServerSet) -> None:
    tenant, repo = await _repository(infra, "part-own")
    other = await create_tenant(infra.pool, "part-other")
    for who in (other, uuid.uuid4()):  # another tenant, a tenant that does not exist
        for statement in (
            "SELECT palimpsest_embedding_partition(%s)",
            "SELECT palimpsest_embedding_bulk_load(%s, 5000)",
            "SELECT palimpsest_index_embeddings(%s)",
        ):
            with pytest.raises(psycopg.errors.InsufficientPrivilege, match="not one of the current tenant"):
                async with tenant_tx(infra.pool, who) as conn:
                    await conn.execute(statement, (repo,))
    assert _partition(stack, repo) == {"exists": False}
    async with tenant_tx(infra.pool, tenant) as conn:
        assert await open_partition(conn, repo, 10) is False  # new: nothing to drop
        await open_partition(conn, repo, 10)  # once only
    found = _partition(stack, repo)
    assert found["attached"] and found["forced"] and found["hnsw"] == []
    assert found["comment"] == f"embeddings of repository {repo} of tenant {tenant}"
    # the app role reads the partition only through the parent, under the parent's policy
    with psycopg.connect(stack.app_url) as conn, pytest.raises(psycopg.errors.InsufficientPrivilege):
        conn.execute(f"SELECT count(*) FROM embeddings_{repo.hex}")


async def test_a_bulk_load_builds_the_index_after_the_rows(infra: Infra, stack: ServerSet) -> None:
    if not await has_pgvector(infra):
        pytest.skip("needs pgvector (embedded PostgreSQL 18)")
    tenant, repo = await _repository(infra, "part-bulk")
    rows = [("b1", i, _vector(i), False) for i in range(1100)]
    hnsw_384 = f"embeddings_{repo.hex}_hnsw_384"
    async with tenant_tx(infra.pool, tenant) as conn:
        assert await open_partition(conn, repo, len(rows)) is False
        assert await write_vectors(conn, tenant, repo, MODEL, rows[:1000]) == 1000
    assert _partition(stack, repo)["hnsw"] == []  # written without a graph to maintain
    async with tenant_tx(infra.pool, tenant) as conn:
        assert await index_partition(conn, repo, analyze=True) == 1
    async with tenant_tx(infra.pool, tenant) as conn:
        assert await index_partition(conn, repo, analyze=False) == 0  # built once
    assert _partition(stack, repo)["hnsw"] == [hnsw_384]
    async with tenant_tx(infra.pool, tenant) as conn:  # a few more (incremental): through the index
        assert await open_partition(conn, repo, 100) is False
        assert await write_vectors(conn, tenant, repo, MODEL, rows[1000:]) == 100
    assert _partition(stack, repo)["hnsw"] == [hnsw_384]
    async with tenant_tx(infra.pool, tenant) as conn:  # as large as what it holds (a model change)
        assert await open_partition(conn, repo, 1100) is True
    assert _partition(stack, repo)["hnsw"] == []
    async with tenant_tx(infra.pool, tenant) as conn:
        assert await write_vectors(conn, tenant, repo, "fake/other-768", [("b1", 0, [0.5] * 768, False)]) == 1
        assert await index_partition(conn, repo, analyze=False) == 2  # both dimensions it holds
    assert _partition(stack, repo)["hnsw"] == [hnsw_384, f"embeddings_{repo.hex}_hnsw_768"]


async def test_partitions_of_deleted_repositories_are_dropped(infra: Infra, stack: ServerSet) -> None:
    tenant, gone = await _repository(infra, "part-gone")
    other, kept = await _repository(infra, "part-kept")
    for who, repo in ((tenant, gone), (other, kept)):
        async with tenant_tx(infra.pool, who) as conn:
            await write_vectors(conn, who, repo, MODEL, [("b1", 0, _vector(0), False)])
    async with tenant_tx(infra.pool, tenant) as conn:
        await conn.execute("DELETE FROM repositories WHERE repository_id = %s", (gone,))
    assert _partition(stack, gone)["exists"]  # empty (its rows went with the blobs) until the sweep
    async with tenant_tx(infra.pool, other) as conn:  # any tenant's call sweeps every tenant's
        assert await drop_embedding_partitions(conn) >= 1
        cur = await conn.execute("SELECT current_setting('app.tenant_id') AS t")
        assert (await cur.fetchone())["t"] == str(other)  # type: ignore[index]
    assert _partition(stack, gone) == {"exists": False}
    assert _partition(stack, kept)["exists"]
    async with tenant_tx(infra.pool, other) as conn:
        cur = await conn.execute(
            "SELECT count(*) AS n FROM code_chunk_embeddings WHERE repository_id = %s", (kept,)
        )
        assert (await cur.fetchone())["n"] == 1  # type: ignore[index]


@pytest.fixture
def scratch_database(stack: ServerSet) -> Iterator[str]:
    """An empty database on the test server, dropped afterwards."""
    dbname = f"palimpsest_mig_{secrets.token_hex(4)}"
    with psycopg.connect(stack.owner_url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{dbname}"')
    params = conninfo_to_dict(stack.owner_url)
    params["dbname"] = dbname
    try:
        yield make_conninfo("", **params)
    finally:
        with psycopg.connect(stack.owner_url, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{dbname}" WITH (FORCE)')


async def test_the_migration_moves_existing_vectors_into_partitions(scratch_database: str) -> None:
    await migrations.migrate(scratch_database, app_role=APP_ROLE, until=36)
    tenant, repo, deleted = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
    with psycopg.connect(scratch_database) as conn:
        vector = conn.execute("SELECT 1 FROM pg_extension WHERE extname = 'vector'").fetchone() is not None
        conn.execute("INSERT INTO tenants (tenant_id, name) VALUES (%s, 'mig')", (tenant,))
        conn.execute(
            "INSERT INTO repositories (tenant_id, repository_id, provider, full_name, clone_url, index_mode)"
            " VALUES (%s, %s, 'local', 'mig/one', 'file:///mig', 'hybrid')",
            (tenant, repo),
        )
        for target in (repo, deleted):  # vectors of a repository that is gone are left behind
            conn.execute(
                "INSERT INTO code_chunk_embeddings (tenant_id, repository_id, blob_sha, ordinal, model, embedding)"
                " SELECT %s, %s, 'b1', g, %s, array_fill(g::real, ARRAY[384]) FROM generate_series(1, 30) g",
                (tenant, target, MODEL),
            )
    report = await migrations.migrate(scratch_database, app_role=APP_ROLE)
    assert "0037_embedding_partitions" in report.applied
    with psycopg.connect(scratch_database) as conn:
        assert conn.execute("SELECT to_regclass('code_chunk_embeddings_0036')").fetchone() == (None,)
        parts = conn.execute(
            "SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid"
            " WHERE i.inhparent = 'code_chunk_embeddings'::regclass"
        ).fetchall()
        assert parts == [(f"embeddings_{repo.hex}",)]
        moved = conn.execute(
            "SELECT count(*), min(dimension), sum(embedding[1]) FROM code_chunk_embeddings WHERE repository_id = %s",
            (repo,),
        ).fetchone()
        assert moved == (30, 384, sum(range(1, 31)))
        hnsw = conn.execute(
            "SELECT indexname FROM pg_indexes WHERE tablename = %s AND indexdef LIKE '%%hnsw%%'",
            (f"embeddings_{repo.hex}",),
        ).fetchall()
        assert hnsw == ([(f"embeddings_{repo.hex}_hnsw_384",)] if vector else [])


async def test_the_index_benchmark_sizes_the_partitions_with_their_parent(infra: Infra) -> None:
    from palimpsest.devtools.bench.index import INDEX_TABLES, _db_bytes, _table_mb

    tenant, repo = await _repository(infra, "part-size")
    before = await _table_mb(infra, tenant)
    async with tenant_tx(infra.pool, tenant) as conn:
        await write_vectors(conn, tenant, repo, MODEL, [("b1", i, _vector(i), False) for i in range(1000)])
    after = await _table_mb(infra, tenant)
    assert set(after) == {name + suffix for name in INDEX_TABLES for suffix in ("", "_indexes")}
    assert (
        after["code_chunk_embeddings"] >= before.get("code_chunk_embeddings", 0.0) + 1.0
    )  # ~1.6 MB of vectors
    assert await _db_bytes(infra, tenant) > after["code_chunk_embeddings"] * 1e6
