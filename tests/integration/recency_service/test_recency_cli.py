"""``palimpsest recency`` and ``palimpsest bench recency`` against the test servers."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import psycopg
import pytest
from click.testing import CliRunner

from palimpsest.cli.commands_recency import recency_text
from palimpsest.cli.main import cli
from tests.support.servers import ServerSet


def _env(stack: ServerSet, home: Path) -> dict[str, str]:
    return {
        "PALIMPSEST_DATABASE_URL": stack.app_url,
        "PALIMPSEST_MIGRATION_DATABASE_URL": stack.owner_url,
        "PALIMPSEST_NATS_URL": stack.nats_url,
        "PALIMPSEST_HOME": str(home),
        "PALIMPSEST_LOG_FORMAT": "text",
    }


@pytest.fixture
def repository(stack: ServerSet) -> tuple[uuid.UUID, uuid.UUID]:
    tenant, repo = uuid.uuid4(), uuid.uuid4()
    with psycopg.connect(stack.app_url) as conn:
        conn.execute("SELECT set_config('app.tenant_id', %s, true)", (str(tenant),))
        conn.execute("INSERT INTO tenants (tenant_id, name) VALUES (%s, %s)", (tenant, f"cli-{tenant}"))
        conn.execute(
            "INSERT INTO repositories (tenant_id, repository_id, provider, full_name, clone_url)"
            " VALUES (%s, %s, 'github', 'team/cli-app', 'https://git.example.invalid/team/cli-app.git')",
            (tenant, repo),
        )
        for path, date in [
            ("src/a.py", "2024-01-01"),
            ("src/b.py", "2024-03-01"),
            ("docs/old.md", "2022-06-01"),
            ("NOTES.txt", None),
        ]:
            conn.execute(
                "INSERT INTO file_recency (tenant_id, repository_id, path, last_commit, last_modified_at)"
                " VALUES (%s, %s, %s, %s, %s)",
                (tenant, repo, path, "a" * 40 if date else None, date),
            )
    return tenant, repo


def test_recency_lists_oldest_first_with_stale_docs(
    stack: ServerSet, repository: tuple[uuid.UUID, uuid.UUID], tmp_path: Path
) -> None:
    tenant, repo = repository
    runner = CliRunner()
    args = ["recency", "--repo", "team/cli-app", "--tenant", str(tenant)]
    result = runner.invoke(cli, [*args, "--json"], env=_env(stack, tmp_path))
    assert result.exit_code == 0, result.output
    listing = json.loads(result.stdout)
    assert listing["repository_id"] == str(repo)
    assert listing["source"] == "recency"
    assert [(f["path"], f["kind"], f["stale"], f["last_modified_at"]) for f in listing["files"]] == [
        ("docs/old.md", "doc", True, "2022-06-01T00:00:00+00:00"),
        ("src/a.py", "code", False, "2024-01-01T00:00:00+00:00"),
        ("src/b.py", "code", False, "2024-03-01T00:00:00+00:00"),
        ("NOTES.txt", "doc", False, None),  # unknown: never stale, listed last
    ]
    assert listing["files"][0]["age"] == "19 months older than typical code in this repo"
    text = runner.invoke(cli, args, env=_env(stack, tmp_path))
    assert text.exit_code == 0, text.output
    assert text.stdout.splitlines()[0].split() == [
        "2022-06-01",
        "doc",
        "STALE",
        "docs/old.md",
        "(19",
        "months",
        "older",
        "than",
        "typical",
        "code",
        "in",
        "this",
        "repo)",
    ]
    assert "unknown" in text.stdout.splitlines()[3]


def test_recency_names_an_unknown_repository(
    stack: ServerSet, repository: tuple[uuid.UUID, uuid.UUID], tmp_path: Path
) -> None:
    tenant, _ = repository
    result = CliRunner().invoke(
        cli, ["recency", "--repo", "team/nope", "--tenant", str(tenant)], env=_env(stack, tmp_path)
    )
    assert result.exit_code == 2
    assert "no repository 'team/nope'" in result.stderr


def test_bench_recency_runs_a_small_generated_history(stack: ServerSet, tmp_path: Path) -> None:
    result = CliRunner().invoke(
        cli, ["bench", "recency", "--commits", "400", "--files", "60", "--json"], env=_env(stack, tmp_path)
    )
    assert result.exit_code == 0, result.output
    figures = json.loads(result.stdout)
    assert figures["status"] == "ok", figures
    assert (figures["commits"], figures["commits_scanned"], figures["files"]) == (400, 400, 60)
    assert figures["files_dated"] == 60
    assert figures["rows"] == figures["files_dated"] + figures["cochange_pairs"]
    assert figures["scan_s"] > 0
    assert figures["peak_rss_mb"] > 0


def test_recency_text_without_a_scan() -> None:
    text = recency_text({"files": [], "source": "recency", "median_code_date": None, "scan": None})
    assert (
        text == "0 files from the recency, 0 stale docs; median code date unknown; last scan: never scanned"
    )
