"""A real git smart-HTTP server on 127.0.0.1 that demands an ``Authorization`` header.

Tests clone from it the way the scanner clones from GitHub, GitLab or Bitbucket: over HTTP,
with the credential in a header. Authorised requests are handed to ``git http-backend`` (CGI);
anything else gets ``401`` with a ``WWW-Authenticate`` challenge, which is what makes git try
(and, with prompts disabled, fail) to ask for credentials. ``hang=True`` accepts requests and
never answers, for timeout tests. The server runs in a thread of the test process; it binds a
free port on loopback only.
"""

from __future__ import annotations

import gzip
import os
import subprocess
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from urllib.parse import urlsplit

_HANG_LIMIT_S = 120.0


@dataclass(frozen=True, slots=True)
class SeenRequest:
    method: str
    path: str
    authorized: bool


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, owner: GitHttpServer) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.owner = owner

    def handle_error(self, request: object, client_address: object) -> None:
        pass  # clients killed mid-request (timeout tests) are expected


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        self._serve()

    def do_POST(self) -> None:
        self._serve()

    def _serve(self) -> None:
        owner = self.server.owner
        authorized = self.headers.get("Authorization") == owner.authorization
        owner.record(SeenRequest(self.command, self.path, authorized))
        if owner.hang:
            owner.released.wait(_HANG_LIMIT_S)
            self.close_connection = True
            return
        body = self._read_body()
        if not authorized:
            self._reply(401, [("WWW-Authenticate", 'Basic realm="palimpsest-test"')], b"")
            return
        status, headers, payload = owner.backend(self, body)
        self._reply(status, headers, payload)

    def _read_body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            body = self._read_chunked()
        else:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.headers.get("Content-Encoding", "").lower() in ("gzip", "x-gzip"):
            body = gzip.decompress(body)
        return body

    def _read_chunked(self) -> bytes:
        parts: list[bytes] = []
        while True:
            size = int(self.rfile.readline().split(b";")[0].strip(), 16)
            if size == 0:
                while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                    pass
                return b"".join(parts)
            parts.append(self.rfile.read(size))
            self.rfile.readline()

    def _reply(self, status: int, headers: list[tuple[str, str]], payload: bytes) -> None:
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


class GitHttpServer:
    """``with GitHttpServer(root, authorization="Bearer t") as srv: srv.url("repo.git")``.

    ``root`` holds the repositories (``GIT_PROJECT_ROOT``); ``authorization`` is the exact
    ``Authorization`` header value required (``None`` lets every request through).
    """

    def __init__(self, root: Path, *, authorization: str | None, hang: bool = False) -> None:
        self.root = root
        self.authorization = authorization
        self.hang = hang
        self.released = threading.Event()
        self.requests: list[SeenRequest] = []
        self._lock = threading.Lock()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    def __enter__(self) -> GitHttpServer:
        self._server = _Server(self)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.released.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=10)

    @property
    def port(self) -> int:
        assert self._server is not None, "server not started"
        return int(self._server.server_address[1])

    def url(self, repo: str) -> str:
        return f"http://127.0.0.1:{self.port}/{repo}"

    def record(self, request: SeenRequest) -> None:
        with self._lock:
            self.requests.append(request)

    def backend(
        self, handler: BaseHTTPRequestHandler, body: bytes
    ) -> tuple[int, list[tuple[str, str]], bytes]:
        """Run ``git http-backend`` for one request and split its CGI response."""
        parts = urlsplit(handler.path)
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": os.devnull,
            "GIT_CONFIG_COUNT": "2",
            "GIT_CONFIG_KEY_0": "uploadpack.allowFilter",
            "GIT_CONFIG_VALUE_0": "true",
            "GIT_CONFIG_KEY_1": "uploadpack.allowAnySHA1InWant",
            "GIT_CONFIG_VALUE_1": "true",
            "GIT_PROJECT_ROOT": str(self.root),
            "GIT_HTTP_EXPORT_ALL": "1",
            "PATH_INFO": parts.path,
            "QUERY_STRING": parts.query,
            "REQUEST_METHOD": handler.command,
            "CONTENT_TYPE": handler.headers.get("Content-Type", ""),
            "CONTENT_LENGTH": str(len(body)),
            "REMOTE_ADDR": "127.0.0.1",
            "SERVER_PROTOCOL": "HTTP/1.1",
        }
        protocol = handler.headers.get("Git-Protocol")
        if protocol:
            env["GIT_PROTOCOL"] = protocol
        proc = subprocess.run(
            ["git", "http-backend"], input=body, env=env, capture_output=True, timeout=60, check=False
        )
        return _split_cgi(proc.stdout)


def _split_cgi(output: bytes) -> tuple[int, list[tuple[str, str]], bytes]:
    head, sep, payload = output.partition(b"\r\n\r\n")
    if not sep:
        head, sep, payload = output.partition(b"\n\n")
    status = 200
    headers: list[tuple[str, str]] = []
    for line in head.decode("latin-1").splitlines():
        name, _, value = line.partition(":")
        if name.lower() == "status":
            status = int(value.split()[0])
        elif name:
            headers.append((name.strip(), value.strip()))
    return status, headers, payload
