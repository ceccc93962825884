"""The benchmarks' CPU meter credits each process's CPU to its role (issue 23: where the time goes)."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from palimpsest.devtools.bench.cpu import ROLES, CpuMeter, role_of

BURN_S = 0.3
# burns BURN_S of its own CPU time, then (with "wait") stays alive until its stdin closes
_BURNER = (
    "import sys, time\n"
    f"while time.process_time() < {BURN_S}: pass\n"
    "print('burnt', flush=True)\n"
    "if sys.argv[1:] == ['wait']: sys.stdin.read()\n"
)


def _burn_here() -> None:
    started = time.process_time()
    while time.process_time() - started < BURN_S:
        pass


@pytest.mark.parametrize(
    ("name", "own", "below", "role"),
    [
        ("python3.11", True, False, "pipeline"),
        ("python3.11", False, True, "workers"),
        ("python3.11", False, False, "other"),
        ("postgres", False, True, "postgres"),
        ("postgres", False, False, "postgres"),
        ("nats-server", False, True, "nats"),
        ("git", False, True, "git"),
        ("git-remote-http", False, False, "git"),
        ("gitea", False, False, "other"),
    ],
)
def test_each_process_has_its_role(name: str, own: bool, below: bool, role: str) -> None:
    assert role_of(name, own=own, below=below) == role


def test_this_process_counts_as_the_pipeline() -> None:
    with CpuMeter() as meter:
        _burn_here()
    assert meter.seconds["pipeline"] >= BURN_S * 0.9
    assert meter.seconds["ended_children"] == 0
    assert set(meter.seconds) == set(ROLES)


def test_a_child_that_ended_is_read_from_the_kernels_children_count() -> None:
    with CpuMeter() as meter:
        subprocess.run([sys.executable, "-c", _BURNER], check=True, capture_output=True)
    assert meter.seconds["ended_children"] >= BURN_S * 0.9
    assert meter.seconds["pipeline"] < BURN_S * 0.9


def test_a_live_process_below_this_one_counts_as_a_worker() -> None:
    with (
        subprocess.Popen(
            [sys.executable, "-c", _BURNER, "wait"], stdin=subprocess.PIPE, stdout=subprocess.PIPE
        ) as child,
    ):
        assert child.stdout is not None
        with CpuMeter() as meter:
            child.stdout.readline()  # burnt, and alive until its stdin closes
        assert child.stdin is not None
        child.stdin.close()
    # alive at both ends of the stretch: its difference counts, and once
    assert meter.seconds["workers"] >= BURN_S * 0.9
    assert meter.seconds["ended_children"] == 0
    report = meter.report()
    assert report["total"] == pytest.approx(sum(report["by_role"].values()), abs=0.01)
    assert report["idle"] >= 0 and report["wall"] > 0
