"""``palimpsest context``, ``index-report`` / ``report`` against the test servers."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest
from click.testing import CliRunner

from palimpsest.cli.main import cli
from palimpsest.core.service import Infra
from tests.integration.graph.support import index_path, running_chunker
from tests.support.gitrepo import commit, init_repo
from tests.support.servers import ServerSet
from tests.support.tenants import create_tenant

FILES = {
    "src/core.py": "def core_value():\n    return 1\n",
    "src/service.py": "from src.core import core_value\n\n\ndef serve():\n    return core_value()\n",
    "src/handler.py": "from src.service import serve\n\n\ndef handle():\n    return serve()\n",
    "docs/core.md": "# Core\n\nGoverns: src/core.py\nGoverns: src/removed\n",
    "deploy/values.yaml": "replicas: 2\n",
}


def _env(stack: ServerSet, home: Path) -> dict[str, str]:
    return {
        "PALIMPSEST_DATABASE_URL": stack.app_url,
        "PALIMPSEST_MIGRATION_DATABASE_URL": stack.owner_url,
        "PALIMPSEST_NATS_URL": stack.nats_url,
        "PALIMPSEST_HOME": str(home),
        "PALIMPSEST_LOG_FORMAT": "text",
    }


@pytest.fixture(scope="module")
async def indexed(infra: Infra, tmp_path_factory: pytest.TempPathFactory) -> tuple[uuid.UUID, uuid.UUID]:
    repo = init_repo(tmp_path_factory.mktemp("graph-cli") / "repo")
    commit(repo, "2024-05-01", FILES)
    tenant = await create_tenant(infra.pool, "graph-cli")
    async with running_chunker(infra):
        repo_id, built = await index_path(infra, tenant, repo)
    assert built.state == "ready", built
    return tenant, repo_id


def test_context_prints_ranked_paths_with_reasons(
    stack: ServerSet, indexed: tuple[uuid.UUID, uuid.UUID], tmp_path: Path
) -> None:
    tenant, repo = indexed
    base = ["context", "--repo", str(repo), "--tenant", str(tenant), "--seed", "src/service.py"]
    result = CliRunner().invoke(cli, [*base, "--json"], env=_env(stack, tmp_path))
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert out["hops"] == 1
    assert out["budget"] == 2000
    reasons = {r["path"]: (r["via"], r["reason"]) for r in out["results"]}
    assert reasons == {
        "src/core.py": ("imports", "imported by src/service.py"),
        "src/handler.py": ("imports", "imports src/service.py"),
    }

    text = CliRunner().invoke(cli, [*base, "--hops", "all"], env=_env(stack, tmp_path))
    assert text.exit_code == 0, text.output
    assert "docs/core.md" in text.stdout  # two hops: service -> core -> governing doc
    assert "imported by src/service.py" in text.stdout

    tight = CliRunner().invoke(cli, [*base, "--budget", "12", "--json"], env=_env(stack, tmp_path))
    tight_out = json.loads(tight.stdout)
    assert len(tight_out["results"]) == 1 and tight_out["dropped"] == 1


def test_context_refuses_unknown_seeds_and_bad_hops(
    stack: ServerSet, indexed: tuple[uuid.UUID, uuid.UUID], tmp_path: Path
) -> None:
    tenant, repo = indexed
    base = ["context", "--repo", str(repo), "--tenant", str(tenant)]
    unknown = CliRunner().invoke(cli, [*base, "--seed", "src/nope.py"], env=_env(stack, tmp_path))
    assert unknown.exit_code == 2
    assert "seed 'src/nope.py' matches no file, directory or symbol" in unknown.stderr
    bad = CliRunner().invoke(cli, [*base, "--seed", "src/core.py", "--hops", "0"], env=_env(stack, tmp_path))
    assert bad.exit_code == 2
    assert "expected a positive integer or 'all'" in bad.stderr


def test_index_report_and_its_alias(
    stack: ServerSet, indexed: tuple[uuid.UUID, uuid.UUID], tmp_path: Path
) -> None:
    tenant, repo = indexed
    args = ["--repo", str(repo), "--tenant", str(tenant)]
    result = CliRunner().invoke(cli, ["index-report", *args, "--json"], env=_env(stack, tmp_path))
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert out["repository_id"] == str(repo)
    assert out["no_parser"] == {".yaml": 1}
    assert out["governs_unmatched"] == [{"path": "docs/core.md", "line": 4, "target": "src/removed"}]
    assert out["imports"]["resolved"] == 2
    alias = CliRunner().invoke(cli, ["report", *args], env=_env(stack, tmp_path))
    assert alias.exit_code == 0, alias.output
    assert "docs/core.md:4  Governs: src/removed" in alias.stdout
    assert "files without a parser (no definitions, no edges), by extension: .yaml 1" in alias.stdout
