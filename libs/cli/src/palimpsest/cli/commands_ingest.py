"""``palimpsest tenant|installation|repo|deliveries`` and ``bench ingest``: the ingest API for operators.

Every command talks HTTP to the ingest API: ``PALIMPSEST_INGEST_URL`` when set (a remote
deployment), else the running ``palimpsest up`` (its recorded ``ingest_url``, or
``127.0.0.1:$PALIMPSEST_INGEST_PORT``), else a stack started for the command's duration with the
ingest service in it. It authenticates with ``PALIMPSEST_API_TOKEN`` (a tenant's token) when set,
else with the operator admin token (``PALIMPSEST_ADMIN_TOKEN``, or the embedded stack's
``$PALIMPSEST_HOME/admin-token``). Secrets are read from an environment variable or stdin, never
from the command line (the process table and shell history would show them).
"""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import click
import httpx

from palimpsest.cli.main import run_async, settings
from palimpsest.cli.output import emit, fail, progress

PROVIDERS = ("github", "gitlab", "bitbucket")


# --------------------------------------------------------------------------- the API connection


class Api:
    """A thin client of the /v1 API; any non-2xx answer ends the command with its one-line reason."""

    def __init__(self, client: httpx.AsyncClient) -> None:
        self.client = client

    async def call(self, method: str, path: str, body: dict[str, Any] | None = None, **params: Any) -> Any:
        query = {k: v for k, v in params.items() if v is not None}
        try:
            res = await self.client.request(method, path, json=body, params=query)
        except httpx.HTTPError as exc:
            fail(f"cannot reach the ingest API at {self.client.base_url} ({exc.__class__.__name__})")
            raise  # unreachable
        if res.status_code >= 400:
            fail(f"{res.status_code}: {_detail(res)}")
        return res.json() if res.content else None


def _detail(res: httpx.Response) -> str:
    try:
        detail = res.json().get("detail")
    except ValueError:
        return res.text[:200]
    if isinstance(detail, list):
        return "; ".join(f"{'.'.join(map(str, d.get('loc', [])))}: {d.get('msg')}" for d in detail)
    return str(detail)


@asynccontextmanager
async def connect() -> AsyncIterator[Api]:
    """The API of the configured, running or (for this command) started stack."""
    from palimpsest.cli.stack import read_running
    from palimpsest.ingest.settings import ingest_settings

    base = settings()
    ingest = ingest_settings(base)
    configured = os.environ.get("PALIMPSEST_INGEST_URL")
    running = read_running(base.home)
    if configured or running is not None:
        url = configured or (running.ingest_url if running and running.ingest_url else None)
        url = url or f"http://127.0.0.1:{ingest.ingest_port}"
        async with _client(url, _token(ingest)) as api:
            yield api
        return
    from palimpsest.cli.runner import running_services
    from palimpsest.cli.stack import open_stack

    progress("no running stack: starting one for this command…")
    async with open_stack(base) as stack, running_services(base, stack, services=("ingest",)) as infra:
        url = str(infra.extras["ingest_url"])
        async with _client(url, _token(ingest)) as api:
            yield api


def _token(ingest: Any) -> str:
    from palimpsest.ingest.tokens import read_admin_token

    token = os.environ.get("PALIMPSEST_API_TOKEN") or read_admin_token(
        ingest.admin_token.get_secret_value() if ingest.admin_token else None, Path(ingest.home)
    )
    if not token:
        fail("no token: set PALIMPSEST_API_TOKEN (a tenant token) or PALIMPSEST_ADMIN_TOKEN")
    return str(token)


@asynccontextmanager
async def _client(url: str, token: str) -> AsyncIterator[Api]:
    headers = {"Authorization": f"Bearer {token}"}
    async with httpx.AsyncClient(base_url=url, headers=headers, timeout=60) as client:
        yield Api(client)


_tenant_option = click.option(
    "--tenant",
    "tenant",
    envvar="PALIMPSEST_TENANT",
    required=True,
    help="Tenant id (or PALIMPSEST_TENANT).",
)


def _secret(name: str, value: str | None, env: str | None, *, stdin_used: list[bool]) -> str | None:
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


# --------------------------------------------------------------------------- tenant


@click.group()
def tenant() -> None:
    """Tenants (operator admin token)."""


@tenant.command("create")
@click.argument("name")
@click.option("--json", "as_json", is_flag=True)
@run_async
async def tenant_create(name: str, as_json: bool) -> None:
    """Create a tenant; prints its tenant_id and a one-time api_token."""
    async with connect() as api:
        created = await api.call("POST", "/v1/tenants", {"name": name})
    out = {"tenant_id": created["tenant_id"], "name": created["name"], "api_token": created["api_token"]}
    text = f"tenant_id  {out['tenant_id']}\napi_token  {out['api_token']}\n(the token is shown once; store it now)"
    emit(out, as_json=as_json, text=text)


# --------------------------------------------------------------------------- installation


@click.group()
def installation() -> None:
    """A tenant's webhook senders and provider credentials."""


@installation.command("add")
@_tenant_option
@click.option("--provider", type=click.Choice(PROVIDERS), required=True)
@click.option("--external-id", required=True, help="App installation id, project/group id, workspace UUID.")
@click.option(
    "--kind",
    default=None,
    help="installation|app|repository|organization (github), project|group, workspace.",
)
@click.option("--host", default=None, help="Provider host (default: github.com, gitlab.com, bitbucket.org).")
@click.option("--namespace", default=None, help="GitLab group installations: the group's full path.")
@click.option("--name", "display_name", default="", help="A label for people.")
@click.option("--webhook-secret", default=None, help="'-' reads it from stdin (a literal value is refused).")
@click.option("--webhook-secret-env", default=None, metavar="VAR", help="Read the webhook secret from $VAR.")
@click.option(
    "--token",
    "access_token",
    default=None,
    help="'-' reads the access token from stdin (a literal value is refused).",
)
@click.option("--token-env", default=None, metavar="VAR", help="Read the access token from $VAR.")
@click.option("--app-id", default=None, help="GitHub App id (with --private-key-file).")
@click.option(
    "--private-key-file", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None
)
@click.option("--json", "as_json", is_flag=True)
@run_async
async def installation_add(
    tenant: str,
    provider: str,
    external_id: str,
    kind: str | None,
    host: str | None,
    namespace: str | None,
    display_name: str,
    webhook_secret: str | None,
    webhook_secret_env: str | None,
    access_token: str | None,
    token_env: str | None,
    app_id: str | None,
    private_key_file: Path | None,
    as_json: bool,
) -> None:
    """Register a webhook sender with its secret (encrypted at rest, never shown again)."""
    stdin_used = [False]
    body: dict[str, Any] = {"provider": provider, "external_id": external_id, "display_name": display_name}
    body.update({k: v for k, v in {"kind": kind, "host": host, "namespace": namespace}.items() if v})
    secret = _secret("webhook-secret", webhook_secret, webhook_secret_env, stdin_used=stdin_used)
    token = _secret("token", access_token, token_env, stdin_used=stdin_used)
    if secret is not None:
        body["webhook_secret"] = secret
    if token is not None:
        body["access_token"] = token
    if (app_id is None) != (private_key_file is None):
        fail("--app-id and --private-key-file go together")
    if app_id is not None and private_key_file is not None:
        body["app_credentials"] = {"app_id": app_id, "private_key": private_key_file.read_text()}
    async with connect() as api:
        found = await api.call("POST", f"/v1/tenants/{tenant}/installations", body)
    emit(found, as_json=as_json, text=_installation_line(found))


def _installation_line(i: dict[str, Any]) -> str:
    secret = "secret" if i["has_webhook_secret"] else "no secret"
    return f"{i['installation_id']}  {i['provider']} {i['kind']} {i['external_id']} on {i['host']} ({secret}, credentials: {i['credentials_kind']})"


@installation.command("list")
@_tenant_option
@click.option("--json", "as_json", is_flag=True)
@run_async
async def installation_list(tenant: str, as_json: bool) -> None:
    """List the tenant's installations."""
    async with connect() as api:
        items = (await api.call("GET", f"/v1/tenants/{tenant}/installations"))["items"]
    emit(items, as_json=as_json, text="\n".join(map(_installation_line, items)) or "no installations")


@installation.command("remove")
@_tenant_option
@click.argument("installation_id")
@click.option("--json", "as_json", is_flag=True)
@run_async
async def installation_remove(tenant: str, installation_id: str, as_json: bool) -> None:
    """Remove an installation (its repositories stay, unlinked)."""
    async with connect() as api:
        await api.call("DELETE", f"/v1/tenants/{tenant}/installations/{installation_id}")
    emit({"removed": installation_id}, as_json=as_json, text=f"removed {installation_id}")


# --------------------------------------------------------------------------- repo


@click.group()
def repo() -> None:
    """A tenant's repositories."""


def _repo_line(r: dict[str, Any]) -> str:
    return f"{r['repository_id']}  {r['provider']:<9} {r['full_name']}  [{r['index_mode']}, {r['default_branch']}]  {r['clone_url']}"


@repo.command("add")
@_tenant_option
@click.argument("url")
@click.option(
    "--installation", "installation_id", default=None, help="Installation the repository belongs to."
)
@click.option("--provider", type=click.Choice([*PROVIDERS, "local"]), default=None)
@click.option("--name", "full_name", default=None, help="owner/name (default: from the URL).")
@click.option("--default-branch", default="main", show_default=True)
@click.option(
    "--visibility", type=click.Choice(["public", "private", "internal"]), default="private", show_default=True
)
@click.option(
    "--mode",
    "index_mode",
    type=click.Choice(["off", "lexical", "hybrid"]),
    default="lexical",
    show_default=True,
)
@click.option("--json", "as_json", is_flag=True)
@run_async
async def repo_add(
    tenant: str,
    url: str,
    installation_id: str | None,
    provider: str | None,
    full_name: str | None,
    default_branch: str,
    visibility: str,
    index_mode: str,
    as_json: bool,
) -> None:
    """Register a repository by https URL (or local path, where allowed); requests its index."""
    body: dict[str, Any] = {
        "url": url,
        "default_branch": default_branch,
        "visibility": visibility,
        "index_mode": index_mode,
    }
    body.update(
        {
            k: v
            for k, v in {
                "installation_id": installation_id,
                "provider": provider,
                "full_name": full_name,
            }.items()
            if v
        }
    )
    async with connect() as api:
        found = await api.call("POST", f"/v1/tenants/{tenant}/repositories", body)
    emit(found, as_json=as_json, text=_repo_line(found))


@repo.command("list")
@_tenant_option
@click.option("--json", "as_json", is_flag=True)
@run_async
async def repo_list(tenant: str, as_json: bool) -> None:
    """List the tenant's repositories."""
    async with connect() as api:
        items = (await api.call("GET", f"/v1/tenants/{tenant}/repositories"))["items"]
    emit(items, as_json=as_json, text="\n".join(map(_repo_line, items)) or "no repositories")


@repo.command("rebuild")
@_tenant_option
@click.argument("repository_id")
@click.option("--json", "as_json", is_flag=True)
@run_async
async def repo_rebuild(tenant: str, repository_id: str, as_json: bool) -> None:
    """Request a full index build of the repository's default branch."""
    async with connect() as api:
        found = await api.call("POST", f"/v1/tenants/{tenant}/repositories/{repository_id}/rebuild")
    emit(found, as_json=as_json, text=f"index requested: event {found['event_id']}")


@repo.command("mode")
@_tenant_option
@click.argument("repository_id")
@click.argument("index_mode", type=click.Choice(["off", "lexical", "hybrid"]))
@click.option("--json", "as_json", is_flag=True)
@run_async
async def repo_mode(tenant: str, repository_id: str, index_mode: str, as_json: bool) -> None:
    """Change the index mode (anything but off requests an index)."""
    async with connect() as api:
        found = await api.call(
            "PATCH", f"/v1/tenants/{tenant}/repositories/{repository_id}", {"index_mode": index_mode}
        )
    emit(found, as_json=as_json, text=_repo_line(found))


@repo.command("remove")
@_tenant_option
@click.argument("repository_id")
@click.option("--json", "as_json", is_flag=True)
@run_async
async def repo_remove(tenant: str, repository_id: str, as_json: bool) -> None:
    """Remove a repository and everything indexed for it."""
    async with connect() as api:
        await api.call("DELETE", f"/v1/tenants/{tenant}/repositories/{repository_id}")
    emit({"removed": repository_id}, as_json=as_json, text=f"removed {repository_id}")


# --------------------------------------------------------------------------- deliveries


@click.command("deliveries")
@_tenant_option
@click.option("--provider", type=click.Choice(PROVIDERS), default=None)
@click.option("--outcome", type=click.Choice(["accepted", "duplicate", "ignored", "rejected"]), default=None)
@click.option("--event", default=None)
@click.option("--repo", "repository_id", default=None, help="Only deliveries about this repository.")
@click.option("--limit", default=50, show_default=True, type=click.IntRange(1, 500))
@click.option("--json", "as_json", is_flag=True)
@run_async
async def deliveries(
    tenant: str,
    provider: str | None,
    outcome: str | None,
    event: str | None,
    repository_id: str | None,
    limit: int,
    as_json: bool,
) -> None:
    """Webhook deliveries received for the tenant, newest first."""
    async with connect() as api:
        page = await api.call(
            "GET",
            f"/v1/tenants/{tenant}/deliveries",
            provider=provider,
            outcome=outcome,
            event=event,
            repository_id=repository_id,
            limit=limit,
        )
    items = page["items"]
    text = "\n".join(
        f"{d['received_at']}  {d['provider']:<9} {d['event']:<22} {d['outcome']:<9} {d['http_status']}  {d['reason'] or ''}"
        for d in items
    )
    emit(items, as_json=as_json, text=text or "no deliveries")


# --------------------------------------------------------------------------- bench


@click.command("ingest")
@click.option("--deliveries", "count", default=5000, show_default=True, help="Measured deliveries.")
@click.option("--concurrency", default=12, show_default=True, help="Requests in flight.")
@click.option("--warmup", default=300, show_default=True)
@click.option("--replicas", default=1, show_default=True, help="Ingest processes sharing the port.")
@click.option(
    "--client", "client_kind", type=click.Choice(["raw", "httpx"]), default="raw", show_default=True
)
@click.option("--json", "as_json", is_flag=True)
@run_async
async def bench_ingest(
    count: int, concurrency: int, warmup: int, replicas: int, client_kind: str, as_json: bool
) -> None:
    """Signed webhook deliveries/s through the real HTTP server into the outbox, latency, events == accepted."""
    from palimpsest.ingest.bench import run_bench_ingest

    result = await run_bench_ingest(
        settings(),
        deliveries=count,
        concurrency=concurrency,
        warmup=warmup,
        replicas=replicas,
        client_kind=client_kind,
    )
    emit(result, as_json=True)


def register(cli: click.Group) -> None:
    """Add the ingest commands to the ``palimpsest`` CLI (idempotent)."""
    for command in (tenant, installation, repo, deliveries):
        cli.add_command(command)
    bench = cli.commands.get("bench")
    if isinstance(bench, click.Group):
        bench.add_command(bench_ingest, "ingest")
