"""The review context of a change without the review: what the reviewer would show the model.

The MCP server's ``review_context`` tool (:mod:`palimpsest.ingest.mcp`) calls
:func:`preview_context`. It takes the reviewer service's own steps: the same
:func:`~palimpsest.index.context.change.opened_change` (the repository opened under the deployment's
source policy with the installation's credentials, the base, the base commit's
``.palimpsest/config.yml``, the head — a revision or a submitted diff as an overlay commit — and
the pull request's diff from the merge base), then
:func:`~palimpsest.index.context.assemble.assemble_context` with the same options, reranker and query
embedder. So the items, their provenance (source, reason, annotation, dates), what was
dropped and why, and the co-change partners the change lacks are those a review of the same change
would get. Nothing is written: no review, no event, no model call other than a routed reranker's
or the query embedding of a hybrid repository (as in a review).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from uuid import UUID

from palimpsest.core.db import Pool, tenant_tx
from palimpsest.core.git import GitAuth
from palimpsest.core.llm import Gateway, UsageFeature
from palimpsest.core.repositories import Repository
from palimpsest.core.sources import SourcePolicy
from palimpsest.index.context.assemble import ContextOptions, Reranker, ReviewContext, assemble_context
from palimpsest.index.context.candidates import QueryEmbedder
from palimpsest.index.context.change import opened_change
from palimpsest.index.context.diff import ChangedFile
from palimpsest.index.context.rules import read_rules

__all__ = ["Preview", "preview_context", "query_embedder", "reranker"]


@dataclass(frozen=True, slots=True)
class Preview:
    base_sha: str
    head_sha: str
    files: list[ChangedFile]
    context: ReviewContext


async def reranker(gateway: Gateway, tenant_id: UUID, *, reference: str) -> Reranker | None:
    """The tenant's routed rerank model as a :data:`Reranker` (None: no ``rerank`` route)."""
    route = await gateway.route(tenant_id, "rerank")
    if route is None:
        return None

    async def rerank(query: str, documents: Sequence[str]) -> list[float]:
        result = await gateway.rerank(tenant_id, query, documents, route=route, reference=reference)
        scores = [0.0] * len(documents)
        for index, score in result.ranking:
            if 0 <= index < len(scores):
                scores[index] = score
        return scores

    return rerank


def query_embedder(gateway: Gateway, tenant_id: UUID, *, accounted_as: UsageFeature) -> QueryEmbedder:
    """The query embedder of a hybrid repository: the snapshot's model through the tenant's route."""

    async def embed(model: str, text: str) -> Sequence[float]:
        route = await gateway.embeddings_route(tenant_id, model, accounted_as=accounted_as)
        result = await gateway.embed(tenant_id, [text], route=route, reference=accounted_as)
        return result.vectors[0]

    return embed


async def preview_context(
    pool: Pool,
    tenant_id: UUID,
    repo: Repository,
    *,
    base: str | None,
    head: str | None,
    diff: str | None,
    budget: int,
    policy: SourcePolicy,
    auth: GitAuth | None,
    rerank: Reranker | None = None,
    embed_query: QueryEmbedder | None = None,
    options: ContextOptions | None = None,
) -> Preview:
    """The review context of ``base``..``head`` (or of ``diff`` applied to ``base``) of ``repo``
    (a ``repositories`` row); ``base`` defaults to the default branch, as in a review.
    ReviewFailed for an unusable source or revision, IndexNotReady without a ready snapshot."""
    async with (
        opened_change(
            repo.clone_url, base or repo.default_branch, head, diff, auth=auth, policy=policy
        ) as change,
        tenant_tx(pool, tenant_id) as conn,
    ):
        # the base's rules shape the co-change warning as in a review (the same list either way)
        rules = await read_rules(change.head.git_dir, change.base_sha)
        chosen = replace(
            options or ContextOptions(),
            cochange_max=rules.cochange_max,
            cochange_include=rules.cochange_include,
        )
        context = await assemble_context(
            conn,
            repo.repository_id,
            change.pr.files,
            change.pr.at_head,
            budget,
            base_sha=change.base_sha,
            head=change.head,
            rerank=rerank,
            embed_query=embed_query,
            options=chosen,
            links=change.links,
        )
    return Preview(change.base_sha, change.head_sha, change.pr.files, context)
