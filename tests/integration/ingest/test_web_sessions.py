"""Web view sessions that end (migration 0049), over real HTTP against the served ingest app.

A session is a row on the server: signing out deletes it, so a copy of the cookie taken before
sign-out — replayed from another client — gets the sign-in page; revoking or rotating the token
deletes the token's sessions; expired rows, and operator sessions of a replaced admin token, are
pruned. Row-level security keeps a tenant's sessions to that tenant and the operator's out of
every tenant's transaction.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID, uuid4

import httpx
import psycopg
import pytest

from palimpsest.core.db import system_tx, tenant_tx
from palimpsest.ingest.store import sessions
from palimpsest.ingest.tokens import hash_token
from tests.integration.ingest.support import ADMIN_TOKEN, Served, World, drop_tenant, new_tenant
from tests.support.servers import ServerSet

COOKIE = "palimpsest_session"


@pytest.fixture
async def world(client: httpx.AsyncClient, served: Served) -> AsyncIterator[World]:
    made = await new_tenant(client, f"sessions-{uuid4().hex[:8]}")
    try:
        yield made
    finally:
        await drop_tenant(served.infra.pool, made.tenant_id)


def _csrf(page: str) -> str:
    found = re.search(r'name="csrf" value="([^"]+)"', page)
    assert found is not None, page
    return found.group(1)


async def _sign_in(c: httpx.AsyncClient, token: str) -> str:
    """Sign in through the form; the session cookie's value."""
    form = await c.get("/ui/sign-in")
    signed = await c.post("/ui/sign-in", data={"csrf": _csrf(form.text), "token": token})
    assert signed.status_code == 303, signed.text
    value = c.cookies.get(COOKIE)
    assert value
    return value


async def _replay(served: Served, cookie: str, url: str) -> httpx.Response:
    """The copied cookie, from a client of its own (following redirects: what a browser shows)."""
    async with httpx.AsyncClient(base_url=served.url, cookies={COOKIE: cookie}) as thief:
        return await thief.get(url, follow_redirects=True)


def _rows(stack: ServerSet, where: str, params: tuple[Any, ...]) -> list[tuple[Any, ...]]:
    with psycopg.connect(stack.owner_url) as conn:
        return conn.execute(f"SELECT session_id, tenant_id FROM ui_sessions WHERE {where}", params).fetchall()


def _signed_out(page: httpx.Response) -> bool:
    return page.status_code == 200 and page.url.path == "/ui/sign-in" and 'name="token"' in page.text


@pytest.mark.parametrize("who", ["tenant", "operator"])
async def test_a_cookie_copied_before_sign_out_gets_the_sign_in_page_after_it(
    served: Served, stack: ServerSet, world: World, who: str
) -> None:
    token, url = (
        (world.token, f"/ui/t/{world.tenant_id}/") if who == "tenant" else (ADMIN_TOKEN, "/ui/tenants")
    )
    async with httpx.AsyncClient(base_url=served.url) as c:
        copied = await _sign_in(c, token)
        page = await c.get(url)
        assert page.status_code == 200 and not _signed_out(page)
        assert not _signed_out(await _replay(served, copied, url)), "the copy works while signed in"
        assert len(_rows(stack, "token_hash = %s", (hash_token(token),))) >= 1
        out = await c.post("/ui/sign-out", data={"csrf": _csrf(page.text)})
        assert out.status_code == 303
    replayed = await _replay(served, copied, url)
    assert _signed_out(replayed), (replayed.url, replayed.status_code)
    assert world.token not in replayed.text and ADMIN_TOKEN not in replayed.text
    # the row is gone on the server, not just the cookie in the browser
    session_id = await _session_id(served, copied)
    assert _rows(stack, "session_id = %s", (session_id,)) == []


async def _session_id(served: Served, cookie: str) -> UUID:
    """The id sealed in a cookie, read with the service's own key (as the server reads it)."""
    return UUID(json.loads(served.ctx.box.open(cookie.encode()))["s"])


@pytest.mark.parametrize("how", ["revoke", "rotate"])
async def test_revoking_or_rotating_a_token_ends_its_sessions(
    client: httpx.AsyncClient, served: Served, stack: ServerSet, world: World, how: str
) -> None:
    issued = await client.post(
        world.path("/tokens"), json={"name": f"web-{how}", "scopes": ["read"]}, headers=world.auth
    )
    assert issued.status_code == 201, issued.text
    token = issued.json()
    url = f"/ui/t/{world.tenant_id}/"
    async with (
        httpx.AsyncClient(base_url=served.url) as reader,
        httpx.AsyncClient(base_url=served.url) as kept,
    ):
        cookie = await _sign_in(reader, token["api_token"])
        other = await _sign_in(kept, world.token)  # another token's session of the same tenant
        assert (await reader.get(url)).status_code == 200
        assert len(_rows(stack, "token_hash = %s", (hash_token(token["api_token"]),))) == 1
        if how == "revoke":
            done = await client.delete(world.path(f"/tokens/{token['token_id']}"), headers=world.auth)
            assert done.status_code == 204, done.text
        else:
            done = await client.post(world.path(f"/tokens/{token['token_id']}/rotate"), headers=world.auth)
            assert done.status_code == 200, done.text
        assert _rows(stack, "token_hash = %s", (hash_token(token["api_token"]),)) == []
        assert _signed_out(await _replay(served, cookie, url))
        assert _rows(stack, "session_id = %s", (await _session_id(served, other),)) != []
        assert (await kept.get(url)).status_code == 200


async def test_expired_sessions_and_a_replaced_operator_tokens_are_pruned(
    served: Served, stack: ServerSet, world: World
) -> None:
    pool = served.infra.pool
    later = datetime.now(UTC) + timedelta(hours=1)
    expired, live, old_operator, operator = uuid4(), uuid4(), uuid4(), uuid4()
    await sessions.start(pool, expired, world.tenant_id, hash_token(world.token), later)
    await sessions.start(pool, live, world.tenant_id, hash_token(world.token), later)
    await sessions.start(pool, old_operator, None, hash_token("paladm_replaced-operator-token"), later)
    await sessions.start(pool, operator, None, hash_token(ADMIN_TOKEN), later)
    with psycopg.connect(stack.owner_url) as conn:  # time passes for one of them
        conn.execute(
            "UPDATE ui_sessions SET expires_at = now() - interval '1 second' WHERE session_id = %s",
            (expired,),
        )
    assert await sessions.prune(pool, hash_token(ADMIN_TOKEN)) >= 2
    ids = (expired, live, old_operator, operator)
    left = {r[0] for r in _rows(stack, "session_id = ANY(%s)", (list(ids),))}
    assert left == {live, operator}
    assert not await sessions.alive(pool, expired, world.tenant_id, hash_token(world.token))
    assert await sessions.alive(pool, live, world.tenant_id, hash_token(world.token))
    assert not await sessions.alive(pool, live, world.tenant_id, hash_token("pal_another-token"))
    await sessions.end(pool, live, world.tenant_id)
    await sessions.end(pool, operator, None)


async def test_row_level_security_keeps_sessions_to_their_tenant_and_the_operators_apart(
    client: httpx.AsyncClient, served: Served, world: World
) -> None:
    pool = served.infra.pool
    other = await new_tenant(client, f"sessions-other-{uuid4().hex[:8]}")
    later = datetime.now(UTC) + timedelta(hours=1)
    mine, operator = uuid4(), uuid4()
    try:
        await sessions.start(pool, mine, world.tenant_id, hash_token(world.token), later)
        await sessions.start(pool, operator, None, hash_token(ADMIN_TOKEN), later)
        # another tenant sees neither, and cannot end them
        assert not await sessions.alive(pool, mine, other.tenant_id, hash_token(world.token))
        async with tenant_tx(pool, other.tenant_id) as conn:
            cur = await conn.execute(
                "DELETE FROM ui_sessions WHERE session_id = ANY(%s)", ([mine, operator],)
            )
            assert cur.rowcount == 0
        # the system (no tenant) sees the operator's sessions only
        async with system_tx(pool) as conn:
            cur = await conn.execute(
                "SELECT session_id FROM ui_sessions WHERE session_id = ANY(%s)", ([mine, operator],)
            )
            assert [r["session_id"] for r in await cur.fetchall()] == [operator]
        # a tenant cannot write a session for another tenant, nor an operator session
        for tenant in (other.tenant_id, None):
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                async with tenant_tx(pool, world.tenant_id) as conn:
                    await conn.execute(
                        "INSERT INTO ui_sessions (session_id, tenant_id, token_hash, expires_at)"
                        " VALUES (%s, %s, %s, %s)",
                        (uuid4(), tenant, hash_token("pal_forged"), later),
                    )
        assert await sessions.alive(pool, mine, world.tenant_id, hash_token(world.token))
        assert await sessions.alive(pool, operator, None, hash_token(ADMIN_TOKEN))
    finally:
        await sessions.end(pool, operator, None)
        await drop_tenant(pool, other.tenant_id)
