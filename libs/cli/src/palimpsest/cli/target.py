"""Where a command acts: a remote deployment's ingest API, or the local embedded stack.

``PALIMPSEST_INGEST_URL`` set means remote: commands with a remote form go through the ingest API
there, and no command ever starts (or uses) a local stack; the others refuse with one line. Unset,
commands act on the local stack under ``PALIMPSEST_HOME``: the running ``palimpsest up``, or one
started for the command's duration. Every command that writes says which, as its first line on
stderr (the URL or the home, never a token).

Credentials stay home: a token is sent only to the endpoint it is meant for. The embedded stack's
operator token (``$PALIMPSEST_HOME/admin-token``) goes only to that stack (its recorded ingest URL,
or the one a command starts); a remote needs ``PALIMPSEST_API_TOKEN`` or ``PALIMPSEST_ADMIN_TOKEN``
set explicitly. A remote URL that is plain http is refused before any connection unless it is
loopback (127.0.0.0/8, ::1, localhost) or the command is given ``palimpsest --insecure-http``.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

import click

from palimpsest.cli.output import fail, progress

if TYPE_CHECKING:
    from palimpsest.core.settings import BaseServiceSettings

__all__ = [
    "WHERE_HELP",
    "announce_local",
    "announce_remote",
    "check_transport",
    "is_loopback",
    "refuse_remote",
    "remote_url",
    "same_endpoint",
]

WHERE_HELP = """\b
Where commands act:
  PALIMPSEST_INGEST_URL  the ingest API of a deployment (https://...): commands act there, and
                         no local stack is started; commands without a remote form refuse.
                         Unset: the local stack under PALIMPSEST_HOME (the running
                         `palimpsest up`, or one started for the command).
  PALIMPSEST_API_TOKEN   the tenant API token to send (else the operator token,
                         PALIMPSEST_ADMIN_TOKEN; the local stack's own token is
                         sent only to the local stack, never to PALIMPSEST_INGEST_URL).
  --insecure-http        allow a plain-http PALIMPSEST_INGEST_URL that is not loopback.
  PALIMPSEST_TENANT      the default of --tenant (a tenant id or name).
`palimpsest settings` lists the services' PALIMPSEST_* settings."""


def remote_url() -> str | None:
    """The configured remote ingest API (``PALIMPSEST_INGEST_URL``), checked; None: local."""
    url = (os.environ.get("PALIMPSEST_INGEST_URL") or "").strip()
    if not url:
        return None
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        fail("PALIMPSEST_INGEST_URL must be an http(s) URL of the ingest API")
    if parts.username is not None or parts.password is not None:
        fail("PALIMPSEST_INGEST_URL must not contain credentials; use PALIMPSEST_API_TOKEN")
    return url.rstrip("/")


def is_loopback(host: str | None) -> bool:
    """127.0.0.0/8, ::1 or ``localhost`` by name (no lookup: a name that merely resolves to
    loopback is not trusted, DNS may say otherwise tomorrow)."""
    import ipaddress  # only when a remote is configured: every command imports this module

    if not host:
        return False
    name = host.strip("[]").rstrip(".").lower()
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def _insecure_http_allowed() -> bool:
    ctx = click.get_current_context(silent=True)
    return ctx is not None and bool(ctx.find_root().params.get("insecure_http"))


def check_transport(url: str) -> None:
    """End the command, before any connection, when ``url`` is plain http to a host that is not
    loopback and ``--insecure-http`` was not given: a token would cross the network in clear."""
    parts = urlsplit(url)
    if parts.scheme == "https" or is_loopback(parts.hostname) or _insecure_http_allowed():
        return
    fail(
        f"PALIMPSEST_INGEST_URL is plain http to a host that is not loopback ({url}): the token would"
        " cross the network unencrypted; use https, or give `palimpsest --insecure-http` to allow it"
    )


def same_endpoint(a: str, b: str) -> bool:
    """Two ingest URLs naming the same endpoint (scheme, host and port; default ports filled in)."""

    def key(url: str) -> tuple[str, str, int | None]:
        parts = urlsplit(url)
        port = parts.port or {"http": 80, "https": 443}.get(parts.scheme)
        return parts.scheme, (parts.hostname or "").rstrip(".").lower(), port

    try:
        return key(a) == key(b)
    except ValueError:  # an unparsable port
        return False


def _command() -> str:
    ctx = click.get_current_context(silent=True)
    return ctx.command_path if ctx is not None else "this command"


def refuse_remote() -> None:
    """End the command when a remote is configured: it has no remote form and must not act locally."""
    url = remote_url()
    if url is not None:
        fail(
            f"{_command()} acts only on a local stack, and PALIMPSEST_INGEST_URL is set ({url});"
            " unset it to use the local stack"
        )


def announce_remote(url: str) -> None:
    progress(f"target: remote ingest API {url} (PALIMPSEST_INGEST_URL)")


def announce_local(settings: BaseServiceSettings, *, running_pid: int | None) -> None:
    """The local stack: the running ``palimpsest up``, or the servers this command uses (the
    configured ones, named by their variable and never by URL, or embedded ones it starts)."""
    if running_pid is not None:
        how = f"the running `palimpsest up`, pid {running_pid}"
    else:
        configured_db = settings.migration_database_url is not None or settings.database_url is not None
        db = "the configured PostgreSQL (PALIMPSEST_DATABASE_URL)" if configured_db else "embedded PostgreSQL"
        nats = "the configured NATS (PALIMPSEST_NATS_URL)" if settings.nats_url else "embedded NATS"
        how = f"none running: {db} and {nats} for this command"
    progress(f"target: local stack, home {settings.home} ({how})")
