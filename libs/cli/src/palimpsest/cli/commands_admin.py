"""CLI: ``palimpsest token create|list|revoke|rotate``, ``palimpsest link add|list|remove``,
``palimpsest audit`` and ``palimpsest backfill`` — through the ingest API (:mod:`palimpsest.cli.api`)
except ``backfill``, which runs the maintenance job against the database.
"""

from __future__ import annotations

from typing import Any

import click

from palimpsest.cli.api import api_command, connect, json_option, tenant_option
from palimpsest.cli.api_records import LinkJson, TokenJson
from palimpsest.cli.options import TENANT_HELP, local_tenant_id, repo_option
from palimpsest.cli.output import emit
from palimpsest.cli.runtime import run_async, settings

SCOPES = ("read", "review", "manage")


# --------------------------------------------------------------------------- tokens


@click.group()
def token() -> None:
    """A tenant's API tokens: scopes (read, review, manage), expiry, revocation, rotation."""


def _token_line(t: TokenJson) -> str:
    state = (
        "revoked" if t.get("revoked_at") else f"expires {t['expires_at']}" if t.get("expires_at") else "live"
    )
    used = t.get("last_used_at") or "never"
    return f"{t['token_id']}  {t['name'] or '-':<16} {','.join(t['scopes']):<20} {state}  (last used {used})"


@token.command("create")
@tenant_option
@click.option("--name", default="", help="A label for people.")
@click.option(
    "--scope", "scopes", multiple=True, type=click.Choice(SCOPES), help="Repeat for several (default: read)."
)
@click.option("--expires-in-days", type=click.FloatRange(min=0, min_open=True, max=3650), default=None)
@json_option
@run_async
async def token_create(
    tenant: str, name: str, scopes: tuple[str, ...], expires_in_days: float | None, as_json: bool
) -> None:
    """Issue a token (printed once; store it now)."""
    body: dict[str, Any] = {"name": name, "scopes": list(scopes or ("read",))}
    if expires_in_days is not None:
        body["expires_in_days"] = expires_in_days
    async with connect(writes=True) as api:
        tenant = await api.tenant(tenant)
        found = await api.call("POST", f"/v1/tenants/{tenant}/tokens", body)
    emit(found, as_json=as_json, text=f"{_token_line(found)}\napi_token  {found['api_token']}\n(shown once)")


@token.command("list")
@tenant_option
@click.option("--all", "include_revoked", is_flag=True, help="Include revoked tokens.")
@json_option
@run_async
async def token_list(tenant: str, include_revoked: bool, as_json: bool) -> None:
    """The tenant's tokens (never a secret)."""
    async with connect() as api:
        tenant = await api.tenant(tenant)
        items = (
            await api.call(
                "GET", f"/v1/tenants/{tenant}/tokens", include_revoked=str(include_revoked).lower()
            )
        )["items"]
    emit(items, as_json=as_json, text="\n".join(map(_token_line, items)) or "no tokens")


api_command(
    token,
    "revoke",
    "DELETE",
    "/v1/tenants/{tenant}/tokens/{token_id}",
    help="Revoke a token (at once on this replica; within PALIMPSEST_LOOKUP_CACHE_S on others).",
    argument="token_id",
    done="revoked",
)
api_command(
    token,
    "rotate",
    "POST",
    "/v1/tenants/{tenant}/tokens/{token_id}/rotate",
    help="A new secret for the token (same id, name, scopes, expiry); the old secret stops working.",
    argument="token_id",
    text=lambda found: f"{_token_line(found)}\napi_token  {found['api_token']}\n(shown once)",
)


# --------------------------------------------------------------------------- links


@click.group()
def link() -> None:
    """Admin links between repositories and organisation-wide pattern repositories (manage)."""


def _link_line(k: LinkJson) -> str:
    return f"{k['link_id']}  {k['role']:<8} {k['source'] or '(every repository)'} -> {k['target']}"


@link.command("add")
@tenant_option
@click.option("--to", "target", required=True, help="The target repository id.")
@click.option(
    "--from", "source", default=None, help="The source repository id (omit: organisation-wide pattern)."
)
@click.option("--role", type=click.Choice(["linked", "pattern"]), default="linked", show_default=True)
@json_option
@run_async
async def link_add(tenant: str, target: str, source: str | None, role: str, as_json: bool) -> None:
    """Link a repository to another, or add an organisation-wide pattern repository."""
    body: dict[str, Any] = {"role": role, "target_repository_id": target}
    if source is not None:
        body["source_repository_id"] = source
    async with connect(writes=True) as api:
        tenant = await api.tenant(tenant)
        found = await api.call("POST", f"/v1/tenants/{tenant}/links", body)
    emit(found, as_json=as_json, text=_link_line(found))


@link.command("list")
@tenant_option
@repo_option(required=False, help_suffix=" Only links applying to or pointing at it.")
@json_option
@run_async
async def link_list(tenant: str, repo: str | None, as_json: bool) -> None:
    """The tenant's admin links."""
    async with connect() as api:
        tenant = await api.tenant(tenant)
        repository_id = await api.repository(tenant, repo) if repo else None
        items = (await api.call("GET", f"/v1/tenants/{tenant}/links", repository_id=repository_id))["items"]
    emit(items, as_json=as_json, text="\n".join(map(_link_line, items)) or "no links")


api_command(
    link,
    "remove",
    "DELETE",
    "/v1/tenants/{tenant}/links/{link_id}",
    help="Remove an admin link.",
    argument="link_id",
    done="removed",
)


# --------------------------------------------------------------------------- audit


@click.command("audit")
@tenant_option
@click.option("--action", default=None, help="Only this action (a route name, e.g. revoke_token).")
@click.option("--outcome", type=click.Choice(["ok", "denied", "failed"]), default=None)
@click.option("--limit", default=50, show_default=True, type=click.IntRange(1, 500))
@json_option
@run_async
async def audit(tenant: str, action: str | None, outcome: str | None, limit: int, as_json: bool) -> None:
    """The tenant's audit log, newest first: who, what, when, outcome."""
    async with connect() as api:
        tenant = await api.tenant(tenant)
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
    "--tenant",
    "tenant_ids",
    multiple=True,
    metavar="TENANT",
    help=TENANT_HELP.split(" (default")[0] + " Only this tenant (repeatable; default: every tenant).",
)
@click.option(
    "--limit",
    type=click.IntRange(1, 100_000),
    default=None,
    help="At most this many (default: one interval's).",
)
@json_option
@run_async
async def backfill(dry_run: bool, tenant_ids: tuple[str, ...], limit: int | None, as_json: bool) -> None:
    """The maintenance backfill, all slices at once: index requests for repositories whose newest
    snapshot is missing, failed for a transient reason, stuck, or behind a local branch head (this
    command reads the heads; the service leaves that comparison to the chunker)."""
    from palimpsest.cli.session import session
    from palimpsest.ingest import backfill as job
    from palimpsest.ingest.context import allows_local_sources
    from palimpsest.ingest.settings import backfill_policy, ingest_settings

    ingest = ingest_settings(settings())
    policy = backfill_policy(ingest, local_sources=allows_local_sources(ingest, embedded=True))
    base = settings()
    async with session(base, services=False) as sess:
        pool = sess.infra.pool
        only = {await local_tenant_id(pool, base.home, t) for t in tenant_ids} if tenant_ids else None
        found = await job.candidates(
            pool,
            policy,
            slice_no=None,
            limit=limit or policy.max_per_tick * policy.slices,
            head_of=_local_head,
            tenants=only,
        )
        requested = 0 if dry_run else await job.request(pool, found)
    out = {"dry_run": dry_run, "candidates": [c.as_dict() for c in found], "requested": requested}
    lines = [f"{c.tenant_id}  {c.full_name:<40} {c.why:<8} {c.detail or ''}" for c in found]
    verb = "would request" if dry_run else "requested"
    text = "\n".join([*lines, f"{verb} {len(found) if dry_run else requested} index builds"])
    emit(out, as_json=as_json, text=text)
