"""The scratch stacks benchmarks run on: never the user's data.

:func:`scratch_pipeline` is the whole pipeline on a scratch home (embedded PostgreSQL and NATS
unless servers are configured) with every service (or ``services``) running in this process,
and the local tenant; :func:`indexed_scratch` is that pipeline with ``bench index``'s generated
repository indexed through it; :func:`scratch_home` only moves the home to a temporary directory
when no servers are configured (for benchmarks that start what they measure themselves).
"""

from __future__ import annotations

import contextlib
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import NamedTuple
from uuid import UUID

from palimpsest.cli.local import local_tenant, register_path
from palimpsest.cli.output import progress
from palimpsest.cli.pipeline import index_and_wait
from palimpsest.cli.runner import SERVICES, running_services
from palimpsest.cli.stack import StackInfo, open_stack, scratch_settings
from palimpsest.core.events import SnapshotBuilt
from palimpsest.core.service import Infra
from palimpsest.core.settings import BaseServiceSettings

__all__ = ["Indexed", "Scratch", "indexed_scratch", "scratch_home", "scratch_pipeline"]


class Scratch(NamedTuple):
    settings: BaseServiceSettings
    stack: StackInfo
    infra: Infra
    tenant: UUID


@contextlib.asynccontextmanager
async def scratch_pipeline(
    settings: BaseServiceSettings,
    home: Path,
    *,
    services: tuple[str, ...] = SERVICES,
    pgbouncer: bool = False,
) -> AsyncIterator[Scratch]:
    """A scratch stack under ``home`` with ``services`` running, and its local tenant; ``pgbouncer``
    puts a loopback PgBouncer in transaction mode in front of the services' database URL."""
    s = scratch_settings(settings, home)
    async with (
        open_stack(s, pgbouncer=pgbouncer) as stack,
        running_services(s, stack, services=services) as infra,
    ):
        yield Scratch(s, stack, infra, await local_tenant(infra.pool, Path(s.home)))


class Indexed(NamedTuple):
    scratch: Scratch
    repository_id: UUID
    built: SnapshotBuilt  # check its state: a failed build is reported, not raised
    index_s: float  # wall seconds from the request to snapshot.built
    idents: list[str]  # the generated code's identifiers
    corpus: list[tuple[str, str]]  # (path, text) of every generated file


@contextlib.asynccontextmanager
async def indexed_scratch(
    settings: BaseServiceSettings,
    root: Path,
    *,
    files: int,
    total_bytes: int,
    services: tuple[str, ...] = SERVICES,
) -> AsyncIterator[Indexed]:
    """``bench index``'s generated repository written under ``root``, registered and indexed
    through a :func:`scratch_pipeline` (home ``root/home``) running ``services``."""
    from palimpsest.devtools.bench.index import make_repository  # it uses this module

    progress(f"generating {files} files…")
    repo, idents, corpus = make_repository(root, files, total_bytes)
    async with scratch_pipeline(settings, root / "home", services=services) as scratch:
        pool, nc, tenant = scratch.infra.pool, scratch.infra.nc, scratch.tenant
        repo_id = await register_path(pool, tenant, repo)
        progress("indexing through the pipeline…")
        started = time.perf_counter()
        built = (await index_and_wait(pool, nc, tenant, repo_id))[SnapshotBuilt]
        yield Indexed(scratch, repo_id, built, time.perf_counter() - started, idents, corpus)


@contextlib.contextmanager
def scratch_home(settings: BaseServiceSettings) -> Iterator[BaseServiceSettings]:
    """The settings with a temporary home, unless servers are configured (then unchanged)."""
    if settings.database_url or settings.migration_database_url:
        yield settings
        return
    with tempfile.TemporaryDirectory(prefix="palimpsest-bench-") as tmp:
        yield settings.model_copy(update={"home": Path(tmp)})
