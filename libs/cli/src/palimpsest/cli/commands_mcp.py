"""CLI: ``palimpsest mcp``, the MCP server over stdio.

``palimpsest mcp`` is what a developer's coding agent launches: it finds the stack the way every
command does (a running ``palimpsest up``, else the configured servers, else embedded servers
started for its own duration — see :mod:`palimpsest.cli.session`), acts for the local tenant (or
``--tenant``), and serves the tools of :mod:`palimpsest.ingest.mcp` on stdin/stdout until the
agent closes them. stdout carries only the protocol: progress and logs go to stderr.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from palimpsest.cli.options import local_tenant_id, tenant_option
from palimpsest.cli.output import progress
from palimpsest.cli.runtime import run_async, settings
from palimpsest.core.settings import BaseServiceSettings

__all__ = ["mcp_cmd", "serve_stdio"]


@click.command("mcp")
@tenant_option
@run_async
async def mcp_cmd(tenant: str | None) -> None:
    """Serve the index to a coding agent over MCP (stdio): search, definitions, references,
    context, review context, recency and documentation findings."""
    await serve_stdio(settings(), tenant)


async def serve_stdio(settings: BaseServiceSettings, tenant: str | None) -> None:
    """Serve the MCP tools on stdin/stdout for ``tenant`` (default: the local tenant)."""
    from palimpsest.cli.session import session
    from palimpsest.core import telemetry
    from palimpsest.core.llm import Gateway, LLMSettings
    from palimpsest.core.settings import load
    from palimpsest.ingest.mcp.tools import Deps, build_server

    telemetry.setup("mcp", log_level=settings.log_level, log_format=settings.log_format)  # stderr
    progress("palimpsest mcp: connecting to the stack…")
    async with session(settings, services=False) as sess:
        pool = sess.infra.pool
        tid = await local_tenant_id(pool, settings.home, tenant)
        gateways: list[Gateway] = []

        def gateway() -> Gateway:
            if not gateways:
                gateways.append(Gateway(pool, load(LLMSettings)))
            return gateways[0]

        # The embedded stack indexes local paths, so the review context may read them too.
        allow_local = True if sess.stack.embedded_db else None
        server = build_server(
            Deps(
                pool=pool,
                tenant_of=lambda _ctx: tid,
                policy=settings.source_policy(allow_local=allow_local),
                box=_box(settings),
                github_api_url=settings.github_api_url,
                gateway=gateway,
            )
        )
        progress(f"palimpsest mcp: serving tenant {tid} on stdio")
        try:
            await server.run_stdio_async()
        finally:
            for g in gateways:
                await g.aclose()


def _box(settings: BaseServiceSettings) -> Any:
    """The key that opens installation credentials (configured, or the embedded stack's)."""
    from palimpsest.core.secretbox import KEY_FILE, load_box

    if settings.encryption_key is not None:
        return load_box(settings.encryption_key.get_secret_value(), home=settings.home, generate=False)
    if (Path(settings.home) / KEY_FILE).exists():
        return load_box(None, home=settings.home, generate=True)
    return None
