"""CLI: ``palimpsest tenant|installation|repo|deliveries`` — the ingest API for operators.

Each command is one call of the /v1 API through :mod:`palimpsest.cli.api` (which finds the API
and the token); the single-call commands are made by :func:`~palimpsest.cli.api.api_command`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from palimpsest.cli.api import api_command, connect, json_option, read_secret, tenant_option
from palimpsest.cli.api_records import (
    InstallationJson,
    InstallationSyncJson,
    OutcomeJson,
    RepositoryJson,
    TenantDetailJson,
    TenantJson,
)
from palimpsest.cli.options import repo_option
from palimpsest.cli.output import emit, fail
from palimpsest.cli.runtime import run_async

PROVIDERS = ("github", "gitlab", "bitbucket")


# --------------------------------------------------------------------------- tenant


@click.group()
def tenant() -> None:
    """Tenants (operator admin token)."""


@tenant.command("create")
@click.argument("name")
@json_option
@run_async
async def tenant_create(name: str, as_json: bool) -> None:
    """Create a tenant; prints its tenant_id and a one-time api_token."""
    async with connect(writes=True) as api:
        created = await api.call("POST", "/v1/tenants", {"name": name})
    out = {"tenant_id": created["tenant_id"], "name": created["name"], "api_token": created["api_token"]}
    text = f"tenant_id  {out['tenant_id']}\napi_token  {out['api_token']}\n(the token is shown once; store it now)"
    emit(out, as_json=as_json, text=text)


def _tenant_line(t: TenantJson) -> str:
    return f"{t['tenant_id']}  {t['state']:<9} {t['name']}  (created {t['created_at']})"


def _tenant_text(found: TenantDetailJson) -> str:
    return (
        f"{_tenant_line(found)}\nrepositories   {found['repositories']}\ninstallations  {found['installations']}"
        f"\nindex bytes    {found['index_bytes']}\nlast activity  {found['last_activity_at'] or '-'}"
    )


api_command(
    tenant,
    "list",
    "GET",
    "/v1/tenants",
    help="Every tenant with its state (operator admin token).",
    tenant=False,
    text=_tenant_line,
    empty="no tenants",
)
api_command(
    tenant,
    "show",
    "GET",
    "/v1/tenants/{tenant_id}",
    help="A tenant's state, repositories, index bytes and last activity.",
    argument="tenant_id",
    tenant=False,
    text=_tenant_text,
)
api_command(
    tenant,
    "suspend",
    "POST",
    "/v1/tenants/{tenant_id}/suspend",
    help="Suspend a tenant: nothing of it is indexed or reviewed, or used as linked context.",
    argument="tenant_id",
    tenant=False,
    text=_tenant_line,
)
api_command(
    tenant,
    "resume",
    "POST",
    "/v1/tenants/{tenant_id}/resume",
    help="Lift a tenant's suspension.",
    argument="tenant_id",
    tenant=False,
    text=_tenant_line,
)


@tenant.command("delete")
@click.argument("tenant_id")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@json_option
@run_async
async def tenant_delete(tenant_id: str, yes: bool, as_json: bool) -> None:
    """Delete a tenant and every row of it (idempotent: run it again after a failure)."""
    if not yes:
        click.confirm(f"delete tenant {tenant_id} and everything of it?", abort=True, err=True)
    async with connect(writes=True) as api:
        tenant_id = await api.tenant(tenant_id)  # by id or by name
        found = await api.call("DELETE", f"/v1/tenants/{tenant_id}")
    text = f"deleted {found['deleted_rows']} rows of tenant {tenant_id}" + (
        "" if found["existed"] else " (it was already gone)"
    )
    emit(found, as_json=as_json, text=text)


# --------------------------------------------------------------------------- installation


@click.group()
def installation() -> None:
    """A tenant's webhook senders and provider credentials."""


@installation.command("add")
@tenant_option
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
@json_option
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
    secret = read_secret("webhook-secret", webhook_secret, webhook_secret_env, stdin_used=stdin_used)
    token = read_secret("token", access_token, token_env, stdin_used=stdin_used)
    if secret is not None:
        body["webhook_secret"] = secret
    if token is not None:
        body["access_token"] = token
    if (app_id is None) != (private_key_file is None):
        fail("--app-id and --private-key-file go together")
    if app_id is not None and private_key_file is not None:
        body["app_credentials"] = {"app_id": app_id, "private_key": private_key_file.read_text()}
    async with connect(writes=True) as api:
        tenant = await api.tenant(tenant)
        found = await api.call("POST", f"/v1/tenants/{tenant}/installations", body)
    emit(found, as_json=as_json, text=_installation_line(found))


def _installation_line(i: InstallationJson) -> str:
    secret = "secret" if i["has_webhook_secret"] else "no secret"
    return f"{i['installation_id']}  {i['provider']} {i['kind']} {i['external_id']} on {i['host']} ({secret}, credentials: {i['credentials_kind']})"


api_command(
    installation,
    "list",
    "GET",
    "/v1/tenants/{tenant}/installations",
    help="List the tenant's installations.",
    text=_installation_line,
    empty="no installations",
)
api_command(
    installation,
    "remove",
    "DELETE",
    "/v1/tenants/{tenant}/installations/{installation_id}",
    help="Remove an installation (its repositories stay, unlinked).",
    argument="installation_id",
    done="removed",
)
api_command(
    installation,
    "suspend",
    "POST",
    "/v1/tenants/{tenant}/installations/{installation_id}/suspend",
    help="Suspend an installation: not indexed, not reviewed, not linked context; deliveries ignored.",
    argument="installation_id",
    text=lambda found: f"{_installation_line(found)} suspended",
)
api_command(
    installation,
    "resume",
    "POST",
    "/v1/tenants/{tenant}/installations/{installation_id}/resume",
    help="Lift an installation's suspension (by the provider or the API).",
    argument="installation_id",
    text=_installation_line,
)


def _sync_text(report: InstallationSyncJson) -> str:
    dry = report["dry_run"]
    lines = [f"+ {name}" for name in report["added"]] + [f"- {name}" for name in report["removed"]]
    lines += [f"! {why}" for why in report["refused"]]
    lines += [f"error: {e['message']}" for e in report["errors"]]
    if report["errors"]:
        return "\n".join([*lines, f"{report['provider']} {report['kind']}: nothing changed"])
    lines.append(
        f"{report['provider']} {report['kind']}: {report['listed']} listed in {report['pages']} page(s);"
        f" {len(report['added'])} {'would be ' if dry else ''}added,"
        f" {len(report['removed'])} {'would be ' if dry else ''}removed, {len(report['unchanged'])} unchanged"
        + (f", {len(report['refused'])} refused" if report["refused"] else "")
    )
    return "\n".join(lines)


@installation.command("sync")
@tenant_option
@click.argument("installation_id")
@click.option("--dry-run", is_flag=True, help="Only show what would be added and removed.")
@click.option(
    "--force",
    is_flag=True,
    help="Remove every registered repository when the provider lists none (refused without it).",
)
@json_option
@run_async
async def installation_sync(
    tenant: str, installation_id: str, dry_run: bool, force: bool, as_json: bool
) -> None:
    """Ask the provider for the installation's repositories (every page); register the missing
    ones and remove the ones it no longer lists, as its webhook would. Exit 1 on a provider error,
    or when it lists none while repositories are registered (unless --force)."""
    async with connect(writes=not dry_run) as api:
        tenant = await api.tenant(tenant)
        report = await api.call(
            "POST",
            f"/v1/tenants/{tenant}/installations/{installation_id}/sync",
            dry_run=str(dry_run).lower(),
            force=str(force).lower(),
        )
    emit(report, as_json=as_json, text=_sync_text(report))
    if report["errors"]:
        raise SystemExit(1)


# --------------------------------------------------------------------------- repo


@click.group()
def repo() -> None:
    """A tenant's repositories."""


def _repo_line(r: RepositoryJson) -> str:
    return f"{r['repository_id']}  {r['provider']:<9} {r['full_name']}  [{r['index_mode']}, {r['default_branch']}]  {r['clone_url']}"


def _outcome_text(o: OutcomeJson | None) -> str:
    return str(o["text"]) if o else "none recorded"


def _repo_list_line(r: RepositoryJson) -> str:
    """A repository of ``repo list``: what it is and its last build's outcome (and reason)."""
    return f"{_repo_line(r)}  build: {_outcome_text(r.get('build'))}"


def _repo_text(r: RepositoryJson) -> str:
    """``repo show``: the repository, its last build and analysis outcomes, and when to expect a retry."""
    lines = [
        f"repository  {r['repository_id']}",
        f"name        {r['full_name']} ({r['provider']})",
        f"url         {r['clone_url']}",
        f"branch      {r['default_branch']}",
        f"index mode  {r['index_mode']}",
    ]
    for kind, o in (("build", r.get("build")), ("analysis", r.get("analysis"))):
        lines.append(f"{kind:<11} {_outcome_text(o)}")
        if o and o.get("retry"):
            lines.append(f"  retry     {o['retry']}")
        if o and o.get("failing_since"):
            lines.append(f"  since     {o['failing_since']}")
    return "\n".join(lines)


@repo.command("add")
@tenant_option
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
@json_option
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
    async with connect(writes=True) as api:
        tenant = await api.tenant(tenant)
        found = await api.call("POST", f"/v1/tenants/{tenant}/repositories", body)
    emit(found, as_json=as_json, text=_repo_line(found))


api_command(
    repo,
    "list",
    "GET",
    "/v1/tenants/{tenant}/repositories",
    help="List the tenant's repositories with their last build's outcome.",
    text=_repo_list_line,
    empty="no repositories",
)
api_command(
    repo,
    "show",
    "GET",
    "/v1/tenants/{tenant}/repositories/{repository_id}",
    help="Show a repository: its last build and analysis outcome, the reason, when to expect a retry.",
    argument="repository_id",
    text=_repo_text,
)
api_command(
    repo,
    "rebuild",
    "POST",
    "/v1/tenants/{tenant}/repositories/{repository_id}/rebuild",
    help="Request a full index build of the repository's default branch.",
    argument="repository_id",
    text=lambda found: f"index requested: event {found['event_id']}",
)


@repo.command("mode")
@tenant_option
@click.argument("repository_id")
@click.argument("index_mode", type=click.Choice(["off", "lexical", "hybrid"]))
@json_option
@run_async
async def repo_mode(tenant: str, repository_id: str, index_mode: str, as_json: bool) -> None:
    """Change the index mode (anything but off requests an index)."""
    async with connect(writes=True) as api:
        tenant = await api.tenant(tenant)
        found = await api.call(
            "PATCH", f"/v1/tenants/{tenant}/repositories/{repository_id}", {"index_mode": index_mode}
        )
    emit(found, as_json=as_json, text=_repo_line(found))


api_command(
    repo,
    "remove",
    "DELETE",
    "/v1/tenants/{tenant}/repositories/{repository_id}",
    help="Remove a repository and everything indexed for it.",
    argument="repository_id",
    done="removed",
)


# --------------------------------------------------------------------------- deliveries


@click.command("deliveries")
@tenant_option
@click.option("--provider", type=click.Choice(PROVIDERS), default=None)
@click.option("--outcome", type=click.Choice(["accepted", "duplicate", "ignored", "rejected"]), default=None)
@click.option("--event", default=None)
@repo_option(required=False, help_suffix=" Only deliveries about it.")
@click.option("--limit", default=50, show_default=True, type=click.IntRange(1, 500))
@json_option
@run_async
async def deliveries(
    tenant: str,
    provider: str | None,
    outcome: str | None,
    event: str | None,
    repo: str | None,
    limit: int,
    as_json: bool,
) -> None:
    """Webhook deliveries received for the tenant, newest first."""
    async with connect() as api:
        tenant = await api.tenant(tenant)
        repository_id = await api.repository(tenant, repo) if repo else None
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
