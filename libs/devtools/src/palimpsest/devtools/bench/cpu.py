"""Where a measured stretch's CPU went, by role: this process, its worker processes, git,
PostgreSQL, NATS and the rest of the machine (issue 23: "measure where the time goes").

A :class:`CpuMeter` reads every process's CPU time (user plus system) when the stretch starts
and when it ends and credits each process's difference to its role. A process that started in
between counts from zero. This process's own children that ended in between (a build's git
commands) are read from ``os.times()``'s children fields, the kernel's count of what waited-for
children used. A process that is neither this one's child nor alive at the end (an autovacuum
worker that came and went) is not seen; the system-wide idle time says how much of the cores
the stretch left unused.
"""

from __future__ import annotations

import contextlib
import os
import time
from dataclasses import dataclass, field
from typing import Any

import psutil

__all__ = ["ROLES", "CpuMeter", "role_of"]

ROLES = ("pipeline", "workers", "postgres", "git", "nats", "ended_children", "other")
"""``pipeline``: this process (the services' event loops); ``workers``: the processes below it
other than the servers and git (the chunker's parse workers); ``postgres``, ``git``, ``nats``: any
process of that program, below this one or not (an external PostgreSQL on this machine counts);
``ended_children``: this process's children that ended during the stretch; ``other``: the rest
of the machine."""

_DIGITS = 2
_Key = tuple[int, float]  # pid and creation time: a reused pid is another process


def role_of(name: str, *, own: bool, below: bool) -> str:
    """The role of a process called ``name``: this process (``own``), one below it, or elsewhere."""
    if own:
        return "pipeline"
    if name.startswith(("postgres", "postmaster")):
        return "postgres"
    if name.startswith("nats-server"):
        return "nats"
    if name == "git" or name.startswith("git-"):
        return "git"
    return "workers" if below else "other"


@dataclass(slots=True)
class _Reading:
    cpu: dict[_Key, tuple[str, float]]
    children: float  # this process's ended children, os.times()
    idle: float  # the machine's idle seconds, all cores
    wall: float


def _read() -> _Reading:
    me = psutil.Process()
    below: set[int] = set()
    with contextlib.suppress(psutil.Error):
        below = {p.pid for p in me.children(recursive=True)}
    cpu: dict[_Key, tuple[str, float]] = {}
    for proc in psutil.process_iter(["name", "cpu_times", "create_time"]):
        info = proc.info
        if info.get("cpu_times") is None or info.get("create_time") is None:
            continue  # gone, or not ours to read
        role = role_of(info.get("name") or "", own=proc.pid == me.pid, below=proc.pid in below)
        times = info["cpu_times"]
        cpu[(proc.pid, info["create_time"])] = (role, float(times.user + times.system))
    own = os.times()
    return _Reading(
        cpu, own.children_user + own.children_system, psutil.cpu_times().idle, time.perf_counter()
    )


@dataclass(slots=True)
class CpuMeter:
    """``with CpuMeter() as meter: ...``; then ``meter.seconds`` holds CPU seconds per role
    (:data:`ROLES`), ``meter.idle_s`` the machine's unused core-seconds and ``meter.wall_s`` the
    stretch's wall time."""

    seconds: dict[str, float] = field(default_factory=dict)
    idle_s: float = 0.0
    wall_s: float = 0.0
    _start: _Reading | None = None

    def __enter__(self) -> CpuMeter:
        self._start = _read()
        return self

    def __exit__(self, *exc: object) -> None:
        start, end = self._start, _read()
        if start is None:
            return
        totals = dict.fromkeys(ROLES, 0.0)
        for key, (role, used) in end.cpu.items():
            before = start.cpu.get(key)
            totals[role] += used - (before[1] if before is not None else 0.0)
        # a child that ended was waited for; what it used is in this process's children count
        totals["ended_children"] += end.children - start.children
        self.seconds = {role: round(max(0.0, s), _DIGITS) for role, s in totals.items()}
        self.idle_s = round(max(0.0, end.idle - start.idle), _DIGITS)
        self.wall_s = round(end.wall - start.wall, 3)

    def report(self) -> dict[str, Any]:
        """The figures as the benchmarks print them."""
        return {
            "by_role": self.seconds,
            "total": round(sum(self.seconds.values()), _DIGITS),
            "idle": self.idle_s,
            "wall": self.wall_s,
        }
