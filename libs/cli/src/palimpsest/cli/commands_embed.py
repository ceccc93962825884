"""CLI for hybrid search: ``search --mode hybrid``.

``search --mode hybrid`` (the option lives on the search command of :mod:`commands_index`) comes
here: the query is embedded through the LLM gateway with the *snapshot's* embeddings model and
fused with the lexical ranking (RRF, k = 60). When semantic search cannot run the command says
why and prints the lexical ranking — it never fails because of the semantic half.
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

from palimpsest.core.db import Pool, tenant_tx


async def hybrid_cli_search(
    pool: Pool,
    tenant: UUID,
    repository_id: UUID,
    query: str,
    *,
    limit: int,
    as_json: bool,
    path_prefix: str | None = None,
    language: str | None = None,
    kind: str | None = None,
) -> tuple[dict[str, Any], str]:
    """Run a hybrid search for the CLI; returns (JSON data, text) for ``output.emit``."""
    from palimpsest.core.llm import Gateway, LLMSettings
    from palimpsest.core.settings import load
    from palimpsest.index.hybrid import hybrid_search

    gateway = Gateway(pool, load(LLMSettings))

    async def embed_query(model: str, text: str) -> list[float]:
        route = await gateway.embeddings_route(tenant, model, accounted_as="search")
        assert route is not None  # embeddings_route with a model always gives one
        return (await gateway.embed(tenant, [text], route=route, reference="search")).vectors[0]

    try:
        async with tenant_tx(pool, tenant) as conn:
            result = await hybrid_search(
                conn,
                repository_id,
                query,
                embed_query=embed_query,
                limit=limit,
                path_prefix=path_prefix,
                language=language,
                kind=kind,
            )
    finally:
        await gateway.aclose()
    data = result.as_dict(with_content=as_json)
    head = f"mode {result.mode}" + (
        f" (semantic unavailable: {result.reason})" if result.reason else f" (model {result.model})"
    )
    lines = [
        f"{h.score:8.4f}  {h.path}:{h.start_line}-{h.end_line}  {h.kind} {h.name or ''}" for h in result.hits
    ]
    return data, "\n".join([head, *lines] if lines else [head, "no matches"])
