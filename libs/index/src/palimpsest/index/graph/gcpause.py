"""The cyclic garbage collector paused while one snapshot's graph is built, stored or loaded.

Each of those makes hundreds of thousands of lists, tuples and records at once (50 000 files), and
none of them can be garbage before the step returns: the collector would walk them again and again
(40% of decoding's time), and a full collection, triggered in whichever thread allocates next,
holds the GIL for hundreds of milliseconds. These steps run in a thread so that the event loop goes
on serving, and a reviewer storing a new snapshot's graph stalled its process's searches and
handlers by up to 0.6 s this way (searches right after a 50 000-file build, in the process of the
services, A/B/A/B: slowest 0.44 and 0.69 s with the collector on, 0.18 and 0.30 s paused). The pause is
process-wide and ends with the step.
"""

from __future__ import annotations

import functools
import gc
from collections.abc import Callable
from typing import ParamSpec, TypeVar

__all__ = ["gc_paused"]

P = ParamSpec("P")
R = TypeVar("R")


def gc_paused(fn: Callable[P, R]) -> Callable[P, R]:
    """``fn`` run with the cyclic collector off (and back on after, if it was on)."""

    @functools.wraps(fn)
    def run(*args: P.args, **kwargs: P.kwargs) -> R:
        was = gc.isenabled()
        gc.disable()
        try:
            return fn(*args, **kwargs)
        finally:
            if was:
                gc.enable()

    return run
