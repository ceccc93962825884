"""A local OpenAI-compatible model server: real HTTP on 127.0.0.1, deterministic answers.

Every test that talks to a model talks to this server through the real client stack (the LLM
gateway → litellm → the OpenAI client → HTTP), so no test mocks the client and none reaches the
internet. It serves:

* ``POST /v1/chat/completions`` -- the reply is ``reply`` (a string, or a function of the request
  body); usage counts whitespace-separated words of the messages and of the reply;
* ``POST /v1/embeddings`` -- a unit vector of ``dimensions`` floats per input, derived from the
  SHA-256 of the input text (same text → same vector), as floats or base64 (``encoding_format``);
* ``POST /v1/rerank`` -- Cohere/Jina-style results scored by word overlap with the query.

Requests are captured (path, headers, JSON body) for assertions. Planned failures make the next
matching requests fail: an HTTP status (``429``, ``500``, ``503``…, with an optional
``Retry-After``), ``"timeout"`` (the response never comes until the client gives up),
``"oversize"`` (400 ``context_length_exceeded``), ``"wrong_dimension"`` (embeddings one float
longer than configured) or ``"malformed"`` (a 200 whose body is not JSON). With
``max_input_tokens`` set, oversize inputs fail the same way without planning.

``bench embed`` runs it in a child process (:func:`in_child_process`; ``python -m
palimpsest.devtools.fakes.llm DIMENSIONS`` prints its base URL) without capturing requests, so the
provider answers at once and its CPU use is not counted against the pipeline's event loop.

Usage::

    with FakeLLM(reply="## Architecture Overview\\n...") as llm:
        settings = ...(llm_model="openai/fake", llm_api_base=llm.base_url)
        llm.fail(429, times=2)            # the next two requests answer 429
        ...
        assert llm.requests("chat")[0].body["max_tokens"] == 5120
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
import operator
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal

Endpoint = Literal["chat", "embeddings", "rerank"]
FailureKind = int | Literal["timeout", "oversize", "wrong_dimension", "malformed"]

_PATHS: dict[str, Endpoint] = {
    "/v1/chat/completions": "chat",
    "/chat/completions": "chat",
    "/v1/embeddings": "embeddings",
    "/embeddings": "embeddings",
    "/v1/rerank": "rerank",
    "/v2/rerank": "rerank",
    "/rerank": "rerank",
}


@dataclass(frozen=True, slots=True)
class Captured:
    """One request as the server received it."""

    endpoint: Endpoint
    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    failed: str | None = None  # the planned failure it received, if any

    @property
    def messages(self) -> list[dict[str, Any]]:
        return list(self.body.get("messages", []))

    def text(self) -> str:
        """Every message's content joined, in order (what the model was shown)."""
        return "\n".join(str(m.get("content", "")) for m in self.messages)


@dataclass(slots=True)
class _Planned:
    kind: FailureKind
    remaining: int
    endpoint: Endpoint | None
    retry_after: float | None


@dataclass
class FakeLLM:
    """The server; use as a context manager (it listens on an ephemeral port of 127.0.0.1)."""

    reply: str | Callable[[dict[str, Any]], str] = "fake model reply"
    dimensions: int = 384
    max_input_tokens: int | None = None
    api_key: str | None = None  # when set, requests must carry ``Authorization: Bearer <key>``
    hang_s: float = 30.0  # how long a "timeout" failure keeps the client waiting at most
    model_name: str = "fake-model"
    # (text, dimensions) → vector; None: fake_embedding (SHA-256). Tests of ranking pass a vectorizer
    # under which similar texts get similar vectors (added for the embedder, issue 7).
    vectorizer: Callable[[str, int], list[float]] | None = None
    record: bool = True  # False: keep no captured requests (a benchmark's long run)
    embeddings_latency_s: float = 0.0  # each embeddings reply waits this long (a provider's latency)
    peak_embeddings_in_flight: int = 0  # the most embeddings requests it has held at once
    _in_flight: int = 0
    captured: list[Captured] = field(default_factory=list)
    _planned: list[_Planned] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _release: threading.Event = field(default_factory=threading.Event)
    _server: ThreadingHTTPServer | None = None
    _thread: threading.Thread | None = None

    # ------------------------------------------------------------------ lifecycle

    def __enter__(self) -> FakeLLM:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        handler = _handler_for(self)
        server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        server.daemon_threads = True
        server.block_on_close = False
        self._server = server
        self._release.clear()
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()

    def stop(self) -> None:
        self._release.set()  # wake hanging "timeout" handlers
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=10)
        self._server = None
        self._thread = None

    @property
    def port(self) -> int:
        assert self._server is not None, "the fake LLM server is not running"
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT`` (no path)."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def base_url(self) -> str:
        """The OpenAI-style base URL (``…/v1``) to configure as the API base."""
        return f"{self.url}/v1"

    # ------------------------------------------------------------------ test controls

    def fail(
        self,
        kind: FailureKind,
        *,
        times: int = 1,
        endpoint: Endpoint | None = None,
        retry_after: float | None = None,
    ) -> None:
        """Make the next ``times`` requests (of ``endpoint``, or any) fail with ``kind``."""
        with self._lock:
            self._planned.append(_Planned(kind, times, endpoint, retry_after))

    def requests(self, endpoint: Endpoint | None = None) -> list[Captured]:
        with self._lock:
            return [c for c in self.captured if endpoint is None or c.endpoint == endpoint]

    def reset(self) -> None:
        with self._lock:
            self.captured.clear()
            self._planned.clear()

    # ------------------------------------------------------------------ behaviour

    def _take_failure(self, endpoint: Endpoint) -> _Planned | None:
        with self._lock:
            for planned in self._planned:
                if planned.endpoint in (None, endpoint) and planned.remaining > 0:
                    planned.remaining -= 1
                    if planned.remaining == 0:
                        self._planned.remove(planned)
                    return planned
        return None

    def _record(self, captured: Captured) -> None:
        if not self.record:
            return
        with self._lock:
            self.captured.append(captured)

    def reply_for(self, body: dict[str, Any]) -> str:
        return self.reply(body) if callable(self.reply) else self.reply


# ---------------------------------------------------------------------------- deterministic outputs


def count_tokens(text: str) -> int:
    """The fake's token count: whitespace-separated words (deterministic, tokenizer-free)."""
    return len(text.split())


_UNIT = [(b - 127.5) / 127.5 for b in range(256)]  # a digest byte's coordinate


def fake_embedding(text: str, dimensions: int) -> list[float]:
    """A deterministic unit vector for ``text``: the bytes of SHA-256 digests of ``counter:text``
    as coordinates in -1..1, normalised, rounded to six decimals.

    The "instant" provider must cost little: benchmarks read our embedding overhead beside it on the
    same cores. Each coordinate is one of 256 values, so each distinct byte is divided and rounded
    once per vector (``round`` to six places is most of the cost) and looked up by byte after;
    the vector is the same, float for float, as dividing and rounding every coordinate."""
    data: list[int] = []
    counter = 0
    while len(data) < dimensions:
        data.extend(hashlib.sha256(f"{counter}:{text}".encode()).digest())
        counter += 1
    data = data[:dimensions]
    vector = list(map(_UNIT.__getitem__, data))
    norm = math.sqrt(sum(map(operator.mul, vector, vector))) or 1.0
    rounded = {b: round(_UNIT[b] / norm, 6) for b in set(data)}
    return list(map(rounded.__getitem__, data))


def _message_text(body: dict[str, Any]) -> str:
    parts: list[str] = []
    for message in body.get("messages", []):
        content = message.get("content", "")
        if isinstance(content, list):  # content parts
            parts.extend(str(p.get("text", "")) for p in content if isinstance(p, dict))
        else:
            parts.append(str(content))
    return "\n".join(parts)


def _inputs(body: dict[str, Any]) -> list[str]:
    raw = body.get("input", [])
    if isinstance(raw, str):
        return [raw]
    return [x if isinstance(x, str) else json.dumps(x) for x in raw]


# ---------------------------------------------------------------------------- HTTP


def _handler_for(fake: FakeLLM) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # quiet
            return

        def do_GET(self) -> None:
            if self.path.rstrip("/") in ("/v1/models", "/models"):
                self._json(200, {"object": "list", "data": [{"id": fake.model_name, "object": "model"}]})
            else:
                self._json(404, {"error": {"message": "not found", "type": "invalid_request_error"}})

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            endpoint = _PATHS.get(self.path.split("?", 1)[0].rstrip("/"))
            try:
                body = json.loads(raw or b"{}")
            except ValueError:
                self._json(400, {"error": {"message": "invalid JSON", "type": "invalid_request_error"}})
                return
            if endpoint is None:
                self._json(
                    404, {"error": {"message": f"no route {self.path}", "type": "invalid_request_error"}}
                )
                return
            headers = {k.lower(): v for k, v in self.headers.items()}
            if fake.api_key is not None and headers.get("authorization") != f"Bearer {fake.api_key}":
                fake._record(Captured(endpoint, self.path, headers, body, failed="unauthorized"))
                self._json(401, {"error": {"message": "invalid api key", "type": "invalid_request_error"}})
                return
            planned = fake._take_failure(endpoint)
            kind = planned.kind if planned else None
            if kind is None and self._oversize(endpoint, body):
                kind = "oversize"
            fake._record(Captured(endpoint, self.path, headers, body, failed=str(kind) if kind else None))
            if kind is not None and kind != "wrong_dimension":
                self._fail(kind, planned.retry_after if planned else None)
                return
            if endpoint == "chat":
                self._chat(body)
            elif endpoint == "embeddings":
                self._embeddings(body, extra=1 if kind == "wrong_dimension" else 0)
            else:
                self._rerank(body)

        # -------------------------------------------------------------- answers

        def _chat(self, body: dict[str, Any]) -> None:
            text = fake.reply_for(body)
            prompt_tokens = count_tokens(_message_text(body))
            completion_tokens = count_tokens(text)
            self._json(
                200,
                {
                    "id": f"chatcmpl-fake-{len(fake.captured)}",
                    "object": "chat.completion",
                    "created": int(time.time()),
                    "model": str(body.get("model") or fake.model_name),
                    "choices": [
                        {
                            "index": 0,
                            "message": {"role": "assistant", "content": text},
                            "finish_reason": "stop",
                        }
                    ],
                    "usage": {
                        "prompt_tokens": prompt_tokens,
                        "completion_tokens": completion_tokens,
                        "total_tokens": prompt_tokens + completion_tokens,
                    },
                },
            )

        def _embeddings(self, body: dict[str, Any], *, extra: int) -> None:
            with fake._lock:
                fake._in_flight += 1
                fake.peak_embeddings_in_flight = max(fake.peak_embeddings_in_flight, fake._in_flight)
            try:
                if fake.embeddings_latency_s:
                    fake._release.wait(fake.embeddings_latency_s)
                self._embeddings_reply(body, extra=extra)
            finally:
                with fake._lock:
                    fake._in_flight -= 1

        def _embeddings_reply(self, body: dict[str, Any], *, extra: int) -> None:
            inputs = _inputs(body)
            as_base64 = body.get("encoding_format") == "base64"
            data = []
            for index, text in enumerate(inputs):
                vector = (fake.vectorizer or fake_embedding)(text, fake.dimensions + extra)
                value: Any = (
                    base64.b64encode(struct.pack(f"<{len(vector)}f", *vector)).decode()
                    if as_base64
                    else vector
                )
                data.append({"object": "embedding", "index": index, "embedding": value})
            tokens = sum(count_tokens(t) for t in inputs)
            self._json(
                200,
                {
                    "object": "list",
                    "data": data,
                    "model": str(body.get("model") or fake.model_name),
                    "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
                },
            )

        def _rerank(self, body: dict[str, Any]) -> None:
            query = set(str(body.get("query", "")).lower().split())
            documents = [
                d if isinstance(d, str) else str(d.get("text", "")) for d in body.get("documents", [])
            ]
            scored = []
            for index, doc in enumerate(documents):
                words = set(doc.lower().split())
                score = len(query & words) / len(query | words) if query | words else 0.0
                scored.append({"index": index, "relevance_score": round(score, 6)})
            scored.sort(key=lambda r: (-float(r["relevance_score"]), int(r["index"])))
            top_n = body.get("top_n")
            results = scored[: int(top_n)] if top_n else scored
            tokens = count_tokens(str(body.get("query", ""))) + sum(count_tokens(d) for d in documents)
            self._json(
                200,
                {
                    "id": f"rerank-fake-{len(fake.captured)}",
                    "results": results,
                    "meta": {"billed_units": {"search_units": 1}, "tokens": {"input_tokens": tokens}},
                },
            )

        # -------------------------------------------------------------- failures

        def _oversize(self, endpoint: Endpoint, body: dict[str, Any]) -> bool:
            limit = fake.max_input_tokens
            if limit is None:
                return False
            if endpoint == "embeddings":
                return any(count_tokens(t) > limit for t in _inputs(body))
            if endpoint == "chat":
                return count_tokens(_message_text(body)) > limit
            return False

        def _fail(self, kind: FailureKind, retry_after: float | None) -> None:
            if kind == "timeout":
                fake._release.wait(fake.hang_s)
                self.close_connection = True
                return
            if kind == "oversize":
                self._json(
                    400,
                    {
                        "error": {
                            "message": "This model's maximum context length was exceeded.",
                            "type": "invalid_request_error",
                            "code": "context_length_exceeded",
                        }
                    },
                )
                return
            if kind == "malformed":
                self._raw(200, b"<html>not json</html>", "text/html")
                return
            status = int(kind) if isinstance(kind, int) else 500
            extra = {"Retry-After": f"{retry_after:g}"} if retry_after is not None else {}
            self._json(
                status,
                {"error": {"message": f"planned failure {status}", "type": "server_error", "code": status}},
                extra,
            )

        def _json(self, status: int, payload: Any, extra: dict[str, str] | None = None) -> None:
            self._raw(status, json.dumps(payload).encode(), "application/json", extra)

        def _raw(self, status: int, data: bytes, ctype: str, extra: dict[str, str] | None = None) -> None:
            try:
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(data)))
                for key, value in (extra or {}).items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                self.close_connection = True

    return Handler


def running(**kwargs: Any) -> Iterator[FakeLLM]:
    """A generator for pytest fixtures: ``yield from running(reply=...)``."""
    with FakeLLM(**kwargs) as fake:
        yield fake


# ---------------------------------------------------------------------------- in a child process


@contextmanager
def in_child_process(dimensions: int = 384, embeddings_latency_s: float = 0.0) -> Iterator[str]:
    """The server in a child process, capturing nothing; yields its OpenAI-style base URL."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "palimpsest.devtools.fakes.llm", str(dimensions), str(embeddings_latency_s)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        if not url.startswith("http://127.0.0.1:"):
            raise RuntimeError("the fake model server did not start")
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


def serve(dimensions: int, embeddings_latency_s: float = 0.0) -> None:
    """Serve until terminated, printing the base URL first (the child of :func:`in_child_process`)."""
    with FakeLLM(dimensions=dimensions, record=False, embeddings_latency_s=embeddings_latency_s) as fake:
        print(fake.base_url, flush=True)
        threading.Event().wait()


if __name__ == "__main__":
    serve(int(sys.argv[1]) if len(sys.argv) > 1 else 384, float(sys.argv[2]) if len(sys.argv) > 2 else 0.0)
