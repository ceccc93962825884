"""``palimpsest bench ui`` as a user runs it: a scratch embedded stack, the real pipeline, every page
and its JSON route answered (figures not asserted: speed is reported, never a test)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

PAGES = {"repositories", "repository", "file", "reviews", "review", "search"}


def test_bench_ui_on_a_scratch_stack(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PALIMPSEST_")}
    env.update({"PALIMPSEST_HOME": str(tmp_path / "home"), "PALIMPSEST_LOG_FORMAT": "text"})
    args = ["bench", "ui", "--files", "120", "--total-mb", "0.3", "--findings", "12", "--reviews", "4"]
    proc = subprocess.run(
        [sys.executable, "-m", "palimpsest.cli.main", *args, "--calls", "2", "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=280,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout)
    assert out["errors"] == {}, out["errors"]  # every page and route answered 200
    assert (out["files"], out["doc_findings"], out["reviews"], out["calls_per_page"]) == (120, 12, 4, 2)
    assert set(out["p95_ratio_ui_to_api"]) == PAGES
    assert set(out["p95_ms"]) == {f"{side}:{p}" for side in ("ui", "api") for p in PAGES}
    assert set(out["targets"]) == {
        "every_page_p95_at_most_2x_its_route",
        "repository_page_p95_at_most_150_ms",
    }
