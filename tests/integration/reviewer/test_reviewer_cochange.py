"""The co-change warning through the real reviewer (issue 54): evidence combined over the pull
request's files, silence when the pull request holds the whole habit, the evidence shown.

A real git repository with controlled dates: ``src/partner.py`` changed with ``a.py``, ``b.py``
and ``c.py`` together four times; ``src/lone.py`` changed with ``a.py`` alone four times.
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

import pytest

from palimpsest.core.events import ReviewRequested
from palimpsest.core.service import Infra
from tests.integration.analyzer.support import index, indexer_definitions, new_repository, running
from tests.integration.reviewer.test_reviewer_flow import review, settings
from tests.support.gitrepo import commit, git, head, init_repo

FILES = ("src/a.py", "src/b.py", "src/c.py")


def _code(name: str, version: int) -> str:
    return f"def {name}_value():\n    return {version}\n"


@pytest.fixture(scope="module")
def habit(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    r = init_repo(tmp_path_factory.mktemp("cochange") / "repo")
    names = ("a", "b", "c", "partner", "lone", "other")
    commit(r, "2024-01-01T00:00:00+00:00", {f"src/{n}.py": _code(n, 0) for n in names})
    for month in range(2, 6):  # a, b, c and partner change together
        stamp = f"2024-{month:02d}-01T00:00:00+00:00"
        commit(r, stamp, {f"src/{n}.py": _code(n, month) for n in ("a", "b", "c", "partner")})
    for month in range(6, 10):  # a and lone change together
        commit(
            r, f"2024-{month:02d}-01T00:00:00+00:00", {f"src/{n}.py": _code(n, month) for n in ("a", "lone")}
        )
    for day in range(1, 9):  # an unrelated file: the habits are not all of the history
        commit(r, f"2024-10-{day:02d}T00:00:00+00:00", {"src/other.py": _code("other", 10 + day)})
    base = head(r)
    git(r, "checkout", "-q", "-b", "most")
    most = commit(r, "2024-11-01T00:00:00+00:00", {f: _code(f[4], 99) for f in FILES}, message="most")
    git(r, "checkout", "-q", "-b", "whole", base)
    whole = commit(
        r,
        "2024-11-02T00:00:00+00:00",
        {**{f: _code(f[4], 99) for f in FILES}, "src/partner.py": _code("partner", 99)},
        message="whole",
    )
    git(r, "checkout", "-q", "main")
    return {"path": r, "base": base, "most": most, "whole": whole}


@pytest.fixture(scope="module")
async def indexed(infra: Infra, habit: dict[str, Any]) -> tuple[UUID, UUID]:
    tenant, repo_id = await new_repository(infra, habit["path"], "cochange")
    async with running(infra, indexer_definitions({tenant})):
        await index(infra, tenant, repo_id)
    return tenant, repo_id


def _pr(tenant: UUID, repo_id: UUID, habit: dict[str, Any], branch: str) -> ReviewRequested:
    return ReviewRequested(
        tenant_id=tenant,
        repository_id=repo_id,
        base_sha=habit["base"],
        head_sha=habit[branch],
        provider="local",
    )


async def test_the_partner_of_most_of_the_prs_files_is_named_with_its_evidence(
    infra: Infra, indexed: tuple[UUID, UUID], habit: dict[str, Any]
) -> None:
    tenant, repo_id = indexed
    stored = await review(infra, tenant, _pr(tenant, repo_id, habit, "most"), settings())
    # lone.py changed with a.py alone (5 of its 9 commits): one file of three is weak evidence
    assert [m["path"] for m in stored["cochange_missing"]] == ["src/partner.py"]
    [m] = stored["cochange_missing"]
    assert m["of_files"] == 3 and {s["source"] for s in m["support"]} == set(FILES)
    assert m["reason"].startswith(
        "changed with 3 of the pull request's 3 files with a history:"
        " in 5 of the 5 commits that changed `src/b.py`; in 5 of the 5 commits that changed `src/c.py`;"
        " in 5 of the 9 commits that changed `src/a.py` (score "
    )
    assert f"- src/partner.py: {m['reason']}" in stored["summary"]


async def test_a_pull_request_that_holds_the_whole_habit_draws_no_warning(
    infra: Infra, indexed: tuple[UUID, UUID], habit: dict[str, Any]
) -> None:
    tenant, repo_id = indexed
    stored = await review(infra, tenant, _pr(tenant, repo_id, habit, "whole"), settings())
    assert stored["cochange_missing"] == []
