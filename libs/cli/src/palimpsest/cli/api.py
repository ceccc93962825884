"""The ingest API as the CLI's operator commands use it (``palimpsest tenant|installation|repo|token|…``).

Every command talks HTTP to the ingest API: ``PALIMPSEST_INGEST_URL`` when set (a remote
deployment), else the running ``palimpsest up`` (its recorded ``ingest_url``, or
``127.0.0.1:$PALIMPSEST_INGEST_PORT``), else a stack started for the command's duration with the
ingest service in it. It authenticates with ``PALIMPSEST_API_TOKEN`` (a tenant's token) when set,
else with the operator admin token (``PALIMPSEST_ADMIN_TOKEN``, or the embedded stack's
``$PALIMPSEST_HOME/admin-token`` — sent only to that local stack, never to another endpoint; see
:mod:`palimpsest.cli.target` for this and for the https rule). Secrets are read from an environment variable or stdin, never
from the command line (the process table and shell history would show them).
"""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any
from uuid import UUID

import click

from palimpsest.cli.options import TenantNotFound, as_uuid, pick_tenant, tenant_option
from palimpsest.cli.output import emit, fail, progress
from palimpsest.cli.runtime import run_async, settings
from palimpsest.cli.target import (
    announce_local,
    announce_remote,
    check_transport,
    remote_url,
    same_endpoint,
)

if TYPE_CHECKING:  # httpx is imported when a command calls the API, not for --help
    import httpx

__all__ = ["Api", "api_command", "connect", "json_option", "read_secret", "tenant_option"]


class Api:
    """A thin client of the /v1 API; any non-2xx answer ends the command with its one-line reason."""

    def __init__(self, client: httpx.AsyncClient, local_home: Path | None = None) -> None:
        self.client = client
        self.local_home = local_home  # the local stack's home; None for a remote

    async def tenant(self, given: str | None) -> str:
        """The id of the tenant ``--tenant`` names (by id or name; locally, default the local tenant)."""
        if not given:
            marker = self.local_home / "local-tenant" if self.local_home is not None else None
            if marker is not None and marker.exists():
                return marker.read_text().strip()
            fail("--tenant is required: a tenant id or name (or set PALIMPSEST_TENANT)")
        if as_uuid(given) is not None:
            return str(as_uuid(given))
        res = await self._get("/v1/tenants")
        if res.status_code == 403:  # a tenant's token: only the operator lists tenants
            fail(
                f"--tenant {given!r} is not a tenant id, and this token cannot look tenants up by name;"
                " give the id"
            )
        items = self._json(res)["items"]  # a refused token (401) ends here, saying so
        try:
            return str(pick_tenant(given, [(UUID(t["tenant_id"]), t["name"]) for t in items]))
        except TenantNotFound as exc:
            fail(str(exc))

    async def repository(self, tenant: str, given: str) -> str:
        """The id of the repository ``--repo`` names: its id, full name, clone URL or local path."""
        wanted = as_uuid(given)
        if wanted is not None:
            return str(wanted)
        items = (await self.call("GET", f"/v1/tenants/{tenant}/repositories"))["items"]
        as_path = Path(given).expanduser()
        names = {given, str(as_path.resolve())} if as_path.exists() else {given}
        found = [r for r in items if r.get("full_name") in names or r.get("clone_url") in names]
        if not found:
            fail(
                f"no repository {given!r} in tenant {tenant}: --repo takes an id, full name, clone URL or path"
            )
        if len(found) > 1:
            fail(f"{given!r} names more than one repository; give --repo the id")
        return str(found[0]["repository_id"])

    async def _get(self, path: str) -> httpx.Response:
        return await self._request("GET", path)

    def _json(self, res: httpx.Response) -> Any:
        if res.status_code == 401:
            fail(
                f"the token was refused (401): {_detail(res)}; set PALIMPSEST_API_TOKEN to a valid tenant"
                " token, or PALIMPSEST_ADMIN_TOKEN to the operator's (the embedded stack's is in"
                " $PALIMPSEST_HOME/admin-token)"
            )
        if res.status_code >= 400:
            fail(f"{res.status_code}: {_detail(res)}")
        return res.json() if res.content else None

    async def _request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        import httpx

        try:
            return await self.client.request(method, path, **kwargs)
        except httpx.HTTPError as exc:
            fail(f"cannot reach the ingest API at {self.client.base_url} ({exc.__class__.__name__})")

    async def call(self, method: str, path: str, body: dict[str, Any] | None = None, **params: Any) -> Any:
        query = {k: v for k, v in params.items() if v is not None}
        return self._json(await self._request(method, path, json=body, params=query))


def _detail(res: httpx.Response) -> str:
    try:
        detail = res.json().get("detail")
    except ValueError:
        return res.text[:200]
    if isinstance(detail, list):
        return "; ".join(f"{'.'.join(map(str, d.get('loc', [])))}: {d.get('msg')}" for d in detail)
    return str(detail)


@asynccontextmanager
async def connect(*, writes: bool = False) -> AsyncIterator[Api]:
    """The API of the configured remote, the running local stack or one started for this command.

    A command that ``writes`` first says on stderr which one it acts on (:mod:`palimpsest.cli.target`).
    """
    from palimpsest.cli.stack import read_running
    from palimpsest.ingest.settings import ingest_settings

    base = settings()
    ingest = ingest_settings(base)
    configured = remote_url()
    running = read_running(base.home)
    if configured is not None:
        check_transport(configured)  # before any connection
        # the local stack's own token only when this URL is that stack's recorded ingest API
        recorded = running.ingest_url if running is not None else None
        ours = recorded is not None and same_endpoint(configured, recorded)
        token = _token(ingest, local=ours, url=configured)
        if writes:
            announce_remote(configured)
        async with _client(configured, token) as api:
            yield api
        return
    if writes:
        announce_local(base, running_pid=running.pid if running is not None else None)
    if running is not None:
        url = running.ingest_url or f"http://127.0.0.1:{ingest.ingest_port}"
        async with _client(url, _token(ingest, local=True), base.home) as api:
            yield api
        return
    from palimpsest.cli.runner import running_services
    from palimpsest.cli.stack import open_stack

    if not writes:
        progress("no running stack: starting one for this command…")
    async with open_stack(base) as stack, running_services(base, stack, services=("ingest",)) as infra:
        url = str(infra.ingest_url)
        async with _client(url, _token(ingest, local=True), base.home) as api:
            yield api


def _token(ingest: Any, *, local: bool, url: str | None = None) -> str:
    """The token to send: ``PALIMPSEST_API_TOKEN``, else ``PALIMPSEST_ADMIN_TOKEN``, else — only
    when ``local`` (the endpoint is the local stack) — the embedded stack's token file."""
    from palimpsest.ingest.tokens import read_admin_token

    configured = ingest.admin_token.get_secret_value() if ingest.admin_token else None
    explicit = os.environ.get("PALIMPSEST_API_TOKEN") or configured
    if explicit:
        return str(explicit)
    if not local:
        fail(
            f"no token for {url}: set PALIMPSEST_API_TOKEN (a tenant token) or PALIMPSEST_ADMIN_TOKEN"
            " (the operator token) of that deployment; the local stack's operator token"
            " ($PALIMPSEST_HOME/admin-token) is only ever sent to the local stack"
        )
    token = read_admin_token(None, Path(ingest.home))
    if not token:
        fail("no token: set PALIMPSEST_API_TOKEN (a tenant token) or PALIMPSEST_ADMIN_TOKEN")
    return str(token)


@asynccontextmanager
async def _client(url: str, token: str, local_home: Path | None = None) -> AsyncIterator[Api]:
    import httpx

    headers = {"Authorization": f"Bearer {token}"}
    async with httpx.AsyncClient(base_url=url, headers=headers, timeout=60) as client:
        yield Api(client, local_home)


def read_secret(name: str, value: str | None, env: str | None, *, stdin_used: list[bool]) -> str | None:
    """A secret from an environment variable or stdin ('-'); a value on the command line is refused."""
    if env is not None:
        found = os.environ.get(env)
        if not found:
            fail(f"environment variable {env} (for --{name}) is not set or empty")
        return found
    if value is None:
        return None
    if value != "-":
        fail(
            f"--{name} takes '-' (read it from stdin) or use --{name}-env VAR: a secret on the command"
            " line would be visible in the process table and shell history"
        )
    if stdin_used[0]:
        fail("only one secret can be read from stdin")
    stdin_used[0] = True
    line = sys.stdin.readline().rstrip("\r\n")
    if not line:
        fail(f"--{name} -: nothing on stdin")
    return line


json_option = click.option("--json", "as_json", is_flag=True)


def api_command(
    group: click.Group,
    name: str,
    method: str,
    path: str,
    *,
    help: str,
    argument: str | None = None,
    tenant: bool = True,
    text: Callable[[Any], str] = str,
    done: str | None = None,
    empty: str | None = None,
) -> click.Command:
    """Add to ``group`` a command that makes one API call and prints its answer.

    Its parameters are ``--tenant`` (unless ``tenant`` is false), the id ``argument`` (if any) and
    ``--json``; ``path`` is formatted with them. It prints the answer rendered by ``text``; with
    ``done`` only ``{done: id}`` ("removed", "revoked"); with ``empty`` the answer's ``items``, one
    ``text`` line each, or ``empty`` when there are none.
    """

    @run_async
    async def call(as_json: bool, **params: str) -> None:
        async with connect(writes=method != "GET") as api:
            for key in ("tenant", "tenant_id"):  # a tenant is named by id or by name
                if key in params:
                    params[key] = await api.tenant(params[key])
            found = await api.call(method, path.format(**params))
        if done is not None and argument is not None:
            emit({done: params[argument]}, as_json=as_json, text=f"{done} {params[argument]}")
        elif empty is not None:
            items = found["items"]
            emit(items, as_json=as_json, text="\n".join(map(text, items)) or empty)
        else:
            emit(found, as_json=as_json, text=text(found))

    command: Any = json_option(call)
    if argument is not None:
        command = click.argument(argument)(command)
    if tenant:
        command = tenant_option(command)
    return group.command(name, help=help)(command)
