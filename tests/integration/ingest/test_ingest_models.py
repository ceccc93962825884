"""Model routes and budgets without SQL: the API with its scopes, litellm's check of a route's model,
row-level security between tenants, what the LLM gateway then routes to, and the CLI end to end
against the served API (remote mode: PALIMPSEST_INGEST_URL + PALIMPSEST_API_TOKEN)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from typing import Any

import httpx

from palimpsest.core.db import fetch_all, tenant_tx
from palimpsest.core.llm import LLMSettings, resolve_route, tenant_budget
from tests.integration.ingest.support import Served, World, bearer, drop_tenant, new_tenant

CLI = [sys.executable, "-m", "palimpsest.cli.main"]


async def _token(client: httpx.AsyncClient, world: World, *scopes: str) -> str:
    res = await client.post(
        world.path("/tokens"), json={"name": "-".join(scopes), "scopes": list(scopes)}, headers=world.auth
    )
    assert res.status_code == 201, res.text
    return str(res.json()["api_token"])


async def _put(
    client: httpx.AsyncClient, world: World, feature: str, token: str, **body: Any
) -> httpx.Response:
    return await client.put(world.path(f"/model-routes/{feature}"), json=body, headers=bearer(token))


async def test_routes_and_budgets_through_the_api_with_scopes(
    served: Served, client: httpx.AsyncClient
) -> None:
    world, other = await new_tenant(client, "models-a"), await new_tenant(client, "models-b")
    try:
        read, manage = await _token(client, world, "read"), await _token(client, world, "manage")

        refused = await _put(client, world, "review", read, model="openai/gpt-4o-mini")
        assert refused.status_code == 403 and "manage" in refused.json()["detail"]
        made = await _put(client, world, "review", manage, model="openai/gpt-4o-mini")
        assert made.status_code == 200, made.text
        assert (made.json()["feature"], made.json()["model"]) == ("review", "openai/gpt-4o-mini")
        # a price of its own makes a model litellm does not know acceptable
        half = await _put(
            client, world, "analysis", manage, model="openai/northwind-7b", input_usd_per_mtok=0.5
        )
        assert half.status_code == 400 and "both prices" in half.json()["detail"]
        priced = await _put(
            client,
            world,
            "analysis",
            manage,
            model="openai/northwind-7b",
            input_usd_per_mtok=0.5,
            output_usd_per_mtok=1.5,
        )
        assert priced.status_code == 200, priced.text

        listed = await client.get(world.path("/model-routes"), headers=bearer(read))
        assert listed.status_code == 200
        assert [(r["feature"], r["model"]) for r in listed.json()["items"]] == [
            ("analysis", "openai/northwind-7b"),
            ("review", "openai/gpt-4o-mini"),
        ]

        # the other tenant sees none of them, through the API and in its own transaction
        theirs = await client.get(other.path("/model-routes"), headers=other.auth)
        assert theirs.json()["items"] == []
        across = await client.get(world.path("/model-routes"), headers=other.auth)
        assert across.status_code == 404
        across_put = await _put(client, world, "review", other.token, model="openai/gpt-4o")
        assert across_put.status_code == 404
        async with tenant_tx(served.ctx.pool, other.tenant_id) as conn:
            assert await fetch_all(conn, "SELECT * FROM llm_routes") == []

        # what the gateway routes to: the tenant's route wins over the settings
        settings = LLMSettings(llm_model="openai/gpt-4o", llm_monthly_budget_usd=5.0)
        async with tenant_tx(served.ctx.pool, world.tenant_id) as conn:
            found = await resolve_route(conn, settings, "review")
            assert found is not None and (found.model, found.source) == ("openai/gpt-4o-mini", "tenant")
        async with tenant_tx(served.ctx.pool, other.tenant_id) as conn:
            found = await resolve_route(conn, settings, "review")
            assert found is not None and (found.model, found.source) == ("openai/gpt-4o", "settings")

        assert (
            await client.delete(world.path("/model-routes/analysis"), headers=bearer(read))
        ).status_code == 403
        assert (
            await client.delete(world.path("/model-routes/analysis"), headers=bearer(manage))
        ).status_code == 204
        gone = await client.delete(world.path("/model-routes/analysis"), headers=bearer(manage))
        assert gone.status_code == 404 and "no analysis route" in gone.json()["detail"]

        # budgets: read shows, manage sets; null drops the tenant's own
        shown = await client.get(world.path("/budget"), headers=bearer(read))
        assert shown.json() == {"monthly_usd": None, "updated_at": None, "spent_usd": 0.0}
        put = await client.put(world.path("/budget"), json={"monthly_usd": 25}, headers=bearer(read))
        assert put.status_code == 403
        put = await client.put(world.path("/budget"), json={"monthly_usd": 25}, headers=bearer(manage))
        assert put.status_code == 200 and put.json()["monthly_usd"] == 25.0
        async with tenant_tx(served.ctx.pool, world.tenant_id) as conn:
            assert await tenant_budget(conn, settings) == 25.0
        async with tenant_tx(served.ctx.pool, other.tenant_id) as conn:
            assert await tenant_budget(conn, settings) == 5.0  # theirs is the settings' default
        put = await client.put(world.path("/budget"), json={"monthly_usd": None}, headers=bearer(manage))
        assert put.json()["monthly_usd"] is None
        bad = await client.put(world.path("/budget"), json={"monthly_usd": -1}, headers=bearer(manage))
        assert bad.status_code == 422
    finally:
        await drop_tenant(served.ctx.pool, world.tenant_id)
        await drop_tenant(served.ctx.pool, other.tenant_id)


async def test_a_route_litellm_cannot_route_or_price_is_refused(
    served: Served, client: httpx.AsyncClient
) -> None:
    world = await new_tenant(client, "models-check")
    try:
        cases = {
            ("review", "nonsense-model", False): "cannot route",
            ("review", "openai/northwind-7b", False): "no price",
            ("review", "local/all-minilm-l6-v2", False): "local embeddings model",
            ("embeddings", "local/no-such-model", False): "no local model",
        }
        for (feature, model, allow), reason in cases.items():
            res = await _put(client, world, feature, world.token, model=model, allow_unpriced=allow)
            assert res.status_code == 400 and reason in res.json()["detail"], (model, res.text)
        # --allow-unpriced accepts a model litellm can route but not price; never an unroutable one
        ok = await _put(
            client, world, "review", world.token, model="openai/northwind-7b", allow_unpriced=True
        )
        assert ok.status_code == 200, ok.text
        still = await _put(client, world, "review", world.token, model="nonsense-model", allow_unpriced=True)
        assert still.status_code == 400
        embeds = await _put(client, world, "embeddings", world.token, model="local/all-minilm-l6-v2")
        assert embeds.status_code == 200, embeds.text
        base = await _put(
            client, world, "rerank", world.token, model="cohere/rerank-english-v3.0", api_base="ftp://x"
        )
        assert base.status_code == 400 and "http(s)" in base.json()["detail"]
        unknown = await _put(client, world, "poetry", world.token, model="openai/gpt-4o-mini")
        assert unknown.status_code == 422
        listed = await client.get(world.path("/model-routes"), headers=world.auth)
        assert [(r["feature"], r["model"]) for r in listed.json()["items"]] == [
            ("embeddings", "local/all-minilm-l6-v2"),
            ("review", "openai/northwind-7b"),
        ]
    finally:
        await drop_tenant(served.ctx.pool, world.tenant_id)


async def _cli(
    served: Served, token: str, *args: str, env_extra: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """The CLI in its own process (in a thread: the served API runs on this test's event loop),
    with no PALIMPSEST_* setting and no provider key of this shell (``env_extra`` adds some)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PALIMPSEST_", "OPENAI_"))}
    env.update({"PALIMPSEST_INGEST_URL": served.url, "PALIMPSEST_API_TOKEN": token, **(env_extra or {})})
    return await asyncio.to_thread(
        subprocess.run, [*CLI, *args], env=env, capture_output=True, text=True, timeout=120, check=False
    )


async def test_the_cli_sets_lists_and_removes_routes_and_budgets(
    served: Served, client: httpx.AsyncClient
) -> None:
    world = await new_tenant(client, "models-cli")
    try:
        read = await _token(client, world, "read")
        tid = str(world.tenant_id)
        out = await _cli(
            served,
            world.token,
            "model",
            "route",
            "set",
            "review",
            "openai/gpt-4o-mini",
            "--tenant",
            tid,
            "--json",
        )
        assert out.returncode == 0, out.stderr
        assert json.loads(out.stdout)["model"] == "openai/gpt-4o-mini"
        out = await _cli(
            served, world.token, "model", "route", "set", "analysis", "openai/northwind-7b", "--tenant", tid
        )
        target, error = out.stderr.strip().splitlines()  # where it acted, then the one-line refusal
        assert target.startswith("target: remote ingest API http://127.0.0.1:"), out.stderr
        assert out.returncode == 2 and error.startswith("error: 400: litellm has no price"), out.stderr
        assert "Traceback" not in out.stderr
        out = await _cli(
            served, world.token, "model", "route", "set", "analysis", "openai/northwind-7b", "--allow-unpriced",
            "--api-base", "http://127.0.0.1:9/v1", "--tenant", tid,
        )  # fmt: skip
        assert out.returncode == 0, out.stderr
        assert out.stdout.startswith("analysis   openai/northwind-7b  http://127.0.0.1:9/v1")

        listed = await _cli(served, read, "model", "route", "list", "--tenant", tid, "--json")
        assert [r["feature"] for r in json.loads(listed.stdout)] == ["analysis", "review"]
        denied = await _cli(served, read, "model", "route", "remove", "review", "--tenant", tid)
        assert denied.returncode == 2 and "403" in denied.stderr and "manage" in denied.stderr
        out = await _cli(served, world.token, "model", "route", "remove", "review", "--tenant", tid)
        assert (out.returncode, out.stdout.strip()) == (0, "removed review")

        out = await _cli(served, world.token, "budget", "set", "40", "--tenant", tid)
        assert out.returncode == 0 and "40 USD a month" in out.stdout, out.stderr
        shown = await _cli(served, read, "budget", "show", "--tenant", tid, "--json")
        assert json.loads(shown.stdout)["monthly_usd"] == 40.0
        assert (await _cli(served, read, "budget", "set", "10", "--tenant", tid)).returncode == 2
        out = await _cli(served, world.token, "budget", "set", "--inherit", "--tenant", tid)
        assert out.returncode == 0 and "none of its own" in out.stdout
        both = await _cli(served, world.token, "budget", "set", "5", "--inherit", "--tenant", tid)
        assert both.returncode == 2 and "one of them" in both.stderr
    finally:
        await drop_tenant(served.ctx.pool, world.tenant_id)


async def test_route_set_warns_when_this_shell_has_no_key_for_the_model(
    served: Served, client: httpx.AsyncClient
) -> None:
    """Accepted either way (the services may hold the key), but said at once, with where it was checked."""
    world = await new_tenant(client, "models-key")
    try:
        tid = str(world.tenant_id)
        route = ("model", "route", "set", "review", "openai/gpt-4o-mini", "--tenant", tid)
        out = await _cli(served, world.token, *route)
        assert out.returncode == 0, out.stderr
        assert out.stdout.startswith("review     openai/gpt-4o-mini")
        [warning] = [line for line in out.stderr.splitlines() if line.startswith("warning:")]
        assert warning == (
            "warning: no API key for openai/gpt-4o-mini: PALIMPSEST_LLM_API_KEY is not set, and litellm"
            " misses OPENAI_API_KEY; its calls would fail (authentication) (checked in this shell's"
            " environment; the services read their own)"
        )
        # a key in either place, or a route to an API base of its own (sent no key), warns of nothing
        key = "sk-route-warning-5f1c"
        for extra, more in (
            ({"PALIMPSEST_LLM_API_KEY": key}, ()),
            ({"OPENAI_API_KEY": key}, ()),
            ({}, ("--api-base", "http://127.0.0.1:9/v1")),
        ):
            out = await _cli(served, world.token, *route, *more, env_extra=extra)
            assert out.returncode == 0, out.stderr
            assert "warning" not in out.stderr and key not in out.stderr + out.stdout
    finally:
        await drop_tenant(served.ctx.pool, world.tenant_id)
