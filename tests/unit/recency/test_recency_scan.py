"""scan_local and scan_remote end to end on repositories built here (file:// remotes)."""

from __future__ import annotations

from pathlib import Path

import pytest

from palimpsest.core.git_errors import GitError, GitFailure
from palimpsest.recency_scanner.clone import clone_args, scan_local, scan_remote
from palimpsest.recency_scanner.logparse import RecencyResult
from tests.support.gitrepo import checkout, commit, git, init_repo, merge, move, when

FILE = ("file",)


def dates(result: RecencyResult) -> dict[str, str]:
    return {path: change.when.date().isoformat() for path, change in result.files.items()}


@pytest.fixture
def source(tmp_path: Path) -> Path:
    """main: 2019 base, 2021 edit, merge (2023) of a side branch last touched in 2018's
    base... plus later work. Used with and without a 2022 window."""
    repo = init_repo(tmp_path / "source")
    commit(repo, "2018-01-01", {"ancient.txt": "1", "docs/old.md": "1", "src/app.py": "1"})
    checkout(repo, "dormant", create=True)
    commit(repo, "2018-06-01", {"dormant.txt": "d"})  # side branch, older than any window
    checkout(repo, "main")
    commit(repo, "2022-03-01", {"src/app.py": "2", "src/util.py": "1"})
    commit(repo, "2022-06-01", {"src/app.py": "3", "src/util.py": "2"})
    merge(repo, "2023-01-01", "dormant")
    commit(repo, "2024-01-01", {"README.md": "hello"})
    move(repo, "2024-06-01", "src/util.py", "src/helpers.py")
    return repo


FULL = {
    "ancient.txt": "2018-01-01",
    "docs/old.md": "2018-01-01",
    "src/app.py": "2022-06-01",
    "src/helpers.py": "2024-06-01",
    "dormant.txt": "2023-01-01",
    "README.md": "2024-01-01",
}
WINDOWED = {k: v for k, v in FULL.items() if v >= "2022"}


async def test_scan_local_reads_the_repository_in_place(source: Path) -> None:
    result = await scan_local(source, "main")
    assert dates(result) == FULL
    assert result.commits == 6
    assert result.cochange[("src/app.py", "src/helpers.py")][:2] == (2, when("2022-06-01"))


async def test_scan_local_window_and_other_branch(source: Path) -> None:
    assert dates(await scan_local(source, None, window="2022-01-01")) == WINDOWED
    assert dates(await scan_local(source, "dormant")) == {
        "ancient.txt": "2018-01-01",
        "docs/old.md": "2018-01-01",
        "src/app.py": "2018-01-01",
        "dormant.txt": "2018-06-01",
    }


async def test_scan_local_errors(source: Path, tmp_path: Path) -> None:
    with pytest.raises(GitError) as info:
        await scan_local(source, "no-such-branch")
    assert info.value.reason is GitFailure.REF_NOT_FOUND
    with pytest.raises(GitError) as info:
        await scan_local(source, "--all")
    assert info.value.reason is GitFailure.INVALID_ARGUMENT
    (tmp_path / "plain").mkdir()
    with pytest.raises(GitError) as info:
        await scan_local(tmp_path / "plain", None)
    assert info.value.reason is GitFailure.NOT_FOUND


async def test_scan_remote_matches_the_local_scan(source: Path, tmp_path: Path) -> None:
    clones = tmp_path / "clones"
    clones.mkdir()
    result = await scan_remote(f"file://{source}", "main", allowed_protocols=FILE, tmp_parent=clones)
    assert dates(result) == FULL
    assert result.cochange == (await scan_local(source, "main")).cochange
    assert list(clones.iterdir()) == []


async def test_scan_remote_window_sees_past_merges_with_old_side_branches(
    source: Path, tmp_path: Path
) -> None:
    # The 2023 merge's side parent (2018) is older than the window, which makes git cut the
    # shallow history at the merge; the scan must still date the 2022 commits behind it.
    result = await scan_remote(
        f"file://{source}", "main", window="2022-01-01", allowed_protocols=FILE, tmp_parent=tmp_path
    )
    assert dates(result) == WINDOWED
    assert result.cochange[("src/app.py", "src/helpers.py")][:2] == (2, when("2022-06-01"))
    assert [p.name for p in tmp_path.iterdir()] == ["source"]


async def test_scan_remote_window_boundary_commit_keeps_its_own_changes(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "linear")
    commit(repo, "2019-01-01", {"old": "1", "edited": "1"})
    commit(repo, "2023-01-01", {"edited": "2"})  # the oldest commit inside the window
    commit(repo, "2024-01-01", {"new": "1"})
    result = await scan_remote(
        f"file://{repo}", None, window="2022-01-01", allowed_protocols=FILE, tmp_parent=tmp_path
    )
    assert dates(result) == {"edited": "2023-01-01", "new": "2024-01-01"}


async def test_scan_remote_window_without_commits_is_empty(source: Path, tmp_path: Path) -> None:
    result = await scan_remote(
        f"file://{source}", "main", window="2030-01-01", allowed_protocols=FILE, tmp_parent=tmp_path
    )
    assert result == RecencyResult()


async def test_scan_remote_does_not_fetch_blobs(source: Path, tmp_path: Path) -> None:
    # the source goes away after the clone would have happened; if the log needed blobs
    # (similarity renames), the lazy fetch would fail. A partial rename proves the point.
    move(source, "2025-01-01", "src/app.py", "src/main.py", append="more\n")
    result = await scan_remote(f"file://{source}", "main", allowed_protocols=FILE, tmp_parent=tmp_path)
    assert dates(result)["src/main.py"] == "2025-01-01"


async def test_scan_local_on_a_partial_clone_never_fetches(source: Path, tmp_path: Path) -> None:
    move(source, "2025-01-01", "src/app.py", "src/main.py", append="more\n")
    git(tmp_path, "clone", "-q", "--bare", "--filter=blob:none", f"file://{source}", "partial.git")
    moved = source.rename(tmp_path / "unreachable")
    result = await scan_local(tmp_path / "partial.git", "main")
    assert dates(result)["src/main.py"] == "2025-01-01"
    assert moved.exists()


async def test_scan_remote_failures_leave_no_clone_behind(tmp_path: Path) -> None:
    (tmp_path / "clones").mkdir()
    with pytest.raises(GitError) as info:
        await scan_remote(
            f"file://{tmp_path}/absent", None, allowed_protocols=FILE, tmp_parent=tmp_path / "clones"
        )
    assert info.value.reason is GitFailure.NOT_FOUND
    with pytest.raises(GitError) as info:
        await scan_remote(f"file://{tmp_path}/absent", None, tmp_parent=tmp_path / "clones")
    assert info.value.reason is GitFailure.NETWORK  # file:// is not an allowed protocol
    assert list((tmp_path / "clones").iterdir()) == []


@pytest.mark.parametrize(
    ("branch", "window"), [("-x", None), ("a b", None), ("main", "--upload-pack=x"), ("main", "")]
)
async def test_scan_remote_refuses_option_like_arguments(
    branch: str, window: str | None, tmp_path: Path
) -> None:
    with pytest.raises(GitError) as info:
        await scan_remote("https://example.invalid/r.git", branch, window=window)
    assert info.value.reason is GitFailure.INVALID_ARGUMENT


def test_clone_args_shape(tmp_path: Path) -> None:
    args = clone_args("https://h/r.git", "main", tmp_path / "t", window="2 years ago")
    assert args[:6] == ["clone", "--bare", "--quiet", "--no-tags", "--filter=blob:none", "--single-branch"]
    assert "--shallow-since=2 years ago" in args
    assert args[-3:] == ["--", "https://h/r.git", str(tmp_path / "t")]
