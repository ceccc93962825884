"""Repositories: register (→ index.requested), change the index mode, rebuild, remove.

The URL is validated (see `palimpsest.ingest.sources`) before anything is stored, outside the
transaction because it may resolve a host name. Every event is written to the outbox in the
same transaction as the change that causes it.
"""

from __future__ import annotations

from uuid import UUID

from palimpsest.core import outcomes
from palimpsest.core.events import IndexRequested
from palimpsest.core.ids import uuid7
from palimpsest.core.outbox import emit
from palimpsest.core.suspension import suspended_reason
from palimpsest.ingest.admin.access import Scope, scoped_tx
from palimpsest.ingest.admin.index import require_active
from palimpsest.ingest.context import IngestContext
from palimpsest.ingest.errors import Conflict, InvalidRequest, NotFound
from palimpsest.ingest.schemas import IndexRequest, RepositoryCreate, RepositoryRegistered, RepositoryUpdate
from palimpsest.ingest.schemas import Repository as RepositoryOut
from palimpsest.ingest.sources import Source, check_source
from palimpsest.ingest.store import installations, repositories
from palimpsest.ingest.store.installations import Installation
from palimpsest.ingest.store.repositories import NewRepository, Repository


def _provider(body: RepositoryCreate, installation: Installation | None, source: Source) -> str:
    implied = source.provider if installation is None else installation.provider
    if implied is None:
        if body.provider is None or body.provider == "local":
            raise InvalidRequest(f"say which provider (github, gitlab, bitbucket) serves '{source.host}'")
        return body.provider
    if body.provider is not None and body.provider != implied:
        raise InvalidRequest(f"provider '{body.provider}' does not match the URL's provider '{implied}'")
    return implied


async def register_repository(
    ctx: IngestContext, scope: Scope, body: RepositoryCreate
) -> RepositoryRegistered:
    installation = None
    if body.installation_id is not None:
        async with scoped_tx(ctx, scope) as conn:
            installation = await installations.get_installation(conn, body.installation_id)
        if installation is None:
            raise NotFound("no such installation")
    host = installation.host if installation is not None else None
    source = await check_source(body.url, ctx.policy, installation_host=host)
    provider = _provider(body, installation, source)
    if provider == "local" and body.external_id is not None:
        raise InvalidRequest("a local repository has no provider id")
    new = NewRepository(
        repository_id=uuid7(),
        provider=provider,
        external_id=body.external_id,
        full_name=body.full_name or source.full_name,
        clone_url=source.clone_url,
        default_branch=body.default_branch,
        visibility=body.visibility,
        index_mode=body.index_mode,
        installation_id=body.installation_id,
    )
    async with scoped_tx(ctx, scope) as conn:
        stored = await repositories.insert_repository(conn, scope.tenant_id, new)
        event = None
        if stored.index_mode != "off" and await suspended_reason(conn, new.repository_id) is None:
            event = IndexRequested(
                tenant_id=scope.tenant_id,
                repository_id=new.repository_id,
                reason="register",
                branch=new.default_branch,
            )
            await emit(conn, event)
    return RepositoryRegistered.model_validate(
        {**stored.to_json(), "index_event_id": event.id if event is not None else None}
    )


async def list_repositories(
    ctx: IngestContext, scope: Scope, *, provider: str | None, installation_id: UUID | None
) -> list[RepositoryOut]:
    async with scoped_tx(ctx, scope) as conn:
        found = await repositories.list_repositories(conn, provider=provider, installation_id=installation_id)
        states = await outcomes.outcomes_of(conn)
    return [with_outcomes(r, states.get(r.repository_id, {})) for r in found]


async def get_repository(ctx: IngestContext, scope: Scope, repository_id: UUID) -> RepositoryOut:
    async with scoped_tx(ctx, scope) as conn:
        found = await repositories.get_repository(conn, repository_id)
        states = await outcomes.outcomes_of(conn, [repository_id])
    if found is None:
        raise NotFound("no such repository")
    return with_outcomes(found, states.get(repository_id, {}))


def with_outcomes(repo: Repository, found: dict[str, outcomes.Outcome]) -> RepositoryOut:
    """The repository as the API shows it, with its last build and analysis outcome."""
    return RepositoryOut.model_validate(
        {**repo.to_json(), **{kind: o.as_dict() for kind, o in found.items()}}
    )


async def update_repository(
    ctx: IngestContext, scope: Scope, repository_id: UUID, body: RepositoryUpdate
) -> RepositoryOut:
    changes = body.model_dump(exclude_none=True)
    async with scoped_tx(ctx, scope) as conn:
        before = await repositories.get_repository(conn, repository_id)
        if before is None:
            raise NotFound("no such repository")
        if not changes:
            return RepositoryOut.model_validate(before.to_json())
        after = await repositories.update_repository(conn, repository_id, changes)
        assert after is not None
        if after.index_mode == "off" and before.index_mode != "off":
            await repositories.delete_index_data(conn, repository_id)  # ADR-0017 D7
        suspended = await suspended_reason(conn, repository_id)
        if after.index_mode not in (before.index_mode, "off") and suspended is None:
            event = IndexRequested(
                tenant_id=scope.tenant_id,
                repository_id=repository_id,
                reason="mode",
                branch=after.default_branch,
            )
            await emit(conn, event)
    return RepositoryOut.model_validate(after.to_json())


async def rebuild_repository(ctx: IngestContext, scope: Scope, repository_id: UUID) -> IndexRequest:
    async with scoped_tx(ctx, scope) as conn:
        found = await repositories.get_repository(conn, repository_id)
        if found is None:
            raise NotFound("no such repository")
        if found.index_mode == "off":
            raise Conflict("indexing is off for this repository; set index_mode first")
        await require_active(conn, repository_id)
        event = IndexRequested(
            tenant_id=scope.tenant_id,
            repository_id=repository_id,
            reason="rebuild",
            branch=found.default_branch,
        )
        await emit(conn, event)
    return IndexRequest(repository_id=repository_id, event_id=event.id, request_id=event.request_id)


async def remove_repository(ctx: IngestContext, scope: Scope, repository_id: UUID) -> None:
    async with scoped_tx(ctx, scope) as conn:
        deleted = await repositories.delete_repository(conn, repository_id)
    if not deleted:
        raise NotFound("no such repository")
