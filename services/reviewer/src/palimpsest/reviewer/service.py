"""The reviewer service's bootstrap: its settings, handlers and consumer."""

from __future__ import annotations

from palimpsest.core.service import Infra, ServiceDefinition
from palimpsest.core.settings import BaseServiceSettings


class Settings(BaseServiceSettings):
    """Settings of the reviewer service (PALIMPSEST_* variables)."""


def bootstrap(infra: Infra) -> ServiceDefinition:
    # No handlers yet: the reviewer service does not subscribe until its issue lands.
    return ServiceDefinition(name="reviewer")
