"""The embedder service's bootstrap: its settings, handlers and consumer."""

from __future__ import annotations

from palimpsest.core.service import Infra, ServiceDefinition
from palimpsest.core.settings import BaseServiceSettings


class Settings(BaseServiceSettings):
    """Settings of the embedder service (PALIMPSEST_* variables)."""


def bootstrap(infra: Infra) -> ServiceDefinition:
    # No handlers yet: the embedder service does not subscribe until its issue lands.
    return ServiceDefinition(name="embedder")
