"""A real git smart-HTTP server on 127.0.0.1, for the benchmarks and the tests.

:class:`GitHttpServer` serves the repositories under a root with ``git http-backend`` (CGI) in a
thread of the calling process, on a free loopback port. With ``authorization`` it demands that exact
``Authorization`` header, as GitHub, GitLab and Bitbucket do, and answers anything else ``401``
with a ``WWW-Authenticate`` challenge (which makes git try, and with prompts disabled fail, to ask
for credentials); ``hang=True`` accepts requests and never answers, for timeout tests. Responses
stream from ``http-backend`` to the socket; nothing is buffered whole. ``authorize`` decides per
request instead (path and header: several owners' repositories, each with its own token), and
``tls`` with ``port`` serves https, e.g. ``https://127.0.0.1/owner/name.git`` on port 443, the only
form Palimpsest registers for an installation's repository (:func:`self_signed_tls` makes the
certificate; git trusts it through ``GIT_SSL_CAINFO``).

``python -m palimpsest.devtools.fakes.git_http --root DIR (--generate N F SEED | --repo PATH)`` is
``bench recency``'s git host: it generates (or takes) a repository, prints one JSON line (``url``,
``branch``, generation figures) once it listens, and serves until its stdin closes. It runs as a
separate process so the generator's and the server's memory are not counted as the scanner's.
Loopback only; no service image installs it.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import gzip
import ipaddress
import json
import os
import shutil
import ssl
import subprocess
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import IO, Any
from urllib.parse import urlsplit

from palimpsest.devtools.bench.recency import generate_history, git_env

_COPY = 256 * 1024
_HANG_LIMIT_S = 120.0


@dataclass(frozen=True, slots=True)
class SeenRequest:
    method: str
    path: str
    authorized: bool


class GitHttpHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"  # the connection closes after each streamed response
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
        body = self._body()
        if owner.authorize is not None:
            authorized = owner.authorize(urlsplit(self.path).path, self.headers.get("Authorization"))
        if not authorized:
            self.reply(401, [("WWW-Authenticate", 'Basic realm="palimpsest-test"')], b"")
            return
        owner.respond(self, body)

    def reply(self, status: int, headers: list[tuple[str, str]], payload: bytes) -> None:
        """One whole answer."""
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def stream_backend(self, root: Path, body: bytes) -> None:
        """``git http-backend``'s answer for the repositories under ``root``, streamed."""
        parts = urlsplit(self.path)
        env = {
            **git_env(),
            "GIT_CONFIG_COUNT": "2",
            "GIT_CONFIG_KEY_0": "uploadpack.allowFilter",
            "GIT_CONFIG_VALUE_0": "true",
            "GIT_CONFIG_KEY_1": "uploadpack.allowAnySHA1InWant",
            "GIT_CONFIG_VALUE_1": "true",
            "GIT_PROJECT_ROOT": str(root),
            "GIT_HTTP_EXPORT_ALL": "1",
            "PATH_INFO": parts.path,
            "QUERY_STRING": parts.query,
            "REQUEST_METHOD": self.command,
            "CONTENT_TYPE": self.headers.get("Content-Type", ""),
            "CONTENT_LENGTH": str(len(body)),
            "REMOTE_ADDR": "127.0.0.1",
            "SERVER_PROTOCOL": "HTTP/1.0",
        }
        if self.headers.get("Git-Protocol"):
            env["GIT_PROTOCOL"] = self.headers["Git-Protocol"]
        with subprocess.Popen(
            ["git", "http-backend"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env
        ) as proc:
            assert proc.stdin is not None
            assert proc.stdout is not None
            feeder = threading.Thread(target=_feed, args=(proc.stdin, body), daemon=True)
            feeder.start()
            try:
                self._relay(proc.stdout)
            finally:
                feeder.join()

    def _relay(self, out: IO[bytes]) -> None:
        status, headers = 200, []
        while (line := out.readline().rstrip(b"\r\n")) != b"":
            name, _, value = line.decode("latin-1").partition(":")
            if name.lower() == "status":
                status = int(value.split()[0])
            else:
                headers.append((name.strip(), value.strip()))
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.end_headers()
        shutil.copyfileobj(out, self.wfile, _COPY)

    def _body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            parts = []
            while size := int(self.rfile.readline().split(b";")[0].strip(), 16):
                parts.append(self.rfile.read(size))
                self.rfile.readline()
            while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                pass
            body = b"".join(parts)
        else:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.headers.get("Content-Encoding", "").lower() in ("gzip", "x-gzip"):
            body = gzip.decompress(body)
        return body


def _feed(stdin: IO[bytes], body: bytes) -> None:
    try:
        stdin.write(body)
    except BrokenPipeError:
        pass
    finally:
        stdin.close()


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, owner: GitHttpServer) -> None:
        super().__init__((owner.host, owner.requested_port), GitHttpHandler)
        self.owner = owner

    def get_request(self) -> tuple[Any, Any]:
        sock, address = self.socket.accept()
        if self.owner.tls is None:
            return sock, address
        # the handshake runs in the request's thread (finish_request), never in the accept loop
        return self.owner.tls.wrap_socket(sock, server_side=True, do_handshake_on_connect=False), address

    def finish_request(self, request: Any, client_address: Any) -> None:
        if isinstance(request, ssl.SSLSocket):
            request.settimeout(30.0)
            try:
                request.do_handshake()
            except (OSError, ssl.SSLError):
                return
        super().finish_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        if isinstance(request, ssl.SSLSocket):  # close_notify first: the response ends at EOF
            with contextlib.suppress(OSError, ssl.SSLError, ValueError):
                request = request.unwrap()
        super().shutdown_request(request)

    def handle_error(self, request: object, client_address: object) -> None:
        pass  # clients killed mid-request (timeout tests) are expected


class GitHttpServer:
    """``with GitHttpServer(root, authorization="Bearer t") as srv: srv.url("repo.git")``.

    ``root`` holds the repositories (``GIT_PROJECT_ROOT``); ``authorization`` is the exact
    ``Authorization`` header value required (``None``: a request that sends one is refused).
    """

    def __init__(
        self,
        root: Path,
        *,
        authorization: str | None = None,
        hang: bool = False,
        authorize: Callable[[str, str | None], bool] | None = None,
        tls: ssl.SSLContext | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        self.root = root
        self.authorization = authorization
        self.authorize = authorize
        self.tls = tls
        self.host = host
        self.requested_port = port
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
        if self.tls is not None and self.port == 443:
            return f"https://{self.host}/{repo}"
        return f"{'https' if self.tls else 'http'}://{self.host}:{self.port}/{repo}"

    def record(self, request: SeenRequest) -> None:
        with self._lock:
            self.requests.append(request)

    def respond(self, handler: GitHttpHandler, body: bytes) -> None:
        """Answer one authorised request (a subclass may answer otherwise)."""
        handler.stream_backend(self.root, body)


def self_signed_tls(directory: Path, host: str = "127.0.0.1") -> tuple[ssl.SSLContext, Path]:
    """A server context for ``host`` (an IP literal) with a fresh self-signed certificate, and the
    certificate's file, for clients to trust (``GIT_SSL_CAINFO``). The key file is gone once loaded."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, host)])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=2))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address(host))]), critical=False
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    directory.mkdir(parents=True, exist_ok=True)
    cert_file = directory / "fake-git-host.pem"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file = directory / "fake-git-host.key"
    key_file.touch(mode=0o600)
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    try:
        context.load_cert_chain(cert_file, key_file)
    finally:
        key_file.unlink()
    return context, cert_file


def _branch(repo: Path) -> str:
    out = subprocess.run(
        ["git", "symbolic-ref", "--quiet", "--short", "HEAD"],
        cwd=repo,
        capture_output=True,
        text=True,
        check=False,
        env=git_env(),
    )
    return out.stdout.strip() or "main"


def _count(repo: Path, branch: str) -> int:
    out = subprocess.run(
        ["git", "rev-list", "--count", branch, "--"],
        cwd=repo,
        capture_output=True,
        text=True,
        check=False,
        env=git_env(),
    )
    return int(out.stdout.strip() or 0)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m palimpsest.devtools.fakes.git_http")
    parser.add_argument("--root", type=Path, required=True, help="a scratch directory")
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--generate", nargs=3, type=int, metavar=("COMMITS", "FILES", "SEED"))
    source.add_argument("--repo", type=Path, help="serve this existing repository instead")
    args = parser.parse_args(argv)
    info: dict[str, object] = {}
    if args.generate:
        commits, files, seed = args.generate
        generated = generate_history(args.root / "bench.git", commits=commits, files=files, seed=seed)
        root, name = args.root, "bench.git"
        info.update(generate_s=round(generated.generate_s, 2), head_files=generated.files)
    else:
        repo = args.repo.resolve()
        root, name = repo.parent, repo.name
    with GitHttpServer(root) as server:
        branch = _branch(root / name)
        info.update(url=server.url(name), branch=branch, commits=_count(root / name, branch))
        sys.stdout.write(json.dumps(info) + "\n")
        sys.stdout.flush()
        sys.stdin.read()  # until the benchmark closes our stdin
    return 0


if __name__ == "__main__":
    os.environ.setdefault("LC_ALL", "C")
    raise SystemExit(main())
