"""Request and response bodies of the /v1 API (they make up the OpenAPI document).

Secrets arrive as `SecretStr` (never echoed, never in a repr) and no response model has a field
that could carry one: installations report only whether a webhook secret and which kind of
credentials are stored.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal
from uuid import UUID

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, SecretStr, StringConstraints

ProviderName = Literal["github", "gitlab", "bitbucket"]
RepoProvider = Literal["github", "gitlab", "bitbucket", "local"]
Kind = Literal[
    "installation", "app", "repository", "organization", "business", "project", "group", "workspace"
]
Visibility = Literal["public", "private", "internal"]
IndexMode = Literal["off", "lexical", "hybrid"]
Outcome = Literal["accepted", "duplicate", "ignored", "rejected"]

Name = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=200)]
Label = Annotated[str, StringConstraints(strip_whitespace=True, max_length=200)]
ExternalId = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=1024)]


def _branch(name: str) -> str:
    """A plausible git branch name (the subset of git-check-ref-format providers allow)."""
    if (
        name.startswith(("/", "-", "."))
        or name.endswith(("/", ".", ".lock"))
        or ".." in name
        or "//" in name
        or "@{" in name
    ):
        raise ValueError("not a valid branch name")
    return name


Branch = Annotated[
    str,
    StringConstraints(min_length=1, max_length=255, pattern=r"^[A-Za-z0-9._/+-]+$"),
    AfterValidator(_branch),
]
Secret = Annotated[SecretStr, Field(min_length=1, max_length=8192)]


class _In(BaseModel):
    model_config = ConfigDict(extra="forbid")


class _Out(BaseModel):
    model_config = ConfigDict(from_attributes=True)


class TenantCreate(_In):
    name: Name


TenantState = Literal["active", "suspended", "deleting"]
ScopeName = Literal["read", "review", "manage"]


class Tenant(_Out):
    tenant_id: UUID
    name: str
    created_at: datetime
    state: TenantState = "active"
    suspended_at: datetime | None = None


class TenantDetail(Tenant):
    repositories: int
    installations: int
    index_bytes: int = Field(description="Bytes of the newest ready snapshot of each repository.")
    last_activity_at: datetime | None = Field(
        description="Newest delivery, index build, review or token use."
    )


class TenantList(_Out):
    items: list[Tenant]


class TenantCreated(Tenant):
    token_id: UUID
    api_token: str = Field(description="Shown once; only its sha256 is stored.")


class TenantDeleted(_Out):
    tenant_id: UUID
    existed: bool = Field(description="False when a retried deletion found the tenant already gone.")
    deleted_rows: int = Field(
        description="Rows the deletion's statements deleted (cascaded rows not counted)."
    )
    tables: dict[str, int] = Field(description="Those rows per table (tables with none left out).")


def _read_only() -> list[ScopeName]:
    return ["read"]


class TokenCreate(_In):
    name: Label = ""
    scopes: list[ScopeName] = Field(
        default_factory=_read_only,
        min_length=1,
        max_length=3,
        description="read: search, context, snapshots, analyses, reviews, deliveries; review: request"
        " reviews, analyses and index builds; manage: installations, repositories, links, tokens, audit.",
    )
    expires_at: datetime | None = Field(default=None, description="When the token stops working.")
    expires_in_days: float | None = Field(
        default=None, gt=0, le=3650, description="Alternative to expires_at: that many days from now."
    )


class Token(_Out):
    token_id: UUID
    name: str
    scopes: list[ScopeName]
    created_at: datetime
    expires_at: datetime | None = None
    last_used_at: datetime | None = Field(default=None, description="Recorded to the minute.")
    revoked_at: datetime | None = None
    rotated_at: datetime | None = None


class TokenCreated(Token):
    api_token: str = Field(description="Shown once; only its sha256 is stored.")


class AuditEntry(_Out):
    id: UUID
    at: datetime
    actor: Literal["operator", "token", "provider"]
    token_id: UUID | None
    token_name: str | None
    action: str
    method: str | None
    route: str | None
    target: dict[str, str]
    outcome: Literal["ok", "denied", "failed"]
    http_status: int | None


class AuditPage(_Out):
    items: list[AuditEntry]
    next_before: UUID | None = Field(default=None, description="Pass as ?before= for the next page.")


class AppCredentials(_In):
    app_id: ExternalId
    private_key: Secret


class InstallationCreate(_In):
    provider: ProviderName
    external_id: ExternalId = Field(description="App installation id, project/group id or workspace UUID.")
    kind: Kind | None = Field(
        default=None, description="Default: installation (github), project (gitlab), workspace (bitbucket)."
    )
    host: str | None = Field(default=None, max_length=253, description="Default: the provider's SaaS host.")
    namespace: str | None = Field(
        default=None, min_length=1, max_length=1024, description="GitLab group installations: the group path."
    )
    display_name: Label = ""
    webhook_secret: Secret | None = None
    access_token: Secret | None = None
    app_credentials: AppCredentials | None = None


class InstallationUpdate(_In):
    display_name: Label | None = None
    webhook_secret: Secret | None = None
    access_token: Secret | None = None
    app_credentials: AppCredentials | None = None
    clear_credentials: bool = False


class Installation(_Out):
    installation_id: UUID
    provider: ProviderName
    kind: Kind
    external_id: str
    host: str
    namespace: str | None
    display_name: str
    has_webhook_secret: bool
    credentials_kind: Literal["none", "token", "app"]
    created_at: datetime
    updated_at: datetime
    suspended_at: datetime | None = Field(
        default=None, description="Set: nothing of it is indexed or reviewed, nor used as linked context."
    )
    suspended_reason: Literal["provider", "api"] | None = Field(
        default=None, description="Who suspended it: the provider's 'installation suspend' event, or the API."
    )


class RepositoryCreate(_In):
    url: str = Field(
        min_length=1, max_length=2048, description="https clone URL, or a local path if allowed."
    )
    installation_id: UUID | None = None
    provider: RepoProvider | None = None
    full_name: Name | None = None
    external_id: ExternalId | None = None
    default_branch: Branch = "main"
    visibility: Visibility = "private"
    index_mode: IndexMode = "lexical"


class RepositoryUpdate(_In):
    index_mode: IndexMode | None = None
    default_branch: Branch | None = None
    visibility: Visibility | None = None


class RepositoryOutcome(_Out):
    """A repository's last build or analysis outcome (migration 0048)."""

    state: Literal["ok", "retrying", "failed", "dead_lettered"]
    text: str = Field(description="The state in words: ok, failed: <reason>, dead-lettered: <reason>, …")
    reason: str | None
    retry: str | None = Field(description="When to expect another attempt, or what to do; null when ok.")
    attempt: int | None
    max_attempts: int | None
    retry_at: datetime | None
    dead_letter_id: int | None
    failing_since: datetime | None
    updated_at: datetime


class Repository(_Out):
    repository_id: UUID
    provider: RepoProvider
    external_id: str | None
    full_name: str
    clone_url: str
    default_branch: str
    visibility: Visibility
    index_mode: IndexMode
    installation_id: UUID | None
    created_at: datetime
    updated_at: datetime
    build: RepositoryOutcome | None = Field(
        default=None, description="The last index build's outcome and reason; null before the first."
    )
    analysis: RepositoryOutcome | None = Field(
        default=None,
        description="The last analysis request's outcome, where one failed or was dead-lettered.",
    )


class RepositoryRegistered(Repository):
    index_event_id: UUID | None = Field(description="The index.requested event, unless index_mode is off.")


class IndexRequest(_Out):
    repository_id: UUID
    event_id: UUID
    request_id: UUID


class Delivery(_Out):
    id: UUID
    provider: ProviderName
    installation_id: UUID | None
    delivery_id: str
    event: str
    action: str | None
    outcome: Outcome
    http_status: int
    reason: str | None
    repository_id: UUID | None
    event_ids: list[UUID]
    received_at: datetime


class Page(_Out):
    next_before: UUID | None = Field(default=None, description="Pass as ?before= for the next page.")


class DeliveryPage(Page):
    items: list[Delivery]


class TokenList(_Out):
    items: list[Token]


class InstallationList(_Out):
    items: list[Installation]


class RepositoryList(_Out):
    items: list[Repository]


class SyncError(_Out):
    status: int | None = Field(description="The provider's HTTP status (null: no answer, or not asked).")
    message: str


class InstallationSync(_Out):
    """What an installation sync found at the provider and did (or, dry, would do)."""

    installation_id: UUID
    provider: str
    kind: str
    dry_run: bool
    listed: int = Field(description="Repositories the provider listed.")
    pages: int = Field(description="Pages read from the provider.")
    added: list[str]
    removed: list[str]
    unchanged: list[str]
    refused: list[str] = Field(description="Listed but not registered: 'name: why'.")
    errors: list[SyncError]


class WebhookAnswer(_Out):
    outcome: Outcome
    reason: str | None
    delivery_id: str | None
    events: list[UUID]


class LinkCreate(_In):
    role: Literal["linked", "pattern"]
    target_repository_id: UUID
    source_repository_id: UUID | None = Field(
        default=None, description="Omit for an organisation-wide pattern repository (pattern links only)."
    )


class Link(_Out):
    link_id: UUID
    role: Literal["linked", "pattern"]
    source_repository_id: UUID | None
    source: str | None = Field(description="The source's full name; null: every repository of the tenant.")
    target_repository_id: UUID
    target: str
    created_at: datetime


class LinkList(_Out):
    items: list[Link]


class ModelRouteSet(_In):
    model: Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=200)] = Field(
        description='In litellm form ("openai/gpt-4o-mini"), or "local/…" for in-process embeddings.'
    )
    api_base: str | None = Field(
        default=None,
        max_length=2048,
        description="OpenAI-compatible base URL; null: the services' PALIMPSEST_LLM_API_BASE. A base other"
        " than that one is sent no API key.",
    )
    input_usd_per_mtok: float | None = Field(default=None, ge=0, le=1_000_000, description="Price override.")
    output_usd_per_mtok: float | None = Field(default=None, ge=0, le=1_000_000, description="Price override.")
    allow_unpriced: bool = Field(
        default=False,
        description="Accept a model litellm cannot price (its calls then count nothing against the budget).",
    )


class ModelRoute(_Out):
    feature: Literal["analysis", "summary", "review", "embeddings", "rerank"]
    model: str
    api_base: str | None
    input_usd_per_mtok: float | None
    output_usd_per_mtok: float | None
    updated_at: datetime


class ModelRouteList(_Out):
    items: list[ModelRoute]


class BudgetSet(_In):
    monthly_usd: float | None = Field(
        ge=0,
        le=1e9,
        description="Monthly model spend limit in USD (UTC calendar month); null: none of the tenant's own,"
        " the services' PALIMPSEST_LLM_MONTHLY_BUDGET_USD applies.",
    )


class Budget(_Out):
    monthly_usd: float | None = Field(
        description="The tenant's own budget; null: the services' default applies."
    )
    updated_at: datetime | None
    spent_usd: float = Field(description="Spent this calendar month (UTC), known prices only.")
