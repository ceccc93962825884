"""Definitions of the names a diff calls: a name defined in many places of the snapshot is not
looked up, and "many" is counted in the snapshot — not among every blob the repository keeps."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from palimpsest.core.db import tenant_tx
from palimpsest.core.service import Infra
from palimpsest.index.context.candidates import definitions
from tests.integration.graph.support import index_path, running_chunker
from tests.support.gitrepo import commit, init_repo
from tests.support.tenants import create_tenant


def module(n: int) -> str:
    return f"def fetch(url):\n    return {n}\n\n\ndef only_in_{n}():\n    return fetch('{n}')\n"


async def test_a_name_defined_in_many_files_is_ambiguous_in_this_snapshot_only(
    infra: Infra, tmp_path: Path
) -> None:
    repo = init_repo(tmp_path / "repo")
    commit(repo, "2024-01-01", {f"src/m{n}.py": module(n) for n in range(5)})
    tenant = await create_tenant(infra.pool, "definitions")
    async with running_chunker(infra):
        repo_id, first = await index_path(infra, tenant, repo)
        commit(repo, "2024-02-01", {f"src/m{n}.py": None for n in range(2, 5)})  # two definers left
        _, second = await index_path(infra, tenant, repo)
    assert first.state == second.state == "ready"

    async def defined(snapshot: Any) -> list[tuple[str, str]]:
        async with tenant_tx(infra.pool, tenant) as conn:
            found = await definitions(conn, repo_id, snapshot, ["fetch", "only_in_1"], 12)
        return [(c.path, c.reason) for c in found]

    # five definers at first: `fetch` says nothing; the unique name is found
    assert await defined(first.snapshot_id) == [("src/m1.py", "defines only_in_1")]
    # the older snapshot's blobs are still kept, but this snapshot has two definers: both shown
    assert await defined(second.snapshot_id) == [
        ("src/m0.py", "defines fetch"),
        ("src/m1.py", "defines fetch"),
        ("src/m1.py", "defines only_in_1"),
    ]
