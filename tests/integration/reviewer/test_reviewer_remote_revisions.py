"""A review of a remote repository by branch or tag name: the names are fetched into refs of the
same name, so they resolve as in a local repository (a plain ``fetch URL main`` writes only
FETCH_HEAD, and ``POST /v1/reviews {"base": "main", ...}`` on a remote failed with
``unknown_revision``). The remote is a real git smart-HTTP server on loopback."""

from __future__ import annotations

from pathlib import Path

import pytest

from palimpsest.core.sources import SourcePolicy
from palimpsest.devtools.fakes.git_http import GitHttpServer
from palimpsest.index.context.errors import ReviewFailed
from palimpsest.index.context.source import fetch_refspecs, open_repository, pull_request_diff, rev_parse
from tests.support.gitrepo import commit, git, head, init_repo

POLICY = SourcePolicy(private_hosts=frozenset({"127.0.0.1"}))


@pytest.fixture
def served(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    source = init_repo(tmp_path / "source")
    commit(source, "2024-05-01", {"app.py": "def handler():\n    return 1\n"})
    git(source, "tag", "v1")
    commit(source, "2024-05-02", {"app.py": "def handler():\n    return 2\n"})
    git(source, "checkout", "-q", "-b", "feature/x")
    commit(source, "2024-05-03", {"app.py": "def handler():\n    return 3\n", "new.py": "X = 1\n"})
    commit(source, "2024-05-04", {"new.py": "X = 2\n"})
    shas = {
        "main": git(source, "rev-parse", "main").strip(),
        "v1": git(source, "rev-parse", "v1^{commit}").strip(),
        "feature/x": head(source),
        "feature/x~1": git(source, "rev-parse", "feature/x~1").strip(),
    }
    root = tmp_path / "served"
    (root / "team").mkdir(parents=True)
    git(root, "clone", "-q", "--bare", str(source), "team/app.git")
    return root, shas


async def test_branch_and_tag_names_resolve_in_the_fetched_repository(
    served: tuple[Path, dict[str, str]],
) -> None:
    root, shas = served
    with GitHttpServer(root, authorization=None) as server:
        revisions = ["main", "feature/x~1", "refs/tags/v1", shas["feature/x"]]
        async with open_repository(
            server.url("team/app.git"), revisions, auth=None, policy=POLICY
        ) as git_dir:
            assert await rev_parse(git_dir, "main") == shas["main"]
            assert await rev_parse(git_dir, "feature/x~1") == shas["feature/x~1"]
            assert await rev_parse(git_dir, "refs/tags/v1") == shas["v1"]
            assert await rev_parse(git_dir, shas["feature/x"]) == shas["feature/x"]
            pr = await pull_request_diff(git_dir, shas["main"], shas["feature/x"])
            assert sorted(f.path for f in pr.files) == ["app.py", "new.py"]
            assert pr.at_head["new.py"] == "X = 2\n"


async def test_a_name_the_remote_lacks_fails_the_review_with_a_reason(
    served: tuple[Path, dict[str, str]],
) -> None:
    root, _ = served
    with GitHttpServer(root, authorization=None) as server, pytest.raises(ReviewFailed) as failed:
        async with open_repository(server.url("team/app.git"), ["no-such-branch"], auth=None, policy=POLICY):
            pass
    assert str(failed.value)


def test_refspecs_map_names_to_refs_of_the_same_name_and_refuse_odd_ones() -> None:
    sha = "a" * 40
    assert fetch_refspecs([sha, "main", "main~2", "v1.0^{}", "refs/pull/7/head", sha]) == [
        sha,
        "+main:refs/heads/main",
        "+v1.0:refs/heads/v1.0",
        "+refs/pull/7/head:refs/pull/7/head",
    ]
    for bad in ("-x", "+x", "a..b", "a/.hidden", "x.lock", "~1", "a//b"):
        with pytest.raises(ReviewFailed, match="unknown_revision"):
            fetch_refspecs([bad])
