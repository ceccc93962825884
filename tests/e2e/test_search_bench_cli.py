"""``palimpsest bench search`` as a user runs it: a scratch embedded stack, the real pipeline, the
real ripgrep and git grep over a checkout of the same commit. Figures are not asserted (speed is
the benchmark's to report); the report's shape, the cold restarts and the overlap are."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from palimpsest.devtools.bench.search import (
    SHAPES,
    Query,
    definition_rank,
    ensure_ripgrep,
    overlap,
    product_share,
    relevance,
)
from palimpsest.index.search import SearchHit


def _hit(path: str, kind: str = "window", name: str | None = None) -> SearchHit:
    return SearchHit(path, 1, 2, kind, name, "python", 1.0, "0" * 40, 0, "")


def test_overlap_counts_our_first_ten_files_against_ripgreps() -> None:
    rg = {f"f{i}" for i in range(30)}
    assert overlap([f"f{i}" for i in range(10)], rg) == 1.0
    assert overlap(["f1", "x", "f2"], {"f1", "f2"}) == 1.0  # ripgrep found two: both are ours
    assert overlap(["x", "y", "f1"], {"f1", "f2"}) == 0.5
    assert overlap(["f1", *[f"x{i}" for i in range(9)], "f2"], rg) == 0.1  # the 11th file is not counted
    assert overlap(["f1"], set()) is None


def test_the_definition_rank_is_that_of_the_first_chunk_defining_the_identifier() -> None:
    hits = [
        _hit("src/use.py"),
        _hit("src/doc.md", "section", "WidgetFactory"),  # a heading of that name defines nothing
        _hit("src/widgets.py", "class", "widgetfactory"),  # case folded, as the search folds it
        _hit("src/other.py", "class", "WidgetFactory"),
    ]
    assert definition_rank(Query("identifier", "WidgetFactory"), hits) == 3
    assert definition_rank(Query("path", "WidgetFactory", path_prefix="src/"), hits) == 3
    assert definition_rank(Query("identifier", "Missing"), hits) == 0
    assert definition_rank(Query("identifier", "WidgetFactory"), hits, k=2) == 0  # past the top k
    assert definition_rank(Query("common", "widget"), hits) is None  # no identifier to define


def test_product_share_and_relevance_figures() -> None:
    paths = ["src/app.py", "tests/test_app.py", "vendor/lib.go", "dist/app.min.js", "scripts/release.py"]
    assert product_share(paths) == 0.2  # only src/app.py ships: tests, vendored, generated, tooling not
    assert product_share(set()) is None
    rows = [
        {"product_top10": 1.0, "product_all": 0.5},
        {"product_top10": 0.5, "product_all": None},
    ]
    assert relevance(rows, [1, 2, 0, 1]) == {
        "definition_mrr": round((1 + 0.5 + 0 + 1) / 4, 3),
        "definition_hit1": 0.5,
        "product_share_top10": 0.75,
        "product_share_all_matches": 0.5,
    }
    assert "definition_mrr" not in relevance(rows, [])


def test_bench_search_on_a_scratch_stack(tmp_path: Path) -> None:
    rg, why = ensure_ripgrep()
    if rg is None:
        pytest.skip(f"ripgrep is needed for the overlap: {why}")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PALIMPSEST_")}
    env.update({"PALIMPSEST_HOME": str(tmp_path / "home"), "PALIMPSEST_LOG_FORMAT": "text"})
    args = [
        "bench",
        "search",
        "--files",
        "150",
        "--total-mb",
        "0.1",
        "--queries",
        "4",
        "--cold-restarts",
        "2",
    ]
    proc = subprocess.run(
        [sys.executable, "-m", "palimpsest.cli.main", *args, "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout)
    assert out["benchmark"] == "search"
    assert (out["corpus"], out["files"], out["postgres"]) == ("generated", 150, "embedded")
    assert re.fullmatch(r"[0-9a-f]{40}", out["commit"])
    assert out["chunks"] > 150 and out["db_mb"] > 0
    assert "ripgrep" in out["ripgrep"] and out["git"].startswith("git version")
    assert set(out["shapes"]) == set(SHAPES)
    assert out["all_shapes"]["ours_ms"]["n"] == 4 * len(SHAPES)
    assert out["chunk_storage"]["rows"] == out["chunks"]
    for shape, fig in out["shapes"].items():
        assert fig["queries"] == 4, shape
        for tool in ("ours_ms", "rg_ms", "git_grep_ms"):
            assert fig[tool]["n"] == 4 and 0 < fig[tool]["p50"] <= fig[tool]["p95"] <= fig[tool]["p99"], (
                shape,
                tool,
            )
        assert fig["ours_cold_ms"]["n"] == 2, shape
        assert fig["rg_p95_over_ours_p95"] > 0 and fig["git_grep_p95_over_ours_p95"] > 0
        assert fig["overlap_queries"] > 0, shape  # every drawn query is text of the corpus
        assert 0 <= fig["overlap_top10"] <= 1, shape
        assert 0 <= fig["product_share_top10"] <= 1 and 0 <= fig["product_share_all_matches"] <= 1, shape
    # an identifier is a definition's name: the files that hold it are our first hits
    assert out["shapes"]["identifier"]["overlap_top10"] >= 0.9
    # and their definitions come first
    assert out["shapes"]["identifier"]["definition_hit1"] >= 0.9
    assert out["shapes"]["identifier"]["definition_mrr"] >= 0.93
    assert "definition_mrr" not in out["shapes"]["common"]
    assert all(e["path"].endswith("/") for e in out["shapes"]["path"]["examples"])
    assert all(e["language"] for e in out["shapes"]["language"]["examples"])
    assert out["index_reused"] is False


def test_bench_search_keep_reuses_its_index(tmp_path: Path) -> None:
    """--keep DIR: the second run on the same corpus reuses the first run's index (same commit,
    chunks and build figures; no second build) and draws the same queries."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PALIMPSEST_")}
    env.update({"PALIMPSEST_HOME": str(tmp_path / "home"), "PALIMPSEST_LOG_FORMAT": "text"})
    args = [
        "bench",
        "search",
        "--files",
        "60",
        "--total-mb",
        "0.05",
        "--queries",
        "2",
        "--cold-restarts",
        "0",
    ]
    args += ["--keep", str(tmp_path / "kept"), "--json"]
    runs = []
    for _ in range(2):
        proc = subprocess.run(
            [sys.executable, "-m", "palimpsest.cli.main", *args],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        assert proc.returncode == 0, proc.stderr[-3000:]
        runs.append((json.loads(proc.stdout), proc.stderr))
    (first, first_err), (second, second_err) = runs
    assert first["index_reused"] is False and "indexing through the pipeline" in first_err
    assert second["index_reused"] is True and "indexing through the pipeline" not in second_err
    assert (second["commit"], second["chunks"], second["first_build_s"]) == (
        first["commit"],
        first["chunks"],
        first["first_build_s"],
    )
    assert [e["q"] for e in second["shapes"]["identifier"]["examples"]] == [
        e["q"] for e in first["shapes"]["identifier"]["examples"]
    ]
