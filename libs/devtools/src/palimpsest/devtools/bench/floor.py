"""The first build's yardsticks (issue 23), measured in the same run on the same files.

Absolute seconds move twofold between machines of one kind, so ``bench index`` reads its first
build against two floors measured beside it:

* ``floor_s`` -- tree-sitter's parse plus the tags query of every file and nothing else (no
  chunks, no tokens, no database), in as many worker processes as the chunker runs, the files
  handed over as bytes in batches of the build's size. The workers are started and their
  grammars loaded before the clock starts.
* ``ctags_s`` -- Universal Ctags' ``ctags -R`` over the same files written to a directory, one
  process; ``None`` where no Universal Ctags is installed.

Each measurement starts once the machine is quiet (:func:`wait_for_quiet`). Right after a build
the machine is still busy (the services in this process handling ``snapshot.built``, PostgreSQL's
background work on the tables the build filled; ``bench index`` on kafka's tree waits 7-9 s for
it), and a yardstick measured beside that work reads slow: there the floor read 8.2 s right after
the build against 4.3-4.8 s on the idle machine, flattering the build's ratio by a third.
"""

from __future__ import annotations

import multiprocessing
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import psutil
from tree_sitter import QueryCursor

from palimpsest.chunker.parsing import detect_language
from palimpsest.index.codefacts import grammars
from palimpsest.index.codefacts.queries import spec_for

__all__ = [
    "ctags_seconds",
    "floor_measure",
    "floor_seconds",
    "parse_and_query",
    "round_ratios",
    "universal_ctags",
    "wait_for_quiet",
    "yardsticks",
]

_CTAGS_TIMEOUT_S = 1800.0
SECONDS_DIGITS = 6  # a yardstick of a few small files takes well under a millisecond: never round it to 0
QUIET_CORES = 0.3  # the whole machine's CPU use, in cores, below which it counts as quiet
QUIET_SAMPLES = 2  # consecutive quiet samples of QUIET_SAMPLE_S each
QUIET_SAMPLE_S = 0.5
QUIET_TIMEOUT_S = 120.0


def wait_for_quiet(timeout_s: float = QUIET_TIMEOUT_S) -> tuple[float, bool]:
    """Wait until the machine's CPU use stays below ``QUIET_CORES`` for ``QUIET_SAMPLES``
    samples in a row, or ``timeout_s`` passes; (seconds waited, whether it became quiet)."""
    cores = os.cpu_count() or 1
    started = time.perf_counter()
    quiet = 0
    while quiet < QUIET_SAMPLES:
        if time.perf_counter() - started >= timeout_s:
            return time.perf_counter() - started, False
        busy_cores = psutil.cpu_percent(interval=QUIET_SAMPLE_S) / 100 * cores
        quiet = quiet + 1 if busy_cores < QUIET_CORES else 0
    return time.perf_counter() - started, True


def parse_and_query(items: list[tuple[str, bytes]]) -> int:
    """Parse each file with its grammar and run its language's tags query; the matches found."""
    found = 0
    for path, data in items:
        spec = spec_for(detect_language(path))
        if spec is None:
            continue
        tree = grammars.parser(spec.grammar).parse(data)
        found += len(QueryCursor(grammars.query(spec.grammar, spec.query)).matches(tree.root_node))
    return found


def _batches(corpus: list[tuple[str, str]], batch_bytes: int) -> Iterator[list[tuple[str, bytes]]]:
    batch: list[tuple[str, bytes]] = []
    size = 0
    for path, text in corpus:
        data = text.encode()
        batch.append((path, data))
        size += len(data)
        if size >= batch_bytes:
            yield batch
            batch, size = [], 0
    if batch:
        yield batch


def floor_seconds(corpus: list[tuple[str, str]], *, workers: int, batch_bytes: int) -> float:
    """Wall seconds of ``parse_and_query`` over ``corpus`` in ``workers`` processes (in this one
    when ``workers`` is 1, as the chunker does)."""
    return floor_measure(corpus, workers=workers, batch_bytes=batch_bytes)[0]


def _cpu_of_parse_and_query(items: list[tuple[str, bytes]]) -> float:
    """``parse_and_query`` over ``items``; the CPU seconds it took in the process that ran it."""
    started = time.process_time()
    parse_and_query(items)
    return time.process_time() - started


def floor_measure(corpus: list[tuple[str, str]], *, workers: int, batch_bytes: int) -> tuple[float, float]:
    """:func:`floor_seconds`' wall seconds and the CPU seconds its workers spent on the files
    (read by each worker around each batch: the floor's own share of a build's CPU budget)."""
    batches = list(_batches(corpus, batch_bytes))
    warm = [("warm.ts", b"export function f(): number { return 1 }\n"), ("warm.py", b"def f():\n    pass\n")]
    if workers <= 1:
        parse_and_query(warm)
        t = time.perf_counter()
        cpu = sum(_cpu_of_parse_and_query(batch) for batch in batches)
        return time.perf_counter() - t, cpu
    from palimpsest.chunker.service import main_left_out

    # spawned, not forked from the forkserver: that one is the chunker's, started with its preload
    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn")) as pool:
        with main_left_out():
            warming = [pool.submit(parse_and_query, warm) for _ in range(workers)]
        for f in warming:
            f.result()
        t = time.perf_counter()
        cpu = sum(f.result() for f in [pool.submit(_cpu_of_parse_and_query, batch) for batch in batches])
        return time.perf_counter() - t, cpu


def universal_ctags() -> str | None:
    """The path of an installed Universal Ctags (other ctags take other options), or None."""
    found = shutil.which("ctags")
    if found is None:
        return None
    try:
        version = subprocess.run(
            [found, "--version"], capture_output=True, text=True, timeout=30, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return found if version.stdout.startswith("Universal Ctags") else None


def ctags_seconds(corpus: list[tuple[str, str]], root: Path, ctags: str | None) -> float | None:
    """Wall seconds of ``ctags -R`` (the executable ``ctags``) over ``corpus`` written under
    ``root``; None without one."""
    if ctags is None:
        return None
    tree = root / "files"
    if not tree.exists():  # (a second measurement reads the files the first wrote)
        for path, text in corpus:
            target = tree / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8", errors="surrogateescape")
    t = time.perf_counter()
    subprocess.run(
        [ctags, "-R", "-f", str(root / "tags"), "."], cwd=tree, check=True, timeout=_CTAGS_TIMEOUT_S
    )
    return time.perf_counter() - t


def yardsticks(
    corpus: list[tuple[str, str]],
    root: Path,
    before: dict[str, Any] | None = None,
    *,
    quiet_timeout_s: float = QUIET_TIMEOUT_S,
) -> dict[str, Any]:
    """``floor_s`` with the chunker's configured workers and batch size (``floor_cpu_s``: the CPU
    its workers spent), and ``ctags_s``.

    Measured once before the first build and once after it (``before``: the first measurement),
    each reported as the mean of both: the load of a shared machine changes within a run, and
    the two measurements bracket the build. Each starts when the machine is quiet
    (``quiet_wait_s``; ``quiet`` is false where one gave up waiting, after ``quiet_timeout_s``)."""
    from palimpsest.chunker.service import Settings as ChunkerSettings
    from palimpsest.core.settings import load

    limits = load(ChunkerSettings).limits()
    waited, quiet = wait_for_quiet(quiet_timeout_s)
    floor, floor_cpu = floor_measure(corpus, workers=limits.workers, batch_bytes=limits.batch_bytes)
    ctags = ctags_seconds(corpus, root, universal_ctags())
    earlier = before or {}
    floors = [*earlier.get("floor_runs_s", []), round(floor, SECONDS_DIGITS)]
    floor_cpus = [*earlier.get("floor_cpu_runs_s", []), round(floor_cpu, SECONDS_DIGITS)]
    ctagses = [*earlier.get("ctags_runs_s", []), *([] if ctags is None else [round(ctags, SECONDS_DIGITS)])]
    return {
        "quiet_wait_s": [*earlier.get("quiet_wait_s", []), round(waited, 1)],
        "quiet": quiet and earlier.get("quiet", True),
        "floor_workers": limits.workers,
        "floor_s": round(sum(floors) / len(floors), SECONDS_DIGITS),
        "floor_runs_s": floors,
        "floor_cpu_s": round(sum(floor_cpus) / len(floor_cpus), SECONDS_DIGITS),
        "floor_cpu_runs_s": floor_cpus,
        "ctags_s": round(sum(ctagses) / len(ctagses), SECONDS_DIGITS) if ctagses else None,
        "ctags_runs_s": ctagses,
    }


def round_ratios(builds_s: list[float], marks: dict[str, Any]) -> dict[str, Any]:
    """Each round's first build against the yardstick measured on either side of it (round ``i``
    between runs ``i`` and ``i + 1`` of ``marks``), and the median round's ratio (the upper middle
    one for an even count; None where a yardstick was not measured)."""
    out: dict[str, Any] = {}
    for name, runs in (("floor", marks.get("floor_runs_s", [])), ("ctags", marks.get("ctags_runs_s", []))):
        per_round = [
            round(build / round((runs[i] + runs[i + 1]) / 2, SECONDS_DIGITS), 2)
            for i, build in enumerate(builds_s)
            if i + 1 < len(runs) and runs[i] + runs[i + 1] > 0
        ]
        out[f"first_build_over_{name}"] = sorted(per_round)[len(per_round) // 2] if per_round else None
        out[f"first_build_over_{name}_runs"] = per_round
    return out
