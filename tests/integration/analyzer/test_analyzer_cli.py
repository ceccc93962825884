"""``palimpsest analyze``'s core (``run_analysis``) against the test stack, through the bus.

The CLI's session is replaced by the test's infrastructure; the services are the real chunker,
recency-scanner and analyzer on throw-away consumers. ``make demo`` itself runs in
tests/e2e/test_analyzer_demo.py.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from palimpsest.cli.commands_analyze import (
    AnalyzeFailed,
    explain_claim,
    render_explain,
    render_text,
    run_analysis,
)
from palimpsest.cli.main import cli
from palimpsest.cli.session import Session
from palimpsest.cli.stack import StackInfo
from palimpsest.core.service import Infra
from tests.conftest import settings_for
from tests.integration.analyzer.support import (
    analyzer_for,
    analyzer_settings,
    indexer_definitions,
    query,
    running,
)
from tests.support.gitrepo import commit, head, init_repo
from tests.support.servers import ServerSet
from tests.support.tenants import create_tenant


def session_for(infra: Infra, servers: ServerSet) -> Session:
    stack = StackInfo(servers.owner_url, servers.app_url, servers.nats_url, False, False, str(servers.home))
    return Session(stack, infra, started_here=False)


async def test_analyze_indexes_when_needed_and_returns_the_json_view(
    infra: Infra, stack: ServerSet, tmp_path: Path
) -> None:
    repo = init_repo(tmp_path / "cli-repo")
    commit(
        repo,
        "2023-01-01T00:00:00+00:00",
        {
            "README.md": "# CLI\n\nRun `serve_forever()`.\n",
            "app/main.py": "def serve_forever(port):\n    return port\n",
        },
    )
    first = head(repo)
    commit(
        repo,
        "2024-01-01T00:00:00+00:00",
        {
            "app/main.py": "def serve(port):\n    return port\n",
            "app/db.py": "def connect(url):\n    return url\n",
        },
    )
    second = head(repo)
    tenant = await create_tenant(infra.pool, "cli")
    sess, settings = session_for(infra, stack), settings_for(stack)
    definitions = [
        *indexer_definitions({tenant}),
        analyzer_for(infra, {tenant}, analyzer_settings(analysis_auto=False)),
    ]
    async with running(infra, definitions):
        view = await run_analysis(sess, settings, str(repo), tenant=tenant, timeout_s=120)
        again = await run_analysis(sess, settings, str(repo), tenant=tenant, timeout_s=120)
        snapshots = await query(infra, tenant, "SELECT count(*) AS n FROM code_index_snapshots")
        assert snapshots[0]["n"] == 1  # the head was indexed already: no second build
        commit(repo, "2024-02-01T00:00:00+00:00", {"app/cache.py": "def get(key):\n    return key\n"})
        third = await run_analysis(sess, settings, f"file://{repo}", tenant=tenant, timeout_s=120)
        explained = await explain_claim(sess, settings, str(repo), "`serve_forever()`", tenant=tenant)
        nothing = await explain_claim(sess, settings, str(repo), "never_named", tenant=tenant)
    # --explain: the claim's path through the check, rule by rule
    assert [(e["doc"], e["line"], e["stage"], e["rule"]) for e in explained] == [
        ("README.md", 3, "resolve", "claim"),
        ("README.md", 3, "judge", "finding"),
    ]
    assert "defined in app/main.py" in explained[-1]["why"]
    assert "**finding**" in render_explain("serve_forever", explained)
    assert nothing == [] and "No doc mention" in render_explain("never_named", nothing)
    assert view["state"] == "completed" and view["mode"] == "mechanical"
    assert view["analysis"].startswith("# Repository analysis: cli-repo")
    assert view["summary"]
    assert view["median_code"] is not None
    assert {s["path"] for s in view["selection"]} == {"README.md", "app/main.py", "app/db.py"}
    for entry in view["selection"]:
        assert {"path", "kind", "last_modified_at", "stale"} <= set(entry)
    finding = next(f for f in view["doc_findings"] if f["kind"] == "missing_identifier")
    evidence = finding.pop("evidence")
    assert (
        finding
        == {
            "doc": "README.md",
            "line": 3,
            "claim": "`serve_forever`",
            "kind": "missing_identifier",
            "nearest": "serve",  # the one definition app/main.py gained when it lost serve_forever
            "detail": f"defined in app/main.py until {second[:12]}, which made it serve; the line was written while it existed",
        }
    )
    assert evidence == {
        "last_seen_commit": first,
        "last_seen_at": "2023-01-01T00:00:00+00:00",
        "removed_in_commit": second,
        "removed_at": "2024-01-01T00:00:00+00:00",
        "renamed_to": "serve",
        "seen_in": "app/main.py",
        "how": "defined",
        "line_commit": first,
        "line_written_at": "2023-01-01T00:00:00+00:00",
        "written_while_existed": True,
        "subject": "serve_forever",
    }
    assert view["facts"]["doc_check"]["history"] == "read"
    assert again["analysis_id"] != view["analysis_id"] and again["snapshot_id"] == view["snapshot_id"]
    assert third["snapshot_id"] != view["snapshot_id"]
    assert "app/cache.py" in {s["path"] for s in third["selection"]}
    text = render_text(view)
    assert text.startswith("# Repository analysis") and "## Summary" in text


def test_the_cli_has_the_analyze_command() -> None:
    command = cli.commands["analyze"]
    assert [p.name for p in command.params] == [
        "target",
        "tenant",
        "reindex",
        "timeout_s",
        "as_json",
        "explain",
    ]


async def test_analyze_refuses_an_internal_url_before_git_runs(
    infra: Infra, stack: ServerSet, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`palimpsest analyze URL` registers a remote by URL: the source policy applies first (before
    this, it ran `git ls-remote` on any URL with the operator's whole environment)."""
    shim = tmp_path / "bin"
    shim.mkdir()
    ran = tmp_path / "git-ran"
    (shim / "git").write_text(f"#!/bin/sh\ntouch {ran}\nexit 1\n")
    (shim / "git").chmod(0o755)
    monkeypatch.setenv("PATH", f"{shim}:{os.environ['PATH']}")
    tenant = await create_tenant(infra.pool, "cli-refused")
    sess, settings = session_for(infra, stack), settings_for(stack)
    for url in (
        "https://127.0.0.1/org/repo.git",
        "https://169.254.169.254/x.git",
        "ssh://git@10.0.0.5/r.git",
    ):
        with pytest.raises(AnalyzeFailed, match=r"source_refused"):
            await run_analysis(sess, settings, url, tenant=tenant, timeout_s=10)
    assert not ran.exists()
    assert await query(infra, tenant, "SELECT count(*) AS n FROM repositories") == [{"n": 0}]
