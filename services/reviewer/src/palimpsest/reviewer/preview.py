"""The review context of a change without the review: what the reviewer would show the model.

The MCP server's ``review_context`` tool (:mod:`palimpsest.ingest.mcp`) calls
:func:`preview_context`. It takes the reviewer service's own steps (see
:meth:`palimpsest.reviewer.service.ReviewerService.review`): the repository opened under the
deployment's source policy (a local path read in place, a remote fetched with the installation's
credentials), the base resolved, the base commit's ``.palimpsest/config.yml`` for cross-repository
context, the head (a revision, or a submitted diff applied to the base as a temporary overlay
commit — :mod:`palimpsest.reviewer.overlay`), the pull request's diff from the merge base, and
then :func:`~palimpsest.reviewer.context.assemble_context` with the same options, reranker and
query embedder. So the items, their provenance (source, reason, annotation, dates), what was
dropped and why, and the co-change partners the change lacks are those a review of the same change
would get. Nothing is written: no review, no event, no model call other than a routed reranker's
or the query embedding of a hybrid repository (as in a review).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from palimpsest.core.db import Pool, tenant_tx
from palimpsest.core.git import GitAuth
from palimpsest.core.llm import Gateway, UsageFeature
from palimpsest.core.sources import SourcePolicy
from palimpsest.reviewer.candidates import QueryEmbedder
from palimpsest.reviewer.context import ContextOptions, Reranker, ReviewContext, assemble_context
from palimpsest.reviewer.crossrepo import read_config
from palimpsest.reviewer.diff import ChangedFile
from palimpsest.reviewer.overlay import head_commit
from palimpsest.reviewer.source import GitHead, open_repository, pull_request_diff, rev_parse

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
    repo: Mapping[str, Any],
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
    base_rev = base or str(repo["default_branch"])
    revisions = [r for r in (base_rev, head) if r]
    async with open_repository(str(repo["clone_url"]), revisions, auth=auth, policy=policy) as git_dir:
        base_sha = await rev_parse(git_dir, base_rev)
        links = await read_config(git_dir, base_sha)  # the base's, never the head's
        async with head_commit(git_dir, base_sha, head, diff) as (work_dir, head_sha):
            pr = await pull_request_diff(work_dir, base_sha, head_sha)
            async with tenant_tx(pool, tenant_id) as conn:
                context = await assemble_context(
                    conn,
                    UUID(str(repo["repository_id"])),
                    pr.files,
                    pr.at_head,
                    budget,
                    base_sha=base_sha,
                    head=GitHead(work_dir, head_sha),
                    rerank=rerank,
                    embed_query=embed_query,
                    options=options or ContextOptions(),
                    links=links,
                )
    return Preview(base_sha, head_sha, pr.files, context)
