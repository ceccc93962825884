"""The operations endpoint every process serves: ``/healthz``, ``/readyz`` and ``/metrics``.

Liveness only says the event loop answers. Readiness runs the registered checks (database reachable,
NATS connected, consumer bound) so Kubernetes stops routing to, and KEDA stops counting on, a pod
that lost a dependency. Metrics are the Prometheus text format of :data:`metrics.REGISTRY`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
from collections.abc import Awaitable, Callable, Iterator

import uvicorn
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from palimpsest.core.metrics import REGISTRY

log = logging.getLogger(__name__)

Check = Callable[[], Awaitable[bool]]


class EmbeddedServer(uvicorn.Server):
    """A uvicorn server that leaves signal handling to the process that embeds it."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


class OpsServer:
    def __init__(self, host: str, port: int) -> None:
        self.host = host
        self.port = port
        self.checks: dict[str, Check] = {}
        self._server: EmbeddedServer | None = None
        self._socket: socket.socket | None = None

    def add_check(self, name: str, check: Check) -> None:
        self.checks[name] = check

    async def readiness(self) -> dict[str, bool]:
        async def run(check: Check) -> bool:
            try:
                return await asyncio.wait_for(check(), 3.0)
            except Exception:
                return False

        names = list(self.checks)
        results = await asyncio.gather(*(run(self.checks[n]) for n in names))
        return dict(zip(names, results, strict=True))

    def app(self) -> Starlette:
        async def healthz(_: Request) -> Response:
            return JSONResponse({"status": "ok"})

        async def readyz(_: Request) -> Response:
            results = await self.readiness()
            ok = all(results.values())
            return JSONResponse({"ready": ok, "checks": results}, status_code=200 if ok else 503)

        async def metrics(_: Request) -> Response:
            return Response(generate_latest(REGISTRY), media_type=CONTENT_TYPE_LATEST)

        return Starlette(
            routes=[Route("/healthz", healthz), Route("/readyz", readyz), Route("/metrics", metrics)]
        )

    def bind(self) -> int:
        """Bind the listening socket now (port 0 picks a free one); returns the bound port."""
        if self._socket is None:
            family = socket.AF_INET6 if ":" in self.host else socket.AF_INET
            sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)  # asyncio sets TCP_NODELAY
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((self.host, self.port))
            sock.set_inheritable(True)
            self._socket = sock
        return int(self._socket.getsockname()[1])

    async def serve(self, stop: asyncio.Event) -> None:
        self.bind()
        assert self._socket is not None
        config = uvicorn.Config(self.app(), log_level="warning", lifespan="off", access_log=False)
        self._server = EmbeddedServer(config)
        task = asyncio.create_task(self._server.serve(sockets=[self._socket]))
        await stop.wait()
        self._server.should_exit = True
        await task
        self._socket.close()

    @property
    def bound_port(self) -> int | None:
        return int(self._socket.getsockname()[1]) if self._socket is not None else None
