"""``palimpsest bench replay`` as a user runs it: a scratch embedded stack, the real reviewer.

The planted repository (tests/support/replayrepo.py) has one eligible change with a known answer:
the seed's co-change partner and the file that calls a changed definition must be in the context,
the target nothing points at is reported as never a candidate, and the history after the change
(the seed paired five times with ``pkg/late.py``) must not reach it: the replay is causal.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.support.replayrepo import replay_repository

COMMAND = [sys.executable, "-m", "palimpsest.cli.main", "bench", "replay"]


def test_bench_replay_finds_the_partner_and_the_usage_and_explains_the_rest(tmp_path: Path) -> None:
    repo = tmp_path / "shop"
    shas = replay_repository(repo)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PALIMPSEST_")}
    env.update({"PALIMPSEST_HOME": str(tmp_path / "home"), "PALIMPSEST_LOG_FORMAT": "text"})
    report = tmp_path / "missing.md"
    proc = subprocess.run(
        [
            *COMMAND,
            "--repo",
            str(repo),
            "--changes",
            "5",
            "--seed",
            "1",
            "--seed",
            "2",
            "--json",
            "--report",
            str(report),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout)
    assert (out["eligible"], out["seeds"], out["commit"]) == (1, [1, 2], shas["head"])
    [record] = out["records"]  # both seeds draw the one change: replayed once
    assert (record["change"], record["base"], record["seed"]) == (
        shas["change"],
        shas["base"],
        "pkg/billing.py",
    )
    assert record["state"] == "completed" and record["snapshot_on_base"] is True
    assert record["index"]["state"] == "ready"

    context = record["context"]
    assert "pkg/ledger.py" in context and "pkg/report.py" in context
    assert "pkg/late.py" not in context[:2]  # later history is not known at the base
    assert "changed together with pkg/billing.py in 5 commits" in record["reasons"]["pkg/ledger.py"]
    assert "compute_total" in record["reasons"]["pkg/report.py"]
    assert all(record["reasons"][p] for p in context)  # every item says why it is there

    assert record["recall"]["context"] == {"targets": 0.5, "usages": 1.0, "both": 2 / 3}
    assert record["recall"]["none"]["both"] == 0.0
    assert record["baselines"]["mix"][:2] == ["pkg/ledger.py", "pkg/report.py"]
    assert record["missing"] == [{"path": "tools/unrelated.py", "kind": "target", "why": _why(record)}]
    assert out["recall"]["context"]["both"] == {"mean": round(2 / 3, 4), "spread": 0.0}
    assert out["per_seed"]["1"]["changes"] == out["per_seed"]["2"]["changes"] == 1

    text = report.read_text()
    assert "tools/unrelated.py" in text and "| context |" in text


def _why(record: dict[str, object]) -> str:
    missing = record["missing"]
    assert isinstance(missing, list)
    return str(missing[0]["why"])
