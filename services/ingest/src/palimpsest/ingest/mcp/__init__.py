"""The index for coding agents: a Model Context Protocol server (the official ``mcp`` SDK).

:mod:`~palimpsest.ingest.mcp.tools` defines the tools once — repositories and snapshots, search,
definitions and references, graph context, review context, recency and documentation findings —
over the index's read functions, each call in the caller's tenant transaction;
:mod:`~palimpsest.ingest.mcp.http` serves them as streamable HTTP at ``/mcp`` of the ingest API
behind the tenant's API token; ``palimpsest mcp`` (:mod:`palimpsest.cli.commands_mcp`) serves
them over stdio. See docs/mcp.md.
"""
