"""Provider tokens and webhook secrets never show up anywhere but where they are used.

One flow with real components: an installation gets a webhook secret and an access token through
the API; the chunker, the reviewer and the recency-scanner service clone over authenticated smart
HTTP (tests/support/git_http.py) with the installation's credentials; a signed webhook arrives; the
token is then replaced by a wrong one (an auth failure), and a broken remote echoes the
credential it received in its error message. Throughout, a ``git`` shim records every git
command line and logging is captured at DEBUG. Then no form of either secret may appear in any
argv, log record, event on the stream, API response, exception text or stored row.
"""

from __future__ import annotations

import base64
import json
import logging
import traceback
from pathlib import Path
from typing import Any
from uuid import UUID

import httpx
import pytest

from palimpsest.chunker.errors import BuildFailed
from palimpsest.chunker.source import open_source
from palimpsest.core.credentials import git_auth_for
from palimpsest.core.db import tenant_tx
from palimpsest.core.events import IndexRequested
from palimpsest.core.git import GitAuth
from palimpsest.core.git_errors import GitError
from palimpsest.core.ids import uuid7
from palimpsest.core.service import Infra
from palimpsest.core.sources import SourcePolicy
from palimpsest.devtools.fakes.git_http import GitHttpServer
from palimpsest.index.context.errors import ReviewFailed
from palimpsest.index.context.source import open_repository
from palimpsest.recency_scanner.source import installation_auth
from tests.integration.ingest.support import Served, deliver, stream_events, world_of
from tests.integration.recency_service.support import (
    request_index,
    running_scanner,
    scanner_settings,
    watching_scans,
)
from tests.integration.security.catalog import Requests, call, response_text, tenant_endpoints, tenant_rows
from tests.integration.security.support import ScriptedRemote, install_git_shim
from tests.support.servers import ServerSet
from tests.unit.ingest.webhook_support import SECRET, TOKEN

ACCESS = "ghp_S3curityFl0wAccessT0ken0123456789ab"
WRONG = "ghp_S3curityFl0wWr0ngT0ken0123456789abc"
POLICY = SourcePolicy(private_hosts=frozenset({"127.0.0.1"}))


def _basic(token: str) -> str:
    return base64.b64encode(f"x-access-token:{token}".encode()).decode()


def secret_forms() -> dict[str, str]:
    """Every spelling of a secret that would betray it (plain, user:pass, base64 header value)."""
    forms = {"webhook secret": SECRET.decode(), "gitlab webhook token": TOKEN}
    for name, token in (("access token", ACCESS), ("wrong token", WRONG)):
        forms[name] = token
        forms[f"{name} (user:pass)"] = f"x-access-token:{token}"
        forms[f"{name} (base64)"] = _basic(token)
    return forms


def _pkt(text: str) -> bytes:
    data = f"{text}\n".encode()
    return f"{len(data) + 4:04x}".encode() + data


def _record_text(record: logging.LogRecord) -> str:
    formatted = logging.Formatter("%(message)s").format(record)
    return f"{formatted} {record.exc_text or ''} {vars(record)!r}"


def _exception_text(exc: BaseException) -> str:
    chain = "".join(traceback.format_exception(exc))
    parts = [chain, repr(exc), str(getattr(exc, "detail", ""))]
    cause = exc.__cause__
    while cause is not None:
        parts += [repr(cause), str(cause), str(getattr(cause, "detail", ""))]
        cause = cause.__cause__
    return "\n".join(parts)


async def _auth(served: Served, tenant: UUID, repository_id: UUID) -> GitAuth | None:
    async with tenant_tx(served.ctx.pool, tenant) as conn:
        return await git_auth_for(conn, repository_id, served.ctx.box)


async def _set_token(
    client: httpx.AsyncClient, path: str, token: str, auth: dict[str, str]
) -> httpx.Response:
    res = await client.patch(path, json={"access_token": token}, headers=auth)
    assert res.status_code == 200, res.text
    return res


async def _recency_scan(infra: Infra, served: Served, tenant: UUID, repository_id: UUID) -> dict[str, Any]:
    """One full scan by the recency-scanner service, with the installation's credentials."""
    event = IndexRequested(tenant_id=tenant, repository_id=repository_id)
    scanner, auth = scanner_settings(), installation_auth(served.ctx.box)
    async with watching_scans(infra) as scans, running_scanner(infra, scanner, {tenant}, auth_provider=auth):
        await request_index(infra, event)
        return await scans.wait(event.request_id)


async def test_tokens_and_webhook_secrets_leak_nowhere(
    client: httpx.AsyncClient,
    served: Served,
    stack: ServerSet,
    infra: Infra,
    served_repo: tuple[Path, str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    shim = install_git_shim(tmp_path / "shim", monkeypatch)
    root, tip = served_repo
    responses: list[httpx.Response] = []
    failures: list[BaseException] = []
    with GitHttpServer(root, authorization=f"Basic {_basic(ACCESS)}") as server:
        url = server.url("team/app.git")
        async with world_of(client, served.ctx.pool) as world:  # webhook secrets set via the API
            tenant = world.tenant_id
            installation = world.installations["github"]["installation_id"]
            installation_path = world.path(f"/installations/{installation}")
            responses.append(await _set_token(client, installation_path, ACCESS, world.auth))
            repository_id = uuid7()
            async with tenant_tx(served.ctx.pool, tenant) as conn:  # a URL stored earlier
                await conn.execute(
                    "INSERT INTO repositories (tenant_id, repository_id, provider, full_name, clone_url,"
                    " default_branch, installation_id) VALUES (%s, %s, 'github', 'team/app', %s, 'main', %s)",
                    (tenant, repository_id, url, installation),
                )

            # real clones with the installation's decrypted token, in each cloning service
            auth = await _auth(served, tenant, repository_id)
            assert auth is not None
            async with open_source(url, "main", auth=auth, policy=POLICY, timeout_s=60) as source:
                assert source.commit == tip
            async with open_repository(url, [tip], auth=auth, policy=POLICY) as git_dir:
                assert git_dir.is_dir()
            scanned = await _recency_scan(infra, served, tenant, repository_id)
            assert scanned["status"] == "ok", scanned
            assert any(r.authorized for r in server.requests)

            # a webhook signed with the installation's secret
            responses.append(
                await deliver(client, "github", "push_default_branch", "push", delivery=uuid7().hex)
            )
            assert responses[-1].status_code == 202, responses[-1].text

            # an auth failure: the token replaced by a wrong one
            responses.append(await _set_token(client, installation_path, WRONG, world.auth))
            wrong = await _auth(served, tenant, repository_id)
            with pytest.raises(BuildFailed) as built:
                async with open_source(url, "main", auth=wrong, policy=POLICY, timeout_s=60):
                    pytest.fail("cloned with a wrong token")
            with pytest.raises(ReviewFailed) as reviewed:
                async with open_repository(url, [tip], auth=wrong, policy=POLICY):
                    pytest.fail("fetched with a wrong token")
            assert (built.value.reason, reviewed.value.reason) == ("source_auth", "source_auth")
            failures += [built.value, reviewed.value]
            refused = await _recency_scan(infra, served, tenant, repository_id)
            assert (refused["status"], refused["reason"]) == ("failed", "auth"), refused

            # a broken remote whose error message echoes the credential it was sent
            echo = f"ERR access denied for Authorization: Basic {_basic(WRONG)} (token {WRONG})"
            content = [("Content-Type", "application/x-git-upload-pack-advertisement")]
            with ScriptedRemote(200, content, _pkt(echo), authorization=f"Basic {_basic(WRONG)}") as broken:
                with pytest.raises((BuildFailed, GitError)) as echoed:  # "failed": may be retried
                    async with open_source(
                        broken.url("team/app.git"), "main", auth=wrong, policy=POLICY, timeout_s=60
                    ):
                        pytest.fail("cloned from a broken remote")
                assert any(r.authorized for r in broken.requests), "no credential was sent"
            assert "remote error" in str(echoed.value) and "***" in str(echoed.value), echoed.value
            failures.append(echoed.value)

            # every GET route of the tenant, as the API answers it
            requests = Requests(served.ctx)
            ids = {
                "tenant_id": str(tenant),
                "installation_id": str(installation),
                "repository_id": str(repository_id),
            }
            for endpoint in tenant_endpoints(served.ctx):
                if endpoint.method == "GET" and set(endpoint.params) <= set(ids):
                    responses.append(await call(client, requests, endpoint, endpoint.fill(ids), world.token))
            events = await stream_events(served.infra.nc, served.ctx.pool, served.infra.database_url, tenant)
            stored = "\n".join(
                f"{table}: {row}"
                for table, rows in tenant_rows(stack.owner_url, tenant).items()
                for row in rows
            )

    invocations = shim.invocations()
    assert any("clone" in argv for argv in invocations) and any("fetch" in argv for argv in invocations)
    assert {e["type"] for e in events} >= {"index.requested", "recency.scanned"}, events
    assert any(r.name == "palimpsest.core.git" and r.levelno == logging.DEBUG for r in caplog.records)
    witnesses = {
        "git argv": "\n".join("\0".join(argv) for argv in invocations),
        "log records": "\n".join(_record_text(r) for r in caplog.records),
        "events on the stream": json.dumps(events),
        "API responses": "\n".join(response_text(r) for r in responses),
        "exception text": "\n".join(_exception_text(e) for e in failures),
        "stored rows": stored,
    }
    leaks = [
        f"{what} in {where}"
        for where, text in witnesses.items()
        for what, secret in secret_forms().items()
        if secret in text
    ]
    assert leaks == []
