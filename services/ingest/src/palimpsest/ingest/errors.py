"""The exception types of the ingest service; each carries the HTTP status the API answers with.

Messages are one printable line, safe to return to a caller and to log: they never contain a
secret, a token or a credential. Third-party errors (cryptography, psycopg, DNS) are translated
into these at the boundary where they occur.
"""

from __future__ import annotations

from palimpsest.core.errors import PalimpsestError
from palimpsest.core.sources import SourceRefused as PolicyRefused

_MAX_MESSAGE = 300


def one_line(text: str) -> str:
    """`text` as one printable line of bounded length."""
    printable = "".join(ch if ch.isprintable() else " " for ch in text)
    line = " ".join(printable.split())
    return line if len(line) <= _MAX_MESSAGE else line[: _MAX_MESSAGE - 1] + "…"


class IngestError(PalimpsestError):
    """A request the ingest service refuses; `status` is the HTTP answer, the message says why."""

    status = 400

    def __init__(self, message: str) -> None:
        self.message = one_line(message)
        super().__init__(self.message)


class InvalidRequest(IngestError):
    """The request is well-formed HTTP but asks for something invalid."""

    status = 400


class SourceRefused(InvalidRequest, PolicyRefused):
    """A repository URL is not one Palimpsest may fetch (host, scheme or address not allowed)."""


class Unauthorized(IngestError):
    """No, or no valid, bearer token."""

    status = 401


class Forbidden(IngestError):
    """The token is valid but may not do this (a tenant token on an operator route)."""

    status = 403


class NotFound(IngestError):
    """No such resource for this tenant (also what another tenant's resource looks like)."""

    status = 404


class Conflict(IngestError):
    """The resource exists already or its state forbids the request."""

    status = 409


class CredentialError(IngestError):
    """A stored secret cannot be decrypted with the configured encryption key."""

    status = 500


class BenchError(PalimpsestError):
    """``bench ingest`` could not run (the service did not start, the outbox was not drained, ...)."""
