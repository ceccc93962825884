"""Failures are first-class state (issue 52): a repository that cannot be indexed says so, with its
reason and when to expect a retry (and so does its last analysis), in the API, ``repo list`` / ``repo show``, ``palimpsest
status``, the ``palimpsest_repositories_failing`` gauge and the web view (a real Chromium).

Two real failures, on loopback only:

- the new user's: a repository of a GitHub App installation whose token request cannot connect
  (the chunker's GitHub API is a closed port on 127.0.0.1): ``GitHub App token request … failed:
  ConnectError`` on every delivery, then a dead letter. The last retry delay here is an hour, so
  the dead letter and the repository's ``dead-lettered: <reason>`` come only because the last
  delivery is NAKed at once (before, the server raised MAX_DELIVERIES after that delay);
- a refused source (local paths not allowed): ``failed: source_refused …`` at once; allowing the
  source and rebuilding clears it.
"""

from __future__ import annotations

import asyncio
import os
import re
import socket
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any
from uuid import UUID

import httpx
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from palimpsest.chunker.service import Chunker
from palimpsest.chunker.service import Settings as ChunkerSettings
from palimpsest.cli.local import register_path
from palimpsest.cli.status import collect
from palimpsest.core import metrics
from palimpsest.core.bus import CONSUMERS, ConsumerSpec
from palimpsest.core.consumer import HandlerContext
from palimpsest.core.deadletters import list_dead_letters
from palimpsest.core.events import AnalysisCompleted, AnalysisRequested, IndexRequested, SnapshotBuilt
from palimpsest.core.secretbox import SecretBox
from palimpsest.core.service import Infra, ServiceDefinition, close_infra, open_infra
from palimpsest.ingest.failing import measure_once
from tests.conftest import settings_for
from tests.integration.analyzer.support import analyzer_for, analyzer_settings, running
from tests.integration.ingest.support import ENCRYPTION_KEY, Served, World, drop_tenant, new_tenant
from tests.support import browser
from tests.support.gitrepo import commit, init_repo
from tests.support.pipeline import request_and_wait, services
from tests.support.servers import ServerSet

CLI = [sys.executable, "-m", "palimpsest.cli.main"]
PEM = (
    rsa.generate_private_key(public_exponent=65537, key_size=2048)
    .private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    .decode()
)
# every retry but the last is quick; the last waits an hour: only a prompt dead letter is seen
RETRY_DELAYS_S = (0.05, 0.05, 0.05, 3600.0)


def _closed_port() -> int:
    """A loopback port nothing listens on (bound, then closed): connecting is refused."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _chunker(tenant: UUID, **settings: Any) -> ServiceDefinition:
    """The real chunker on a consumer of its own, taking only ``tenant``'s requests."""
    chunker = Chunker(
        ChunkerSettings.model_construct(**{**ChunkerSettings().model_dump(), "parse_workers": 1, **settings}),
        SecretBox([ENCRYPTION_KEY.encode()]),
    )

    async def handle(event: IndexRequested, ctx: HandlerContext) -> None:
        if event.tenant_id == tenant:
            await chunker.handle(event, ctx)

    name = f"t-failures-{uuid.uuid4().hex[:8]}"
    spec = ConsumerSpec(name, CONSUMERS["chunker"].event_types, batch=2, deliver_new=True)
    return ServiceDefinition(name, {"index.requested": handle}, spec, on_stop=[chunker.close])


@asynccontextmanager
async def _infra(stack: ServerSet) -> AsyncIterator[Infra]:
    infra = await open_infra(settings_for(stack, retry_delays_s=RETRY_DELAYS_S), "failures")
    try:
        yield infra
    finally:
        await close_infra(infra)


async def _until(
    read: Callable[[], Awaitable[dict[str, Any]]], done: Callable[[dict[str, Any]], bool], what: str
) -> dict[str, Any]:
    last: dict[str, Any] = {}
    for _ in range(600):
        last = await read()
        if done(last):
            return last
        await asyncio.sleep(0.1)
    raise AssertionError(f"{what}: {last}")


async def _cli(served: Served, token: str, *args: str) -> str:
    """The CLI in its own process against the served API (in a thread: the API runs on this loop)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PALIMPSEST_")}
    env.update({"PALIMPSEST_INGEST_URL": served.url, "PALIMPSEST_API_TOKEN": token})
    done = await asyncio.to_thread(
        subprocess.run, [*CLI, *args], env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert token not in done.stdout + done.stderr
    return done.stdout


async def _analyse(infra: Infra, tenant: UUID, repository_id: UUID) -> None:
    """Request an analysis from the real analyzer (no model: the mechanical report) and wait for it."""
    event = AnalysisRequested(tenant_id=tenant, repository_id=repository_id)
    async with running(infra, [analyzer_for(infra, {tenant}, analyzer_settings(analysis_auto=False))]):
        await request_and_wait(infra, event, (AnalysisCompleted,))


async def _repository(client: httpx.AsyncClient, world: World, repository_id: str) -> dict[str, Any]:
    got = await client.get(world.path(f"/repositories/{repository_id}"), headers=world.auth)
    assert got.status_code == 200, got.text
    body: dict[str, Any] = got.json()
    return body


async def _signed_in_page(served: Served, token: str, url: str) -> str:
    """A page over real HTTP, signed in with ``token`` through the sign-in form."""
    async with httpx.AsyncClient(base_url=served.url) as c:
        form = await c.get("/ui/sign-in")
        csrf = form.text.split('name="csrf" value="', 1)[1].split('"', 1)[0]
        signed = await c.post("/ui/sign-in", data={"csrf": csrf, "token": token})
        assert signed.status_code == 303, signed.text
        page = await c.get(url)
        assert page.status_code == 200, page.text
        return page.text


async def test_a_token_mint_that_cannot_connect_is_dead_lettered_and_said_everywhere(
    served: Served, client: httpx.AsyncClient, stack: ServerSet, tmp_path: Path
) -> None:
    world = await new_tenant(client, "failing-builds")
    port = _closed_port()
    try:
        installed = await client.post(
            world.path("/installations"),
            json={
                "provider": "github",
                "kind": "installation",
                "external_id": "77005200",
                "app_credentials": {"app_id": "5200", "private_key": PEM},
            },
            headers=world.auth,
        )
        assert installed.status_code == 201, installed.text
        async with _infra(stack) as infra:
            chunker = _chunker(world.tenant_id, github_api_url=f"http://127.0.0.1:{port}")
            async with services(infra, [chunker]):
                registered = await client.post(
                    world.path("/repositories"),
                    json={
                        "url": "https://github.com/northwind-labs/failing-service.git",
                        "installation_id": installed.json()["installation_id"],
                    },
                    headers=world.auth,
                )
                assert registered.status_code == 201, registered.text
                repository_id = registered.json()["repository_id"]
                repo = await _until(
                    lambda: _repository(client, world, repository_id),
                    lambda r: (r.get("build") or {}).get("dead_letter_id") is not None,
                    "the repository never said it was dead-lettered",
                )
        build = repo["build"]
        assert build["state"] == "dead_lettered", build
        assert build["text"].startswith(
            "dead-lettered: GitError: GitHub App token request to http://127.0.0.1:"
        )
        assert "failed: ConnectError" in build["reason"] and PEM not in build["reason"]
        assert build["attempt"] == build["max_attempts"] == infra.settings.max_deliver
        letter = next(
            d for d in await list_dead_letters(served.infra.pool) if d.id == build["dead_letter_id"]
        )
        assert letter.event_type == "index.requested" and letter.tenant_id == str(world.tenant_id)
        assert f"dead-letters replay {letter.id}" in build["retry"]

        listed = await _cli(served, world.token, "repo", "list", "--tenant", str(world.tenant_id))
        assert "northwind-labs/failing-service" in listed
        assert "build: dead-lettered: GitError: GitHub App token request" in listed, listed
        shown = await _cli(
            served, world.token, "repo", "show", repository_id, "--tenant", str(world.tenant_id)
        )
        assert "build       dead-lettered: GitError: GitHub App token request" in shown, shown
        assert (
            f"retry     no automatic retry of this request: fix the cause, then `palimpsest dead-letters replay {letter.id}`"
            in shown
        )

        report = await collect(served.infra.settings)
        assert report["ok"] is True and report["degraded"] is True, report
        failing = report["components"]["repositories"]
        assert failing["degraded"] is True and re.search(
            rf"failing-builds-[0-9a-f]{{8}} \({world.tenant_id}\): 1 build", failing["failing"]
        )

        await measure_once(served.infra.pool)
        gauge = metrics.REGISTRY.get_sample_value(
            "palimpsest_repositories_failing", {"tenant": str(world.tenant_id), "kind": "build"}
        )
        assert gauge == 1

        page = await _signed_in_page(served, world.token, f"/ui/t/{world.tenant_id}/r/{repository_id}")
        assert "Build dead-lettered" in page and "GitHub App token request to http://127.0.0.1:" in page
        assert "Never indexed: dead-lettered: GitError" in page
        await _in_browser(served, world, repository_id, tmp_path, "dead-lettered: GitError: GitHub App token")
    finally:
        await drop_tenant(served.infra.pool, world.tenant_id)


async def _in_browser(served: Served, world: World, repository_id: str, tmp_path: Path, reason: str) -> None:
    """The repositories page and the repository page in Chromium show the reason and the retry."""
    why = browser.missing()
    if why is not None:  # the same pages were read over HTTP above
        pytest.skip(why)
    with browser.chromium(tmp_path / "profile") as b:
        page_url = f"{served.url}/ui/t/{world.tenant_id}/r/{repository_id}"
        await b.get(page_url)
        await b.fill_and_submit("token", world.token)
        assert (await b.url()) == page_url  # signed in, back where it was going
        page = await b.text()
        assert reason in page and "Retry: no automatic retry of this request" in page, page[:3000]
        assert "Failing since" in page
        assert "`" not in page, "the retry's commands are shown as code, not as raw backticks"
        await b.screenshot(tmp_path / "repository-failing.png")
        await b.get(f"{served.url}/ui/t/{world.tenant_id}/")
        listing = await b.text()
        assert reason in listing and "no automatic retry" in listing, listing[:3000]


async def test_a_refused_source_fails_with_its_reason_and_a_successful_build_clears_it(
    served: Served, client: httpx.AsyncClient, infra: Infra, tmp_path: Path
) -> None:
    world = await new_tenant(client, "refused-source")
    try:
        r = init_repo(tmp_path / "repo")
        commit(r, "2024-01-01", {"src/app.py": "def main():\n    return 1\n"})
        repository_id = await register_path(infra.pool, world.tenant_id, r)
        request = IndexRequested(tenant_id=world.tenant_id, repository_id=repository_id, reason="cli")
        async with services(infra, [_chunker(world.tenant_id, allow_local_sources=False)]):
            built = (await request_and_wait(infra, request, (SnapshotBuilt,)))[SnapshotBuilt]
        assert built.state == "failed"
        repo = await _repository(client, world, str(repository_id))
        build = repo["build"]
        assert build["state"] == "failed" and build["text"].startswith("failed: source_refused"), build
        assert build["retry"] == "fails the same way until the cause is fixed; then `palimpsest repo rebuild`"
        listed = await _cli(served, world.token, "repo", "list", "--tenant", str(world.tenant_id))
        assert "build: failed: source_refused" in listed, listed
        page = await _signed_in_page(served, world.token, f"/ui/t/{world.tenant_id}/")
        assert "failed: source_refused" in page and "fails the same way until the cause is fixed" in page
        assert f" ({world.tenant_id})" in (
            (await collect(served.infra.settings))["components"]["repositories"].get("failing", "")
        )
        # an analysis of a repository that was never indexed fails with its reason too
        await _analyse(infra, world.tenant_id, repository_id)
        analysis = (await _repository(client, world, str(repository_id)))["analysis"]
        assert analysis["text"].startswith("failed: no_ready_snapshot"), analysis
        shown = await _cli(
            served, world.token, "repo", "show", str(repository_id), "--tenant", str(world.tenant_id)
        )
        assert (
            "build       failed: source_refused" in shown and "analysis    failed: no_ready_snapshot" in shown
        )

        # the operator allows the source and rebuilds: the build succeeds and the failure is gone
        rebuild = IndexRequested(tenant_id=world.tenant_id, repository_id=repository_id, reason="rebuild")
        async with services(infra, [_chunker(world.tenant_id, allow_local_sources=True)]):
            built = (await request_and_wait(infra, rebuild, (SnapshotBuilt,)))[SnapshotBuilt]
        assert built.state == "ready", built
        await _analyse(infra, world.tenant_id, repository_id)
        repo = await _repository(client, world, str(repository_id))
        assert repo["analysis"]["state"] == "ok", repo["analysis"]
        assert repo["build"]["state"] == "ok" and repo["build"]["retry"] is None, repo["build"]
        assert repo["build"]["failing_since"] is None
        listed = await _cli(served, world.token, "repo", "list", "--tenant", str(world.tenant_id))
        assert "build: ok" in listed and "source_refused" not in listed
        shown = await _cli(
            served, world.token, "repo", "show", str(repository_id), "--tenant", str(world.tenant_id)
        )
        assert "build       ok" in shown and "  retry " not in shown
        page = await _signed_in_page(served, world.token, f"/ui/t/{world.tenant_id}/r/{repository_id}")
        assert "source_refused" not in page and 'class="failing"' not in page
        report = await collect(served.infra.settings)
        assert f" ({world.tenant_id})" not in report["components"]["repositories"].get("failing", "")
        await measure_once(served.infra.pool)
        assert (
            metrics.REGISTRY.get_sample_value(
                "palimpsest_repositories_failing", {"tenant": str(world.tenant_id), "kind": "build"}
            )
            == 0
        )
    finally:
        await drop_tenant(served.infra.pool, world.tenant_id)
