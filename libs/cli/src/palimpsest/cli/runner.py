"""All six services in one process (the embedded default), sharing one pool, connection and relay."""

from __future__ import annotations

import asyncio
import importlib
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

from palimpsest.cli.stack import StackInfo
from palimpsest.core.ops import OpsServer
from palimpsest.core.service import Infra, ServiceDefinition, close_infra, open_infra, run
from palimpsest.core.settings import BaseServiceSettings

SERVICES = ("ingest", "recency-scanner", "chunker", "embedder", "analyzer", "reviewer")


def bootstrap_of(service: str) -> Callable[[Infra], ServiceDefinition]:
    module = importlib.import_module(f"palimpsest.{service.replace('-', '_')}.service")
    bootstrap: Callable[[Infra], ServiceDefinition] = module.bootstrap
    return bootstrap


def app_settings(settings: BaseServiceSettings, stack: StackInfo) -> BaseServiceSettings:
    return settings.model_copy(update={"database_url": stack.app_url, "nats_url": stack.nats_url})


@asynccontextmanager
async def running_services(
    settings: BaseServiceSettings,
    stack: StackInfo,
    *,
    services: tuple[str, ...] = SERVICES,
    ops: OpsServer | None = None,
) -> AsyncIterator[Infra]:
    """Start ``services`` in this process; yields once they are subscribed, stops them on exit."""
    from pydantic import SecretStr

    update: dict[str, object] = {
        "database_url": SecretStr(stack.app_url),
        "nats_url": stack.nats_url,
        "database_transaction_pooler": stack.transaction_pooler,
    }
    if stack.embedded_db:  # the embedded default indexes local paths; no pooler in front of it
        update["allow_local_sources"] = True
        update["database_direct_url"] = SecretStr(stack.app_url)
    s = settings.model_copy(update=update)
    infra = await open_infra(s, "palimpsest")
    infra.embedded_db = stack.embedded_db
    stop = asyncio.Event()
    started = asyncio.Event()
    definitions = [bootstrap_of(name)(infra) for name in services]
    task = asyncio.create_task(run(definitions, infra, stop, ops=ops, started=started))
    try:
        waiter = asyncio.ensure_future(started.wait())
        done, _ = await asyncio.wait({task, waiter}, return_when=asyncio.FIRST_COMPLETED)
        if task in done:
            waiter.cancel()
            task.result()  # raises the start-up error
        yield infra
    finally:
        stop.set()
        await asyncio.gather(task, return_exceptions=True)
        await close_infra(infra)
