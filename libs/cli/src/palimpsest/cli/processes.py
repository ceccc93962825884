"""Each service as its own OS process (``palimpsest up --processes``, ``palimpsest chaos``).

As in a cluster, every service runs ``python -m palimpsest.<service>`` with its own pool, NATS
connection, outbox relay and ops endpoint, so one of them can be killed (``kill -9``) and comes
back like a restarted pod: the supervisor restarts a process that exits, with a short backoff.
Configuration travels in the child's environment only — URLs with credentials, the encryption key
and the admin token never appear in an argument list. Each process appends its output to
``$PALIMPSEST_HOME/logs/<service>.log``.

``SIGUSR1`` pauses and ``SIGUSR2`` resumes a process's outbox relay (see
:func:`palimpsest.core.service.main_for`); :meth:`Supervisor.pause_relays` sends them to all.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from palimpsest.cli.embedded import free_port
from palimpsest.cli.runner import SERVICES
from palimpsest.cli.stack import StackInfo
from palimpsest.core.errors import EmbeddedStackError
from palimpsest.core.secretbox import KEY_FILE, load_box
from palimpsest.core.settings import BaseServiceSettings

log = logging.getLogger(__name__)

RESTART_BACKOFF_S = (0.2, 0.5, 1.0, 2.0, 5.0)
READY_TIMEOUT_S = 90.0


@dataclass(slots=True)
class ServiceProcess:
    name: str
    env: dict[str, str]
    log_path: Path
    ops_port: int
    proc: subprocess.Popen[bytes] | None = None
    starts: int = 0
    ready: bool = False  # this start answered /readyz, so its signal handlers are installed
    exits: list[int] = field(default_factory=list)
    service: str = ""  # the service it runs ("" → name); replicas beyond the first are named <service>.<n>
    held_until: float = 0.0  # a killed replica kept down until then (monotonic), while its twin works
    _log: IO[bytes] | None = None

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None else None

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def start(self) -> None:
        if self._log is None:
            self.log_path.parent.mkdir(parents=True, exist_ok=True)
            self._log = self.log_path.open("ab")
        module = f"palimpsest.{(self.service or self.name).replace('-', '_')}"
        self.proc = subprocess.Popen(
            [sys.executable, "-m", module],
            env=self.env,
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # a Ctrl-C of the terminal goes to the supervisor, which stops us
        )
        self.starts += 1
        self.ready = False

    def signal(self, sig: int) -> bool:
        if not self.alive():
            return False
        assert self.proc is not None
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.proc.pid, sig)
            return True
        return False

    def reap(self) -> None:
        """SIGKILL whatever is left of this start's process group once its leader is gone.

        A service's own children (the chunker's forkserver and parse workers) outlive a
        ``kill -9`` of the service; a container runtime would remove them with the pod, so the
        supervisor does the same before a restart (the chaos soak left four orphans per kill).
        """
        if self.proc is None or self.proc.poll() is None:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)  # start_new_session: the group is the pid

    def stop(self, timeout_s: float = 15.0) -> None:
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout_s)
            except subprocess.TimeoutExpired:
                self.signal(signal.SIGKILL)
                self.proc.wait(5)
        self.reap()
        if self._log is not None:
            self._log.close()
            self._log = None


def child_environment(settings: BaseServiceSettings, stack: StackInfo) -> dict[str, str]:
    """The environment every service process gets: this one's, plus the stack's URLs and keys.

    Like the in-process ``palimpsest up``, the supervisor makes (or reads) the home's encryption
    key and admin token when none is configured and hands them on, because a service process on
    its own never generates secrets. Local sources are allowed with the embedded database only.
    """
    from palimpsest.ingest.tokens import load_admin_token

    env = dict(os.environ)
    env.update(
        {
            "PALIMPSEST_DATABASE_URL": stack.app_url,
            "PALIMPSEST_NATS_URL": stack.nats_url,
            "PALIMPSEST_HOME": str(settings.home),
            "PALIMPSEST_OPS_HOST": "127.0.0.1",
            "LITELLM_LOCAL_MODEL_COST_MAP": "True",
            "PYTHONUNBUFFERED": "1",
        }
    )
    env.pop("PALIMPSEST_MIGRATION_DATABASE_URL", None)  # services never run as the owner
    if stack.embedded_db:
        env.setdefault("PALIMPSEST_ALLOW_LOCAL_SOURCES", "true")
    if stack.transaction_pooler:  # statements are never prepared behind it
        env["PALIMPSEST_DATABASE_TRANSACTION_POOLER"] = "true"
    if stack.direct_url:  # our pooler in front (chaos --pgbouncer): the relay LISTENs past it
        env["PALIMPSEST_DATABASE_DIRECT_URL"] = stack.direct_url
    elif stack.embedded_db:  # no pooler in front of the embedded database: the relay LISTENs on it
        env["PALIMPSEST_DATABASE_DIRECT_URL"] = stack.app_url
    if not env.get("PALIMPSEST_ENCRYPTION_KEY"):
        load_box(None, home=settings.home, generate=True)  # made once, 0600, like in-process
        env["PALIMPSEST_ENCRYPTION_KEY"] = (Path(settings.home) / KEY_FILE).read_text("ascii").strip()
    if not env.get("PALIMPSEST_ADMIN_TOKEN"):
        token = load_admin_token(None, home=settings.home, generate=True)
        assert token is not None
        env["PALIMPSEST_ADMIN_TOKEN"] = token
    return env


class Supervisor:
    """Starts the services as processes, restarts any that exits, stops them all on exit."""

    def __init__(
        self,
        settings: BaseServiceSettings,
        stack: StackInfo,
        *,
        services: tuple[str, ...] = SERVICES,
        extra_env: Mapping[str, str] | None = None,
        ingest_port: int | None = None,
        replicas: int = 1,
    ) -> None:
        base = child_environment(settings, stack)
        base.update(extra_env or {})
        self.home = Path(settings.home)
        self.ingest_port = ingest_port if ingest_port is not None else _ingest_port(base)
        self.processes: dict[str, ServiceProcess] = {}
        self.ingest_ports: list[int] = []
        for service in services:
            for n in range(1, replicas + 1):
                name = service if n == 1 else f"{service}.{n}"
                env = dict(base)
                ops_port = free_port()
                env["PALIMPSEST_OPS_PORT"] = str(ops_port)
                if service == "ingest":
                    port = self.ingest_port if n == 1 else free_port()
                    self.ingest_ports.append(port)
                    env["PALIMPSEST_INGEST_PORT"] = str(port)
                    env.setdefault("PALIMPSEST_INGEST_HOST", "127.0.0.1")
                log_path = self.home / "logs" / f"{name}.log"
                self.processes[name] = ServiceProcess(name, env, log_path, ops_port, service=service)
        self.restarts = 0
        self.relays_paused = False
        self._readiness: set[asyncio.Task[None]] = set()
        self._stopping = False

    @property
    def ingest_url(self) -> str:
        return f"http://127.0.0.1:{self.ingest_port}"

    @property
    def ingest_urls(self) -> list[str]:
        """Every ingest replica's URL (the first is :attr:`ingest_url`), as a load balancer sees them."""
        return [f"http://127.0.0.1:{port}" for port in self.ingest_ports]

    def replicas_of(self, service: str) -> list[str]:
        """The process names running ``service``."""
        return [name for name, p in self.processes.items() if (p.service or p.name) == service]

    def pids(self) -> dict[str, int | None]:
        return {name: p.pid for name, p in self.processes.items()}

    def kill(self, name: str, *, hold_s: float = 0.0) -> bool:
        """``kill -9`` one service process; the watcher restarts it (after ``hold_s`` at least)."""
        p = self.processes[name]
        p.held_until = time.monotonic() + hold_s
        return p.signal(signal.SIGKILL)

    def pause_relays(self, paused: bool) -> None:
        """Pause or resume every relay. A process still starting gets the state once it is ready:
        SIGUSR1/2 would end a process that has not installed its handlers yet."""
        self.relays_paused = paused
        for p in self.processes.values():
            if p.ready:
                p.signal(signal.SIGUSR1 if paused else signal.SIGUSR2)

    async def wait_ready(self, timeout_s: float = READY_TIMEOUT_S) -> None:
        """Until every process answers /readyz (all its checks pass), through restarts."""
        for p in self.processes.values():
            await self._until_ready(p, timeout_s, follow_restarts=True)

    async def _until_ready(
        self, p: ServiceProcess, timeout_s: float, *, follow_restarts: bool = False
    ) -> None:
        import httpx

        deadline = time.monotonic() + timeout_s
        starts = p.starts
        async with httpx.AsyncClient(timeout=2.0) as http:
            while follow_restarts or p.starts == starts:  # else a newer start has its own waiter
                if follow_restarts:
                    starts = p.starts
                    if p.starts > 3 and not p.alive():  # starting up, it crashed three times
                        raise EmbeddedStackError(f"{p.name} keeps exiting; see {p.log_path}")
                with contextlib.suppress(httpx.HTTPError):
                    r = await http.get(f"http://127.0.0.1:{p.ops_port}/readyz")
                    if r.status_code == 200 and p.starts == starts and p.alive():
                        p.ready = True
                        if self.relays_paused:
                            p.signal(signal.SIGUSR1)
                        return
                if time.monotonic() > deadline:
                    raise EmbeddedStackError(
                        f"{p.name} is not ready after {timeout_s:.0f}s; see {p.log_path}"
                    )
                await asyncio.sleep(0.2)

    async def _after_restart(self, p: ServiceProcess) -> None:
        try:
            await self._until_ready(p, READY_TIMEOUT_S)
        except EmbeddedStackError as exc:
            log.warning("%s", exc)

    async def watch(self, stop: asyncio.Event) -> None:
        """Restart any process that exits (after a backoff that grows while it keeps failing)."""
        failures: dict[str, int] = {}
        while not stop.is_set():
            for p in self.processes.values():
                if self._stopping or p.proc is None or p.proc.poll() is None:
                    continue
                if time.monotonic() < p.held_until:  # kept down: its twin carries the load meanwhile
                    continue
                code = p.proc.returncode
                p.exits.append(code)
                p.reap()
                n = failures.get(p.name, 0)
                delay = RESTART_BACKOFF_S[min(n, len(RESTART_BACKOFF_S) - 1)]
                failures[p.name] = n + 1
                log.warning("%s exited with %s; restarting in %.1fs", p.name, code, delay)
                await asyncio.sleep(delay)
                if stop.is_set() or self._stopping:
                    return
                p.start()
                self.restarts += 1
                task = asyncio.create_task(self._after_restart(p))
                self._readiness.add(task)
                task.add_done_callback(self._readiness.discard)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), 0.2)

    def start(self) -> None:
        for p in self.processes.values():
            p.start()

    def stop(self) -> None:
        self._stopping = True
        for p in self.processes.values():
            p.signal(signal.SIGTERM)
        for p in self.processes.values():
            p.stop()

    def describe(self) -> dict[str, Any]:
        return {
            name: {"pid": p.pid, "ops_port": p.ops_port, "starts": p.starts, "log": str(p.log_path)}
            for name, p in self.processes.items()
        }


def _ingest_port(env: Mapping[str, str]) -> int:
    configured = env.get("PALIMPSEST_INGEST_PORT")
    if configured and configured != "0":
        return int(configured)
    if configured == "0":  # "any free port": chosen here, so the supervisor knows the URL
        return free_port()
    port = 8080
    import socket

    with socket.socket() as s:
        if s.connect_ex(("127.0.0.1", port)) == 0:  # taken: like the in-process default, a free one
            return free_port()
    return port


@contextlib.asynccontextmanager
async def supervised(
    settings: BaseServiceSettings,
    stack: StackInfo,
    *,
    services: tuple[str, ...] = SERVICES,
    extra_env: Mapping[str, str] | None = None,
    ingest_port: int | None = None,
    replicas: int = 1,
) -> AsyncIterator[Supervisor]:
    """The services running as processes (ready), watched and restarted until the block exits;
    ``replicas`` processes of each service (two share its consumers, as two pods would)."""
    sup = Supervisor(
        settings, stack, services=services, extra_env=extra_env, ingest_port=ingest_port, replicas=replicas
    )
    stop = asyncio.Event()
    sup.start()
    watcher = asyncio.create_task(sup.watch(stop), name="supervisor")
    try:
        await sup.wait_ready()
        yield sup
    finally:
        stop.set()
        await asyncio.gather(watcher, return_exceptions=True)
        pending = list(sup._readiness)
        for t in pending:
            t.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
        await asyncio.to_thread(sup.stop)
