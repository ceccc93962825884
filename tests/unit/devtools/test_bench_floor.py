"""The first build's yardsticks: the parse-and-query floor and Universal Ctags over the same files."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from palimpsest.devtools.bench.floor import (
    ctags_seconds,
    floor_measure,
    floor_seconds,
    parse_and_query,
    round_ratios,
    universal_ctags,
    wait_for_quiet,
)
from palimpsest.devtools.bench.index import generate

CORPUS = [(path, text) for path, text, _ in generate(12, 6_000)]


def test_the_floor_parses_and_queries_every_parsed_file() -> None:
    items = [(path, text.encode()) for path, text in CORPUS]
    # every generated module defines a class and methods; the documentation file is not parsed
    assert parse_and_query(items) > parse_and_query(items[:1]) > 0
    assert parse_and_query([("docs/a.md", b"# A\n")]) == 0
    assert floor_seconds(CORPUS, workers=1, batch_bytes=1024) > 0
    assert floor_seconds(CORPUS, workers=2, batch_bytes=1024) > 0


@pytest.mark.parametrize("workers", [1, 2])
def test_the_floor_says_what_cpu_its_workers_spent(workers: int) -> None:
    wall, cpu = floor_measure(CORPUS * 20, workers=workers, batch_bytes=4096)
    assert cpu > 0
    if workers == 1:  # one thread in this process: its CPU cannot exceed the wall time around it
        assert cpu <= wall


def test_ctags_is_left_out_where_it_is_not_installed(tmp_path: Path) -> None:
    assert ctags_seconds(CORPUS, tmp_path, None) is None
    assert not (tmp_path / "tags").exists()
    assert round_ratios([3.0], {"floor_runs_s": [1.4, 1.6], "ctags_runs_s": []}) == {
        "first_build_over_floor": 2.0,
        "first_build_over_floor_runs": [2.0],
        "first_build_over_ctags": None,
        "first_build_over_ctags_runs": [],
    }


def test_each_round_is_read_against_the_yardsticks_on_either_side_of_it() -> None:
    """Round i sits between yardstick runs i and i + 1; the figure is the median round's, so one
    round on a busy moment (the 9 s build, or a floor run slowed to 3 s) does not move it."""
    marks = {"floor_runs_s": [1.0, 1.0, 3.0, 1.0], "ctags_runs_s": [0.5, 0.5, 0.5, 0.5]}
    out = round_ratios([4.0, 4.0, 9.0], marks)
    assert out["first_build_over_floor_runs"] == [4.0, 2.0, 4.5]
    assert out["first_build_over_floor"] == 4.0
    assert out["first_build_over_ctags_runs"] == [8.0, 8.0, 18.0]
    assert out["first_build_over_ctags"] == 8.0
    # an even count takes the upper middle round; a missing after-run leaves a round unrated
    assert round_ratios([2.0, 4.0], {"floor_runs_s": [1.0, 1.0, 1.0]})["first_build_over_floor"] == 4.0
    assert round_ratios([2.0, 4.0], {"floor_runs_s": [1.0, 1.0]})["first_build_over_floor_runs"] == [2.0]


@pytest.mark.skipif(universal_ctags() is None, reason="Universal Ctags is not installed")
def test_ctags_tags_the_same_files(tmp_path: Path) -> None:
    seconds = ctags_seconds(CORPUS, tmp_path, universal_ctags())
    assert seconds is not None and seconds > 0
    tags = (tmp_path / "tags").read_text()
    first_class = CORPUS[0][1].split("export class ", 1)[1].split(" ", 1)[0]
    assert first_class in tags


def test_a_busy_machine_is_waited_for_and_said_to_be_busy() -> None:
    """A process spinning on a whole core keeps the machine above the quiet mark: the wait gives
    up at its timeout and says that it did (the yardstick is then measured anyway, flagged)."""
    spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        waited, quiet = wait_for_quiet(timeout_s=2.0)
    finally:
        spinner.kill()
        spinner.wait()
    assert not quiet
    assert waited >= 2.0
