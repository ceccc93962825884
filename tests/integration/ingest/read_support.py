"""The read side of the /v1 API in tests: a tenant (made through the API) with an indexed repository.

The repository is a real git repository with controlled dates, indexed by the real chunker and
recency-scanner on consumers of their own; the services' events reach the bus through the relay
of :func:`tests.integration.analyzer.support.running`.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from uuid import UUID

import httpx

from palimpsest.cli.local import register_path
from palimpsest.core.service import Infra
from tests.integration.analyzer.support import index, indexer_definitions, running
from tests.integration.ingest.support import World, drop_tenant, new_tenant
from tests.integration.reviewer.conftest import BILLING, INVOICE, TAX
from tests.support.gitrepo import commit, git, init_repo

CHANGED = BILLING.replace("    total = 0\n", "    total = discount(items)\n") + "\n# v3\n"


def make_repository(path: Path) -> dict[str, Any]:
    """A 2022 design doc, 2024 code; branch ``feature`` changes compute_total."""
    r = init_repo(path)
    commit(r, "2022-01-10T00:00:00+00:00", {"docs/design.md": "# Billing\n\n`compute_total` sums prices.\n"})
    commit(
        r,
        "2024-03-01T00:00:00+00:00",
        {"src/billing.py": BILLING, "src/tax.py": TAX, "src/invoice.py": INVOICE},
    )
    base = commit(
        r,
        "2024-05-01T00:00:00+00:00",
        {"src/billing.py": BILLING + "\n# v3\n", "src/tax.py": TAX + "\n# v3\n"},
    )
    git(r, "checkout", "-q", "-b", "feature")
    feature = commit(r, "2024-06-01T00:00:00+00:00", {"src/billing.py": CHANGED}, message="discount")
    git(r, "checkout", "-q", "main")
    return {"path": r, "base": base, "feature": feature}


@dataclass
class Indexed:
    world: World
    repository_id: UUID
    snapshot_id: UUID
    repo: dict[str, Any]

    def path(self, suffix: str = "") -> str:
        return self.world.path(suffix)

    def repo_path(self, suffix: str = "") -> str:
        return self.world.path(f"/repositories/{self.repository_id}{suffix}")


@contextlib.asynccontextmanager
async def indexed_world(
    client: httpx.AsyncClient, infra: Infra, path: Path, name: str
) -> AsyncIterator[Indexed]:
    """A new tenant (through the API) whose local repository at ``path`` is indexed."""
    repo = make_repository(path)
    world = await new_tenant(client, name)
    try:
        repository_id = await register_path(infra.pool, world.tenant_id, repo["path"])
        async with running(infra, indexer_definitions({world.tenant_id})):
            built = await index(infra, world.tenant_id, repository_id)
        assert built.snapshot_id is not None
        yield Indexed(world, repository_id, built.snapshot_id, repo)
    finally:
        await drop_tenant(infra.pool, world.tenant_id)


async def poll(
    get: Callable[[], Awaitable[httpx.Response]],
    done: Callable[[httpx.Response], bool],
    *,
    timeout_s: float = 90.0,
) -> httpx.Response:
    """Call ``get`` until ``done`` says the answer is final (what an API client does)."""
    deadline = time.monotonic() + timeout_s
    while True:
        response = await get()
        if done(response):
            return response
        assert time.monotonic() < deadline, f"still not done after {timeout_s}s: {response.text}"
        await asyncio.sleep(0.1)
