"""The one exception type webhook verification and parsing may raise.

The HTTP layer turns a `WebhookError` into a response: `status` is the HTTP status code
(401 for a failed signature or token, 400 for a malformed or incomplete payload, 413 for an
oversized body) and `reason` is a single printable line that is safe to return and log — it
never contains a secret, a signature or a token.
"""

from __future__ import annotations

_MAX_REASON = 300


def _one_line(text: str) -> str:
    printable = "".join(ch if ch.isprintable() else " " for ch in text)
    line = " ".join(printable.split())
    return line if len(line) <= _MAX_REASON else line[: _MAX_REASON - 1] + "…"


class WebhookError(Exception):
    """A delivery was rejected; `status` says how, `reason` says why in one line."""

    def __init__(self, status: int, reason: str) -> None:
        self.status = status
        self.reason = _one_line(reason)
        super().__init__(f"{status}: {self.reason}")
