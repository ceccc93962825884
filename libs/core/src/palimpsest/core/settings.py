"""Settings for every process: one shared base, one subclass per service.

Values come from ``PALIMPSEST_*`` environment variables or from files under the secrets directory
(Kubernetes mounts Secrets there), never from arguments. ``load`` turns pydantic's validation error
into a one-line :class:`SettingsError` that names the variable, so a typo in a deployment is obvious.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar

from pydantic import Field, SecretStr, ValidationError, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from palimpsest.core.errors import SettingsError
from palimpsest.core.sources import SourcePolicy, SourceRefused, normalize_hosts

ENV_PREFIX = "PALIMPSEST_"
SECRETS_DIR = Path("/var/run/secrets/palimpsest")


def default_home() -> Path:
    """Per-user data directory for the embedded stack (``PALIMPSEST_HOME`` overrides it)."""
    import platformdirs

    return Path(platformdirs.user_data_dir("palimpsest", appauthor=False))


class BaseServiceSettings(BaseSettings):
    """What every Palimpsest process needs: where the database and the bus are, and how to report."""

    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX,
        secrets_dir=str(SECRETS_DIR) if SECRETS_DIR.is_dir() else None,
        extra="ignore",
        case_sensitive=False,
    )

    database_url: SecretStr | None = Field(
        default=None, description="PostgreSQL URL of the application role (no BYPASSRLS)."
    )
    migration_database_url: SecretStr | None = Field(
        default=None, description="PostgreSQL URL of the owner role; migrations only."
    )
    app_role: str = Field(default="palimpsest_app", pattern=r"^[a-z_][a-z0-9_]{0,62}$")
    nats_url: str | None = Field(default=None, description="NATS URL; credentials go in a file.")
    nats_creds_file: Path | None = None
    home: Path = Field(default_factory=default_home)
    ops_host: str = "0.0.0.0"  # noqa: S104 - probes and scrapes come from the cluster network
    ops_port: int = Field(default=9090, ge=0, le=65535)
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"
    log_format: Literal["json", "text"] = "json"
    db_pool_min: int = Field(default=1, ge=0)
    db_pool_max: int = Field(default=8, ge=1)
    relay_enabled: bool = True
    relay_batch: int = Field(default=500, ge=1, le=10_000)
    relay_poll_s: float = Field(default=1.0, gt=0)
    consumer_batch: int = Field(default=8, ge=1, le=256)
    ack_wait_s: float = Field(default=60.0, gt=0)
    max_deliver: int = Field(default=5, ge=2, le=100)
    retry_delays_s: tuple[float, ...] = (1.0, 5.0, 30.0, 120.0)
    stream_max_age_days: float = Field(default=7.0, gt=0)
    duplicate_window_s: float = Field(default=3600.0, gt=0)
    encryption_key: SecretStr | None = Field(
        default=None, description="Fernet key(s), comma-separated, first encrypts; required in production."
    )
    allow_local_sources: bool = Field(
        default=False, description="Index file:// URLs and local paths (the embedded default turns it on)."
    )
    provider_hosts: Annotated[tuple[str, ...], NoDecode] = Field(
        default=("github.com", "gitlab.com", "bitbucket.org"),
        description="Hosts repositories may be fetched from (comma-separated or a JSON list).",
    )
    private_provider_hosts: Annotated[tuple[str, ...], NoDecode] = Field(
        default=(),
        description="Provider hosts that may resolve to private addresses (self-hosted); plain http"
        " is allowed only to these, loopback only to a loopback IP literal listed here.",
    )

    github_api_url: str | None = Field(
        default=None,
        description="GitHub REST API for App installation tokens (default: https://api.github.com,"
        " or https://<host>/api/v3 for an Enterprise Server host).",
    )
    gitlab_api_url: str | None = Field(
        default=None,
        description="GitLab REST API for installation sync (default: https://<host>/api/v4 of the"
        " installation's host).",
    )
    bitbucket_api_url: str | None = Field(
        default=None,
        description="Bitbucket REST API for installation sync (default: https://api.bitbucket.org/2.0).",
    )

    @field_validator("provider_hosts", "private_provider_hosts", mode="before")
    @classmethod
    def _hosts(cls, value: Any) -> tuple[str, ...]:
        items: Any = value
        if isinstance(value, str):
            text = value.strip()
            items = json.loads(text) if text.startswith("[") else [p for p in text.split(",") if p.strip()]
        if not isinstance(items, list | tuple) or not all(isinstance(i, str) for i in items):
            raise ValueError("expected host names, comma-separated or as a JSON list")
        try:
            return normalize_hosts(items)
        except SourceRefused as exc:
            raise ValueError(str(exc)) from exc

    def source_policy(self, *, allow_local: bool | None = None) -> SourcePolicy:
        """The repository source policy these settings describe (clone time and registration)."""
        return SourcePolicy(
            provider_hosts=frozenset(self.provider_hosts),
            private_hosts=frozenset(self.private_provider_hosts),
            allow_local=self.allow_local_sources if allow_local is None else allow_local,
        )


_S = TypeVar("_S", bound=BaseSettings)
_SENSITIVE = ("secret", "url", "key", "token", "password", "api_base")  # values never echoed in errors


def load(cls: type[_S], **overrides: Any) -> _S:
    """Build settings of ``cls`` from the environment, or raise a SettingsError naming the variable."""
    try:
        return cls(**overrides)
    except ValidationError as exc:
        prefix = str(cls.model_config.get("env_prefix", ENV_PREFIX))
        problems = []
        for err in exc.errors():
            field = ".".join(str(p) for p in err.get("loc", ()) if p != "__root__")
            var = (prefix + field).upper() if field else prefix + "*"
            value = os.environ.get(var)
            shown = (
                ""
                if value is None or any(word in var.lower() for word in _SENSITIVE)
                else f" (got {value!r})"
            )
            problems.append(f"{var}: {err.get('msg', 'invalid')}{shown}")
        raise SettingsError("invalid setting: " + "; ".join(problems)) from None


_B = TypeVar("_B", bound=BaseServiceSettings)


def service_settings(cls: type[_B], started_with: BaseServiceSettings) -> _B:
    """A service's settings from the settings object its process was started with.

    That object itself when it is already a ``cls``; else ``cls`` loaded from the environment,
    where the shared values the process was started with (e.g. the embedded stack's) win.
    """
    if isinstance(started_with, cls):
        return started_with
    shared = {
        name: getattr(started_with, name)
        for name in BaseServiceSettings.model_fields
        if name in started_with.model_fields_set
    }
    return load(cls, **shared)
