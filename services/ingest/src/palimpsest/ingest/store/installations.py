"""Installations: a tenant's webhook senders and provider credentials (sealed, never returned)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final
from uuid import UUID

import psycopg
from psycopg import sql

from palimpsest.core.db import Conn, JsonRow, fetch_all, fetch_all_as, fetch_one, fetch_one_as
from palimpsest.core.stores import Owns, Store
from palimpsest.ingest.errors import Conflict
from palimpsest.ingest.store.rows import delete_row, get_row, update_row

STORE = Store(owner="ingest", writes=(Owns("installations"),))


COLUMNS: Final = sql.SQL(
    "installation_id, provider, kind, external_id, host, namespace, display_name,"
    " webhook_secret IS NOT NULL AS has_webhook_secret, credentials_kind, created_at, updated_at,"
    " suspended_at, suspended_reason"
)
_UPDATABLE: Final = frozenset({"display_name", "webhook_secret", "credentials", "credentials_kind"})


@dataclass(frozen=True, slots=True)
class Installation(JsonRow):
    """An installation as the API shows it: whether it has a webhook secret, never the secret."""

    installation_id: UUID
    provider: str
    kind: str
    external_id: str
    host: str
    namespace: str | None
    display_name: str
    has_webhook_secret: bool
    credentials_kind: str  # none | token | app
    created_at: datetime
    updated_at: datetime
    suspended_at: datetime | None
    suspended_reason: str | None


@dataclass(frozen=True, slots=True)
class NewInstallation:
    installation_id: UUID
    provider: str
    kind: str
    external_id: str
    host: str
    namespace: str | None
    display_name: str
    webhook_secret: bytes | None  # sealed
    credentials: bytes | None  # sealed
    credentials_kind: str


def _taken(exc: psycopg.errors.UniqueViolation) -> Conflict:
    del exc
    return Conflict(
        "an installation with this provider, kind and external id (or namespace) is already registered"
    )


async def insert_installation(conn: Conn, tenant_id: UUID, new: NewInstallation) -> Installation:
    query = sql.SQL(
        "INSERT INTO installations (tenant_id, installation_id, provider, kind, external_id, host, namespace,"
        " display_name, webhook_secret, credentials, credentials_kind)"
        " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s) RETURNING {}"
    ).format(COLUMNS)
    params = (
        tenant_id,
        new.installation_id,
        new.provider,
        new.kind,
        new.external_id,
        new.host,
        new.namespace,
        new.display_name,
        new.webhook_secret,
        new.credentials,
        new.credentials_kind,
    )
    try:
        row = await fetch_one_as(conn, Installation, query, params)
    except psycopg.errors.UniqueViolation as exc:
        raise _taken(exc) from exc
    assert row is not None
    return row


async def list_installations(conn: Conn) -> list[Installation]:
    query = sql.SQL("SELECT {} FROM installations ORDER BY created_at, installation_id").format(COLUMNS)
    return await fetch_all_as(conn, Installation, query)


async def get_installation(conn: Conn, installation_id: UUID) -> Installation | None:
    return await get_row(conn, Installation, "installations", "installation_id", installation_id, COLUMNS)


async def update_installation(
    conn: Conn, installation_id: UUID, changes: dict[str, Any]
) -> Installation | None:
    return await update_row(
        conn,
        Installation,
        "installations",
        "installation_id",
        installation_id,
        changes,
        columns=COLUMNS,
        updatable=_UPDATABLE,
        taken=_taken,
    )


async def delete_installation(conn: Conn, installation_id: UUID) -> bool:
    return await delete_row(conn, "installations", "installation_id", installation_id)


async def set_suspended(conn: Conn, installation_id: UUID, suspended: bool, by: str) -> Installation | None:
    """Suspend (by 'provider' or 'api'; the first suspension's time stays) or lift the suspension."""
    query = sql.SQL(
        "UPDATE installations SET suspended_at = CASE WHEN %s THEN coalesce(suspended_at, now()) END,"
        " suspended_reason = CASE WHEN %s THEN coalesce(suspended_reason, %s) END, updated_at = now()"
        " WHERE installation_id = %s RETURNING {}"
    ).format(COLUMNS)
    return await fetch_one_as(conn, Installation, query, (suspended, suspended, by, installation_id))


@dataclass(frozen=True, slots=True)
class SyncTarget:
    """What a sync of an installation's repositories needs: its provider, host and sealed credential."""

    installation_id: UUID
    provider: str
    kind: str
    external_id: str
    host: str
    credentials: bytes | None
    credentials_kind: str
    suspended: bool


_SYNC_TARGET: Final = (
    "SELECT installation_id, provider, kind, external_id, host, credentials, credentials_kind,"
    " suspended_at IS NOT NULL AS suspended FROM installations WHERE installation_id = %s"
)
_DUE: Final = (
    "SELECT installation_id FROM installations WHERE suspended_at IS NULL AND credentials IS NOT NULL"
    " AND credentials_kind IN ('token', 'app')"
    " AND (provider, kind) IN (SELECT * FROM unnest(%(providers)s::text[], %(kinds)s::text[]))"
    " AND (%(slice)s::int IS NULL OR mod(abs(hashtext(installation_id::text)), %(slices)s) = %(slice)s::int)"
    " ORDER BY installation_id"
)


async def sync_target(conn: Conn, installation_id: UUID) -> SyncTarget | None:
    return await fetch_one_as(conn, SyncTarget, _SYNC_TARGET, (installation_id,))


async def due_for_sync(
    conn: Conn, pairs: Sequence[tuple[str, str]], slice_no: int | None, slices: int
) -> list[UUID]:
    """The tenant's installations a sync can list (not suspended, with a token or an app
    credential, of one of the (provider, kind) ``pairs``) in backfill slice ``slice_no`` of
    ``slices`` (None: all), by id."""
    params = {
        "providers": [p for p, _ in pairs],
        "kinds": [k for _, k in pairs],
        "slice": slice_no,
        "slices": slices,
    }
    return [row["installation_id"] for row in await fetch_all(conn, _DUE, params)]


async def installation_host(conn: Conn, installation_id: UUID) -> str | None:
    """The installation's host, or None when it is not registered (any more)."""
    row = await fetch_one(
        conn, "SELECT host FROM installations WHERE installation_id = %s", (installation_id,)
    )
    return str(row["host"]) if row is not None else None
