"""Repository URLs are checked again at clone time, in every service that clones, before git runs.

A URL stored earlier (when the policy was looser) or a name that now resolves to a private address
(DNS rebinding) must end as ``source_refused`` without a git process ever starting: a ``git`` shim
first on PATH records every invocation, and the test git servers record every request. Redirects
are never followed. The tests' git servers run on 127.0.0.1, so the allowed cases list
``127.0.0.1`` in the private-host allowance explicitly, and each one is tried without it too.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from palimpsest.chunker.errors import BuildFailed
from palimpsest.chunker.source import open_source
from palimpsest.core.events import IndexRequested
from palimpsest.core.git import git_env, run_git
from palimpsest.core.git_errors import GitError, GitFailure
from palimpsest.core.service import Infra
from palimpsest.core.sources import SourcePolicy, SourceRefused, check_clone_url
from palimpsest.devtools.fakes.git_http import GitHttpServer
from palimpsest.index.context.errors import ReviewFailed
from palimpsest.index.context.source import open_repository
from palimpsest.recency_scanner.clone import scan_remote
from tests.integration.recency_service.support import (
    register,
    request_index,
    running_scanner,
    scanner_settings,
    watching_scans,
)
from tests.integration.security.support import GitShim, ScriptedRemote, install_git_shim
from tests.support.tenants import create_tenant

LOOPBACK = frozenset({"127.0.0.1"})

NAMES: dict[str, list[str]] = {
    "rebind.example": ["127.0.0.1"],
    "metadata.example": ["169.254.169.254"],
    "internal.example": ["10.20.30.40"],
    "mixed.example": ["93.184.216.34", "192.168.7.7"],
    "v6.example": ["fd00::5"],
    "mapped.example": ["::ffff:127.0.0.1"],
    "public.example": ["93.184.216.34"],
    "selfhosted.example": ["10.9.8.7"],
}


async def fake_dns(host: str) -> list[str]:
    """DNS of the tests; names not in the table do not resolve (nothing leaves the machine)."""
    if host not in NAMES:
        raise SourceRefused(f"cannot resolve host '{host}'")
    return NAMES[host]


REFUSED = [
    # loopback, in every spelling
    "https://127.0.0.1/team/app.git",
    "https://127.9.8.7/team/app.git",
    "https://[::1]/team/app.git",
    "https://[::ffff:127.0.0.1]/team/app.git",
    "https://2130706433/team/app.git",
    "http://2130706433/team/app.git",
    "https://0x7f000001/team/app.git",
    "https://0177.0.0.1/team/app.git",
    "https://0x7f.1/team/app.git",
    "https://127.1/team/app.git",
    "https://localhost/team/app.git",
    # link-local and cloud metadata
    "https://169.254.169.254/latest/meta-data",
    "https://[::ffff:169.254.169.254]/latest",
    "https://[fe80::1]/team/app.git",
    # private ranges
    "https://10.0.0.1/team/app.git",
    "https://172.16.0.1/team/app.git",
    "https://172.31.255.254/team/app.git",
    "https://192.168.1.1/team/app.git",
    "https://[fc00::1]/team/app.git",
    "https://[fd12:3456::1]/team/app.git",
    "https://0.0.0.0/team/app.git",
    "https://[::]/team/app.git",
    # names resolving there (DNS rebinding after registration)
    "https://rebind.example/team/app.git",
    "https://metadata.example/latest",
    "https://internal.example/team/app.git",
    "https://mixed.example/team/app.git",
    "https://v6.example/team/app.git",
    "https://mapped.example/team/app.git",
    "https://unresolvable.example/team/app.git",
    # userinfo tricks and credentials
    "https://github.com@127.0.0.1/team/app.git",
    "https://user:secret@github.com/team/app.git",
    "https://x-access-token@github.com/team/app.git",
    # local sources while local mode is off
    "file:///tmp",
    "file://localhost/tmp",
    "/tmp",
    "tmp/relative",
    # other transports
    "ext::sh",
    "ext::sh%20-c%20touch%20/tmp/pwned",
    "fd::17",
    "ssh://git@10.0.0.1/team/app.git",
    "ssh://127.0.0.1/team/app.git",
    "ssh://github.com/team/app.git",
    "git://127.0.0.1/team/app.git",
    "git@127.0.0.1:team/app.git",
    "github.com:team/app.git",
    "ftp://127.0.0.1/team/app.git",
    # plain http to a host not in the private allowance
    "http://public.example/team/app.git",
    "http://github.com/team/app.git",
]


@pytest.fixture
def shim(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> GitShim:
    return install_git_shim(tmp_path / "shim", monkeypatch)


@pytest.mark.parametrize("url", REFUSED)
async def test_every_dangerous_url_is_refused_in_each_cloning_service_before_git_runs(
    url: str, shim: GitShim
) -> None:
    policy = SourcePolicy(resolver=fake_dns)
    with pytest.raises(BuildFailed) as built:
        async with open_source(url, "main", auth=None, policy=policy, timeout_s=30):
            pytest.fail("the chunker opened a refused source")
    assert built.value.reason == "source_refused", built.value
    with pytest.raises(ReviewFailed) as reviewed:
        async with open_repository(url, ["a" * 40], auth=None, policy=policy, timeout_s=30):
            pytest.fail("the reviewer opened a refused source")
    assert reviewed.value.reason == "source_refused", reviewed.value
    assert shim.invocations() == []


async def test_an_explicit_private_allowance_admits_exactly_what_it_names() -> None:
    policy = SourcePolicy(private_hosts=frozenset({"selfhosted.example", "127.0.0.1"}), resolver=fake_dns)
    target = await check_clone_url("https://selfhosted.example/team/app.git", policy)
    assert (target.protocols, target.pins) == (("https",), ("selfhosted.example:443:10.9.8.7",))
    plain = await check_clone_url("http://127.0.0.1:8080/team/app.git", policy)
    assert (plain.protocols, plain.pins) == (("http",), ())  # an IP literal needs no pin
    for url in [
        "https://rebind.example/team/app.git",  # a *name* resolving to loopback: never
        "https://[::1]/team/app.git",  # loopback not named in the allowance
        "https://169.254.169.254/latest",  # link-local: never, allowance or not
        "https://0.0.0.0/team/app.git",
        "ssh://127.0.0.1/team/app.git",
    ]:
        with pytest.raises(SourceRefused):
            await check_clone_url(url, policy)
    local = await check_clone_url("file:///tmp", SourcePolicy(allow_local=True))
    assert (local.local, local.protocols) == (Path("/tmp"), ("file",))


def test_git_never_follows_redirects_and_never_gets_ext_or_fd() -> None:
    env = git_env(None, allowed_protocols=("https",), pins=("h.example:443:10.0.0.1",))
    config = {
        env[f"GIT_CONFIG_KEY_{i}"]: env[f"GIT_CONFIG_VALUE_{i}"] for i in range(int(env["GIT_CONFIG_COUNT"]))
    }
    assert config["http.followRedirects"] == "false"
    assert config["protocol.allow"] == "never"
    assert env["GIT_ALLOW_PROTOCOL"] == "https"
    assert git_env(None)["GIT_ALLOW_PROTOCOL"] == "https"
    for bad in (("ext",), ("https", "fd"), ("https:ext",)):
        with pytest.raises(GitError) as refused:
            git_env(None, allowed_protocols=bad)
        assert refused.value.reason is GitFailure.INVALID_ARGUMENT


async def test_even_a_raw_git_call_cannot_use_the_ext_transport(tmp_path: Path, shim: GitShim) -> None:
    marker = tmp_path / "pwned"
    with pytest.raises(GitError):
        await run_git(["ls-remote", "--", f"ext::touch {marker}"])
    assert not marker.exists()
    assert [argv[0] for argv in shim.invocations()] == ["ls-remote"]  # git ran and refused itself


async def test_an_allowed_loopback_host_clones_and_without_the_allowance_git_never_runs(
    served_repo: tuple[Path, str], shim: GitShim
) -> None:
    root, tip = served_repo
    with GitHttpServer(root, authorization=None) as server:
        url = server.url("team/app.git")
        allowed = SourcePolicy(private_hosts=LOOPBACK)
        async with open_source(url, "main", auth=None, policy=allowed, timeout_s=60) as source:
            assert source.commit == tip
        async with open_repository(url, [tip], auth=None, policy=allowed, timeout_s=60) as git_dir:
            assert git_dir.is_dir()
        assert any("clone" in argv for argv in shim.invocations())
        seen = len(server.requests)
        assert seen > 0
        shim.clear()
        with pytest.raises(BuildFailed) as built:
            async with open_source(url, "main", auth=None, policy=SourcePolicy(), timeout_s=60):
                pytest.fail("cloned without the allowance")
        with pytest.raises(ReviewFailed) as reviewed:
            async with open_repository(url, [tip], auth=None, policy=SourcePolicy(), timeout_s=60):
                pytest.fail("fetched without the allowance")
        assert (built.value.reason, reviewed.value.reason) == ("source_refused", "source_refused")
        assert "PALIMPSEST_PRIVATE_PROVIDER_HOSTS" in str(built.value)
        assert shim.invocations() == []
        assert len(server.requests) == seen


@pytest.mark.parametrize("status", [301, 302, 307])
async def test_a_redirect_to_another_loopback_server_fails_clearly_and_the_target_sees_nothing(
    status: int, served_repo: tuple[Path, str], shim: GitShim
) -> None:
    root, tip = served_repo
    allowed = SourcePolicy(private_hosts=LOOPBACK)
    with GitHttpServer(root, authorization=None) as target:
        base = target.url("").rstrip("/")
        with ScriptedRemote.redirecting_to(base, status) as redirector:
            url = redirector.url("team/app.git")
            with pytest.raises(BuildFailed) as built:
                async with open_source(url, "main", auth=None, policy=allowed, timeout_s=60):
                    pytest.fail("the chunker followed a redirect")
            with pytest.raises(ReviewFailed) as reviewed:
                async with open_repository(url, [tip], auth=None, policy=allowed, timeout_s=60):
                    pytest.fail("the reviewer followed a redirect")
            with pytest.raises(GitError) as scanned:
                await scan_remote(url, "main", allowed_protocols=("http",))
            assert redirector.requests, "the redirecting server was never asked"
        assert target.requests == [], "git followed the redirect"
    assert (built.value.reason, reviewed.value.reason) == ("source_redirect", "source_redirect")
    assert scanned.value.reason is GitFailure.REDIRECT
    assert f"error: {status}" in str(built.value)
    assert shim.invocations(), "git should have run (and stopped at the redirect)"


async def test_the_recency_scanner_refuses_a_stored_url_before_git_runs(
    infra: Infra, served_repo: tuple[Path, str], shim: GitShim
) -> None:
    root, _ = served_repo
    tenant = await create_tenant(infra.pool, "security-recency")
    with GitHttpServer(root, authorization=None) as server:
        url = server.url("team/app.git")
        repo = await register(infra, tenant, url)
        metadata = await register(infra, tenant, "https://169.254.169.254/latest/meta-data")
        refused = [IndexRequested(tenant_id=tenant, repository_id=r) for r in (repo, metadata)]
        allowed = IndexRequested(tenant_id=tenant, repository_id=repo)
        async with watching_scans(infra) as scans:
            async with running_scanner(infra, scanner_settings(private_provider_hosts=()), {tenant}):
                for event in refused:
                    await request_index(infra, event)
                outcomes = [await scans.wait(e.request_id) for e in refused]
            assert shim.invocations() == []
            assert server.requests == []
            async with running_scanner(infra, scanner_settings(), {tenant}):  # 127.0.0.1 allowed
                await request_index(infra, allowed)
                ok = await scans.wait(allowed.request_id)
    assert [(o["status"], o["reason"]) for o in outcomes] == [("failed", "source_refused")] * 2
    assert (ok["status"], ok["files"]) == ("ok", 2)
    assert server.requests, "the allowed scan should have reached the server"


async def test_git_connects_to_the_pinned_address_not_to_a_fresh_dns_answer(
    served_repo: tuple[Path, str],
) -> None:
    """The checked addresses travel as ``http.curloptResolve``: git does not resolve the name again."""
    root, tip = served_repo
    with GitHttpServer(root, authorization=None) as server:
        url = f"http://pinned.invalid:{server.port}/team/app.git"  # .invalid never resolves
        with pytest.raises(GitError) as unpinned:
            await run_git(["ls-remote", "--", url, "HEAD"], allowed_protocols=("http",))
        assert unpinned.value.reason is GitFailure.NETWORK
        out = await run_git(
            ["ls-remote", "--", url, "HEAD"],
            allowed_protocols=("http",),
            pins=(f"pinned.invalid:{server.port}:127.0.0.1",),
        )
    assert out.decode().split()[0] == tip
