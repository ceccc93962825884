"""``palimpsest search --mode hybrid`` and ``palimpsest snapshots`` against the test servers."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from palimpsest.cli.main import cli
from palimpsest.core.db import tenant_tx
from palimpsest.core.events import SnapshotBuilt, SnapshotEmbedded
from palimpsest.core.service import Infra
from palimpsest.devtools.fakes.llm import FakeLLM
from tests.integration.embedder.bus import KEY, MODEL, pipeline
from tests.integration.embedder.corpus import FILES
from tests.integration.embedder.support import has_pgvector, index, make_repo, new_repository
from tests.integration.embedder.vectors import trigram_vector
from tests.support.servers import ServerSet


def _env(stack: ServerSet, home: Path, fake: FakeLLM) -> dict[str, str]:
    return {
        "PALIMPSEST_DATABASE_URL": stack.app_url,
        "PALIMPSEST_MIGRATION_DATABASE_URL": stack.owner_url,
        "PALIMPSEST_NATS_URL": stack.nats_url,
        "PALIMPSEST_HOME": str(home),
        "PALIMPSEST_LOG_FORMAT": "text",
        "PALIMPSEST_LLM_API_BASE": fake.base_url,
        "PALIMPSEST_LLM_API_KEY": KEY,
    }


@pytest.fixture
def fake() -> Iterator[FakeLLM]:
    with FakeLLM(dimensions=384, vectorizer=trigram_vector, api_key=KEY) as server:
        yield server


async def invoke(args: list[str], env: dict[str, str]) -> Result:
    # the command runs its own event loop: give it a thread of its own
    return await asyncio.to_thread(CliRunner().invoke, cli, args, env=env)


async def test_search_mode_hybrid_and_snapshots(
    infra: Infra, stack: ServerSet, tmp_path: Path, fake: FakeLLM
) -> None:
    pgvector = await has_pgvector(infra)
    repo = make_repo(tmp_path / "cli", FILES)
    tenant, repo_id = await new_repository(infra, repo, name="cli")
    async with pipeline(infra, fake):
        await index(infra, tenant, repo_id, wait=(SnapshotBuilt, SnapshotEmbedded))
    env = _env(stack, tmp_path / "home", fake)
    common = ["--repo", str(repo_id), "--tenant", str(tenant)]

    result = await invoke(["search", "hashing passwords", *common, "--mode", "hybrid", "--json"], env)
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    if pgvector:
        assert (data["mode"], data["semantic"], data["model"]) == ("hybrid", "ok", MODEL)
        assert data["hits"][0]["name"] == "hash_password"
        assert fake.requests("embeddings")[-1].body["input"] == ["hashing passwords"]
        async with tenant_tx(infra.pool, tenant) as conn:
            cur = await conn.execute("SELECT feature FROM llm_usage WHERE reference = 'search'")
            assert [r["feature"] for r in await cur.fetchall()] == ["search"]  # not `index`
    else:
        assert (data["mode"], data["semantic"]) == ("lexical", "unavailable")
        assert data["reason"].startswith("pgvector_missing")
    text = await invoke(["search", "hashing passwords", *common, "--mode", "hybrid"], env)
    assert text.exit_code == 0, text.output
    assert text.stdout.splitlines()[0].startswith(
        "mode hybrid" if pgvector else "mode lexical (semantic unavailable"
    )

    lexical = await invoke(["search", "compute_invoice_total", *common, "--json"], env)
    assert lexical.exit_code == 0 and json.loads(lexical.stdout)[0]["name"] == "compute_invoice_total"

    snaps = await invoke(["snapshots", *common], env)
    assert snaps.exit_code == 0, snaps.output
    expected = "embedding=ready" if pgvector else "embedding=skipped (pgvector_missing"
    assert expected in snaps.stdout
    rows = json.loads((await invoke(["snapshots", *common, "--json"], env)).stdout)
    assert rows[0]["embedding_model"] == MODEL and rows[0]["embedding_state"] == (
        "ready" if pgvector else "skipped"
    )
