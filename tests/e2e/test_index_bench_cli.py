"""``palimpsest bench index`` as a user runs it, on a tiny corpus: the first build's figures come
with their yardsticks (issue 23) -- the parse-and-query floor and Universal Ctags where installed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from palimpsest.devtools.bench.cpu import ROLES
from palimpsest.devtools.bench.floor import universal_ctags
from tests.support.bench import run_bench
from tests.support.gitrepo import commit, head, init_repo


def test_bench_index_reports_the_floor_and_ctags(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PALIMPSEST_")}
    env.update({"PALIMPSEST_HOME": str(tmp_path / "home"), "PALIMPSEST_LOG_FORMAT": "text"})
    args = [
        "bench",
        "index",
        "--files",
        "24",
        "--total-mb",
        "0.012",
        "--queries",
        "4",
        "--quiet-timeout",
        "5",
        "--json",
    ]
    proc = subprocess.run(
        [sys.executable, "-m", "palimpsest.cli.main", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout)
    assert out["files"] == 24
    assert out["floor_workers"] >= 1
    assert out["floor_s"] > 0
    assert len(out["floor_runs_s"]) == 2  # before and after the first build
    assert out["floor_s"] == round(sum(out["floor_runs_s"]) / 2, 6)
    assert len(out["quiet_wait_s"]) == 2 and isinstance(out["quiet"], bool)
    # --quiet-timeout bounds each wait (one half-second sample may run past it)
    assert all(w <= 7 for w in out["quiet_wait_s"]), out["quiet_wait_s"]
    assert out["first_build_over_floor"] == round(out["first_build_s"] / out["floor_s"], 2)
    # where the build's CPU went, beside the floor workers' CPU on the same files
    assert len(out["floor_cpu_runs_s"]) == 2 and out["floor_cpu_s"] > 0
    cpu = out["first_build_cpu_s"]
    assert set(cpu["by_role"]) == set(ROLES)
    assert cpu["by_role"]["workers"] > 0  # the chunker's parse workers, below this process
    assert cpu["by_role"]["postgres"] > 0  # the embedded server: its processes are below this one
    assert cpu["total"] == pytest.approx(sum(cpu["by_role"].values()), abs=0.05)
    assert out["first_build_cpu_over_floor_cpu"] == round(cpu["total"] / out["floor_cpu_s"], 2)
    assert out["cpu_budget_at_2x_floor_s"] == round(2 * out["floor_s"] * out["cores"], 2)
    if universal_ctags() is None:
        assert out["ctags_s"] is None
        assert out["ctags_runs_s"] == []
        assert out["first_build_over_ctags"] is None
    else:
        assert out["ctags_s"] > 0
        assert len(out["ctags_runs_s"]) == 2
        assert out["first_build_over_ctags"] == round(out["first_build_s"] / out["ctags_s"], 2)


def test_bench_index_builds_a_real_repository_at_a_commit(tmp_path: Path) -> None:
    """``--repo``/``--rev``: the figures of a repository's own tree, its yardsticks on the files the
    build indexes (not the binary, not the link, not the file over the size cap)."""
    repo = init_repo(tmp_path / "src")
    files: dict[str, str | bytes] = {
        "app/main.py": "def serve_forever():\n    return handle_request()\n",
        "web/view.ts": "export function renderInvoice(total: number): string { return `${total}` }\n",
        "README.md": "# Demo\n\nCall `serve_forever`.\n",
        "logo.png": b"\x89PNG\r\n\x1a\n" + bytes(range(256)),
        "big.py": "x = 1\n" * 100_000,
    }
    commit(repo, "2024-01-01", files)
    (repo / "link.py").symlink_to("app/main.py")
    commit(repo, "2024-01-02", {})
    built = head(repo)
    commit(repo, "2024-01-03", {"later.py": "def later():\n    pass\n"})
    out = run_bench(
        "index", tmp_path, repo, "--rev", "HEAD~1", "--queries", "4", "--rounds", "2", "--quiet-timeout", "5"
    )
    assert (out["corpus"], out["repository"], out["commit"]) == ("repository", str(repo), built)
    assert out["files"] == 3  # main.py, view.ts, README.md
    assert out["chunks"] >= 3 and out["floor_s"] > 0
    # two rounds of the same commit, each after its own yardsticks; the figure is a round's
    assert out["rounds"] == 2 and len(out["first_build_runs_s"]) == 2
    assert out["first_build_s"] == max(out["first_build_runs_s"])  # the upper middle of two
    assert len(out["floor_runs_s"]) == 3 and len(out["quiet_wait_s"]) == 3
    assert len(out["first_build_over_floor_runs"]) == 2
    assert out["first_build_over_floor"] == max(out["first_build_over_floor_runs"])
    assert out["incremental_parsed_blobs"] == 1
    assert out["rows_left_after_delete"] == 0
    assert out["search_queries"] == 4
