"""``select_analysis_chunks`` on real repositories with controlled commit dates.

Each repository is indexed through the bus by the real chunker and recency-scanner; the selection
then reads the code index and the recency tables. Chunk counts are predictable: a Python file
with n functions is n definition chunks, a Markdown file with k headings is k sections.
"""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from uuid import UUID

import pytest

from palimpsest.analyzer.selection import select_analysis_chunks
from palimpsest.core.db import tenant_tx
from palimpsest.core.service import Infra
from tests.integration.analyzer.support import index, indexer_definitions, new_repository, running
from tests.support.gitrepo import commit, init_repo


def py(tag: str, functions: int) -> str:
    return "".join(f"def {tag}_{i}(x):\n    return x + {i}\n\n\n" for i in range(functions))


def md(title: str, sections: int) -> str:
    return f"# {title}\n\nAbout {title}.\n\n" + "".join(
        f"## Part {i}\n\nText {i}.\n\n" for i in range(1, sections)
    )


def at(date: str) -> datetime:
    return datetime.fromisoformat(date).replace(tzinfo=UTC)


@pytest.fixture(scope="module")
def mixed_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """README (3 sections) + pyproject.toml + 6 two-section docs + code in src/, lib/, app/."""
    repo = init_repo(tmp_path_factory.mktemp("mixed") / "repo")
    commit(
        repo,
        "2019-01-01T00:00:00+00:00",
        {"README.md": md("Mixed", 3), "pyproject.toml": '[project]\nname = "m"\n'},
    )
    commit(repo, "2021-01-01T00:00:00+00:00", {"src/old.py": py("old", 5)})
    for i, letter in enumerate("abcdef"):
        commit(repo, f"202{i}-02-01T00:00:00+00:00", {f"docs/{letter}.md": md(f"Doc {letter}", 2)})
    commit(repo, "2022-05-01T00:00:00+00:00", {"app/y.py": py("y", 4)})
    commit(repo, "2023-01-01T00:00:00+00:00", {"src/mid.py": py("mid", 2)})
    commit(repo, "2024-03-01T00:00:00+00:00", {"lib/x.py": py("x", 4)})
    commit(repo, "2024-06-01T00:00:00+00:00", {"src/new.py": py("new", 5)})
    return repo


@pytest.fixture(scope="module")
async def indexed(infra: Infra, mixed_repo: Path) -> tuple[UUID, UUID]:
    tenant, repo_id = await new_repository(infra, mixed_repo, "selection")
    async with running(infra, indexer_definitions({tenant})):
        await index(infra, tenant, repo_id)
    return tenant, repo_id


async def select(infra: Infra, tenant: UUID, repo_id: UUID, limit: int):  # type: ignore[no-untyped-def]
    async with tenant_tx(infra.pool, tenant) as conn:
        return await select_analysis_chunks(conn, repo_id, limit)


async def test_doc_cap_seeds_and_directory_round_robin(infra: Infra, indexed: tuple[UUID, UUID]) -> None:
    tenant, repo_id = indexed
    selection = await select(infra, tenant, repo_id, 10)
    paths = [(c.path, c.kind) for c in selection.chunks]
    assert len(paths) == 10
    # docs ≤ 20 % of the limit; the old root README is seeded anyway (ahead of six newer docs)
    assert [p for p, kind in paths if kind == "doc"] == ["README.md", "README.md"]
    # code first; the root manifest leads, then the primary package (no directory matches the
    # project's name "m", so the largest code tree: src/) — its files by graph centrality, ties
    # (nothing imports anything here) broken by recency — before any other directory
    code = [p for p, kind in paths if kind == "code"]
    assert code == ["pyproject.toml"] + ["src/new.py"] * 3 + ["src/mid.py"] * 2 + ["src/old.py"] * 2
    why = {c.path: c.why for c in selection.chunks}
    assert why["pyproject.toml"] == "root manifest" and why["README.md"] == "root README"
    assert why["src/new.py"] == "central in src (PageRank #1)"
    assert all(c.primary == c.path.startswith("src/") for c in selection.chunks)
    assert selection.packages is not None and selection.packages.declared_by == {"src": "largest code tree"}
    assert paths.index(("README.md", "doc")) > max(i for i, (_, k) in enumerate(paths) if k == "code")


async def test_per_file_cap_and_recency_order(infra: Infra, indexed: tuple[UUID, UUID]) -> None:
    tenant, repo_id = indexed
    selection = await select(infra, tenant, repo_id, 20)
    per_file = Counter(c.path for c in selection.chunks)
    assert max(per_file.values()) == 3
    assert per_file["lib/x.py"] == 3  # 4 functions, capped
    assert per_file["src/new.py"] == per_file["src/old.py"] == 3
    # doc budget 4: the README's three sections and the newest other doc
    assert [c.path for c in selection.docs] == ["README.md"] * 3 + ["docs/f.md"]
    src = [c.path for c in selection.chunks if c.path.startswith("src/")]
    assert src == ["src/new.py"] * 3 + ["src/mid.py"] * 2 + ["src/old.py"] * 3  # newest first
    dates = {c.path: c.last_modified_at for c in selection.chunks}
    assert dates["src/new.py"] == at("2024-06-01")
    assert dates["README.md"] == at("2019-01-01")
    # the median code date: code files dated 2019-01, 2021-01, 2022-05, 2023-01, 2024-03, 2024-06
    assert selection.median_code == at("2022-05-01") + (at("2023-01-01") - at("2022-05-01")) / 2


async def test_undated_files_come_last(infra: Infra, indexed: tuple[UUID, UUID], mixed_repo: Path) -> None:
    tenant, repo_id = indexed
    async with tenant_tx(infra.pool, tenant) as conn:  # as after a window-bounded or failed scan
        await conn.execute(
            "UPDATE file_recency SET last_modified_at = NULL WHERE repository_id = %s AND path = 'src/new.py'",
            (repo_id,),
        )
    try:
        selection = await select(infra, tenant, repo_id, 20)
    finally:
        async with tenant_tx(infra.pool, tenant) as conn:
            await conn.execute(
                "UPDATE file_recency SET last_modified_at = '2024-06-01T00:00:00Z' WHERE repository_id = %s"
                " AND path = 'src/new.py'",
                (repo_id,),
            )
    src = [c.path for c in selection.chunks if c.path.startswith("src/")]
    assert src == ["src/mid.py"] * 2 + ["src/old.py"] * 3 + ["src/new.py"] * 3
    new = next(c for c in selection.chunks if c.path == "src/new.py")
    assert new.last_modified_at is None and not new.stale
    # other directories follow the primary package, ordered by their newest dated file
    code = list(dict.fromkeys(c.path for c in selection.code if not c.primary))
    assert code == ["pyproject.toml", "lib/x.py", "app/y.py"]


async def test_spill_over_fills_the_doc_budget_with_code(infra: Infra, tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "nodocs")
    commit(
        repo,
        "2024-01-01T00:00:00+00:00",
        {"a/one.py": py("one", 6), "b/two.py": py("two", 6), "c/three.py": py("three", 6)},
    )
    commit(repo, "2024-02-01T00:00:00+00:00", {"notes.md": "# Notes\n\nOne section only.\n"})
    tenant, repo_id = await new_repository(infra, repo, "spill")
    async with running(infra, indexer_definitions({tenant})):
        await index(infra, tenant, repo_id)
    selection = await select(infra, tenant, repo_id, 10)
    assert len(selection.chunks) == 10
    assert [c.path for c in selection.docs] == ["notes.md"]  # one doc chunk of a budget of 2
    assert len(selection.code) == 9  # the spare doc slot went to code
    assert Counter(c.path for c in selection.code) == {"a/one.py": 3, "b/two.py": 3, "c/three.py": 3}


async def test_tiny_repository_is_passed_through(infra: Infra, tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "tiny")
    commit(
        repo,
        "2024-01-01T00:00:00+00:00",
        {"README.md": md("Tiny", 4), "guide.md": md("Guide", 2), "main.py": py("main", 5)},
    )
    tenant, repo_id = await new_repository(infra, repo, "tiny")
    async with running(infra, indexer_definitions({tenant})):
        await index(infra, tenant, repo_id)
    selection = await select(infra, tenant, repo_id, 80)
    # 11 chunks ≤ 80: everything, although docs are 6 of 11 and main.py has 5 chunks
    assert Counter(c.path for c in selection.chunks) == {"README.md": 4, "guide.md": 2, "main.py": 5}
    assert [c.kind for c in selection.chunks] == ["code"] * 5 + ["doc"] * 6
    assert all(c.text for c in selection.chunks)
