"""The MCP server through the SDK's own client, on the real stack, over both transports.

A repository the test builds (a stale 2022 design doc, a README naming a function renamed in 2024,
billing code that changes together with tax code, a ``feature`` branch changing ``compute_total``)
is indexed by the real chunker and recency-scanner and analysed by the real analyzer. Then the
SDK's client calls every tool over streamable HTTP at ``/mcp`` of the ingest API (with the tenant's
API token) and over stdio (``palimpsest mcp`` as a subprocess, as an agent launches it). Another
tenant's token sees nothing; a missing, wrong or admin token is refused; bad arguments are tool
errors and the server goes on; no token reaches a log line.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from uuid import UUID

import httpx
import pytest
from mcp.client import Client
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from palimpsest.cli.local import register_path
from palimpsest.core.db import tenant_tx
from palimpsest.core.events import AnalysisCompleted, AnalysisRequested
from palimpsest.core.ids import uuid7
from palimpsest.core.service import Infra
from palimpsest.ingest.api.app import create_app
from palimpsest.ingest.api.server import IngestServer
from palimpsest.ingest.context import build_context
from palimpsest.ingest.mcp.http import QUIET_LOGGERS, McpEndpoint
from palimpsest.ingest.mcp.tools import TOOLS
from palimpsest.ingest.store.tenants import insert_token
from palimpsest.ingest.tokens import new_api_token
from tests.integration.analyzer.support import (
    analyzer_for,
    analyzer_settings,
    index,
    indexer_definitions,
    running,
)
from tests.integration.ingest.support import ADMIN_TOKEN, drop_tenant, fake_resolver, ingest_settings
from tests.integration.reviewer.conftest import BILLING, INVOICE, TAX
from tests.support.gitrepo import commit, git, init_repo
from tests.support.pipeline import request_and_wait
from tests.support.servers import APP_ROLE, ServerSet
from tests.support.tenants import create_tenant

CHANGED = BILLING.replace("    total = 0\n", "    total = discount(items)\n") + "\n# v3\n"
pytestmark = pytest.mark.timeout(600)


def make_repository(path: Path) -> dict[str, Any]:
    r = init_repo(path)
    commit(
        r,
        "2022-01-10T00:00:00+00:00",
        {
            "docs/design.md": "# Billing\n\n`compute_total` sums prices in `src/pricing.py`.\n",
            "src/pricing.py": "def price(item):\n    return item.price\n",
        },
    )
    commit(
        r,
        "2024-03-01T00:00:00+00:00",
        {
            "src/billing.py": BILLING,
            "src/tax.py": TAX,
            "src/invoice.py": INVOICE,
            "src/pricing.py": None,
            "README.md": "# Billing\n\nCall `invoice_total()` for an order.\n",
        },
    )
    base = commit(
        r,
        "2024-05-01T00:00:00+00:00",
        {"src/billing.py": BILLING + "\n# v3\n", "src/tax.py": TAX + "\n# v3\n"},
    )
    git(r, "checkout", "-q", "-b", "feature")
    feature = commit(r, "2024-06-01T00:00:00+00:00", {"src/billing.py": CHANGED}, message="discount")
    git(r, "checkout", "-q", "main")
    return {"path": r, "base": base, "feature": feature}


@dataclass
class World:
    url: str
    tenant: UUID
    token: str
    other_tenant: UUID
    other_token: str
    review_only_token: str  # a token of the tenant without the read scope
    repository_id: UUID
    repo: dict[str, Any]


async def _token(infra: Infra, tenant: UUID, scopes: tuple[str, ...] = ("read",)) -> str:
    token, token_hash = new_api_token()
    async with tenant_tx(infra.pool, tenant) as conn:
        await insert_token(conn, tenant, uuid7(), token_hash, "mcp-test", scopes)
    return token


@pytest.fixture(scope="module")
async def world(
    infra: Infra, stack: ServerSet, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[World]:
    repo = make_repository(tmp_path_factory.mktemp("mcp") / "billing")
    tenant = await create_tenant(infra.pool, "mcp-a")
    other = await create_tenant(infra.pool, "mcp-b")
    repository_id = await register_path(infra.pool, tenant, repo["path"])
    async with running(infra, indexer_definitions({tenant})):
        await index(infra, tenant, repository_id)
    settings = analyzer_settings(analysis_auto=False)
    async with running(infra, [analyzer_for(infra, {tenant}, settings)]):
        event = AnalysisRequested(tenant_id=tenant, repository_id=repository_id)
        found = await request_and_wait(infra, event, (AnalysisCompleted,), timeout_s=120)
    assert found[AnalysisCompleted].state == "completed", found
    ctx = build_context(ingest_settings(stack), infra.pool, embedded=False, resolver=fake_resolver)
    mcp = McpEndpoint(ctx)
    server = IngestServer.bind(create_app(ctx, mcp=mcp), "127.0.0.1", 0)
    stop = asyncio.Event()

    async def serve() -> None:
        async with mcp.running():
            await server.serve(stop)

    task = asyncio.create_task(serve())
    while not await server.ready():
        assert not task.done(), task.exception()
        await asyncio.sleep(0.02)
    try:
        yield World(
            url=f"{server.url}/mcp",
            tenant=tenant,
            token=await _token(infra, tenant),
            other_tenant=other,
            other_token=await _token(infra, other),
            review_only_token=await _token(infra, tenant, ("review",)),
            repository_id=repository_id,
            repo=repo,
        )
    finally:
        stop.set()
        await task
        await drop_tenant(infra.pool, tenant)
        await drop_tenant(infra.pool, other)


@asynccontextmanager
async def http_session(url: str, token: str) -> AsyncIterator[ClientSession]:
    client = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
    async with (
        client,
        streamable_http_client(url, http_client=client) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


@asynccontextmanager
async def modern_client(url: str, token: str) -> AsyncIterator[Client]:
    """The SDK's high-level client on the per-request protocol (no initialize handshake)."""
    http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
    async with (
        http,
        Client(streamable_http_client(url, http_client=http), mode="2026-07-28", cache=None) as client,
    ):
        yield client


def stdio_env(stack: ServerSet, home: Path) -> dict[str, str]:
    return {
        **os.environ,
        "PALIMPSEST_DATABASE_URL": stack.app_url,
        "PALIMPSEST_MIGRATION_DATABASE_URL": stack.owner_url,
        "PALIMPSEST_NATS_URL": stack.nats_url,
        "PALIMPSEST_APP_ROLE": APP_ROLE,
        "PALIMPSEST_HOME": str(home),
        "PALIMPSEST_ALLOW_LOCAL_SOURCES": "true",
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    }


@asynccontextmanager
async def stdio_session(stack: ServerSet, tenant: UUID, home: Path) -> AsyncIterator[ClientSession]:
    env = stdio_env(stack, home)
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "palimpsest.cli.main", "mcp", "--tenant", str(tenant)], env=env
    )
    with (home / "mcp-stderr.log").open("w") as errlog:
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            yield session


async def call(session: ClientSession | Client, tool: str, **arguments: Any) -> dict[str, Any]:
    result = await session.call_tool(tool, arguments)
    text = "".join(getattr(c, "text", "") for c in result.content)
    assert not result.is_error, f"{tool}: {text}"
    assert result.structured_content is not None
    assert json.loads(text) == result.structured_content  # the same answer as text for plain clients
    return result.structured_content


async def error(session: ClientSession | Client, tool: str, **arguments: Any) -> str:
    result = await session.call_tool(tool, arguments)
    assert result.is_error, f"{tool} should have failed: {result}"
    return "".join(getattr(c, "text", "") for c in result.content)


async def exercise(session: ClientSession | Client, world: World) -> None:
    """Every tool, with what each answer must show."""
    listed = await session.list_tools()
    assert sorted(t.name for t in listed.tools) == sorted(TOOLS)
    name = "billing"

    repos = await call(session, "repositories")
    assert [r["repository"] for r in repos["repositories"]] == [name]
    assert repos["repositories"][0]["indexed"]["commit"] == world.repo["base"]
    assert repos["repositories"][0]["last_recency_scan"]

    snaps = await call(session, "snapshots", repository=str(world.repository_id))
    assert snaps["snapshots"][0]["commit"] == world.repo["base"]
    assert snaps["snapshots"][0]["state"] == "ready"

    found = await call(session, "search", repository=name, query="compute_total", path_prefix="src/")
    hit = found["hits"][0]
    assert hit["path"] == "src/billing.py" and hit["start_line"] == 1
    assert hit["last_modified_at"].startswith("2024-05-01") and "compute_total" in hit["content"]
    assert found["mode"] == "lexical" and found["commit"] == world.repo["base"]
    assert all(h["path"].startswith("src/") for h in found["hits"])
    hybrid = await call(session, "search", repository=name, query="tax region", mode="hybrid")
    assert hybrid["semantic"] == "unavailable" and hybrid["semantic_reason"]  # no embeddings: says why
    assert hybrid["hits"]

    defs = await call(session, "definitions", repository=name, symbol="compute_total")
    assert [(i["path"], i["start_line"]) for i in defs["items"]] == [("src/billing.py", 1)]
    assert "compute_total" in defs["items"][0]["why"]

    refs = await call(session, "references", repository=name, symbol="compute_total")
    assert [i["path"] for i in refs["items"]] == ["src/invoice.py"]
    assert "compute_total" in refs["items"][0]["content"]
    assert refs["items"][0]["last_modified_at"].startswith("2024-03-01")

    near = await call(session, "context", repository=name, seeds=["src/billing.py"])
    paths = {e["path"]: e for e in near["entries"]}
    assert "src/invoice.py" in paths and paths["src/invoice.py"]["why"]
    assert "src/tax.py" in paths  # changes with billing.py
    assert near["seeds"] == {"src/billing.py": ["file:src/billing.py"]}

    review = await call(
        session,
        "review_context",
        repository=name,
        base=world.repo["base"],
        head="feature",
        budget_tokens=4000,
    )
    assert review["base"] == world.repo["base"] and review["head"] == world.repo["feature"]
    assert review["changed"] == ["src/billing.py"] and review["snapshot_on_base"] is True
    sources = {(i["source"], i["path"]) for i in review["items"]}
    assert ("usage", "src/invoice.py") in sources
    assert all(i["why"] and i["start_line"] >= 1 for i in review["items"])
    assert [m["path"] for m in review["cochange_missing"]] == ["src/tax.py"]
    assert review["cochange_missing"][0]["reason"].startswith("changed in 2 of the 2 commits that changed")
    diff = git(world.repo["path"], "diff", world.repo["base"], "feature")
    by_diff = await call(session, "review_context", repository=name, base=world.repo["base"], diff=diff)
    assert by_diff["changed"] == review["changed"]
    assert by_diff["cochange_missing"] == review["cochange_missing"]
    assert review["left_behind"] == []  # the change keeps every name the docs use
    # a rename leaves the README naming what is gone: found without a model, with the corrected line
    rename = (
        "diff --git a/src/invoice.py b/src/invoice.py\n--- a/src/invoice.py\n+++ b/src/invoice.py\n"
        "@@ -4,2 +4,2 @@\n-def invoice_total(order):\n+def order_total(order):\n"
        "     return compute_total(order.items)\n"
    )
    renamed = await call(session, "review_context", repository=name, base=world.repo["base"], diff=rename)
    [left] = renamed["left_behind"]
    assert (left["path"], left["start_line"], left["category"]) == ("README.md", 3, "docs")
    assert "renames to `order_total`" in left["message"]
    assert left["suggested_change"] == "Call `order_total()` for an order."

    dates = await call(session, "recency", repository=name)
    by_path = {f["path"]: f for f in dates["files"]}
    assert by_path["docs/design.md"]["stale"] is True and "older" in by_path["docs/design.md"]["why"]
    assert by_path["src/billing.py"]["last_modified_at"].startswith("2024-05-01")
    assert dates["stale_docs"] == 1 and dates["files"][0]["path"] == "docs/design.md"  # oldest first
    stale = await call(session, "recency", repository=name, stale_only=True)
    assert [f["path"] for f in stale["files"]] == ["docs/design.md"]

    docs = await call(session, "doc_findings", repository=name)
    claims = {(f["doc"], f["claim"].strip("`")): f for f in docs["findings"]}
    moved = claims[("docs/design.md", "src/pricing.py")]
    assert moved["kind"] == "missing_path" and moved["line"] == 3 and "existed until" in moved["why"]
    assert moved["evidence"]["removed_at"].startswith("2024-03-01")  # proved from history
    assert moved["evidence"]["last_seen_commit"] and moved["evidence"]["removed_in_commit"]
    # an old doc with proved drift is reported by its drift, not as merely old
    assert ("docs/design.md", "last modified 2022-01-10") not in claims
    assert docs["doc_states"]["drift"] == 1
    assert docs["commit"] == world.repo["base"]

    small = await call(session, "recency", repository=name, budget_tokens=100)
    assert small["left_out"] > 0 and len(small["files"]) < len(dates["files"])


def capture_everything(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    for name in QUIET_LOGGERS:  # quieter in service, but nothing escapes the check here
        caplog.set_level(logging.DEBUG, logger=name)


async def test_every_tool_over_streamable_http(world: World, caplog: pytest.LogCaptureFixture) -> None:
    capture_everything(caplog)
    async with http_session(world.url, world.token) as session:
        await exercise(session, world)
        # bad arguments: a clear tool error, and the server goes on
        assert "budget_tokens" in await error(session, "recency", repository="billing", budget_tokens=-5)
        assert "no repository 'nope'" in await error(session, "search", repository="nope", query="x")
        assert "src/missing.py" in await error(
            session, "context", repository="billing", seeds=["src/missing.py"]
        )
        assert "exactly one of" in await error(session, "review_context", repository="billing", base="main")
        assert "names no commit" in await error(
            session, "review_context", repository="billing", base="main", head="no-such-branch"
        )
        assert "diff_does_not_apply" in await error(
            session,
            "review_context",
            repository="billing",
            diff="diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n",
        )
        await call(session, "repositories")
    assert world.token not in caplog.text and world.other_token not in caplog.text


async def test_every_tool_over_the_per_request_protocol(world: World) -> None:
    """Clients of the 2026 protocol send no handshake: the token's tenant reaches every call too."""
    async with modern_client(world.url, world.token) as client:
        assert client.protocol_version == "2026-07-28"
        await exercise(client, world)
    async with modern_client(world.url, world.other_token) as client:
        assert (await call(client, "repositories"))["repositories"] == []


async def test_another_tenants_token_sees_nothing(world: World) -> None:
    async with http_session(world.url, world.other_token) as session:
        assert (await call(session, "repositories"))["repositories"] == []
        for ref in ("billing", str(world.repository_id)):
            assert "no repository" in await error(session, "search", repository=ref, query="compute_total")
            assert "no repository" in await error(session, "doc_findings", repository=ref)
            assert "no repository" in await error(
                session, "review_context", repository=ref, base=world.repo["base"], head="feature"
            )


async def test_missing_wrong_or_admin_tokens_are_refused(
    world: World, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    wrong = "pal_" + "x" * 43
    async with httpx.AsyncClient(timeout=30) as client:
        for auth, status in (
            (None, 401),
            (f"Bearer {wrong}", 401),
            ("Basic dXNlcjpwYXNz", 401),
            (f"Bearer {ADMIN_TOKEN}", 403),
            (f"Bearer {world.review_only_token}", 403),  # a tenant token without the read scope
        ):
            sent = {**headers, **({"Authorization": auth} if auth else {})}
            res = await client.post(world.url, json=body, headers=sent)
            assert res.status_code == status, (auth, res.text)
            assert "detail" in res.json() and "tools" not in res.text
            if status == 401:
                assert res.headers["www-authenticate"] == "Bearer"
    with pytest.raises(Exception):  # noqa: B017 - the SDK's client cannot even initialize
        async with http_session(world.url, wrong):
            pass
    assert wrong not in caplog.text and ADMIN_TOKEN not in caplog.text
    assert world.review_only_token not in caplog.text


async def test_every_tool_over_stdio(world: World, stack: ServerSet, tmp_path: Path) -> None:
    async with stdio_session(stack, world.tenant, tmp_path) as session:
        await exercise(session, world)
        assert "budget_tokens" in await error(
            session, "search", repository="billing", query="x", budget_tokens=0
        )
        await call(session, "repositories")
    log = (tmp_path / "mcp-stderr.log").read_text()
    assert "serving tenant" in log


async def test_stdio_for_another_tenant_sees_nothing(world: World, stack: ServerSet, tmp_path: Path) -> None:
    async with stdio_session(stack, world.other_tenant, tmp_path) as session:
        assert (await call(session, "repositories"))["repositories"] == []
        assert "no repository" in await error(session, "recency", repository=str(world.repository_id))


@pytest.mark.parametrize(
    ("tenant", "message"), [("not-a-uuid", "no tenant 'not-a-uuid'"), (None, "no tenant")]
)
def test_stdio_refuses_a_tenant_that_does_not_exist(
    world: World, stack: ServerSet, tmp_path: Path, tenant: str | None, message: str
) -> None:
    del world  # the stack is migrated
    named = tenant or str(uuid7())
    proc = subprocess.run(
        [sys.executable, "-m", "palimpsest.cli.main", "mcp", "--tenant", named],
        env=stdio_env(stack, tmp_path),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 2 and message in proc.stderr and proc.stdout == ""
