"""Settings of the ingest service (``PALIMPSEST_*``), on the shared base.

`ingest_settings` turns whatever settings object the process was started with (the CLI's shared
base settings under ``palimpsest up``, or this class under ``python -m palimpsest.ingest``) into
this class, keeping every value that was explicitly set and reading the rest from the
environment and the secrets directory.
"""

from __future__ import annotations

from pydantic import Field, SecretStr

from palimpsest.core.settings import BaseServiceSettings, service_settings
from palimpsest.ingest.backfill import BackfillPolicy

MIB = 1024 * 1024


class Settings(BaseServiceSettings):
    """Settings of the ingest service (PALIMPSEST_* variables)."""

    ingest_host: str = Field(
        default="127.0.0.1", description="Listen address of the HTTP API (0.0.0.0 in a cluster)."
    )
    ingest_port: int = Field(default=8080, ge=0, le=65535, description="Listen port of the HTTP API.")
    ingest_reuse_port: bool = Field(
        default=False, description="Let several ingest processes on one host share the port (SO_REUSEPORT)."
    )
    encryption_key: SecretStr | None = Field(
        default=None, description="Fernet key(s), comma-separated, first encrypts; required in production."
    )
    admin_token: SecretStr | None = Field(
        default=None, description="Operator token for tenant creation and any tenant's resources."
    )
    bot_name: str = Field(
        default="palimpsest",
        min_length=1,
        max_length=100,
        description="The bot's name on the provider: `@<name> review` in a comment asks for a review.",
    )
    webhook_max_bytes: int = Field(default=25 * MIB, ge=1024, description="Largest webhook body accepted.")
    api_max_bytes: int = Field(default=1 * MIB, ge=1024, description="Largest /v1 API request body accepted.")
    webhook_timeout_s: float = Field(default=8.0, gt=0, description="Answer a delivery within this.")
    lookup_cache_s: float = Field(
        default=5.0, ge=0, description="How long route, token and web-session lookups are cached."
    )
    ui_session_s: float = Field(
        default=8 * 3600.0,
        gt=0,
        le=30 * 86400.0,
        description="How long a web view (/ui) session lasts after sign-in; the token is re-checked on"
        " every request regardless.",
    )
    ui_secure_cookie: bool | None = Field(
        default=None,
        description="Mark the web view's session cookie Secure: unset = when the request came over TLS"
        " (https, or X-Forwarded-Proto: https from the ingress); true behind any TLS-terminating proxy.",
    )
    delivery_retention_days: float = Field(
        default=30.0, gt=0, description="How long webhook delivery records are kept."
    )
    backfill_interval_s: float = Field(
        default=3600.0,
        ge=0,
        description="Maintenance backfill: each repository looked at once per interval; 0: off.",
    )
    backfill_slices: int = Field(
        default=12, ge=1, le=3600, description="Ticks per interval (spreads the work)."
    )
    backfill_max_per_tick: int = Field(
        default=50, ge=1, le=10_000, description="Index requests per tick at most."
    )
    backfill_grace_s: float = Field(
        default=900.0,
        ge=0,
        description="A repository without a snapshot, or a build, younger than this is left alone.",
    )
    audit_retention_days: float = Field(
        default=365.0, gt=0, description="How long audit log entries are kept (hourly pruning)."
    )


def ingest_settings(base: BaseServiceSettings) -> Settings:
    """This service's settings from the process's settings object (see the module docstring)."""
    return service_settings(Settings, base)


def backfill_policy(settings: Settings, *, local_sources: bool) -> BackfillPolicy:
    return BackfillPolicy(
        interval_s=settings.backfill_interval_s,
        slices=settings.backfill_slices,
        max_per_tick=settings.backfill_max_per_tick,
        grace_s=settings.backfill_grace_s,
        local_sources=local_sources,
    )
