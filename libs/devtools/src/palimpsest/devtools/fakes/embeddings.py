"""A deterministic OpenAI-compatible embeddings endpoint on 127.0.0.1, for ``bench embed``.

``palimpsest bench embed`` measures *our* overhead per embedded chunk (reading chunks, batching,
the gateway, litellm, HTTP, storing vectors, the HNSW index), so the provider must answer at once:
this server returns a unit vector per input derived from the SHA-256 of the text (same text, same
vector), as JSON floats or base64 float32 (``encoding_format``), with word-count usage. It runs
in a child process (``python -m palimpsest.devtools.fakes.embeddings``, which prints its URL) so its CPU use
is not counted against the pipeline's event loop. Loopback only; never a real provider.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
import struct
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def vector(text: str, dimensions: int) -> list[float]:
    values: list[float] = []
    counter = 0
    while len(values) < dimensions:
        digest = hashlib.sha256(f"{counter}:{text}".encode()).digest()
        values.extend((b - 127.5) / 127.5 for b in digest)
        counter += 1
    values = values[:dimensions]
    norm = math.sqrt(sum(v * v for v in values)) or 1.0
    return [v / norm for v in values]


def _handler(dimensions: int) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            return

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
            raw = body.get("input", [])
            inputs = [raw] if isinstance(raw, str) else [str(x) for x in raw]
            as_b64 = body.get("encoding_format") == "base64"
            data = []
            for i, text in enumerate(inputs):
                vec = vector(text, dimensions)
                value: Any = (
                    base64.b64encode(struct.pack(f"<{dimensions}f", *vec)).decode() if as_b64 else vec
                )
                data.append({"object": "embedding", "index": i, "embedding": value})
            tokens = sum(len(t.split()) for t in inputs)
            payload = json.dumps(
                {
                    "object": "list",
                    "data": data,
                    "model": body.get("model", "bench-embed"),
                    "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
                }
            ).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

    return Handler


def serve(dimensions: int = 384) -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(dimensions))
    server.daemon_threads = True
    print(f"http://127.0.0.1:{server.server_address[1]}/v1", flush=True)
    server.serve_forever(poll_interval=0.2)


@contextmanager
def running(dimensions: int = 384) -> Iterator[str]:
    """The server in a child process; yields its OpenAI-style base URL."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "palimpsest.devtools.fakes.embeddings", str(dimensions)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        if not url.startswith("http://127.0.0.1:"):
            raise RuntimeError("the fake embeddings server did not start")
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()


if __name__ == "__main__":
    serve(int(sys.argv[1]) if len(sys.argv) > 1 else 384)
