"""A local review of a base the branch has moved past is reviewed against that base's own index.

Before: ``palimpsest review PATH --base B`` on a repository whose branch had moved on used the
branch's newer snapshot and dropped nearly every candidate as ``stale``. Now the base is built
once as a *pinned* snapshot beside the branch's: the review is on its base, the branch's snapshot
stays the repository's newest, and a second review of the same base builds nothing.
"""

from __future__ import annotations

from pathlib import Path
from uuid import UUID

from palimpsest.cli.commands_review import review_local
from palimpsest.core.db import tenant_tx
from palimpsest.core.llm import Gateway
from palimpsest.core.service import Infra
from palimpsest.index.search import lexical_search
from palimpsest.index.snapshots import newest_ready
from tests.integration.analyzer.support import index, indexer_definitions, new_repository, query, running
from tests.integration.reviewer.test_reviewer_flow import reviewer_for, settings
from tests.support.gitrepo import commit, git, init_repo

LEDGER = "def post_entry(amount):\n    return amount\n\n\ndef balance(entries):\n    return sum(entries)\n"
REPORT = "from ledger import balance\n\n\ndef monthly(entries):\n    return balance(entries)\n"


def moved_on_repository(path: Path) -> dict[str, str]:
    """``main`` moved three commits past the base; ``feature`` branches from the base."""
    init_repo(path)
    base = commit(path, "2024-01-01T00:00:00+00:00", {"src/ledger.py": LEDGER, "src/report.py": REPORT})
    for i in range(3):  # the branch moves on: every file's text changes after the base
        commit(
            path,
            f"2024-02-0{i + 1}T00:00:00+00:00",
            {"src/ledger.py": LEDGER + f"\n# main {i}\n", "src/report.py": REPORT + f"\n# main {i}\n"},
        )
    main = git(path, "rev-parse", "HEAD").strip()
    git(path, "checkout", "-q", "-b", "feature", base)
    feature = commit(
        path,
        "2024-03-01T00:00:00+00:00",
        {"src/ledger.py": LEDGER.replace("return sum(entries)", "return sum(entries) - fees(entries)")},
    )
    git(path, "checkout", "-q", "main")
    return {"base": base, "main": main, "feature": feature}


async def test_a_review_of_an_older_base_builds_and_uses_that_base(infra: Infra, tmp_path: Path) -> None:
    shas = moved_on_repository(tmp_path / "repo")
    tenant, repo_id = await new_repository(infra, tmp_path / "repo", "base-snapshot")
    s = settings()
    gateway = Gateway(infra.pool, s)
    try:
        async with running(
            infra, [*indexer_definitions({tenant}), reviewer_for(infra, {tenant}, s, gateway)]
        ):
            await index(infra, tenant, repo_id)  # the branch's head
            said: list[str] = []
            first, second = [
                await review_local(
                    infra.pool,
                    infra.nc,
                    tenant,
                    tmp_path / "repo",
                    shas["base"],
                    "feature",
                    timeout_s=90,
                    say=said.append,
                )
                for _ in range(2)
            ]
    finally:
        await gateway.aclose()
    assert first["state"] == second["state"] == "completed"
    assert first["sources"]["snapshot_on_base"] is True
    assert first["sources"]["snapshot_commit"] == shas["base"]
    assert not [d for d in first["dropped"] if d["reason"] == "stale"]
    assert any(c["path"] == "src/report.py" for c in first["context"])  # balance's caller, as at the base
    assert sum("indexing the base" in line for line in said) == 1  # the second review reuses it
    assert second["snapshot_id"] == first["snapshot_id"]

    assert await snapshots(infra, tenant, repo_id) == [
        (shas["main"], "ready", False),
        (shas["base"], "ready", True),
    ]
    # the branch moves on again: its new snapshot supersedes the branch's old one, not the base's
    later = commit(tmp_path / "repo", "2024-04-01T00:00:00+00:00", {"src/ledger.py": LEDGER + "\n# later\n"})
    async with running(infra, indexer_definitions({tenant})):
        await index(infra, tenant, repo_id)
    assert await snapshots(infra, tenant, repo_id) == [
        (shas["main"], "superseded", False),
        (shas["base"], "ready", True),
        (later, "ready", False),
    ]
    shas["main"] = later
    # the branch's snapshot stays the repository's newest: search reads the head's text
    async with tenant_tx(infra.pool, tenant) as conn:
        newest = await newest_ready(conn, repo_id)
        assert newest is not None and newest.commit_sha == shas["main"]
        hits = await lexical_search(conn, repo_id, "balance")
    assert hits and all(h.blob_sha != _blob(tmp_path / "repo", shas["base"], h.path) for h in hits)


async def snapshots(infra: Infra, tenant: UUID, repo_id: UUID) -> list[tuple[str, str, bool]]:
    rows = await query(
        infra,
        tenant,
        "SELECT commit_sha, state, pinned FROM code_index_snapshots WHERE repository_id = %s ORDER BY created_at",
        repo_id,
    )
    return [(r["commit_sha"], r["state"], r["pinned"]) for r in rows]


def _blob(repo: Path, rev: str, path: str) -> str:
    return git(repo, "rev-parse", f"{rev}:{path}").strip()
