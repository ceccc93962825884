"""Operating Palimpsest for an organisation: ``palimpsest tenant list|show|suspend|resume|delete``,
``palimpsest token create|list|revoke|rotate``, ``palimpsest installation suspend|resume``,
``palimpsest link add|list|remove`` and ``palimpsest audit`` — all through the ingest API (see
``commands_ingest`` for the connection).
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

import click

from palimpsest.cli.commands_ingest import _installation_line, _tenant_option, connect, installation, tenant
from palimpsest.cli.main import run_async
from palimpsest.cli.output import emit

SCOPES = ("read", "review", "manage")


# --------------------------------------------------------------------------- tenant


def _tenant_line(t: dict[str, Any]) -> str:
    return f"{t['tenant_id']}  {t['state']:<9} {t['name']}  (created {t['created_at']})"


@tenant.command("list")
@click.option("--json", "as_json", is_flag=True)
@run_async
async def tenant_list(as_json: bool) -> None:
    """Every tenant with its state (operator admin token)."""
    async with connect() as api:
        items = (await api.call("GET", "/v1/tenants"))["items"]
    emit(items, as_json=as_json, text="\n".join(map(_tenant_line, items)) or "no tenants")


@tenant.command("show")
@click.argument("tenant_id")
@click.option("--json", "as_json", is_flag=True)
@run_async
async def tenant_show(tenant_id: str, as_json: bool) -> None:
    """A tenant's state, repositories, index bytes and last activity."""
    async with connect() as api:
        found = await api.call("GET", f"/v1/tenants/{tenant_id}")
    text = (
        f"{_tenant_line(found)}\nrepositories   {found['repositories']}\ninstallations  {found['installations']}"
        f"\nindex bytes    {found['index_bytes']}\nlast activity  {found['last_activity_at'] or '-'}"
    )
    emit(found, as_json=as_json, text=text)


@tenant.command("suspend")
@click.argument("tenant_id")
@click.option("--json", "as_json", is_flag=True)
@run_async
async def tenant_suspend(tenant_id: str, as_json: bool) -> None:
    """Suspend a tenant: nothing of it is indexed or reviewed, or used as linked context."""
    async with connect() as api:
        found = await api.call("POST", f"/v1/tenants/{tenant_id}/suspend")
    emit(found, as_json=as_json, text=_tenant_line(found))


@tenant.command("resume")
@click.argument("tenant_id")
@click.option("--json", "as_json", is_flag=True)
@run_async
async def tenant_resume(tenant_id: str, as_json: bool) -> None:
    """Lift a tenant's suspension."""
    async with connect() as api:
        found = await api.call("POST", f"/v1/tenants/{tenant_id}/resume")
    emit(found, as_json=as_json, text=_tenant_line(found))


@tenant.command("delete")
@click.argument("tenant_id")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@click.option("--json", "as_json", is_flag=True)
@run_async
async def tenant_delete(tenant_id: str, yes: bool, as_json: bool) -> None:
    """Delete a tenant and every row of it (idempotent: run it again after a failure)."""
    if not yes:
        click.confirm(f"delete tenant {tenant_id} and everything of it?", abort=True, err=True)
    async with connect() as api:
        found = await api.call("DELETE", f"/v1/tenants/{tenant_id}")
    text = f"deleted {found['deleted_rows']} rows of tenant {tenant_id}" + (
        "" if found["existed"] else " (it was already gone)"
    )
    emit(found, as_json=as_json, text=text)


# --------------------------------------------------------------------------- tokens


@click.group()
def token() -> None:
    """A tenant's API tokens: scopes (read, review, manage), expiry, revocation, rotation."""


def _token_line(t: dict[str, Any]) -> str:
    state = (
        "revoked" if t.get("revoked_at") else f"expires {t['expires_at']}" if t.get("expires_at") else "live"
    )
    used = t.get("last_used_at") or "never"
    return f"{t['token_id']}  {t['name'] or '-':<16} {','.join(t['scopes']):<20} {state}  (last used {used})"


@token.command("create")
@_tenant_option
@click.option("--name", default="", help="A label for people.")
@click.option(
    "--scope", "scopes", multiple=True, type=click.Choice(SCOPES), help="Repeat for several (default: read)."
)
@click.option("--expires-in-days", type=click.FloatRange(min=0, min_open=True, max=3650), default=None)
@click.option("--json", "as_json", is_flag=True)
@run_async
async def token_create(
    tenant: str, name: str, scopes: tuple[str, ...], expires_in_days: float | None, as_json: bool
) -> None:
    """Issue a token (printed once; store it now)."""
    body: dict[str, Any] = {"name": name, "scopes": list(scopes or ("read",))}
    if expires_in_days is not None:
        body["expires_in_days"] = expires_in_days
    async with connect() as api:
        found = await api.call("POST", f"/v1/tenants/{tenant}/tokens", body)
    emit(found, as_json=as_json, text=f"{_token_line(found)}\napi_token  {found['api_token']}\n(shown once)")


@token.command("list")
@_tenant_option
@click.option("--all", "include_revoked", is_flag=True, help="Include revoked tokens.")
@click.option("--json", "as_json", is_flag=True)
@run_async
async def token_list(tenant: str, include_revoked: bool, as_json: bool) -> None:
    """The tenant's tokens (never a secret)."""
    async with connect() as api:
        items = (
            await api.call(
                "GET", f"/v1/tenants/{tenant}/tokens", include_revoked=str(include_revoked).lower()
            )
        )["items"]
    emit(items, as_json=as_json, text="\n".join(map(_token_line, items)) or "no tokens")


@token.command("revoke")
@_tenant_option
@click.argument("token_id")
@click.option("--json", "as_json", is_flag=True)
@run_async
async def token_revoke(tenant: str, token_id: str, as_json: bool) -> None:
    """Revoke a token (at once on this replica; within PALIMPSEST_LOOKUP_CACHE_S on others)."""
    async with connect() as api:
        await api.call("DELETE", f"/v1/tenants/{tenant}/tokens/{token_id}")
    emit({"revoked": token_id}, as_json=as_json, text=f"revoked {token_id}")


@token.command("rotate")
@_tenant_option
@click.argument("token_id")
@click.option("--json", "as_json", is_flag=True)
@run_async
async def token_rotate(tenant: str, token_id: str, as_json: bool) -> None:
    """A new secret for the token (same id, name, scopes, expiry); the old secret stops working."""
    async with connect() as api:
        found = await api.call("POST", f"/v1/tenants/{tenant}/tokens/{token_id}/rotate")
    emit(found, as_json=as_json, text=f"{_token_line(found)}\napi_token  {found['api_token']}\n(shown once)")


# --------------------------------------------------------------------------- installations


@installation.command("suspend")
@_tenant_option
@click.argument("installation_id")
@click.option("--json", "as_json", is_flag=True)
@run_async
async def installation_suspend(tenant: str, installation_id: str, as_json: bool) -> None:
    """Suspend an installation: not indexed, not reviewed, not linked context; deliveries ignored."""
    async with connect() as api:
        found = await api.call("POST", f"/v1/tenants/{tenant}/installations/{installation_id}/suspend")
    emit(found, as_json=as_json, text=f"{_installation_line(found)} suspended")


@installation.command("resume")
@_tenant_option
@click.argument("installation_id")
@click.option("--json", "as_json", is_flag=True)
@run_async
async def installation_resume(tenant: str, installation_id: str, as_json: bool) -> None:
    """Lift an installation's suspension (by the provider or the API)."""
    async with connect() as api:
        found = await api.call("POST", f"/v1/tenants/{tenant}/installations/{installation_id}/resume")
    emit(found, as_json=as_json, text=_installation_line(found))


# --------------------------------------------------------------------------- links


@click.group()
def link() -> None:
    """Admin links between repositories and organisation-wide pattern repositories (manage)."""


def _link_line(k: dict[str, Any]) -> str:
    return f"{k['link_id']}  {k['role']:<8} {k['source'] or '(every repository)'} -> {k['target']}"


@link.command("add")
@_tenant_option
@click.option("--to", "target", required=True, help="The target repository id.")
@click.option(
    "--from", "source", default=None, help="The source repository id (omit: organisation-wide pattern)."
)
@click.option("--role", type=click.Choice(["linked", "pattern"]), default="linked", show_default=True)
@click.option("--json", "as_json", is_flag=True)
@run_async
async def link_add(tenant: str, target: str, source: str | None, role: str, as_json: bool) -> None:
    """Link a repository to another, or add an organisation-wide pattern repository."""
    body: dict[str, Any] = {"role": role, "target_repository_id": target}
    if source is not None:
        body["source_repository_id"] = source
    async with connect() as api:
        found = await api.call("POST", f"/v1/tenants/{tenant}/links", body)
    emit(found, as_json=as_json, text=_link_line(found))


@link.command("list")
@_tenant_option
@click.option("--repo", "repository_id", default=None, help="Only links applying to or pointing at it.")
@click.option("--json", "as_json", is_flag=True)
@run_async
async def link_list(tenant: str, repository_id: str | None, as_json: bool) -> None:
    """The tenant's admin links."""
    async with connect() as api:
        items = (await api.call("GET", f"/v1/tenants/{tenant}/links", repository_id=repository_id))["items"]
    emit(items, as_json=as_json, text="\n".join(map(_link_line, items)) or "no links")


@link.command("remove")
@_tenant_option
@click.argument("link_id")
@click.option("--json", "as_json", is_flag=True)
@run_async
async def link_remove(tenant: str, link_id: str, as_json: bool) -> None:
    """Remove an admin link."""
    async with connect() as api:
        await api.call("DELETE", f"/v1/tenants/{tenant}/links/{link_id}")
    emit({"removed": link_id}, as_json=as_json, text=f"removed {link_id}")


# --------------------------------------------------------------------------- audit


@click.command("audit")
@_tenant_option
@click.option("--action", default=None, help="Only this action (a route name, e.g. revoke_token).")
@click.option("--outcome", type=click.Choice(["ok", "denied", "failed"]), default=None)
@click.option("--limit", default=50, show_default=True, type=click.IntRange(1, 500))
@click.option("--json", "as_json", is_flag=True)
@run_async
async def audit(tenant: str, action: str | None, outcome: str | None, limit: int, as_json: bool) -> None:
    """The tenant's audit log, newest first: who, what, when, outcome."""
    async with connect() as api:
        page = await api.call(
            "GET", f"/v1/tenants/{tenant}/audit", action=action, outcome=outcome, limit=limit
        )
    items = page["items"]
    text = "\n".join(
        f"{a['at']}  {a['outcome']:<6} {a['http_status'] or '-'}  {a['action']:<22}"
        f" {a['actor']}{' ' + (a['token_name'] or '') + ' ' + str(a['token_id']) if a['token_id'] else ''}"
        f"  {' '.join(f'{k}={v}' for k, v in a['target'].items())}"
        for a in items
    )
    emit(items, as_json=as_json, text=text or "no audit entries")


# --------------------------------------------------------------------------- backfill


async def _local_head(path: str, branch: str) -> str | None:
    """The branch head of a local repository (the CLI runs git; the ingest service does not)."""
    from pathlib import Path

    from palimpsest.core.git import resolve_ref
    from palimpsest.core.git_errors import GitError

    try:
        return await resolve_ref(Path(path), branch, timeout_s=30)
    except GitError:
        return None  # gone or unreadable: an index request would fail the same way


@click.command("backfill")
@click.option("--dry-run", is_flag=True, help="Only show the repositories it would re-index, and why.")
@click.option(
    "--tenant", "tenant_ids", multiple=True, help="Only this tenant (repeatable; default: every tenant)."
)
@click.option(
    "--limit",
    type=click.IntRange(1, 100_000),
    default=None,
    help="At most this many (default: one interval's).",
)
@click.option("--json", "as_json", is_flag=True)
@run_async
async def backfill(dry_run: bool, tenant_ids: tuple[str, ...], limit: int | None, as_json: bool) -> None:
    """The maintenance backfill, all slices at once: index requests for repositories whose newest
    snapshot is missing, failed for a transient reason, stuck, or behind a local branch head (this
    command reads the heads; the service leaves that comparison to the chunker)."""
    from palimpsest.cli.main import settings
    from palimpsest.cli.session import session
    from palimpsest.ingest import backfill as job
    from palimpsest.ingest.context import allows_local_sources
    from palimpsest.ingest.settings import backfill_policy, ingest_settings

    ingest = ingest_settings(settings())
    policy = backfill_policy(ingest, local_sources=allows_local_sources(ingest, embedded=True))
    async with session(settings(), services=False) as sess:
        pool = sess.infra.pool
        found = await job.candidates(
            pool,
            policy,
            slice_no=None,
            limit=limit or policy.max_per_tick * policy.slices,
            head_of=_local_head,
            tenants={UUID(t) for t in tenant_ids} if tenant_ids else None,
        )
        requested = 0 if dry_run else await job.request(pool, found)
    out = {"dry_run": dry_run, "candidates": [c.as_dict() for c in found], "requested": requested}
    lines = [f"{c.tenant_id}  {c.full_name:<40} {c.why:<8} {c.detail or ''}" for c in found]
    verb = "would request" if dry_run else "requested"
    text = "\n".join([*lines, f"{verb} {len(found) if dry_run else requested} index builds"])
    emit(out, as_json=as_json, text=text)


@click.command("tenant-delete")
@click.option("--files", default=5_000, show_default=True, help="Files of the generated repository.")
@click.option("--total-mb", default=2.5, show_default=True)
@click.option("--batch", default=5_000, show_default=True, help="Rows per deleting transaction.")
@click.option("--json", "as_json", is_flag=True)
@run_async
async def bench_tenant_delete(files: int, total_mb: float, batch: int, as_json: bool) -> None:
    """Delete a tenant holding an indexed repository (and switch an index off); print the figures."""
    from palimpsest.cli.benchdelete import run_bench_delete
    from palimpsest.cli.main import settings
    from palimpsest.cli.output import fail

    if files < 10:
        fail("--files must be at least 10")
    emit(
        await run_bench_delete(settings(), files=files, total_bytes=int(total_mb * 1e6), batch=batch),
        as_json=True,
    )


def register(cli: click.Group) -> None:
    """Add the admin commands (tenant and installation subcommands join the ingest groups)."""
    for command in (token, link, audit, backfill):
        cli.add_command(command)
    bench = cli.commands.get("bench")
    if isinstance(bench, click.Group):
        bench.add_command(bench_tenant_delete, "tenant-delete")
