"""The review's graph neighbourhood hands the ranking its whole one-hop list, not the first 48:
sixty modules import the changed one (each committed on its own, so no co-change history stands
in for the graph), and every one of them reaches the ranking with its neighbourhood rank."""

from __future__ import annotations

from pathlib import Path

from palimpsest.core.db import tenant_tx
from palimpsest.core.service import Infra
from palimpsest.index.context.assemble import NEIGHBOURHOOD_DEPTH, ContextOptions, assemble_context
from tests.integration.graph.support import index_path, running_chunker
from tests.support.gitrepo import commit, git, head, init_repo
from tests.support.tenants import create_tenant

CORE = "def compute(order):\n    return order * 2\n"
USERS = 60


def user(n: int) -> str:
    return f"from app.core import compute\n\n\ndef handle_{n}(order):\n    return compute(order) + {n}\n"


async def test_the_neighbourhood_reaches_past_the_first_48_files(infra: Infra, tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo")
    commit(repo, "2024-01-01", {"app/__init__.py": "", "app/core.py": CORE})
    for n in range(USERS):
        commit(repo, f"2024-02-01T00:{n // 60:02d}:{n % 60:02d}", {f"app/user_{n:02d}.py": user(n)})
    base = head(repo)
    commit(repo, "2024-03-01", {"app/core.py": CORE.replace("* 2", "* 3")})
    diff = git(repo, "diff", base, "HEAD")
    tenant = await create_tenant(infra.pool, "neighbourhood")
    git(repo, "checkout", "-q", base)
    async with running_chunker(infra):
        repo_id, built = await index_path(infra, tenant, repo)
    assert built.state == "ready"
    options = ContextOptions()
    assert options.per_source * 4 < USERS <= options.per_source * NEIGHBOURHOOD_DEPTH
    at_head = {"app/core.py": CORE.replace("* 2", "* 3")}
    async with tenant_tx(infra.pool, tenant) as conn:
        ctx = await assemble_context(conn, repo_id, diff, at_head, 8000, base_sha=base, options=options)
    ranked = {path for path, signals in ctx.file_signals.items() if "neighbourhood" in signals}
    assert ranked >= {f"app/user_{n:02d}.py" for n in range(USERS)}
