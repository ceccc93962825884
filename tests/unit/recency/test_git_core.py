"""palimpsest.core.git: auth header handling, process control, tree/blob/ref reading."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from palimpsest.core.git import (
    GitAuth,
    TreeEntry,
    backfill,
    classify_git_failure,
    decode_path,
    git_env,
    is_partial_clone,
    ls_tree,
    read_blobs,
    resolve_ref,
    run_git,
    scrub,
    shallow_commits,
    stream_git,
    temporary_clone_dir,
    validate_remote_url,
)
from palimpsest.core.git_errors import GitError, GitFailure
from palimpsest.core.sources import SourcePolicy
from tests.support.gitrepo import commit, git, head, init_repo, linear_repo

TOKEN = "ghs_unit7Secret9Token"


# ------------------------------------------------------------------------------- auth


@pytest.mark.parametrize(
    ("auth", "user"),
    [
        (GitAuth.github_app(TOKEN), "x-access-token"),
        (GitAuth.gitlab(TOKEN), "oauth2"),
        (GitAuth.bitbucket(TOKEN), "x-token-auth"),
    ],
)
def test_provider_constructors_build_basic_headers(auth: GitAuth, user: str) -> None:
    encoded = base64.b64encode(f"{user}:{TOKEN}".encode()).decode()
    assert auth.header == f"Authorization: Basic {encoded}"
    assert auth.scheme == "Basic"


def test_bearer_header_and_repr_hide_the_secret() -> None:
    auth = GitAuth.bearer(TOKEN)
    assert auth.header == f"Authorization: Bearer {TOKEN}"
    for text in (repr(auth), str(auth), f"{auth}", repr([auth])):
        assert TOKEN not in text
        assert "redacted" in text


@pytest.mark.parametrize("bad", ["", "tok\nX-Evil: 1", "tok\r", " padded "])
def test_malformed_credentials_are_refused_without_echoing_them(bad: str) -> None:
    with pytest.raises(GitError) as info:
        GitAuth.bearer(bad)
    assert info.value.reason is GitFailure.INVALID_ARGUMENT
    if bad.strip():
        assert bad.strip() not in str(info.value)


def test_git_env_puts_the_header_only_in_config_variables() -> None:
    auth = GitAuth.github_app(TOKEN)
    env = git_env(auth, allowed_protocols=("https",))
    assert env["GIT_TERMINAL_PROMPT"] == "0"
    assert env["GIT_ASKPASS"] == ""
    assert env["GIT_CONFIG_NOSYSTEM"] == "1"
    assert env["GIT_CONFIG_GLOBAL"] == os.devnull
    assert env["GIT_ALLOW_PROTOCOL"] == "https"
    count = int(env["GIT_CONFIG_COUNT"])
    config = [(env[f"GIT_CONFIG_KEY_{i}"], env[f"GIT_CONFIG_VALUE_{i}"]) for i in range(count)]
    assert ("credential.helper", "") in config
    assert config[-1] == ("http.extraHeader", auth.header)
    holders = [key for key, value in env.items() if auth.secrets[0] in value]
    assert holders == [f"GIT_CONFIG_VALUE_{count - 1}"]


def test_git_env_drops_inherited_git_variables() -> None:
    # git_env reads os.environ; a child interpreter gives it a polluted one without
    # touching this process's environment.
    code = (
        "from palimpsest.core.git import git_env; e = git_env(None);"
        "print(sorted(k for k in e if k in ('GIT_DIR', 'GIT_TRACE_CURL', 'SSH_ASKPASS')))"
    )
    env = {**os.environ, "GIT_DIR": "/elsewhere", "GIT_TRACE_CURL": "1", "SSH_ASKPASS": "x"}
    out = _python(code, env)
    assert out.strip() == "[]"


def _python(code: str, env: dict[str, str]) -> str:
    return subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    ).stdout


def test_scrub_masks_token_encoded_credentials_userinfo_and_auth_values() -> None:
    auth = GitAuth.gitlab(TOKEN)
    encoded = auth.secrets[0]
    text = (
        f"token {TOKEN} basic {encoded} url https://oauth2:{TOKEN}@gitlab.example/x.git "
        "Authorization: Bearer somethingelse"
    )
    cleaned = scrub(text, auth)
    assert TOKEN not in cleaned
    assert encoded not in cleaned
    assert "somethingelse" not in cleaned
    assert "gitlab.example/x.git" in cleaned


@pytest.mark.parametrize(
    "url",
    ["-upload-pack=evil", "https://user:pw@host/repo.git", "https://host/re\npo", ""],
)
def test_remote_urls_that_would_leak_or_inject_are_refused(url: str) -> None:
    with pytest.raises(GitError) as info:
        validate_remote_url(url)
    assert info.value.reason is GitFailure.INVALID_ARGUMENT
    assert "pw" not in str(info.value)


def test_plain_remote_urls_are_accepted() -> None:
    validate_remote_url("https://github.com/org/repo.git")
    validate_remote_url("ssh://git@github.com/org/repo.git")


# ------------------------------------------------------------------------------- failures


@pytest.mark.parametrize(
    ("stderr", "reason"),
    [
        ("fatal: could not read Username for 'https://h': terminal prompts disabled", "auth"),
        ("fatal: Authentication failed for 'https://h/r.git/'", "auth"),
        ("error: RPC failed; HTTP 403 curl 22 The requested URL returned error: 403", "auth"),
        ("fatal: repository 'https://h/r.git/' not found", "not_found"),
        ("fatal: Remote branch dev not found in upstream origin", "ref_not_found"),
        ("fatal: Needed a single revision", "ref_not_found"),
        ("fatal: no commits selected for shallow requests", "empty_window"),
        ("fatal: could not write: No space left on device", "disk_full"),
        ("fatal: unable to access 'https://h/': Could not resolve host: h", "network"),
        ("fatal: the remote end hung up unexpectedly", "refused"),
        ("fatal: remote error: upload-pack: not our ref " + "a" * 40, "ref_not_found"),
        ("fatal: remote error: access denied or repository not exported: /r.git", "auth"),
        ("fatal: remote error: service disabled for this repository", "refused"),
        ("fatal: something new", "failed"),
    ],
)
def test_classify_git_failure(stderr: str, reason: str) -> None:
    assert classify_git_failure(stderr).value == reason


def _script(body: str) -> list[str]:
    """argv for a stand-in 'git' (the Python interpreter running ``body``)."""
    return ["-c", body]


async def test_failure_message_is_scrubbed_and_short() -> None:
    auth = GitAuth.bearer(TOKEN)
    body = (
        "import sys; sys.stderr.write('fatal: Authentication failed; header was "
        f"Authorization: Bearer {TOKEN}\\n' * 50); sys.exit(128)"
    )
    with pytest.raises(GitError) as info:
        await run_git(_script(body), auth=auth, git_bin=sys.executable, timeout_s=30)
    assert info.value.reason is GitFailure.AUTH
    assert TOKEN not in str(info.value)
    assert len(str(info.value)) < 500


async def test_missing_git_executable() -> None:
    with pytest.raises(GitError) as info:
        await run_git(["--version"], git_bin="/nonexistent/git-binary", timeout_s=5)
    assert info.value.reason is GitFailure.GIT_MISSING


async def test_missing_working_directory(tmp_path: Path) -> None:
    with pytest.raises(GitError) as info:
        await run_git(["status"], cwd=tmp_path / "absent", timeout_s=5)
    assert info.value.reason is GitFailure.INVALID_ARGUMENT


# ------------------------------------------------------------------------------- processes

# A stand-in for a hung git: it starts a grandchild (like git-remote-https), prints both
# pids, then blocks. The deadline must kill the whole process group.
_HANG = (
    "import os, subprocess, sys, time\n"
    "child = subprocess.Popen(['sleep', '300'])\n"
    "sys.stdout.write(f'{os.getpid()} {child.pid}\\n'); sys.stdout.flush()\n"
    "time.sleep(300)\n"
)


def _gone(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] == "Z"  # a zombie has been killed


async def _wait_gone(pids: list[int]) -> bool:
    for _ in range(200):
        if all(_gone(pid) for pid in pids):
            return True
        await asyncio.sleep(0.05)
    return False


async def test_deadline_kills_the_whole_process_group() -> None:
    pids: list[int] = []
    with pytest.raises(GitError) as info:
        stream = stream_git(_script(_HANG), git_bin=sys.executable, timeout_s=3)
        async with contextlib.aclosing(stream) as chunks:
            async for chunk in chunks:
                pids.extend(int(p) for p in chunk.split())
    assert info.value.reason is GitFailure.TIMEOUT
    assert len(pids) == 2
    assert await _wait_gone(pids)


async def test_cancellation_kills_the_process_group() -> None:
    started = asyncio.Event()
    pids: list[int] = []

    async def consume() -> None:
        stream = stream_git(_script(_HANG), git_bin=sys.executable, timeout_s=120)
        async with contextlib.aclosing(stream) as chunks:
            async for chunk in chunks:
                pids.extend(int(p) for p in chunk.split())
                started.set()

    task = asyncio.create_task(consume())
    await asyncio.wait_for(started.wait(), 30)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await _wait_gone(pids)


async def test_stopping_early_releases_the_process() -> None:
    pids: list[int] = []
    stream = stream_git(_script(_HANG), git_bin=sys.executable, timeout_s=120)
    async with contextlib.aclosing(stream) as chunks:
        async for chunk in chunks:
            pids.extend(int(p) for p in chunk.split())
            break
    assert await _wait_gone(pids)


async def test_stream_git_yields_large_output_in_chunks() -> None:
    body = "import sys; sys.stdout.buffer.write(b'x' * 1_000_000)"
    sizes = [len(chunk) async for chunk in stream_git(_script(body), git_bin=sys.executable, timeout_s=30)]
    assert sum(sizes) == 1_000_000
    assert len(sizes) > 1


async def test_temporary_clone_dir_is_removed_on_error_and_cancellation(tmp_path: Path) -> None:
    seen: list[Path] = []
    with pytest.raises(RuntimeError):
        async with temporary_clone_dir(tmp_path) as path:
            (path / "file").write_text("x")
            seen.append(path)
            raise RuntimeError("boom")

    entered = asyncio.Event()

    async def hold() -> None:
        async with temporary_clone_dir(tmp_path) as path:
            seen.append(path)
            entered.set()
            await asyncio.sleep(300)

    task = asyncio.create_task(hold())
    await entered.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert len(seen) == 2
    assert not any(path.exists() for path in seen)
    assert list(tmp_path.iterdir()) == []


# ------------------------------------------------------------------------------- reading

ODD_NAMES = ["a b.txt", "tab\there.txt", "new\nline.txt", 'quo"te.txt', "ünï/cødé.md"]


async def test_ls_tree_lists_every_path_verbatim(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "r")
    commit(repo, "2024-01-01", {name: name for name in ODD_NAMES} | {b"caf\xe9.txt": "latin1"})
    entries = await ls_tree(repo, "HEAD", with_sizes=True)
    by_path = {entry.path: entry for entry in entries}
    assert set(by_path) == {*ODD_NAMES, decode_path(b"caf\xe9.txt")}
    entry = by_path["a b.txt"]
    assert isinstance(entry, TreeEntry)
    assert (entry.mode, entry.type, entry.size) == ("100644", "blob", len("a b.txt"))
    assert (await ls_tree(repo, "HEAD"))[0].size is None


async def test_read_blobs_streams_contents_in_order(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "r")
    commit(repo, "2024-01-01", {"a": "alpha\n", "b": b"\x00\x01binary\n" * 1000, "c": ""})
    shas = {entry.path: entry.sha for entry in await ls_tree(repo, "HEAD")}
    order = [shas["c"], shas["b"], shas["a"]]
    got = [item async for item in read_blobs(repo, order)]
    assert [sha for sha, _ in got] == order
    assert [content for _, content in got] == [b"", b"\x00\x01binary\n" * 1000, b"alpha\n"]


async def test_read_blobs_missing_objects(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "r")
    commit(repo, "2024-01-01", {"a": "alpha\n"})
    (sha,) = [entry.sha for entry in await ls_tree(repo, "HEAD")]
    absent = "0" * 40
    got = [item async for item in read_blobs(repo, [absent, sha], missing_ok=True)]
    assert got == [(sha, b"alpha\n")]
    with pytest.raises(GitError) as info:
        _ = [item async for item in read_blobs(repo, [absent])]
    assert info.value.reason is GitFailure.MISSING_OBJECT
    with pytest.raises(GitError):
        _ = [item async for item in read_blobs(repo, ["HEAD\nrefs/x"])]


async def test_resolve_ref_locally_and_over_a_url(tmp_path: Path) -> None:
    repo = linear_repo(tmp_path / "r", 2)
    tip = head(repo)
    git(repo, "tag", "-a", "v1", "-m", "release", date="2024-01-01")
    git(repo, "branch", "older", "HEAD~1")
    older = git(repo, "rev-parse", "older").strip()
    assert await resolve_ref(repo, "main") == tip
    assert await resolve_ref(repo, "v1") == tip  # annotated tag peeled to its commit
    url = f"file://{repo}"
    assert await resolve_ref(url, "older", allowed_protocols=("file",)) == older
    assert await resolve_ref(url, "v1", allowed_protocols=("file",)) == tip
    for target in (repo, url):
        with pytest.raises(GitError) as info:
            await resolve_ref(target, "missing", allowed_protocols=("file",))
        assert info.value.reason is GitFailure.REF_NOT_FOUND
    with pytest.raises(GitError) as info:
        await resolve_ref(repo, "--output=/tmp/x")
    assert info.value.reason is GitFailure.INVALID_ARGUMENT


async def test_protocols_outside_the_allow_list_are_refused(tmp_path: Path) -> None:
    repo = linear_repo(tmp_path / "r", 1)
    with pytest.raises(GitError) as info:
        await resolve_ref(f"file://{repo}", "main", allowed_protocols=("https",))
    assert info.value.reason is GitFailure.NETWORK


async def test_shallow_commits_of_complete_and_shallow_clones(tmp_path: Path) -> None:
    repo = linear_repo(tmp_path / "r", 3)
    assert await shallow_commits(repo) == frozenset()
    git(tmp_path, "clone", "-q", "--depth", "1", f"file://{repo}", "shallow")
    assert await shallow_commits(tmp_path / "shallow") == {head(repo)}


def _missing(repo: Path, rev: str = "HEAD") -> list[str]:
    listed = git(repo, "rev-list", "--objects", "--no-walk", "--missing=print", rev)
    return [line for line in listed.splitlines() if line.startswith("?")]


@pytest.mark.parametrize("filter_spec", ["blob:none", "tree:0"])
async def test_backfill_fetches_what_a_partial_clone_lacks(tmp_path: Path, filter_spec: str) -> None:
    origin = init_repo(tmp_path / "origin")
    git(origin, "config", "uploadpack.allowFilter", "true")
    commit(origin, "2024-01-01", {"a.py": "a\n", "deep/er/b.py": "b\n", "old.txt": "gone\n"})
    commit(origin, "2024-02-01", {"c.md": "c\n"})
    git(origin, "rm", "-q", "old.txt")
    git(origin, "commit", "-q", "-m", "drop", date="2024-03-01")
    clone = tmp_path / "clone.git"
    git(tmp_path, "clone", "-q", "--bare", f"--filter={filter_spec}", f"file://{origin}", str(clone))
    assert await is_partial_clone(clone) and _missing(clone)
    policy = SourcePolicy(allow_local=True)
    fetched = await backfill(clone, head(clone), policy)
    assert fetched >= 3 and _missing(clone) == []
    assert await backfill(clone, head(clone), policy) == 0  # nothing left: no fetch at all
    shas = [e.sha for e in await ls_tree(clone, "HEAD")]
    contents = {sha: data async for sha, data in read_blobs(clone, shas, lazy_fetch=False)}
    assert sorted(contents.values()) == [b"a\n", b"b\n", b"c\n"]
    # only the head's tree: the blob of a file deleted before it was never asked for
    assert _missing(clone, "HEAD~2")
    assert await backfill(origin, head(origin), policy) == 0  # a complete repository
    (clone / "config").unlink()  # as some mirrors ship: no promisor git could fetch from either
    assert await backfill(clone, head(clone), policy) == 0


async def test_backfill_checks_the_promisor_against_the_policy(tmp_path: Path) -> None:
    origin = init_repo(tmp_path / "origin")
    git(origin, "config", "uploadpack.allowFilter", "true")
    commit(origin, "2024-01-01", {"a.py": "a\n"})
    clone = tmp_path / "clone.git"
    git(tmp_path, "clone", "-q", "--bare", "--filter=blob:none", f"file://{origin}", str(clone))
    with pytest.raises(GitError) as info:  # a local promisor where local sources are not allowed
        await backfill(clone, head(clone), SourcePolicy(allow_local=False))
    assert info.value.reason is GitFailure.SOURCE_REFUSED
    # an insteadOf rewrite counts: the URL git would use is the one checked
    git(clone, "config", "url.http://internal.invalid/.insteadOf", f"file://{origin}")
    with pytest.raises(GitError) as info:
        await backfill(clone, head(clone), SourcePolicy(allow_local=True))
    assert info.value.reason is GitFailure.SOURCE_REFUSED
    assert "internal.invalid" in str(info.value)
    assert _missing(clone)
