"""Two processes of every service (``palimpsest chaos --replicas 2``): names, ports and environment,
and a killed replica kept down while its twin works."""

from __future__ import annotations

import asyncio
import subprocess
import time
from pathlib import Path

from palimpsest.cli.embedded import free_port
from palimpsest.cli.processes import ServiceProcess, Supervisor
from palimpsest.cli.stack import StackInfo
from palimpsest.core.settings import BaseServiceSettings

DIRECT = "postgresql://palimpsest_app@127.0.0.1:5999/palimpsest"
POOLED = "postgresql://palimpsest_app@127.0.0.1:6432/palimpsest"


def _supervisor(tmp_path: Path, **kw: object) -> Supervisor:
    settings = BaseServiceSettings.model_construct(**{**BaseServiceSettings().model_dump(), "home": tmp_path})
    stack = StackInfo(
        owner_url="postgresql://postgres@127.0.0.1:5999/palimpsest",
        app_url=POOLED,
        nats_url="nats://127.0.0.1:4999,nats://127.0.0.1:4998",
        embedded_db=True,
        embedded_nats=True,
        home=str(tmp_path),
        direct_url=DIRECT,
        transaction_pooler=True,
    )
    return Supervisor(settings, stack, ingest_port=free_port(), **kw)  # type: ignore[arg-type]


def test_replicas_are_named_per_service_and_each_ingest_listens_on_its_own_port(tmp_path: Path) -> None:
    sup = _supervisor(tmp_path, services=("ingest", "chunker"), replicas=2)
    assert list(sup.processes) == ["ingest", "ingest.2", "chunker", "chunker.2"]
    assert sup.replicas_of("chunker") == ["chunker", "chunker.2"]
    assert {p.service for p in sup.processes.values()} == {"ingest", "chunker"}
    assert sup.ingest_urls[0] == sup.ingest_url and len(set(sup.ingest_urls)) == 2
    ports = {sup.processes[n].env["PALIMPSEST_INGEST_PORT"] for n in ("ingest", "ingest.2")}
    assert {f"http://127.0.0.1:{p}" for p in ports} == set(sup.ingest_urls)
    assert len({p.ops_port for p in sup.processes.values()}) == 4
    assert {p.log_path.name for p in sup.processes.values()} == {
        "ingest.log",
        "ingest.2.log",
        "chunker.log",
        "chunker.2.log",
    }
    for p in sup.processes.values():  # pooled for the work, direct for the relay's LISTEN
        assert p.env["PALIMPSEST_DATABASE_URL"] == POOLED
        assert p.env["PALIMPSEST_DATABASE_DIRECT_URL"] == DIRECT
        # behind the transaction-mode pooler the services prepare no statement
        assert p.env["PALIMPSEST_DATABASE_TRANSACTION_POOLER"] == "true"
    one = _supervisor(tmp_path, services=("ingest", "chunker"))
    assert list(one.processes) == ["ingest", "chunker"] and one.ingest_urls == [one.ingest_url]


class _Sleeper(ServiceProcess):
    """A stand-in for a service's process: a real child the supervisor kills and restarts."""

    def start(self) -> None:
        self.proc = subprocess.Popen(["sleep", "60"], start_new_session=True)
        self.starts += 1


async def test_a_killed_replica_is_kept_down_for_its_hold_while_its_twin_runs(tmp_path: Path) -> None:
    sup = _supervisor(tmp_path, services=("chunker",), replicas=2)
    sup.processes = {
        name: _Sleeper(name, p.env, p.log_path, p.ops_port, service=p.service)
        for name, p in sup.processes.items()
    }
    sup.start()
    stop = asyncio.Event()
    watcher = asyncio.create_task(sup.watch(stop))
    try:
        held, twin = sup.processes["chunker.2"], sup.processes["chunker"]
        killed_at = time.monotonic()
        assert sup.kill("chunker.2", hold_s=2.0)
        await asyncio.sleep(1.0)
        assert held.starts == 1 and not held.alive()  # still down, within its hold
        assert twin.alive() and twin.starts == 1
        deadline = time.monotonic() + 30
        while held.starts == 1 and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
        assert held.starts == 2 and held.alive()  # restarted once the hold passed
        assert time.monotonic() - killed_at >= 2.0
        assert sup.kill("chunker")  # no hold: restarted at once (after the backoff)
        deadline = time.monotonic() + 30
        while twin.starts == 1 and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
        assert twin.starts == 2
    finally:
        stop.set()
        await watcher
        sup.stop()
