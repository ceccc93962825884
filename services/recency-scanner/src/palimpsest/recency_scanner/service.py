"""The recency-scanner service's bootstrap: its settings, its handler and its consumer.

It consumes ``index.requested`` (in parallel with the chunker, never waiting for it) and emits
``recency.scanned``. Its settings are environment variables:

- ``PALIMPSEST_RECENCY_SCAN``: ``on`` (default) or ``off``; off scans nothing and forgets a
  repository's recency, so every age reads as unknown.
- ``PALIMPSEST_RECENCY_WINDOW``: e.g. ``2 years ago``; older history is not fetched and files
  last changed before it read as unknown (default: the whole history).
- ``PALIMPSEST_RECENCY_MAX_FILES_PER_COMMIT``: larger commits add no co-change (default 30).
- ``PALIMPSEST_RECENCY_PAIR_CAP``: co-change pairs kept per repository (default 50 000).
- ``PALIMPSEST_RECENCY_TIMEOUT_S``: deadline of clone + log per scan (default 600).
- ``PALIMPSEST_RECENCY_TMP_DIR``: where temporary clones go (default: the system's).
- ``PALIMPSEST_ALLOW_LOCAL_SOURCES``: read paths and ``file://`` URLs in place (the embedded
  default; off in a cluster).
- ``PALIMPSEST_PRIVATE_PROVIDER_HOSTS``: hosts that may resolve to private addresses (see
  :mod:`palimpsest.core.sources`, checked before every clone).
"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field, field_validator

from palimpsest.core.bus import CONSUMERS
from palimpsest.core.credentials import box_for
from palimpsest.core.github_app import InstallationTokens
from palimpsest.core.service import Infra, ServiceDefinition
from palimpsest.core.settings import BaseServiceSettings, service_settings
from palimpsest.recency_scanner.logparse import DEFAULT_MAX_FILES_PER_COMMIT, DEFAULT_PAIR_CAP
from palimpsest.recency_scanner.scanner import AuthProvider, RecencyScanner, ScanOptions
from palimpsest.recency_scanner.source import installation_auth, no_auth

__all__ = ["Settings", "bootstrap", "definition"]


class Settings(BaseServiceSettings):
    """Settings of the recency-scanner service (PALIMPSEST_* variables)."""

    recency_scan: bool = Field(default=True, description="on/off; off: nothing is scanned or kept.")
    recency_window: str | None = Field(
        default=None, max_length=64, description='History window, e.g. "2 years ago" (default: all).'
    )
    recency_max_files_per_commit: int = Field(
        default=DEFAULT_MAX_FILES_PER_COMMIT,
        ge=2,
        le=10_000,
        description="Commits touching more files than this are left out of co-change pairs.",
    )
    recency_pair_cap: int = Field(
        default=DEFAULT_PAIR_CAP,
        ge=0,
        le=10_000_000,
        description="Co-change file pairs kept per repository at most.",
    )
    recency_timeout_s: float = Field(default=600.0, gt=0, description="Seconds one history scan may take.")
    recency_tmp_dir: Path | None = Field(
        default=None,
        description="Scratch directory of history scans (default: the system's temporary directory).",
    )

    @field_validator("recency_window")
    @classmethod
    def _blank_is_none(cls, value: str | None) -> str | None:
        return value.strip() or None if value is not None else None

    def scan_options(self) -> ScanOptions:
        return ScanOptions(
            enabled=self.recency_scan,
            window=self.recency_window,
            max_files_per_commit=self.recency_max_files_per_commit,
            pair_cap=self.recency_pair_cap,
            timeout_s=self.recency_timeout_s,
            allow_local_sources=self.allow_local_sources,
            private_hosts=frozenset(self.private_provider_hosts),
            tmp_dir=self.recency_tmp_dir,
            heartbeat_s=max(0.5, min(10.0, self.ack_wait_s / 3)),
        )


def definition(settings: Settings, *, auth_provider: AuthProvider = no_auth) -> ServiceDefinition:
    """The service with explicit settings (and, for tests, another credential source)."""
    scanner = RecencyScanner(settings.scan_options(), auth_provider=auth_provider)
    return ServiceDefinition(
        name="recency-scanner",
        handlers={"index.requested": scanner.handle},
        consumer=CONSUMERS["recency-scanner"],
    )


def bootstrap(infra: Infra) -> ServiceDefinition:
    settings = service_settings(Settings, infra.settings)
    box = box_for(settings, embedded=infra.embedded_db)
    tokens = InstallationTokens(api_url=settings.github_api_url)
    return definition(settings, auth_provider=installation_auth(box, tokens))
