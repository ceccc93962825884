"""``palimpsest bench replay`` as a user runs it: a scratch embedded stack, the real reviewer.

The planted repository (tests/support/replayrepo.py) has one eligible change with a known answer:
the seed's co-change partner and the file that calls a changed definition must be in the context
and say why; the target over the file-size limit is reported as not indexed; with a budget too
small for everything, what did not fit is reported below the cut with its rank; and the history
after the change (the seed paired five more times with ``pkg/late.py``) never reaches it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.support.bench import run_bench
from tests.support.replayrepo import replay_repository


@pytest.fixture(scope="module")
def shop(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    path = tmp_path_factory.mktemp("replay-e2e") / "shop"
    return path, replay_repository(path)


def replay(tmp_path: Path, repo: Path, *args: str) -> dict[str, Any]:
    return run_bench("replay", tmp_path, repo, *args, timeout=300)


def test_bench_replay_finds_the_partner_and_the_usage_and_explains_the_rest(
    tmp_path: Path, shop: tuple[Path, dict[str, str]]
) -> None:
    repo, shas = shop
    report = tmp_path / "missing.md"
    out = replay(tmp_path, repo, "--changes", "5", "--seed", "1", "--seed", "2", "--report", str(report))
    assert (out["eligible"], out["seeds"], out["commit"]) == (1, [1, 2], shas["head"])
    [record] = out["records"]  # both seeds draw the one change: replayed once
    assert (record["change"], record["base"], record["seed"]) == (
        shas["change"],
        shas["base"],
        "pkg/billing.py",
    )
    assert record["state"] == "completed" and record["snapshot_on_base"] is True
    assert record["index"]["state"] == "ready"

    context, reasons = record["context"], record["reasons"]
    assert {"pkg/ledger.py", "pkg/report.py", "tools/unrelated.py"} <= set(context)
    if "pkg/late.py" in context:  # five shared commits outrank one
        assert context.index("pkg/ledger.py") < context.index("pkg/late.py")
    assert "changed together with pkg/billing.py in 5 commits" in reasons["pkg/ledger.py"]
    assert "compute_total" in reasons["pkg/report.py"]
    assert all(reasons[p] for p in context)  # every item says why it is there
    # causal: at the base, late.py shared one commit with the seed (five more come after)
    late = reasons.get("pkg/late.py", "")
    assert "changed together" not in late or "pkg/billing.py in 1 commit;" in f"{late};"

    targets = ["pkg/ledger.py", "pkg/tables.py", "tools/unrelated.py"]
    assert (record["targets"], record["usages"]) == (targets, ["pkg/report.py"])
    assert record["recall"]["context"] == {"targets": 2 / 3, "usages": 1.0, "both": 3 / 4}
    assert record["recall"]["none"]["both"] == 0.0
    assert record["baselines"]["mix"][:2] == ["pkg/ledger.py", "pkg/report.py"]
    assert record["missing"] == [
        {"path": "pkg/tables.py", "kind": "target", "why": "not_indexed", "reason": "too_large"}
    ]
    assert out["recall"]["context"]["both"] == {"mean": 0.75, "spread": 0.0}
    # the co-change warning: ledger.py alone (late.py's habit starts after the base), and at the
    # same length the raw counts and the list before issue 43
    warning = record["warning"]
    assert warning["listed"] == warning["raw"] == warning["previous"] == ["pkg/ledger.py"]
    assert (warning["hits"], warning["targets"]) == (1, 3)
    assert out["warning"]["precision"] == out["warning"]["raw_precision"] == 1.0
    assert out["warning"]["recall"] == pytest.approx(1 / 3, abs=1e-4)
    assert out["per_seed"]["1"]["changes"] == out["per_seed"]["2"]["changes"] == 1
    text = report.read_text()
    assert "pkg/tables.py" in text and "| context |" in text and "Co-change warning" in text


def test_what_the_budget_leaves_out_is_reported_below_the_cut_with_its_rank_and_signals_are_fitted(
    tmp_path: Path, shop: tuple[Path, dict[str, str]]
) -> None:
    repo, _ = shop
    out = replay(tmp_path, repo, "--changes", "1", "--budget-tokens", "100", "--signals")
    [record] = out["records"]
    below = [m for m in record["missing"] if m["why"] == "below_cut"]
    assert below, record["missing"]
    for m in below:
        assert m["reason"] == "budget" and m["rank"] >= 1 and m["source"]
    assert {m["why"] for m in record["missing"]} <= {"below_cut", "not_indexed"}
    assert out["missing_why"]["below_cut"] == len(below)
    # --signals: every candidate file's rank per source, and each source's precision fitted on them
    assert record["signals"]["pkg/ledger.py"]["cochange"] == 0
    fit = out["precision_fit"]["cochange"]
    assert 0 < fit["a"] < 1 and fit["k"] >= 0 and fit["candidates"] >= 1
    # the ranking from every source and from all but one, at the same file count
    assert {"all", "without_cochange", "without_usage"} <= set(out["ablation"])
    assert all(0 <= v <= 1 for v in out["ablation"].values())
