"""What every command module shares: running an async command, and the settings it runs with.

Command modules import this, never :mod:`palimpsest.cli.main` (which imports them to register
their commands), so each of them imports on its own.
"""

from __future__ import annotations

import asyncio
import functools
import signal
import threading
from collections.abc import Callable, Coroutine
from typing import Any, ParamSpec, TypeVar

from palimpsest.cli.output import fail
from palimpsest.core.errors import PalimpsestError
from palimpsest.core.settings import BaseServiceSettings, load

P = ParamSpec("P")
R = TypeVar("R")


def run_async(fn: Callable[P, Coroutine[Any, Any, R]]) -> Callable[P, R | None]:
    """Run an async click command; Palimpsest errors become one line on stderr and exit code 2."""

    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R | None:
        # SIGTERM (a supervisor, `timeout`) unwinds like Ctrl-C, so embedded servers this command
        # started are stopped instead of being orphaned
        if threading.current_thread() is threading.main_thread():  # tests drive commands from threads
            signal.signal(signal.SIGTERM, _interrupt)
        try:
            return asyncio.run(fn(*args, **kwargs))
        except PalimpsestError as exc:
            fail(str(exc))
        except KeyboardInterrupt:
            fail("interrupted", 130)
        return None

    return wrapper


def _interrupt(signum: int, frame: object) -> None:
    # asyncio.run treats SIGINT by cancelling the main task, which unwinds every context manager
    signal.raise_signal(signal.SIGINT)


def settings() -> BaseServiceSettings:
    try:
        return load(BaseServiceSettings)
    except PalimpsestError as exc:
        fail(str(exc))
        raise  # unreachable
