"""The real chunker through the bus, for graph tests: index a planted repository, get its id."""

from __future__ import annotations

import contextlib
import random
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from nats.aio.client import Client as NATS

from palimpsest.chunker.service import Chunker, Settings
from palimpsest.cli.local import register_path
from palimpsest.cli.pipeline import Arrived
from palimpsest.core.bus import CONSUMERS, ConsumerSpec
from palimpsest.core.db import Pool
from palimpsest.core.events import IndexRequested, SnapshotBuilt
from palimpsest.core.service import Infra, ServiceDefinition
from tests.support.gitrepo import commit, git, init_repo
from tests.support.pipeline import request_and_wait, services


def chunker_definition() -> ServiceDefinition:
    """The chunker's handler on a consumer of its own that sees only new events."""
    settings = Settings.model_construct(
        **{**Settings().model_dump(), "allow_local_sources": True, "parse_workers": 1}
    )
    chunker = Chunker(settings)
    name = f"t-graph-chunker-{uuid.uuid4().hex[:6]}"
    spec = ConsumerSpec(name, CONSUMERS["chunker"].event_types, batch=2, deliver_new=True)
    return ServiceDefinition(name, {"index.requested": chunker.handle}, spec, on_stop=[chunker.close])


@contextlib.asynccontextmanager
async def running_chunker(infra: Infra) -> AsyncIterator[None]:
    async with services(infra, [chunker_definition()]):
        yield


def index_with(infra: Infra) -> Any:
    """An ``index`` function for ``index_revision``: request a build, wait for ``snapshot.built``."""

    async def index(pool: Pool, nc: NATS, tenant: uuid.UUID, repository_id: uuid.UUID) -> Arrived:
        event = IndexRequested(tenant_id=tenant, repository_id=repository_id, reason="rebuild")
        return await request_and_wait(infra, event, (SnapshotBuilt,), timeout_s=120)

    return index


async def index_path(infra: Infra, tenant: uuid.UUID, repo: Path) -> tuple[uuid.UUID, SnapshotBuilt]:
    """Register ``repo`` for ``tenant``, build its snapshot (a chunker must be running)."""
    repo_id = await register_path(infra.pool, tenant, repo)
    found = await index_with(infra)(infra.pool, infra.nc, tenant, repo_id)
    return repo_id, found[SnapshotBuilt]


# ------------------------------------------------------------------ a planted history

PACKAGES = 4
MODULES = 5
COMMITS = 45


def _module(package: int, index: int, version: int) -> str:
    others = [(index + step) % MODULES for step in (1, 2)]
    imports = "".join(f"from pkg{package}.mod{o} import work{package}_{o}\n" for o in others)
    body = " + ".join(f"work{package}_{o}()" for o in others)
    return f"{imports}\n\ndef work{package}_{index}():\n    return {body} + {version}\n"


def planted_repository(path: Path) -> str:
    """Packages whose modules import each other; every later commit stays inside one package."""
    repo = init_repo(path)
    files = {f"pkg{p}/mod{i}.py": _module(p, i, 0) for p in range(PACKAGES) for i in range(MODULES)}
    files["README.md"] = "# Planted\n"
    commit(repo, "2024-01-01T00:00:00+00:00", files)
    rng = random.Random(11)
    for n in range(1, COMMITS + 1):
        package = rng.randrange(PACKAGES)
        touched = rng.sample(range(MODULES), rng.randint(2, 3))
        commit(
            repo,
            f"2024-01-{1 + n // 24:02d}T{n % 24:02d}:00:00+00:00",
            {f"pkg{package}/mod{i}.py": _module(package, i, n) for i in touched},
        )
    return git(repo, "rev-parse", "HEAD").strip()
