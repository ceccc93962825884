"""The benchmark's git host: generate (or take) a repository and serve it over smart HTTP.

``python -m palimpsest.devtools.fakes.git_http --root DIR (--generate N F SEED | --repo PATH)``
prints one JSON line (``url``, ``branch``, generation figures) once it listens on 127.0.0.1,
and serves ``git http-backend`` until its stdin closes. It runs as a separate process so the
generator's and the server's memory are not counted as the scanner's. Responses stream from
``http-backend`` to the socket; nothing is buffered whole. Benchmark use only: no auth, loopback.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import IO
from urllib.parse import urlsplit

from palimpsest.devtools.bench.recency import generate_history, git_env

_COPY = 256 * 1024


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"  # the connection closes after each streamed response
    server: _Server

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        self._serve()

    def do_POST(self) -> None:
        self._serve()

    def _serve(self) -> None:
        body = self._body()
        parts = urlsplit(self.path)
        env = {
            **git_env(),
            "GIT_CONFIG_COUNT": "1",
            "GIT_CONFIG_KEY_0": "uploadpack.allowFilter",
            "GIT_CONFIG_VALUE_0": "true",
            "GIT_PROJECT_ROOT": str(self.server.root),
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
        proc = subprocess.Popen(
            ["git", "http-backend"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env
        )
        assert proc.stdin is not None
        assert proc.stdout is not None
        feeder = threading.Thread(target=_feed, args=(proc.stdin, body), daemon=True)
        feeder.start()
        try:
            self._relay(proc.stdout)
        finally:
            feeder.join()
            proc.wait()

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

    def __init__(self, root: Path) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.root = root


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
    server = _Server(root)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]
    branch = _branch(root / name)
    info.update(url=f"http://127.0.0.1:{port}/{name}", branch=branch, commits=_count(root / name, branch))
    sys.stdout.write(json.dumps(info) + "\n")
    sys.stdout.flush()
    sys.stdin.read()  # until the benchmark closes our stdin
    server.shutdown()
    server.server_close()
    return 0


if __name__ == "__main__":
    os.environ.setdefault("LC_ALL", "C")
    raise SystemExit(main())
