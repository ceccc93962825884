"""Everything a request handler needs, built once per process: settings, pool, keys and caches.

`embedded` is True when the service runs inside the ``palimpsest`` CLI's runner (``palimpsest
up`` or a command's own stack) rather than as its own process (``python -m palimpsest.ingest``,
one pod in a cluster). Only then may a missing encryption key or admin token be generated into
``$PALIMPSEST_HOME``, and only then are local sources allowed unless configured otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from uuid import UUID

from nats.aio.client import Client as NATS

from palimpsest.core.bus import ConsumerLag
from palimpsest.core.db import Pool
from palimpsest.core.github_app import InstallationTokens
from palimpsest.core.llm import Gateway
from palimpsest.core.secretbox import SecretBox, load_box
from palimpsest.ingest.cache import TtlCache
from palimpsest.ingest.settings import Settings
from palimpsest.ingest.sources import Resolver, SourcePolicy, system_resolver
from palimpsest.ingest.tokens import load_admin_token


@dataclass(frozen=True, slots=True)
class Route:
    """Where a webhook sender's deliveries go, with its secret opened (kept in memory only)."""

    tenant_id: UUID
    installation_id: UUID
    secret: str
    suspended: str | None = None  # why its deliveries are ignored (installation/tenant suspended)


@dataclass(frozen=True, slots=True)
class TokenOwner:
    """An API token's tenant, name and scopes, and whether it (or its tenant) still may act."""

    tenant_id: UUID
    token_id: UUID
    name: str
    scopes: frozenset[str]
    expires_at: datetime | None
    revoked: bool
    tenant_suspended: bool
    tenant_deleting: bool


RouteKey = tuple[str, str, str, str | None]


@dataclass(slots=True)
class IngestContext:
    settings: Settings
    pool: Pool
    box: SecretBox
    admin_token: str | None
    policy: SourcePolicy
    embedded: bool
    routes: TtlCache[RouteKey, Route | None] = field(default_factory=lambda: TtlCache(5.0))
    tokens: TtlCache[bytes, TokenOwner | None] = field(default_factory=lambda: TtlCache(5.0))
    sessions: TtlCache[UUID, bool] = field(default_factory=lambda: TtlCache(5.0))  # web session → alive
    gateway: Gateway | None = None  # built on the first hybrid search (see admin.index), closed at stop
    # GitHub App installation tokens for installation sync (PALIMPSEST_GITHUB_API_URL)
    github_tokens: InstallationTokens = field(default_factory=InstallationTokens)
    token_touched: dict[UUID, float] = field(
        default_factory=dict
    )  # token id -> when last_used_at was written
    nc: NATS | None = None  # the process's bus connection (the web view reads consumer lag through it)
    lag: TtlCache[str, dict[str, ConsumerLag | BaseException]] = field(default_factory=lambda: TtlCache(5.0))


def allows_local_sources(settings: Settings, *, embedded: bool) -> bool:
    """The configured value when one was given, else the embedded default (on) or off."""
    if "allow_local_sources" in settings.model_fields_set:
        return settings.allow_local_sources
    return embedded


def build_context(
    settings: Settings, pool: Pool, *, embedded: bool, resolver: Resolver | None = None
) -> IngestContext:
    """Load (or, embedded, generate) the keys and assemble the context; SettingsError when unusable."""
    key = settings.encryption_key.get_secret_value() if settings.encryption_key else None
    admin = settings.admin_token.get_secret_value() if settings.admin_token else None
    box = load_box(key, home=settings.home, generate=embedded)
    policy = SourcePolicy(
        provider_hosts=frozenset(settings.provider_hosts),
        private_hosts=frozenset(settings.private_provider_hosts),
        allow_local=allows_local_sources(settings, embedded=embedded),
        resolver=resolver or system_resolver,
    )
    return IngestContext(
        settings=settings,
        pool=pool,
        box=box,
        admin_token=load_admin_token(admin, home=settings.home, generate=embedded),
        policy=policy,
        embedded=embedded,
        routes=TtlCache(settings.lookup_cache_s),
        tokens=TtlCache(settings.lookup_cache_s),
        sessions=TtlCache(settings.lookup_cache_s),
        lag=TtlCache(settings.lookup_cache_s),
        github_tokens=InstallationTokens(api_url=settings.github_api_url),
    )
