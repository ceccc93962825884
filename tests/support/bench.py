"""A ``palimpsest bench …`` command run as a user runs it: its own scratch home, JSON on stdout."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any


def bench_process(
    name: str, tmp_path: Path, repo: Path, *args: str, timeout: float = 600
) -> subprocess.CompletedProcess[str]:
    """``palimpsest bench NAME --repo REPO --json ARGS…`` with no PALIMPSEST_* setting of the caller's,
    run to its end, whatever its exit code."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PALIMPSEST_")}
    env.update({"PALIMPSEST_HOME": str(tmp_path / "home"), "PALIMPSEST_LOG_FORMAT": "text"})
    return subprocess.run(
        [sys.executable, "-m", "palimpsest.cli.main", "bench", name, "--repo", str(repo), "--json", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def run_bench(name: str, tmp_path: Path, repo: Path, *args: str, timeout: float = 600) -> dict[str, Any]:
    """:func:`bench_process`, which must succeed; its JSON."""
    proc = bench_process(name, tmp_path, repo, *args, timeout=timeout)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out: dict[str, Any] = json.loads(proc.stdout)
    return out
