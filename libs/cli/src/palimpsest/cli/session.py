"""A CLI command's connection to the stack: a running ``palimpsest up``, or one started for it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

from pydantic import SecretStr

from palimpsest.cli.runner import running_services
from palimpsest.cli.stack import StackInfo, open_stack, read_running
from palimpsest.cli.target import announce_local, refuse_remote
from palimpsest.core.service import Infra, close_infra, open_infra
from palimpsest.core.settings import BaseServiceSettings


@dataclass(slots=True)
class Session:
    stack: StackInfo
    infra: Infra
    started_here: bool


@asynccontextmanager
async def session(settings: BaseServiceSettings, *, services: bool = True) -> AsyncIterator[Session]:
    """Use the running stack if there is one; otherwise start servers (and services) for this command.

    Refused when a remote is configured (PALIMPSEST_INGEST_URL): such a command acts only locally.
    """
    refuse_remote()
    running = read_running(settings.home)
    announce_local(settings, running_pid=running.pid if running is not None else None)
    if running is not None:
        s = settings.model_copy(
            update={"database_url": SecretStr(running.app_url), "nats_url": running.nats_url}
        )
        infra = await open_infra(s, "cli")
        try:
            yield Session(running, infra, started_here=False)
        finally:
            await close_infra(infra)
        return
    async with open_stack(settings) as stack:
        if services:
            async with running_services(settings, stack) as infra:
                yield Session(stack, infra, started_here=True)
        else:
            s = settings.model_copy(
                update={"database_url": SecretStr(stack.app_url), "nats_url": stack.nats_url}
            )
            infra = await open_infra(s, "cli")
            try:
                yield Session(stack, infra, started_here=True)
            finally:
                await close_infra(infra)
