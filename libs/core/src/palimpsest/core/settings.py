"""Settings for every process: one shared base, one subclass per service.

Values come from ``PALIMPSEST_*`` environment variables or from files under the secrets directory
(Kubernetes mounts Secrets there), never from arguments. ``load`` turns pydantic's validation error
into a one-line :class:`SettingsError` that names the variable, so a typo in a deployment is obvious.
"""

from __future__ import annotations

import difflib
import functools
import importlib
import json
import os
from collections.abc import Iterable, Mapping
from importlib import resources
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar

from pydantic import Field, SecretStr, ValidationError, field_validator
from pydantic_core import ErrorDetails
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
    database_direct_url: SecretStr | None = Field(
        default=None,
        description="PostgreSQL URL of the application role that bypasses a transaction-mode pooler"
        " (PgBouncer): the relay LISTENs there for new outbox rows; unset, it polls every relay_poll_s.",
    )
    database_transaction_pooler: bool = Field(
        default=False,
        description="A transaction-mode pooler (PgBouncer pool_mode=transaction, CloudNativePG's pooler)"
        " stands between the services and PostgreSQL at database_url: statements are then never prepared"
        " (the pooler may run the next execution on a server connection that never saw the PREPARE);"
        " otherwise repeated statements are prepared and skip planning.",
    )
    app_role: str = Field(
        default="palimpsest_app",
        pattern=r"^[a-z_][a-z0-9_]{0,62}$",
        description="PostgreSQL role the services run as (migrations grant it access; it must lack BYPASSRLS).",
    )
    nats_url: str | None = Field(
        default=None,
        description="NATS URL, or a comma-separated seed list of a cluster's servers (the client"
        " reconnects across them); credentials go in a file.",
    )
    nats_creds_file: Path | None = Field(
        default=None, description="NATS credentials file (.creds) for the bus connection."
    )
    home: Path = Field(
        default_factory=default_home,
        description="Data directory of the embedded stack (database, bus, admin token, caches); in a pod a scratch dir.",
    )
    ops_host: str = Field(
        default="0.0.0.0",  # noqa: S104 - probes and scrapes come from the cluster network
        description="Listen address of the ops endpoint (/healthz, /readyz, /metrics).",
    )
    ops_port: int = Field(
        default=9090,
        ge=0,
        le=65535,
        description="Listen port of the ops endpoint (/healthz, /readyz, /metrics); 0: any free port.",
    )
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = Field(
        default="INFO", description="Log level of every logger."
    )
    log_format: Literal["json", "text"] = Field(
        default="json", description="Log lines as JSON objects (json) or plain text (text)."
    )
    db_pool_min: int = Field(
        default=1, ge=0, description="Database connections the pool keeps open at least."
    )
    db_pool_max: int = Field(default=8, ge=1, description="Database connections the pool opens at most.")
    relay_enabled: bool = Field(
        default=True, description="Run the outbox relay (publishes committed events to NATS) in this process."
    )
    relay_batch: int = Field(
        default=500, ge=1, le=10_000, description="Outbox rows the relay publishes per round."
    )
    relay_poll_s: float = Field(
        default=1.0, gt=0, description="Seconds the relay waits between rounds when the outbox is empty."
    )
    consumer_batch: int = Field(
        default=8, ge=1, le=256, description="Messages a service's consumer fetches from JetStream at once."
    )
    ack_wait_s: float = Field(
        default=60.0,
        gt=0,
        description="Seconds JetStream waits for an acknowledgement before redelivering (handlers heartbeat).",
    )
    max_deliver: int = Field(
        default=5, ge=2, le=100, description="Deliveries of one event before it is dead-lettered."
    )
    retry_delays_s: tuple[float, ...] = Field(
        default=(1.0, 5.0, 30.0, 120.0),
        description="Delays before the 1st, 2nd, ... redelivery of a failed event (the last repeats).",
    )
    stream_max_age_days: float = Field(
        default=7.0,
        gt=0,
        description="How long the stream keeps events, and the relay keeps published outbox rows.",
    )
    stream_replicas: int = Field(
        default=1,
        ge=1,
        le=5,
        description="Replicas of the event streams on a JetStream cluster (3 on a three-node cluster);"
        " bus init creates or updates the streams with it, consumers follow the stream.",
    )
    duplicate_window_s: float = Field(
        default=3600.0, gt=0, description="JetStream's duplicate-detection window for event ids (seconds)."
    )
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


# ``PALIMPSEST_*`` names that are legitimately not settings, each with what reads it: the one list
# of them. A name ending in "_" stands for every name it begins. Any other ``PALIMPSEST_*`` name in
# the environment (or a ``palimpsest_*`` file in the secrets directory) that no Settings class
# declares makes the process refuse to start (:func:`check_environment`).
NOT_SETTINGS: dict[str, str] = {
    "PALIMPSEST_TEST_": "the test suite: external PostgreSQL / NATS URLs (tests/support/servers.py)",
    "PALIMPSEST_INGEST_URL": "the CLI: the remote ingest API its commands act on",
    "PALIMPSEST_API_TOKEN": "the CLI: the tenant API token it authenticates with",
    "PALIMPSEST_TENANT": "the CLI: the default of --tenant",
    "PALIMPSEST_NATIVE": "building palimpsest-index: compile its native module (auto|require|off)",
    "PALIMPSEST_LAUNCH": "the image tests: what the launcher in an image runs (tests/deploy/image_launch.py)",
    "PALIMPSEST_IMAGES_REPORT": "the image tests: the report `make images` wrote (tests/deploy/test_images_run.py)",
}

# Every setting's environment name, and the Settings classes that declare it (``module:Class``),
# one setting a line, written from the Settings classes of all services by ``make settings-doc``
# (palimpsest.cli.settings_registry): a process knows the names of every service's settings even
# where only its own service is installed (one image per service), the CLI checks a value by
# importing only the classes that declare it, and a test fails when the file and the classes
# disagree.
NAMES_FILE = "settings_names.txt"


@functools.cache
def _names_file() -> dict[str, tuple[str, ...]]:
    text = resources.files("palimpsest.core").joinpath(NAMES_FILE).read_text(encoding="utf-8")
    rows = (line.split() for line in text.splitlines() if line.strip())
    return {row[0]: tuple(row[1:]) for row in rows}


def setting_names() -> frozenset[str]:
    """The environment names of every service's settings (the generated :data:`NAMES_FILE`)."""
    return frozenset(_names_file())


def env_name(field: str, prefix: str = ENV_PREFIX) -> str:
    return (prefix + field).upper()


def is_declared(name: str, known: Iterable[str] = ()) -> bool:
    """A setting's name, or a name :data:`NOT_SETTINGS` declares."""
    upper = name.upper()
    if upper in setting_names() or upper in known:
        return True
    return any(upper == n or (n.endswith("_") and upper.startswith(n)) for n in NOT_SETTINGS)


def closest_name(name: str, known: Iterable[str] = ()) -> str | None:
    """The real name a mistyped one most likely meant: the longest setting it begins with, else
    the most similar name (difflib)."""
    upper = name.upper()
    candidates = sorted(setting_names() | set(known) | {n for n in NOT_SETTINGS if not n.endswith("_")})
    prefixed = [c for c in candidates if upper.startswith(c + "_")]
    if prefixed:
        return max(prefixed, key=len)
    found = difflib.get_close_matches(upper, candidates, n=1, cutoff=0.6)
    return found[0] if found else None


def undeclared_names(
    environ: Mapping[str, str] | None = None,
    secrets_dir: Path | None = SECRETS_DIR,
    known: Iterable[str] = (),
) -> list[str]:
    """``PALIMPSEST_*`` environment names and secret-file names that no setting declares."""
    known = set(known)
    return sorted(n for n in _names_given(environ, secrets_dir) if not is_declared(n, known))


def settings_given(
    environ: Mapping[str, str] | None = None, secrets_dir: Path | None = SECRETS_DIR
) -> list[str]:
    """The settings the environment (or a secret file) gives a value: with none, every value is a
    default, and there is nothing to validate."""
    return sorted(_names_given(environ, secrets_dir) & setting_names())


def _names_given(environ: Mapping[str, str] | None, secrets_dir: Path | None) -> set[str]:
    env = os.environ if environ is None else environ
    names = {k.upper() for k in env if k.upper().startswith(ENV_PREFIX)}
    if secrets_dir is not None and secrets_dir.is_dir():
        names |= {p.name.upper() for p in secrets_dir.iterdir() if p.name.upper().startswith(ENV_PREFIX)}
    return names


def check_environment(
    environ: Mapping[str, str] | None = None,
    secrets_dir: Path | None = SECRETS_DIR,
    known: Iterable[str] = (),
) -> None:
    """Refuse (a one-line :class:`SettingsError`) a ``PALIMPSEST_*`` name no setting declares.

    A mistyped name would otherwise be ignored without a word, and the default used instead.
    """
    known = set(known)
    unknown = undeclared_names(environ, secrets_dir, known)
    if not unknown:
        return
    parts = [with_closest(name, known) for name in unknown]
    raise SettingsError(
        f"unknown setting{'s' if len(parts) > 1 else ''} {', '.join(parts)}:"
        f" {UNKNOWN_NAME} (`palimpsest settings` lists them)"
    )


UNKNOWN_NAME = "no Palimpsest setting has this name"


def with_closest(name: str, known: Iterable[str] = ()) -> str:
    """A name no setting declares, with the real name it most likely meant."""
    near = closest_name(name, known)
    return name + (f" (did you mean {near}?)" if near else "")


_S = TypeVar("_S", bound=BaseSettings)
_SENSITIVE = ("secret", "url", "key", "token", "password", "api_base")  # values never echoed in errors


def load(cls: type[_S], **overrides: Any) -> _S:
    """Build settings of ``cls`` from the environment, or raise a SettingsError naming the variable.

    A ``PALIMPSEST_*`` name that no setting declares is refused first (:func:`check_environment`).
    """
    prefix = str(cls.model_config.get("env_prefix", ENV_PREFIX))
    check_environment(known={env_name(f, prefix) for f in cls.model_fields})
    try:
        return cls(**overrides)
    except ValidationError as exc:
        problems = [_problem(prefix, err)[1] for err in exc.errors()]
        raise SettingsError("invalid setting: " + "; ".join(problems)) from None


def invalid_values(classes: Iterable[type[BaseSettings]]) -> dict[str, str]:
    """Every value of the environment (or of a secret file) that one of ``classes`` refuses, by
    variable: ``{"PALIMPSEST_X": "PALIMPSEST_X: <what it expects> (got '<value>')"}``, one line
    each, a secret's value never shown. What :func:`load` would refuse, asked of several classes
    at once (the CLI asks every service's before it starts anything)."""
    found: dict[str, str] = {}
    for cls in classes:
        prefix = str(cls.model_config.get("env_prefix", ENV_PREFIX))
        try:
            cls()
        except ValidationError as exc:
            for err in exc.errors():
                var, line = _problem(prefix, err)
                found.setdefault(var, line)
    return found


def given_values_problems() -> dict[str, str]:
    """:func:`invalid_values` of the settings this environment gives a value, asked of every class
    that declares one (:data:`NAMES_FILE`) — every service's, where it is installed. Only those
    classes are imported: a service's module takes a second to import, and a value no service
    reads from here (all defaults) has nothing to check."""
    classes: dict[type[BaseSettings], None] = {}
    for name in settings_given():
        for ref in _names_file()[name]:
            module, _, qualname = ref.partition(":")
            try:
                cls = getattr(importlib.import_module(module), qualname)
            except ModuleNotFoundError:  # a service that is not installed here cannot be asked
                continue
            classes[cls] = None
    return dict(sorted(invalid_values(classes).items()))


def _problem(prefix: str, err: ErrorDetails) -> tuple[str, str]:
    """The variable of one pydantic validation error, and a line naming it and what it expects."""
    field = ".".join(str(p) for p in err.get("loc", ()) if p != "__root__")
    var = (prefix + field).upper() if field else prefix + "*"
    value = os.environ.get(var)
    shown = "" if value is None or any(word in var.lower() for word in _SENSITIVE) else f" (got {value!r})"
    return var, f"{var}: {err.get('msg', 'invalid')}{shown}"


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
