"""The /v1 API's JSON answers as the CLI reads them to print a line or a block of text.

Each is the wire form of a schema of :mod:`palimpsest.ingest.schemas` (ids and times are strings
in JSON, as the API sends them): the CLI prints what it was sent, and ``--json`` prints the answer
as it came. Only the fields the CLI's text reads are declared.
"""

from __future__ import annotations

from typing import TypedDict


class TenantJson(TypedDict):
    """``schemas.Tenant``."""

    tenant_id: str
    name: str
    created_at: str
    state: str


class TenantDetailJson(TenantJson):
    """``schemas.TenantDetail``."""

    repositories: int
    installations: int
    index_bytes: int
    last_activity_at: str | None


class TokenJson(TypedDict):
    """``schemas.Token``."""

    token_id: str
    name: str
    scopes: list[str]
    expires_at: str | None
    last_used_at: str | None
    revoked_at: str | None


class LinkJson(TypedDict):
    """``schemas.Link``."""

    link_id: str
    role: str
    source: str | None
    target: str


class InstallationJson(TypedDict):
    """``schemas.Installation``."""

    installation_id: str
    provider: str
    kind: str
    external_id: str
    host: str
    has_webhook_secret: bool
    credentials_kind: str


class SyncErrorJson(TypedDict):
    """``schemas.SyncError``."""

    status: int | None
    message: str


class InstallationSyncJson(TypedDict):
    """``schemas.InstallationSync``."""

    provider: str
    kind: str
    dry_run: bool
    listed: int
    pages: int
    added: list[str]
    removed: list[str]
    unchanged: list[str]
    refused: list[str]
    errors: list[SyncErrorJson]


class OutcomeJson(TypedDict):
    """``schemas.RepositoryOutcome``."""

    text: str
    retry: str | None
    failing_since: str | None


class RepositoryJson(TypedDict):
    """``schemas.Repository``."""

    repository_id: str
    provider: str
    full_name: str
    clone_url: str
    default_branch: str
    index_mode: str
    build: OutcomeJson | None
    analysis: OutcomeJson | None


class ModelRouteJson(TypedDict):
    """``schemas.ModelRoute``."""

    feature: str
    model: str
    api_base: str | None
    input_usd_per_mtok: float | None
    output_usd_per_mtok: float | None
    updated_at: str


class BudgetJson(TypedDict):
    """``schemas.Budget``."""

    monthly_usd: float | None
    spent_usd: float
