"""``palimpsest bench cochange`` as a user runs it: a scratch embedded stack, the real pipeline.

The command starts its own embedded PostgreSQL and NATS (no URLs in the environment), indexes
the planted repository's REV through every service, and scores its history.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from palimpsest.devtools.bench.cochange import STRATEGIES
from tests.integration.graph.support import COMMITS, planted_repository
from tests.support.gitrepo import git


def test_bench_cochange_on_a_scratch_stack(tmp_path: Path) -> None:
    repo = tmp_path / "planted"
    head = planted_repository(repo)
    older = git(repo, "rev-parse", "HEAD~5").strip()
    env = {k: v for k, v in os.environ.items() if not k.startswith("PALIMPSEST_")}
    env.update({"PALIMPSEST_HOME": str(tmp_path / "home"), "PALIMPSEST_LOG_FORMAT": "text"})
    args = ["bench", "cochange", "--repo", str(repo), "--rev", "HEAD~5", "--commits", "30", "--trials", "20"]
    proc = subprocess.run(
        [sys.executable, "-m", "palimpsest.cli.main", *args, "--k", "4", "--seed", "4", "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout)
    assert out["commit"] == older != head
    assert out["history_commits"] == COMMITS + 1 - 5
    assert (out["commits"], out["trials"], out["k"], out["seed"]) == (30, 20, 4, 4)
    assert out["pool"] == 21
    assert set(out["recall"]) == set(STRATEGIES)
    assert out["recall"]["hops1"] > out["recall"]["random"]
    assert "indexing" in proc.stderr
