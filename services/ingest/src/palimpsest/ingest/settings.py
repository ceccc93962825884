"""Settings of the ingest service (``PALIMPSEST_*``), on the shared base.

`ingest_settings` turns whatever settings object the process was started with (the CLI's shared
base settings under ``palimpsest up``, or this class under ``python -m palimpsest.ingest``) into
this class, keeping every value that was explicitly set and reading the rest from the
environment and the secrets directory.
"""

from __future__ import annotations

from pydantic import Field, SecretStr

from palimpsest.core.settings import BaseServiceSettings, load

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
    bot_name: str = Field(default="palimpsest", min_length=1, max_length=100)
    webhook_max_bytes: int = Field(default=25 * MIB, ge=1024)
    api_max_bytes: int = Field(default=1 * MIB, ge=1024)
    webhook_timeout_s: float = Field(default=8.0, gt=0, description="Answer a delivery within this.")
    lookup_cache_s: float = Field(
        default=5.0, ge=0, description="How long route and token lookups are cached."
    )
    delivery_retention_days: float = Field(default=30.0, gt=0)
    audit_retention_days: float = Field(
        default=365.0, gt=0, description="How long audit log entries are kept (hourly pruning)."
    )


def ingest_settings(base: BaseServiceSettings) -> Settings:
    """This service's settings from the process's settings object (see the module docstring)."""
    if isinstance(base, Settings):
        return base
    return load(Settings, **base.model_dump(exclude_unset=True))
