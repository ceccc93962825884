"""Session fixtures: real PostgreSQL and NATS (embedded unless configured), migrated and declared."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator

import pytest
from pydantic import SecretStr

from palimpsest.core.admin import bus_config
from palimpsest.core.bus import bus_init
from palimpsest.core.migrate import migrate
from palimpsest.core.service import Infra, close_infra, open_infra
from palimpsest.core.settings import BaseServiceSettings
from tests.support.servers import APP_ROLE, ServerSet, reset_streams, session_servers

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """``-n auto`` (``make test``): one worker per core, at most four, on the embedded stack, where
    each worker starts its own PostgreSQL and NATS; none (one process) when external servers are
    configured, whose app role and streams every worker would share."""
    if os.environ.get("PALIMPSEST_TEST_DATABASE_URL") or os.environ.get("PALIMPSEST_TEST_NATS_URL"):
        return 0
    return min(len(os.sched_getaffinity(0)), 4)


@pytest.fixture(scope="session")
def servers() -> Iterator[ServerSet]:
    with session_servers() as s:
        yield s


def settings_for(servers: ServerSet, **overrides: object) -> BaseServiceSettings:
    values: dict[str, object] = {
        "database_url": SecretStr(servers.app_url),
        "database_direct_url": SecretStr(servers.direct_url),
        "database_transaction_pooler": servers.pooler is not None,
        "migration_database_url": SecretStr(servers.owner_url),
        "nats_url": servers.nats_url,
        "home": servers.home,
        "app_role": APP_ROLE,
        "ack_wait_s": 5.0,
        "max_deliver": 4,
        "retry_delays_s": (0.05, 0.1, 0.2),
        "relay_poll_s": 0.2,
        "log_format": "text",
        "allow_local_sources": True,
    }
    values.update(overrides)
    return BaseServiceSettings.model_construct(**{**BaseServiceSettings().model_dump(), **values})


@pytest.fixture(scope="session")
async def stack(servers: ServerSet) -> ServerSet:
    """Migrated database and a freshly declared bus."""
    if servers.nats_mode == "external":
        await reset_streams(servers.nats_url)
    await migrate(servers.owner_url, app_role=APP_ROLE)
    await bus_init(servers.nats_url, bus_config(settings_for(servers)))
    return servers


@pytest.fixture(scope="session")
async def infra(stack: ServerSet) -> AsyncIterator[Infra]:
    infra = await open_infra(settings_for(stack), "tests")
    yield infra
    await close_infra(infra)
