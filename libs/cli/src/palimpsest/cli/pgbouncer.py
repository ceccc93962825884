"""PgBouncer in transaction mode on loopback, in front of a PostgreSQL (the tests' or the soak's).

As platform teams run Palimpsest behind CloudNativePG's pooler or a PgBouncer Deployment, every
client transaction may land on another server connection, so any reliance on session state (a
session advisory lock, ``SET``, ``LISTEN``, a prepared statement) breaks. Two users of it:
``PALIMPSEST_TEST_PGBOUNCER=1`` makes :func:`tests.support.servers.session_servers` hand out the
application role's URL through it, and ``palimpsest chaos --pgbouncer`` gives the services their
database URL through it (migrations and the relay's ``LISTEN`` stay direct). It uses Debian's
``pgbouncer`` binary (1.18 and later), installed by ``.ci/run``.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from psycopg.conninfo import conninfo_to_dict, make_conninfo

from palimpsest.cli.embedded import free_port
from palimpsest.core.errors import EmbeddedStackError


def pgbouncer_binary() -> str | None:
    return shutil.which("pgbouncer") or next(
        (p for p in ("/usr/sbin/pgbouncer", "/usr/bin/pgbouncer") if Path(p).exists()), None
    )


@dataclass(slots=True)
class PgBouncer:
    """``pool_mode = transaction``, ``auth_type = trust`` for ``users``, any database of ``upstream``."""

    upstream: str  # a URL of the server PgBouncer connects to (its host and port are used)
    users: tuple[str, ...]
    port: int = 0
    pool_size: int = 20
    directory: Path | None = None
    proc: subprocess.Popen[bytes] | None = None
    _log: IO[bytes] | None = field(default=None, repr=False)

    def start(self) -> None:
        binary = pgbouncer_binary()
        if binary is None:
            raise EmbeddedStackError("pgbouncer is not installed (apt-get install pgbouncer)")
        params = conninfo_to_dict(self.upstream)
        self.directory = Path(tempfile.mkdtemp(prefix="palimpsest-pgbouncer-"))
        self.directory.chmod(0o755)  # PgBouncer drops root for `nobody`, which reads the files
        self.port = self.port or free_port()
        userlist = self.directory / "userlist.txt"
        userlist.write_text("".join(f'"{u}" ""\n' for u in self.users), encoding="utf-8")
        ini = self.directory / "pgbouncer.ini"
        lines = [
            "[databases]",
            f"* = host={params.get('host', '127.0.0.1')} port={params.get('port', 5432)}",
            "[pgbouncer]",
            "listen_addr = 127.0.0.1",
            f"listen_port = {self.port}",
            "unix_socket_dir =",
            "auth_type = trust",
            f"auth_file = {userlist}",
            "pool_mode = transaction",
            f"default_pool_size = {self.pool_size}",
            "max_client_conn = 1000",
            "max_db_connections = 0",
            "server_check_delay = 0",
            "ignore_startup_parameters = extra_float_digits,options",
        ]
        if os.geteuid() == 0:
            lines.append("user = nobody")
        ini.write_text("\n".join(lines) + "\n", encoding="utf-8")
        for f in (userlist, ini):
            f.chmod(0o644)
        log = (self.directory / "pgbouncer.log").open("wb")
        self._log = log
        self.proc = subprocess.Popen(
            [binary, str(ini)],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise EmbeddedStackError(f"pgbouncer exited at start: {self.log_tail()}")
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.5).close()
                return
            except OSError:
                time.sleep(0.1)
        self.stop()
        raise EmbeddedStackError(f"pgbouncer did not listen on 127.0.0.1:{self.port}: {self.log_tail()}")

    def url(self, direct: str) -> str:
        """``direct`` (a URL of the upstream server) through this PgBouncer."""
        params = conninfo_to_dict(direct)
        params["host"] = "127.0.0.1"
        params["port"] = str(self.port)
        return make_conninfo("", **params)

    def log_tail(self) -> str:
        if self.directory is None:
            return ""
        path = self.directory / "pgbouncer.log"
        return " | ".join(path.read_text(errors="replace").strip().splitlines()[-3:]) if path.exists() else ""

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        if self._log is not None:
            self._log.close()
            self._log = None
        if self.directory is not None:
            shutil.rmtree(self.directory, ignore_errors=True)
            self.directory = None
