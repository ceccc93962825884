"""``palimpsest bench cochange-warning`` as a user runs it: a scratch embedded stack, the real reviewer.

The planted repository has one change that counts: ``a.py``, ``b.py`` and ``c.py`` modified
together, after four earlier commits that changed the three together (each also adding a file, so
none of them counts). Held out of it, any of the three is named; complete, nothing is.
"""

from __future__ import annotations

from pathlib import Path

from tests.support.bench import run_bench
from tests.support.gitrepo import commit, init_repo

FILES = ("src/a.py", "src/b.py", "src/c.py")


def _code(name: str, version: int) -> str:
    return f"def {name}_value():\n    return {version}\n"


def _planted(path: Path) -> str:
    r = init_repo(path)
    commit(r, "2024-01-01T00:00:00+00:00", {f: _code(f[4], 0) for f in (*FILES, "src/other.py")})
    for month in range(2, 6):
        changed = {f: _code(f[4], month) for f in FILES}
        commit(r, f"2024-{month:02d}-01T00:00:00+00:00", {**changed, f"notes/n{month}.py": _code("n", month)})
    for day in range(1, 13):  # an unrelated file: the habit is not all of the history
        commit(r, f"2024-06-{day:02d}T00:00:00+00:00", {"src/other.py": _code("other", day)})
    return commit(r, "2024-07-01T00:00:00+00:00", {f: _code(f[4], 99) for f in FILES}, message="the change")


def test_bench_cochange_warning_names_the_held_out_file_and_is_silent_on_the_whole_change(
    tmp_path: Path,
) -> None:
    change = _planted(tmp_path / "habit")
    out = run_bench(
        "cochange-warning",
        tmp_path,
        tmp_path / "habit",
        "--changes",
        "3",
        "--seed",
        "1",
        "--seed",
        "2",
        "--less-two",
        timeout=300,
    )
    assert (out["eligible"], out["seeds"], out["commit"]) == (1, [1, 2], change)
    assert out["by_protocol"] == {"holdout": 2, "complete": 2, "holdout2": 2}
    records = out["records"]
    assert {r["change"] for r in records} == {change} and all(r["state"] == "completed" for r in records)
    for r in records:
        if r["protocol"] == "complete":
            assert r["held_out"] == [] and r["listed"] == [] and r["raw"] == r["previous"] == []
        else:
            assert len(r["held_out"]) == (1 if r["protocol"] == "holdout" else 2)
            assert sorted(r["listed"]) == r["held_out"] and r["hits"] == len(r["held_out"])
            assert set(r["files"]) == set(FILES) - set(r["held_out"])
            assert sorted(r["raw"]) == sorted(r["previous"]) == r["held_out"]
    holdout = next(r for r in records if r["protocol"] == "holdout")
    assert holdout["reasons"][0].startswith("changed with 2 of the pull request's 2 files with a history:")
    assert (out["precision"], out["recall"], out["silent_complete"]) == (1.0, 1.0, 1.0)
    assert out["listed_per_pr"] == 1.0 and out["false_alarms_complete"] == 0
    assert out["raw"] == out["previous"] == {"precision": 1.0, "recall": 1.0}
    assert out["per_seed"]["1"]["replays"] == out["per_seed"]["2"]["replays"] == 3
