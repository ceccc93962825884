"""Serving the ASGI app with uvicorn on a socket bound up front, as a background task of the service.

Binding happens in `IngestServer.bind`, before the service starts running, so a busy port is a
clear start-up error and the bound URL is known at once (the CLI reads it from
``Infra.ingest_url``). Under the embedded runner, when the port was not configured explicitly and 8080 is
taken, a free port is used instead (with a warning) so a developer machine with something on 8080
still gets a working stack.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import socket
from typing import Any

import uvicorn

from palimpsest.core.errors import SettingsError
from palimpsest.core.ops import EmbeddedServer

log = logging.getLogger(__name__)


def _bind(host: str, port: int, *, reuse_port: bool = False) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP explicitly: asyncio sets TCP_NODELAY only on sockets whose proto says TCP, and
    # without it Nagle + delayed ACKs add ~40 ms to every response.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if reuse_port:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        sock.bind((host, port))
    except OSError:
        sock.close()
        raise
    sock.set_inheritable(True)
    return sock


class IngestServer:
    def __init__(self, app: Any, sock: socket.socket) -> None:
        self.app = app
        self.sock = sock
        self._server: EmbeddedServer | None = None

    @classmethod
    def bind(
        cls, app: Any, host: str, port: int, *, fallback_to_free_port: bool = False, reuse_port: bool = False
    ) -> IngestServer:
        try:
            return cls(app, _bind(host, port, reuse_port=reuse_port))
        except OSError as exc:
            if fallback_to_free_port and exc.errno == errno.EADDRINUSE:
                server = cls(app, _bind(host, 0))
                log.warning("port %d is in use; the ingest API listens on %s instead", port, server.url)
                return server
            raise SettingsError(
                f"the ingest API cannot listen on {host}:{port} ({exc.strerror}); set PALIMPSEST_INGEST_PORT"
            ) from exc

    @property
    def port(self) -> int:
        return int(self.sock.getsockname()[1])

    @property
    def url(self) -> str:
        host = str(self.sock.getsockname()[0])
        if host in ("0.0.0.0", "::"):  # noqa: S104 - describing a wildcard bind, not binding
            host = "127.0.0.1"
        return f"http://[{host}]:{self.port}" if ":" in host else f"http://{host}:{self.port}"

    def close(self) -> None:
        """Release the socket of a server that will not serve (bound, then not started)."""
        self.sock.close()

    async def ready(self) -> bool:
        return self._server is not None and self._server.started

    async def serve(self, stop: asyncio.Event) -> None:
        config = uvicorn.Config(
            self.app,
            lifespan="off",
            log_level="warning",
            access_log=False,
            server_header=False,
            proxy_headers=False,
            timeout_keep_alive=15,
            backlog=2048,
        )
        self._server = EmbeddedServer(config)
        task = asyncio.create_task(self._server.serve(sockets=[self.sock]))
        try:
            await asyncio.wait(
                {task, asyncio.ensure_future(stop.wait())}, return_when=asyncio.FIRST_COMPLETED
            )
        finally:
            self._server.should_exit = True
            await asyncio.gather(task, return_exceptions=True)
            self.sock.close()
