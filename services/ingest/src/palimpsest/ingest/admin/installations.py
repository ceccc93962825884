"""Installations: register a webhook sender with its secret and credentials, rotate, remove.

Secrets are sealed (Fernet) before they reach the database and are never read back out through
the API. Each change clears this process's route cache; other replicas pick it up within
``PALIMPSEST_LOOKUP_CACHE_S``.
"""

from __future__ import annotations

import json
from typing import Any, Final
from uuid import UUID

from palimpsest.core.ids import uuid7
from palimpsest.ingest.admin.access import Scope, scoped_tx
from palimpsest.ingest.context import IngestContext
from palimpsest.ingest.errors import InvalidRequest, NotFound, SourceRefused
from palimpsest.ingest.schemas import AppCredentials, InstallationCreate, InstallationUpdate
from palimpsest.ingest.schemas import Installation as InstallationOut
from palimpsest.ingest.sources import SAAS_HOSTS, normalize_host
from palimpsest.ingest.store import installations
from palimpsest.ingest.store.installations import NewInstallation

KINDS: Final[dict[str, tuple[str, ...]]] = {
    "github": ("installation", "app", "repository", "organization", "business"),
    "gitlab": ("project", "group"),
    "bitbucket": ("workspace",),
}
DEFAULT_HOSTS: Final[dict[str, str]] = {provider: host for host, provider in SAAS_HOSTS.items()}


def _host(ctx: IngestContext, provider: str, given: str | None) -> str:
    try:
        host = normalize_host(given) if given else DEFAULT_HOSTS[provider]
    except SourceRefused as exc:
        raise InvalidRequest(exc.message) from exc
    if host not in ctx.policy.provider_hosts:
        raise InvalidRequest(f"host '{host}' is not one of PALIMPSEST_PROVIDER_HOSTS")
    return host


def _credentials(
    ctx: IngestContext, access_token: str | None, app: AppCredentials | None
) -> tuple[bytes | None, str]:
    if access_token is not None and app is not None:
        raise InvalidRequest("give an access_token or app_credentials, not both")
    if access_token is not None:
        return ctx.box.seal(access_token), "token"
    if app is not None:
        sealed = json.dumps({"app_id": app.app_id, "private_key": app.private_key.get_secret_value()})
        return ctx.box.seal(sealed), "app"
    return None, "none"


def _check_kind(provider: str, kind: str, namespace: str | None) -> None:
    if kind not in KINDS[provider]:
        raise InvalidRequest(f"kind '{kind}' is not a {provider} kind ({', '.join(KINDS[provider])})")
    if namespace is not None and not (provider == "gitlab" and kind == "group"):
        raise InvalidRequest("namespace applies to GitLab group installations only")
    if provider == "gitlab" and kind == "group" and namespace is None:
        raise InvalidRequest("a GitLab group installation needs its namespace (the group's full path)")


async def add_installation(ctx: IngestContext, scope: Scope, body: InstallationCreate) -> InstallationOut:
    kind = body.kind or KINDS[body.provider][0]
    namespace = body.namespace.strip("/") if body.namespace else None
    _check_kind(body.provider, kind, namespace)
    secret = body.webhook_secret.get_secret_value() if body.webhook_secret else None
    access = body.access_token.get_secret_value() if body.access_token else None
    credentials, credentials_kind = _credentials(ctx, access, body.app_credentials)
    new = NewInstallation(
        installation_id=uuid7(),
        provider=body.provider,
        kind=kind,
        external_id=body.external_id,
        host=_host(ctx, body.provider, body.host),
        namespace=namespace,
        display_name=body.display_name,
        webhook_secret=ctx.box.seal(secret) if secret is not None else None,
        credentials=credentials,
        credentials_kind=credentials_kind,
    )
    async with scoped_tx(ctx, scope) as conn:
        stored = await installations.insert_installation(conn, scope.tenant_id, new)
    ctx.routes.clear()
    return InstallationOut.model_validate(stored.to_json())


async def list_installations(ctx: IngestContext, scope: Scope) -> list[InstallationOut]:
    async with scoped_tx(ctx, scope) as conn:
        found = await installations.list_installations(conn)
    return [InstallationOut.model_validate(i.to_json()) for i in found]


async def get_installation(ctx: IngestContext, scope: Scope, installation_id: UUID) -> InstallationOut:
    async with scoped_tx(ctx, scope) as conn:
        found = await installations.get_installation(conn, installation_id)
    if found is None:
        raise NotFound("no such installation")
    return InstallationOut.model_validate(found.to_json())


async def update_installation(
    ctx: IngestContext, scope: Scope, installation_id: UUID, body: InstallationUpdate
) -> InstallationOut:
    changes: dict[str, Any] = {}
    if body.display_name is not None:
        changes["display_name"] = body.display_name
    if body.webhook_secret is not None:
        changes["webhook_secret"] = ctx.box.seal(body.webhook_secret.get_secret_value())
    access = body.access_token.get_secret_value() if body.access_token else None
    if body.clear_credentials:
        if access is not None or body.app_credentials is not None:
            raise InvalidRequest("clear_credentials cannot be combined with new credentials")
        changes["credentials"], changes["credentials_kind"] = None, "none"
    elif access is not None or body.app_credentials is not None:
        changes["credentials"], changes["credentials_kind"] = _credentials(ctx, access, body.app_credentials)
    async with scoped_tx(ctx, scope) as conn:
        if changes:
            found = await installations.update_installation(conn, installation_id, changes)
        else:
            found = await installations.get_installation(conn, installation_id)
    if found is None:
        raise NotFound("no such installation")
    ctx.routes.clear()
    return InstallationOut.model_validate(found.to_json())


async def remove_installation(ctx: IngestContext, scope: Scope, installation_id: UUID) -> None:
    async with scoped_tx(ctx, scope) as conn:
        deleted = await installations.delete_installation(conn, installation_id)
    if not deleted:
        raise NotFound("no such installation")
    ctx.routes.clear()


async def set_suspended(
    ctx: IngestContext, scope: Scope, installation_id: UUID, suspended: bool
) -> InstallationOut:
    """Suspend or resume by the API (idempotent); deliveries of a suspended one are ignored."""
    async with scoped_tx(ctx, scope) as conn:
        found = await installations.set_suspended(conn, installation_id, suspended, "api")
    if found is None:
        raise NotFound("no such installation")
    ctx.routes.clear()  # cached webhook routes carry the suspension
    return InstallationOut.model_validate(found.to_json())
