"""The streaming git-log parser, run on real git output from repositories built here."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from palimpsest.core.git import decode_path
from palimpsest.core.git_errors import GitError, GitFailure
from palimpsest.recency_scanner.logparse import (
    DEFAULT_MAX_FILES_PER_COMMIT,
    DEFAULT_PAIR_CAP,
    CoChange,
    LogParser,
    RecencyResult,
    RenameMode,
    log_args,
    parse_log,
)
from tests.support.gitrepo import (
    base_env,
    checkout,
    commit,
    git,
    head,
    init_repo,
    merge,
    move,
    when,
)


def git_log(repo: Path, *, renames: RenameMode = "full", extra: tuple[str, ...] = ()) -> bytes:
    args = log_args("HEAD", renames=renames)
    cut = args.index("--end-of-options")
    argv = ["git", *args[:cut], *extra, *args[cut:]]
    return subprocess.run(argv, cwd=repo, env=base_env(), capture_output=True, check=True).stdout


def scan(
    repo: Path,
    *,
    renames: RenameMode = "full",
    max_files_per_commit: int = DEFAULT_MAX_FILES_PER_COMMIT,
    pair_cap: int = DEFAULT_PAIR_CAP,
) -> RecencyResult:
    return parse_log(
        git_log(repo, renames=renames), max_files_per_commit=max_files_per_commit, pair_cap=pair_cap
    )


def dates(result: RecencyResult) -> dict[str, str]:
    return {path: change.when.date().isoformat() for path, change in result.files.items()}


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return init_repo(tmp_path / "repo")


# ------------------------------------------------------------------------------- files


def test_adds_and_modifies_keep_the_newest_date(repo: Path) -> None:
    first = commit(repo, "2021-01-01", {"a.py": "1", "b.py": "1"})
    second = commit(repo, "2022-01-01", {"a.py": "2"})
    result = scan(repo)
    assert dates(result) == {"a.py": "2022-01-01", "b.py": "2021-01-01"}
    assert result.files["a.py"].commit == second
    assert result.files["b.py"].commit == first
    assert result.files["a.py"].when == when("2022-01-01")
    assert result.commits == 2


def test_commit_dates_keep_their_offset(repo: Path) -> None:
    commit(repo, "2024-03-01T10:00:00+05:30", {"a": "1"})
    assert scan(repo).files["a"].when.isoformat() == "2024-03-01T10:00:00+05:30"


def test_deleted_files_are_not_current(repo: Path) -> None:
    commit(repo, "2020-01-01", {"gone.md": "x", "back.md": "1", "kept.md": "k"})
    commit(repo, "2021-01-01", {"gone.md": "y"})
    commit(repo, "2022-01-01", {"gone.md": None, "back.md": None})
    commit(repo, "2023-01-01", {"back.md": "again"})
    assert dates(scan(repo)) == {"back.md": "2023-01-01", "kept.md": "2020-01-01"}


def test_exact_rename_credits_the_new_path(repo: Path) -> None:
    commit(repo, "2020-01-01", {"old/name.py": "content\n" * 20, "other.py": "o"})
    commit(repo, "2021-01-01", {"old/name.py": "content\n" * 21})
    rename = move(repo, "2022-01-01", "old/name.py", "new/name.py")
    result = scan(repo, renames="exact")
    assert dates(result) == {"new/name.py": "2022-01-01", "other.py": "2020-01-01"}
    assert result.files["new/name.py"].commit == rename
    assert "R100" in git_log(repo, renames="exact").decode()


@pytest.mark.parametrize("renames", ["full", "exact"])
def test_partial_rename_credits_the_new_path(repo: Path, renames: RenameMode) -> None:
    commit(repo, "2020-01-01", {"a.py": "".join(f"line {i}\n" for i in range(40))})
    move(repo, "2022-01-01", "a.py", "b.py", append="one more line\n")
    output = git_log(repo, renames=renames)
    # similarity detection sees R0xx; exact-only (blob-less clones) sees delete + add
    assert (re.search(rb"[\0\n]R0[0-9]{2}\0a\.py\0b\.py\0", output) is not None) == (renames == "full")
    assert dates(scan(repo, renames=renames)) == {"b.py": "2022-01-01"}


def test_copies_credit_the_destination_only(repo: Path) -> None:
    commit(repo, "2020-01-01", {"src.py": "".join(f"line {i}\n" for i in range(40))})
    commit(repo, "2022-01-01", {"dst.py": "".join(f"line {i}\n" for i in range(40))})
    output = git_log(repo, extra=("-C", "--find-copies-harder"))
    assert b"\nC100\0src.py\0dst.py\0" in output
    assert dates(parse_log(output)) == {"src.py": "2020-01-01", "dst.py": "2022-01-01"}


def test_empty_commits_are_counted_without_files(repo: Path) -> None:
    commit(repo, "2020-01-01", {"a": "1"})
    commit(repo, "2021-01-01")
    commit(repo, "2022-01-01", {"b": "1"})
    commit(repo, "2023-01-01")
    result = scan(repo)
    assert result.commits == 4
    assert dates(result) == {"a": "2020-01-01", "b": "2022-01-01"}


def test_only_empty_commits(repo: Path) -> None:
    commit(repo, "2020-01-01")
    result = scan(repo)
    assert (result.commits, result.files, result.cochange) == (1, {}, {})


# ------------------------------------------------------------------------------- merges


def test_merge_credits_the_landing_date_and_the_resolution(repo: Path) -> None:
    commit(repo, "2020-01-01", {"main.py": "m", "conflict.txt": "base\n", "quiet.txt": "q"})
    checkout(repo, "feature", create=True)
    commit(repo, "2021-01-01", {"feature.py": "f", "conflict.txt": "feature\n"})
    checkout(repo, "main")
    commit(repo, "2021-06-01", {"conflict.txt": "main\n"})
    merged = merge(repo, "2022-01-01", "feature", files={"conflict.txt": "resolved\n"})
    result = scan(repo)
    assert dates(result) == {
        "feature.py": "2022-01-01",  # landed on main with the merge
        "conflict.txt": "2022-01-01",  # changed by the merge resolution
        "main.py": "2020-01-01",
        "quiet.txt": "2020-01-01",
    }
    assert result.files["conflict.txt"].commit == merged
    assert result.commits == 3  # first-parent history: side-branch commits are not walked


def test_evil_merge_change_gets_the_merge_date(repo: Path) -> None:
    commit(repo, "2020-01-01", {"a": "1", "untouched": "u"})
    checkout(repo, "side", create=True)
    commit(repo, "2021-01-01", {"b": "1"})
    checkout(repo, "main")
    commit(repo, "2021-02-01", {"c": "1"})
    merge(repo, "2022-01-01", "side", files={"a": "changed only in the merge"})
    assert dates(scan(repo)) == {
        "a": "2022-01-01",
        "b": "2022-01-01",
        "c": "2021-02-01",
        "untouched": "2020-01-01",
    }


def test_octopus_merge_credits_every_branch(repo: Path) -> None:
    commit(repo, "2020-01-01", {"base": "b"})
    for name in ("one", "two", "three"):
        checkout(repo, "main")
        checkout(repo, name, create=True)
        commit(repo, "2021-01-01", {f"{name}.txt": name})
    checkout(repo, "main")
    octopus = merge(repo, "2022-01-01", "one", "two", "three")
    parents = git(repo, "show", "-s", "--format=%P", octopus).split()
    assert len(parents) == 4
    result = scan(repo)
    assert dates(result) == {
        "base": "2020-01-01",
        "one.txt": "2022-01-01",
        "two.txt": "2022-01-01",
        "three.txt": "2022-01-01",
    }
    assert result.cochange[("one.txt", "three.txt")][:2] == (1, when("2022-01-01"))


def test_merge_deleting_a_file_marks_it_gone(repo: Path) -> None:
    commit(repo, "2020-01-01", {"doomed": "1", "keep": "k"})
    checkout(repo, "side", create=True)
    commit(repo, "2021-01-01", {"doomed": None})
    checkout(repo, "main")
    commit(repo, "2021-06-01", {"keep": "k2"})
    merge(repo, "2022-01-01", "side")
    assert dates(scan(repo)) == {"keep": "2021-06-01"}


def test_separate_merge_diffs_count_the_commit_once(repo: Path) -> None:
    commit(repo, "2020-01-01", {"a": "1"})
    checkout(repo, "side", create=True)
    commit(repo, "2021-01-01", {"b": "1"})
    checkout(repo, "main")
    commit(repo, "2021-02-01", {"c": "1"})
    merge(repo, "2022-01-01", "side")
    output = subprocess.run(
        ["git", "log", "-z", "--format=%H %cI", "--name-status", "--first-parent", "-m"],
        cwd=repo,
        env=base_env(),
        capture_output=True,
        check=True,
    ).stdout
    result = parse_log(output)
    assert result.commits == 3
    assert dates(result)["b"] == "2022-01-01"


# ------------------------------------------------------------------------------- paths


ODD = ["with space.md", "tab\tin.md", "new\nline.md", 'dq"uote.md', "sq'uote.md", "ünïcødé/ファイル.py"]


def test_awkward_paths_pass_through_unquoted(repo: Path) -> None:
    commit(repo, "2020-01-01", {name: name for name in ODD})
    commit(repo, "2021-01-01", {ODD[1]: "changed"})
    move(repo, "2022-01-01", ODD[2], "renamed\nstill.md")
    result = scan(repo)
    expected = {name: "2020-01-01" for name in ODD if name != ODD[2]}
    expected[ODD[1]] = "2021-01-01"
    expected["renamed\nstill.md"] = "2022-01-01"
    assert dates(result) == expected


def test_non_utf8_path_bytes_survive(repo: Path) -> None:
    commit(repo, "2020-01-01", {b"caf\xe9.txt": "x"})
    name = decode_path(b"caf\xe9.txt")
    assert list(scan(repo).files) == [name]
    assert name.encode("utf-8", "surrogateescape") == b"caf\xe9.txt"


def test_chunk_boundaries_anywhere_give_the_same_result(repo: Path) -> None:
    commit(repo, "2020-01-01", {name: name for name in ODD})
    commit(repo, "2021-01-01", {"a": "1", ODD[0]: "2"})
    commit(repo, "2021-06-01")
    move(repo, "2022-01-01", "a", "b")
    output = git_log(repo)
    whole = parse_log(output)
    for size in (1, 2, 3, 7, 64):
        parser = LogParser()
        for start in range(0, len(output), size):
            parser.feed(output[start : start + size])
        assert parser.close() == whole


# ------------------------------------------------------------------------------- co-change


def counts(result: RecencyResult) -> dict[tuple[str, str], tuple[int, object]]:
    """Pairs as (commits, last): what these tests are about (evidence has tests of its own)."""
    return {key: (pair.commits, pair.last) for key, pair in result.cochange.items()}


def test_cochange_counts_and_latest_date(repo: Path) -> None:
    commit(repo, "2020-01-01", {"a": "1", "b": "1", "c": "1"})
    commit(repo, "2021-01-01", {"a": "2", "b": "2"})
    commit(repo, "2022-01-01", {"a": "3"})  # single-file commits make no pairs
    result = scan(repo)
    three = 2 ** (-1 / 3)  # a pair's share of a 3-entry commit (pair_weight)
    year_2020 = 0.5 ** (366 / 1095)  # the 2020 commit seen from 2021, three-year half-life
    assert result.cochange == {
        ("a", "b"): CoChange(2, when("2021-01-01"), pytest.approx(1 + three * year_2020)),
        ("a", "c"): CoChange(1, when("2020-01-01"), pytest.approx(three)),
        ("b", "c"): CoChange(1, when("2020-01-01"), pytest.approx(three)),
    }


def test_evidence_weighs_sweeping_commits_less_than_their_count(repo: Path) -> None:
    """Three 28-file sweeps pair a hub with everything; two 2-file commits pair what moves
    together. The count ranks the sweep pair first, the evidence the real partner."""
    for year in ("2021", "2022", "2023"):
        commit(repo, f"{year}-01-01", {"hub.py": year, **{f"x{i}.py": year for i in range(27)}})
    commit(repo, "2023-02-01", {"a.py": "1", "b.py": "1"})
    commit(repo, "2023-03-01", {"a.py": "2", "b.py": "2"})
    result = scan(repo)
    sweep, real = result.cochange[("hub.py", "x0.py")], result.cochange[("a.py", "b.py")]
    assert sweep.commits == 3 and real.commits == 2
    assert real.evidence > sweep.evidence
    assert sweep.evidence == pytest.approx(27 ** (-1 / 3) * sum(0.5 ** (d / 1095) for d in (0, 365, 730)))


def test_large_commits_make_no_pairs_but_keep_dates(repo: Path) -> None:
    commit(repo, "2020-01-01", {f"f{i}": "1" for i in range(4)})
    commit(repo, "2021-01-01", {"f0": "2", "f1": "2", "f2": "2"})
    result = scan(repo, max_files_per_commit=3)
    assert {key: pair[:2] for key, pair in result.cochange.items()} == {
        ("f0", "f1"): (1, when("2021-01-01")),
        ("f0", "f2"): (1, when("2021-01-01")),
        ("f1", "f2"): (1, when("2021-01-01")),
    }
    assert result.oversized_commits == 1
    assert dates(result)["f3"] == "2020-01-01"


def test_pair_cap_keeps_the_strongest_pairs(repo: Path) -> None:
    commit(repo, "2019-01-01", {"x": "0", "y": "0"})
    for year in (2020, 2021, 2022):
        commit(repo, f"{year}-01-01", {"hot1": str(year), "hot2": str(year)})
    commit(repo, "2023-01-01", {"p": "1", "q": "1"})
    commit(repo, "2023-06-01", {"r": "1", "s": "1"})
    result = scan(repo, pair_cap=2)
    assert counts(result) == {
        ("hot1", "hot2"): (3, when("2022-01-01")),
        ("r", "s"): (1, when("2023-06-01")),  # ties go to the more recent pair
    }
    assert result.pairs_pruned == 2
    assert scan(repo, pair_cap=0).cochange == {}


def test_pair_cap_is_respected_while_streaming() -> None:
    # 50 commits of 5 files each: 500 distinct pairs, cap 20
    parser = LogParser(pair_cap=20)
    for i in range(50):
        sha = f"{i:040x}"
        parser.feed(f"{sha} 2024-01-{(i % 28) + 1:02d}T00:00:00+00:00\0\n".encode())
        parser.feed(b"".join(f"M\0d{i}/f{j}\0".encode() for j in range(5)))
        assert len(parser._pairs) < 40
    result = parser.close()
    assert len(result.cochange) == 20
    assert result.pairs_pruned == 480


def test_renames_fold_older_history_onto_the_current_path(repo: Path) -> None:
    body = "".join(f"line {i}\n" for i in range(40))
    commit(repo, "2019-01-01", {"a.py": body, "partner.py": "0"})
    commit(repo, "2020-01-01", {"a.py": body + "x\n", "partner.py": "1"})
    move(repo, "2021-01-01", "a.py", "b.py")
    commit(repo, "2021-06-01", {"b.py": body + "y\n", "partner.py": "2"})
    move(repo, "2022-01-01", "b.py", "c.py", append="z\n")  # partial rename
    result = scan(repo)
    assert counts(result) == {("c.py", "partner.py"): (3, when("2021-06-01"))}
    assert dates(result) == {"c.py": "2022-01-01", "partner.py": "2021-06-01"}


def test_deleted_and_dead_lineages_make_no_pairs(repo: Path) -> None:
    commit(repo, "2019-01-01", {"reused": "old life", "p": "0"})
    commit(repo, "2020-01-01", {"reused": None, "p": "1"})
    commit(repo, "2021-01-01", {"gone": "1", "p": "2"})
    commit(repo, "2022-01-01", {"gone": None})
    commit(repo, "2023-01-01", {"reused": "new life", "p": "3"})
    result = scan(repo)
    assert counts(result) == {("p", "reused"): (1, when("2023-01-01"))}
    assert dates(result) == {"p": "2023-01-01", "reused": "2023-01-01"}


def _header(n: int, date: str) -> bytes:
    return f"{n:040x} {date}T00:00:00+00:00\0".encode()


def test_swapped_names_follow_their_content() -> None:
    # git only reports a swap as two renames with break detection on large rewrites, so
    # this lineage case is written by hand in git's -z layout.
    log = b"".join(
        [
            _header(3, "2021-01-01") + b"\nR100\0x\0y\0R100\0y\0x\0",
            _header(2, "2020-06-01") + b"\nM\0x\0M\0px\0",
            _header(1, "2020-01-01") + b"\nM\0y\0M\0py\0",
        ]
    )
    result = parse_log(log)
    assert counts(result) == {
        ("x", "y"): (1, when("2021-01-01")),
        ("px", "y"): (1, when("2020-06-01")),
        ("py", "x"): (1, when("2020-01-01")),
    }
    assert dates(result) == {
        "x": "2021-01-01",
        "y": "2021-01-01",
        "px": "2020-06-01",
        "py": "2020-01-01",
    }


# ------------------------------------------------------------------------------- boundaries


def test_shallow_boundary_commits_are_ignored(tmp_path: Path) -> None:
    source = init_repo(tmp_path / "src")
    commit(source, "2020-01-01", {"ancient": "1", "edited": "1"})
    commit(source, "2023-01-01", {"edited": "2"})
    commit(source, "2024-01-01", {"recent": "1"})
    git(tmp_path, "clone", "-q", "--bare", "--depth", "2", f"file://{source}", "shallow.git")
    clone = tmp_path / "shallow.git"
    boundary = git(clone, "rev-parse", "HEAD~1").strip()
    naive = parse_log(git_log(clone))
    assert "ancient" in naive.files  # the boundary shows every file as added
    result = parse_log(git_log(clone), skip_commits={boundary})
    assert dates(result) == {"recent": "2024-01-01"}
    assert result.boundary_commits == 1
    assert result.commits == 2


def test_window_via_since_leaves_old_files_absent(repo: Path) -> None:
    commit(repo, "2019-01-01", {"old": "1", "both": "1"})
    commit(repo, "2023-01-01", {"both": "2", "new": "1"})
    args = log_args("HEAD", window="2022-01-01")
    output = subprocess.run(["git", *args], cwd=repo, env=base_env(), capture_output=True, check=True)
    assert dates(parse_log(output.stdout)) == {"both": "2023-01-01", "new": "2023-01-01"}


# ------------------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    "data",
    [
        b"M\0a\0",  # a file before any commit
        b"not-a-sha 2024-01-01T00:00:00+00:00\0",
        b"%s nonsense-date\0" % (b"a" * 40),
        b"%s 2024-01-01T00:00:00+00:00\0\nR100\0only-one\0" % (b"a" * 40),  # truncated
        b"%s 2024-01-01T00:00:00+00:00" % (b"a" * 40),  # no terminator
    ],
)
def test_malformed_output_is_a_parse_error(data: bytes) -> None:
    with pytest.raises(GitError) as info:
        parse_log(data)
    assert info.value.reason is GitFailure.PARSE_ERROR


def test_sha256_repositories_parse(tmp_path: Path) -> None:
    repo = tmp_path / "sha256"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main", "--object-format=sha256")
    sha = commit(repo, "2024-01-01", {"a": "1", "b": "2"})
    result = scan(repo)
    assert len(sha) == 64
    assert result.files["a"].commit == sha == head(repo)


def test_commit_counts_are_the_denominators_of_share_and_base_rate(repo: Path) -> None:
    """Per path: the commits of 1..N files that changed it and the oldest; the scan's total of
    such commits. A commit over the bound counts for no pair and for no denominator either."""
    commit(repo, "2020-01-01", {"a": "1", "b": "1", "c": "1"})
    commit(repo, "2021-01-01", {"a": "2", "b": "2"})
    commit(repo, "2022-01-01", {"a": "3"})
    commit(repo, "2023-01-01", {f"big{i}": "1" for i in range(4)} | {"a": "4"})  # over the bound
    result = scan(repo, max_files_per_commit=3)
    assert result.counted_commits == 3
    assert {p: (c.commits, c.since) for p, c in result.commit_counts.items()} == {
        "a": (3, when("2020-01-01")),
        "b": (2, when("2020-01-01")),
        "c": (1, when("2020-01-01")),
    }
    assert result.cochange[("a", "b")].commits == 2  # 2 of a's 3 counted commits changed b
