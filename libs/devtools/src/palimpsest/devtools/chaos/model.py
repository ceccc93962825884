"""A review model for the soak: an OpenAI-compatible chat endpoint on 127.0.0.1, deterministic.

With it the soak's reviews have findings, so posting them inline, not reposting them on later
pushes and redeliveries, and editing the summary in place are all under fault. It answers every
``POST /v1/chat/completions`` (and ``/chat/completions``) that carries the expected key with one
finding on the first added line of the diff under review (the prompt's first ```` ```diff ````
block) — the same diff, the same finding — and counts the calls.
"""

from __future__ import annotations

import hmac
import json
import re
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MODEL = "openai/chaos-reviewer"
_DIFF = re.compile(r"```diff\n(.*?)\n```", re.S)
_HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,\d+)? @@")


def first_added_line(diff: str) -> tuple[str, int, str] | None:
    """(path, new-side line, text) of the diff's first added line."""
    path, line = None, 0
    for raw in diff.splitlines():
        if raw.startswith("+++ "):
            path = raw[4:].removeprefix("b/")
        elif (hunk := _HUNK.match(raw)) is not None:
            line = int(hunk.group(1))
        elif raw.startswith("+") and path and path != "/dev/null" and line:
            return path, line, raw[1:]
        elif raw.startswith(" "):
            line += 1
    return None


def reply_for(prompt: str) -> str:
    found = _DIFF.search(prompt)
    first = first_added_line(found.group(1)) if found else None
    findings = []
    if first is not None:
        path, line, _ = first
        findings.append(
            {
                "path": path,
                "start_line": line,
                "end_line": line,
                "severity": "minor",
                "category": "chaos",
                "message": "The soak flags the first added line.",
            }
        )
    return json.dumps({"summary": f"{len(findings)} finding(s).", "findings": findings})


@dataclass
class ChaosModel:
    key: str
    calls: int = 0
    refused: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def handler(self) -> type[BaseHTTPRequestHandler]:
        model = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                return

            def _reply(self, status: int, payload: Any) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                if self.path.split("?", 1)[0].rstrip("/") not in (
                    "/v1/chat/completions",
                    "/chat/completions",
                ):
                    self._reply(404, {"error": {"message": "not found"}})
                    return
                given = self.headers.get("Authorization", "")
                if not hmac.compare_digest(given, f"Bearer {model.key}"):
                    with model.lock:
                        model.refused += 1
                    self._reply(
                        401, {"error": {"message": "invalid api key", "type": "invalid_request_error"}}
                    )
                    return
                body = json.loads(raw or b"{}")
                prompt = "\n".join(str(m.get("content", "")) for m in body.get("messages", []))
                text = reply_for(prompt)
                with model.lock:
                    model.calls += 1
                self._reply(
                    200,
                    {
                        "id": f"chatcmpl-chaos-{model.calls}",
                        "object": "chat.completion",
                        "created": int(time.time()),
                        "model": str(body.get("model") or MODEL),
                        "choices": [
                            {
                                "index": 0,
                                "message": {"role": "assistant", "content": text},
                                "finish_reason": "stop",
                            }
                        ],
                        "usage": {
                            "prompt_tokens": len(prompt.split()),
                            "completion_tokens": len(text.split()),
                            "total_tokens": len(prompt.split()) + len(text.split()),
                        },
                    },
                )

        return Handler


@contextmanager
def serving_model(model: ChaosModel) -> Iterator[str]:
    """The model's base URL (``…/v1``) while it serves."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), model.handler())
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, name="chaos-model", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()
