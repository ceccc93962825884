"""``make demo`` as a user runs it: ``palimpsest demo --repo PATH`` on a fresh embedded stack.

The demo always starts its own embedded PostgreSQL and NATS (in a temporary home), whatever the
test session runs against: with shared servers its in-process services, on their production
durable consumers, would also pick up other tests' events.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.support.gitrepo import commit, init_repo

CLI = [sys.executable, "-m", "palimpsest.cli.main"]


def test_demo_prints_the_mechanical_analysis(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "demo-repo")
    commit(
        repo,
        "2022-01-01T00:00:00+00:00",
        {
            "README.md": "# Demo\n\nStart with `launch_rocket()`.\n",
            "docs/plan.md": "# Plan\n\nGoverns: src/engine\n",
            "src/engine/run.py": "def launch_rocket(x):\n    return x\n",
        },
    )
    commit(
        repo,
        "2024-05-01T00:00:00+00:00",
        {"src/engine/run.py": None, "src/motor/run.py": "def launch(x):\n    return x\n"},
    )
    home = tmp_path / "home"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PALIMPSEST_", "LITELLM_"))}
    env.update(
        {"PALIMPSEST_HOME": str(home), "PALIMPSEST_LOG_FORMAT": "text", "PALIMPSEST_LOG_LEVEL": "WARNING"}
    )
    out = subprocess.run(
        [*CLI, "demo", "--repo", str(repo)], env=env, capture_output=True, timeout=240, check=False
    )
    stdout, stderr = out.stdout.decode(), out.stderr.decode()
    assert out.returncode == 0, stderr[-3000:]
    assert stdout.startswith("# Repository analysis: demo-repo")
    assert "No model is configured" in stdout and "PALIMPSEST_LLM_MODEL" in stdout
    # an old doc whose claim the history disproves is drift, reported as such rather than as old
    assert "| `README.md` | 2022-01-01 | drift (see the documentation check) |" in stdout
    assert "`launch_rocket`" in stdout and "Governs: src/engine" in stdout
    assert "## Summary" in stdout
    assert "analysis.requested → analysis.completed" in stderr
    assert not (home / "postgres" / "data" / "postmaster.pid").exists()
