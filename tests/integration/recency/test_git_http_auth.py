"""Recency clones over real smart HTTP with header auth: success, refusal, hang, no leaks.

The server (tests/support/git_http.py) runs ``git http-backend`` on 127.0.0.1 and demands an
exact ``Authorization`` header. While a clone runs, a watcher thread reads every process's
argv from /proc, so a token passed on a command line would be caught.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from pathlib import Path

import pytest

from palimpsest.core.git import GitAuth, resolve_ref
from palimpsest.core.git_errors import GitError, GitFailure
from palimpsest.devtools.fakes.git_http import GitHttpServer
from palimpsest.recency_scanner.clone import scan_remote
from palimpsest.recency_scanner.logparse import RecencyResult
from tests.support.gitrepo import checkout, commit, git, head, init_repo, merge

TOKEN = "glpat-Integr4tionS3cretT0ken"
WRONG = "glpat-Wr0ngT0kenN0tAll0wed"
HTTP = ("http",)


class ArgvWatcher:
    """Polls /proc/*/cmdline (and a directory listing) in a thread until stopped."""

    def __init__(self, watch_dir: Path) -> None:
        self.watch_dir = watch_dir
        self.argvs: set[bytes] = set()
        self.names: set[str] = set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> ArgvWatcher:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def _run(self) -> None:
        while not self._stop.is_set():
            for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
                try:
                    argv = cmdline.read_bytes()
                except OSError:
                    continue
                if argv:
                    self.argvs.add(argv)
            with contextlib.suppress(OSError):
                self.names.update(p.name for p in self.watch_dir.rglob("*"))
            self._stop.wait(0.01)

    def saw(self, needle: bytes) -> bool:
        return any(needle in argv for argv in self.argvs)


def assert_never_leaked(secret: str, *, watcher: ArgvWatcher, caplog: pytest.LogCaptureFixture) -> None:
    assert not watcher.saw(secret.encode()), "secret appeared in a process argv"
    assert not any(secret in name for name in watcher.names), "secret appeared in a file name"
    assert secret not in caplog.text
    for record in caplog.records:
        assert secret not in record.getMessage()


@pytest.fixture
def project_root(tmp_path: Path) -> Path:
    source = init_repo(tmp_path / "source")
    commit(source, "2019-01-01", {"old.md": "1", "src/app.py": "1"})
    checkout(source, "side", create=True)
    commit(source, "2019-06-01", {"side.txt": "1"})
    checkout(source, "main")
    commit(source, "2023-02-01", {"src/app.py": "2", "src/lib.py": "1"})
    merge(source, "2023-06-01", "side")
    commit(source, "2024-01-01", {"README.md": "hi"})
    root = tmp_path / "served"
    root.mkdir()
    git(root, "clone", "-q", "--bare", str(source), "team/app.git")
    return root


@pytest.fixture
def clones(tmp_path: Path) -> Path:
    path = tmp_path / "clones"
    path.mkdir()
    return path


@pytest.fixture
def debug_logs(caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    caplog.set_level(logging.DEBUG, logger="palimpsest")
    return caplog


def dates(result: RecencyResult) -> dict[str, str]:
    return {path: change.when.date().isoformat() for path, change in result.files.items()}


EXPECTED = {
    "old.md": "2019-01-01",
    "src/app.py": "2023-02-01",
    "src/lib.py": "2023-02-01",
    "side.txt": "2023-06-01",
    "README.md": "2024-01-01",
}


@pytest.mark.parametrize(
    "auth",
    [GitAuth.bearer(TOKEN), GitAuth.gitlab(TOKEN), GitAuth.github_app(TOKEN), GitAuth.bitbucket(TOKEN)],
    ids=["bearer", "gitlab", "github-app", "bitbucket"],
)
async def test_a_correct_header_clones_and_scans(
    auth: GitAuth, project_root: Path, clones: Path, debug_logs: pytest.LogCaptureFixture
) -> None:
    expected_header = auth.header.split(": ", 1)[1]
    with GitHttpServer(project_root, authorization=expected_header) as server, ArgvWatcher(clones) as watcher:
        result = await scan_remote(
            server.url("team/app.git"), "main", auth=auth, allowed_protocols=HTTP, tmp_parent=clones
        )
    assert dates(result) == EXPECTED
    assert server.requests
    assert all(request.authorized for request in server.requests)
    assert list(clones.iterdir()) == []
    assert_never_leaked(TOKEN, watcher=watcher, caplog=debug_logs)


async def test_a_window_over_http_dates_only_recent_files(
    project_root: Path, clones: Path, debug_logs: pytest.LogCaptureFixture
) -> None:
    auth = GitAuth.bearer(TOKEN)
    with GitHttpServer(project_root, authorization=f"Bearer {TOKEN}") as server:
        result = await scan_remote(
            server.url("team/app.git"),
            "main",
            auth=auth,
            window="2022-01-01",
            allowed_protocols=HTTP,
            tmp_parent=clones,
        )
    assert dates(result) == {k: v for k, v in EXPECTED.items() if v >= "2022"}
    assert list(clones.iterdir()) == []


@pytest.mark.parametrize("auth", [GitAuth.bearer(WRONG), None], ids=["wrong-token", "no-token"])
async def test_a_refused_header_fails_with_the_auth_reason_and_leaks_nothing(
    auth: GitAuth | None, project_root: Path, clones: Path, debug_logs: pytest.LogCaptureFixture
) -> None:
    with (
        GitHttpServer(project_root, authorization=f"Bearer {TOKEN}") as server,
        ArgvWatcher(clones) as watcher,
        pytest.raises(GitError) as info,
    ):
        await scan_remote(
            server.url("team/app.git"), "main", auth=auth, allowed_protocols=HTTP, tmp_parent=clones
        )
    assert info.value.reason is GitFailure.AUTH
    assert [request.authorized for request in server.requests][:1] == [False]
    for secret in (WRONG, TOKEN):
        assert secret not in str(info.value)
        assert secret not in repr(info.value)
        assert_never_leaked(secret, watcher=watcher, caplog=debug_logs)
    assert list(clones.iterdir()) == []


async def test_a_hanging_server_is_bounded_by_the_timeout(
    project_root: Path, clones: Path, debug_logs: pytest.LogCaptureFixture
) -> None:
    auth = GitAuth.github_app(TOKEN)
    server = GitHttpServer(project_root, authorization=auth.header.split(": ", 1)[1], hang=True)
    with server, ArgvWatcher(clones) as watcher:
        with pytest.raises(GitError) as info:
            await scan_remote(
                server.url("team/app.git"),
                "main",
                auth=auth,
                timeout_s=3,
                allowed_protocols=HTTP,
                tmp_parent=clones,
            )
        seen_during_hang = set(watcher.argvs)
    assert info.value.reason is GitFailure.TIMEOUT
    assert server.requests  # git did reach the server and was left waiting
    # the watcher saw the clone running, so the argv check below is meaningful
    assert any(b"clone\0" in argv and b"team/app.git" in argv for argv in seen_during_hang)
    assert_never_leaked(TOKEN, watcher=watcher, caplog=debug_logs)
    assert_never_leaked(auth.secrets[0], watcher=watcher, caplog=debug_logs)
    assert list(clones.iterdir()) == []


async def test_resolve_ref_over_http_with_auth(project_root: Path) -> None:
    tip = head(project_root / "team/app.git")
    auth = GitAuth.bearer(TOKEN)
    with GitHttpServer(project_root, authorization=f"Bearer {TOKEN}") as server:
        url = server.url("team/app.git")
        assert await resolve_ref(url, "main", auth=auth, allowed_protocols=HTTP) == tip
        with pytest.raises(GitError) as info:
            await resolve_ref(url, "main", auth=GitAuth.bearer(WRONG), allowed_protocols=HTTP)
    assert info.value.reason is GitFailure.AUTH
    assert WRONG not in str(info.value)


async def test_cancelling_a_scan_removes_the_clone(project_root: Path, clones: Path) -> None:
    auth = GitAuth.bearer(TOKEN)
    with GitHttpServer(project_root, authorization=f"Bearer {TOKEN}", hang=True) as server:
        task = asyncio.create_task(
            scan_remote(
                server.url("team/app.git"), "main", auth=auth, allowed_protocols=HTTP, tmp_parent=clones
            )
        )
        for _ in range(500):
            if server.requests:
                break
            await asyncio.sleep(0.02)
        assert server.requests
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    assert list(clones.iterdir()) == []
