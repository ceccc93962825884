"""A review model for the soak: the fake model server (:mod:`palimpsest.devtools.fakes.llm`) on
127.0.0.1, deterministic.

With it the soak's reviews have findings, so posting them inline, not reposting them on later
pushes and redeliveries, and editing the summary in place are all under fault. It answers every
chat request that carries the expected key with one finding on the first added line of the diff
under review (the prompt's first ```` ```diff ```` block) — the same diff, the same finding — and
counts the calls (:func:`calls`).
"""

from __future__ import annotations

import json
import re
from typing import Any

from palimpsest.core.wire import parse_hunk_header
from palimpsest.devtools.fakes.llm import FakeLLM

MODEL = "openai/chaos-reviewer"
_DIFF = re.compile(r"```diff\n(.*?)\n```", re.S)


def first_added_line(diff: str) -> tuple[str, int, str] | None:
    """(path, new-side line, text) of the diff's first added line."""
    path, line = None, 0
    for raw in diff.splitlines():
        if raw.startswith("+++ "):
            path = raw[4:].removeprefix("b/")
        elif (hunk := parse_hunk_header(raw)) is not None:
            line = hunk.new_start
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


def review_reply(body: dict[str, Any]) -> str:
    """The answer to one chat request: :func:`reply_for` its messages."""
    return reply_for("\n".join(str(m.get("content", "")) for m in body.get("messages", [])))


def chaos_model(key: str) -> FakeLLM:
    """The soak's review model: the fake model server answering with :func:`review_reply`, for ``key``."""
    return FakeLLM(reply=review_reply, api_key=key, model_name=MODEL)


def calls(model: FakeLLM) -> tuple[int, int]:
    """(answered, refused for a wrong key) chat requests so far."""
    chat = model.requests("chat")
    return sum(c.failed is None for c in chat), sum(c.failed == "unauthorized" for c in chat)
