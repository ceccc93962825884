"""Where a command acts: a remote deployment's ingest API, or the local embedded stack.

``PALIMPSEST_INGEST_URL`` set means remote: commands with a remote form go through the ingest API
there, and no command ever starts (or uses) a local stack; the others refuse with one line. Unset,
commands act on the local stack under ``PALIMPSEST_HOME``: the running ``palimpsest up``, or one
started for the command's duration. Every command that writes says which, as its first line on
stderr (the URL or the home, never a token).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

import click

from palimpsest.cli.output import fail, progress

if TYPE_CHECKING:
    from palimpsest.core.settings import BaseServiceSettings

__all__ = ["WHERE_HELP", "announce_local", "announce_remote", "refuse_remote", "remote_url"]

WHERE_HELP = """\b
Where commands act:
  PALIMPSEST_INGEST_URL  the ingest API of a deployment (https://...): commands act there, and
                         no local stack is started; commands without a remote form refuse.
                         Unset: the local stack under PALIMPSEST_HOME (the running
                         `palimpsest up`, or one started for the command).
  PALIMPSEST_API_TOKEN   the tenant API token to send (else the operator token,
                         PALIMPSEST_ADMIN_TOKEN or the local stack's own).
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
