"""The scratch stacks benchmarks run on: never the user's data.

:func:`scratch_pipeline` is the whole pipeline on a scratch home (embedded PostgreSQL and NATS
unless servers are configured) with every service (or ``services``) running in this process,
and the local tenant; :func:`scratch_home` only moves the home to a temporary directory when no
servers are configured (for benchmarks that start what they measure themselves).
"""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import NamedTuple
from uuid import UUID

from palimpsest.cli.local import local_tenant
from palimpsest.cli.runner import SERVICES, running_services
from palimpsest.cli.stack import StackInfo, open_stack, scratch_settings
from palimpsest.core.service import Infra
from palimpsest.core.settings import BaseServiceSettings

__all__ = ["Scratch", "scratch_home", "scratch_pipeline"]


class Scratch(NamedTuple):
    settings: BaseServiceSettings
    stack: StackInfo
    infra: Infra
    tenant: UUID


@contextlib.asynccontextmanager
async def scratch_pipeline(
    settings: BaseServiceSettings, home: Path, *, services: tuple[str, ...] = SERVICES
) -> AsyncIterator[Scratch]:
    """A scratch stack under ``home`` with ``services`` running, and its local tenant."""
    s = scratch_settings(settings, home)
    async with open_stack(s) as stack, running_services(s, stack, services=services) as infra:
        yield Scratch(s, stack, infra, await local_tenant(infra.pool, Path(s.home)))


@contextlib.contextmanager
def scratch_home(settings: BaseServiceSettings) -> Iterator[BaseServiceSettings]:
    """The settings with a temporary home, unless servers are configured (then unchanged)."""
    if settings.database_url or settings.migration_database_url:
        yield settings
        return
    with tempfile.TemporaryDirectory(prefix="palimpsest-bench-") as tmp:
        yield settings.model_copy(update={"home": Path(tmp)})
