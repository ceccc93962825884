"""The recency-scanner service's bootstrap: its settings, handlers and consumer."""

from __future__ import annotations

from palimpsest.core.service import Infra, ServiceDefinition
from palimpsest.core.settings import BaseServiceSettings


class Settings(BaseServiceSettings):
    """Settings of the recency-scanner service (PALIMPSEST_* variables)."""


def bootstrap(infra: Infra) -> ServiceDefinition:
    # No handlers yet: the recency-scanner service does not subscribe until its issue lands.
    return ServiceDefinition(name="recency-scanner")
