"""Hybrid search: lexical and semantic candidate lists fused with reciprocal rank fusion (k = 60).

The query is embedded with the *snapshot's* embeddings model (``embedding_model``), whatever the
tenant's routing says today, so it is only ever compared with vectors of that model. When semantic
search cannot run — no pgvector, a snapshot without vectors, no way to embed the query, the
provider failing — the result says so (``semantic="unavailable"`` with a reason) and carries the
lexical ranking alone: hybrid search degrades, it never fails because of the semantic half.

RRF: a chunk's score is Σ 1 / (k + rank) over the lists it appears in (rank from 1), so a chunk
both lists rank well beats one that only one list ranks first; ties keep the lexical order.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypedDict
from uuid import UUID

from palimpsest.core.db import Conn
from palimpsest.core.errors import PalimpsestError
from palimpsest.index.errors import InvalidQuery, SemanticUnavailable
from palimpsest.index.search import SearchHit, lexical_search
from palimpsest.index.semantic import semantic_available, semantic_search, snapshot_for_search
from palimpsest.index.snapshots import Snapshot

RRF_K = 60

# (model, query text) → the query's vector, embedded with that model
QueryEmbedder = Callable[[str, str], Awaitable[Sequence[float]]]


class HitFilters(TypedDict):
    """The filter keywords of the search functions (lexical, semantic, hybrid)."""

    path_prefix: str | None
    language: str | None
    kind: str | None


@dataclass(frozen=True, slots=True)
class HybridResult:
    hits: list[SearchHit]
    mode: str  # hybrid | lexical | semantic: the lists that were actually fused
    semantic: str  # ok | unavailable
    reason: str | None = None  # why semantic search was unavailable
    model: str | None = None
    snapshot_id: UUID | None = None
    embedding_state: str | None = None
    counts: dict[str, int] = field(default_factory=dict)

    def as_dict(self, *, with_content: bool = True) -> dict[str, Any]:
        return {
            "mode": self.mode,
            "semantic": self.semantic,
            "reason": self.reason,
            "model": self.model,
            "snapshot_id": str(self.snapshot_id) if self.snapshot_id else None,
            "embedding_state": self.embedding_state,
            "counts": self.counts,
            "hits": [h.as_dict(with_content=with_content) for h in self.hits],
        }


def reciprocal_rank_fusion(
    lists: Sequence[Sequence[SearchHit]], *, k: int = RRF_K, limit: int | None = None
) -> list[SearchHit]:
    """Fuse ranked lists by RRF; a hit's score becomes its fused score (first list breaks ties)."""
    scores: dict[tuple[str, int], float] = {}
    first: dict[tuple[str, int], SearchHit] = {}
    order: dict[tuple[str, int], tuple[int, int]] = {}
    for li, hits in enumerate(lists):
        for rank, hit in enumerate(hits, start=1):
            key = (hit.blob_sha, hit.ordinal)
            scores[key] = scores.get(key, 0.0) + 1.0 / (k + rank)
            first.setdefault(key, hit)
            order.setdefault(key, (li, rank))
    ranked = sorted(scores, key=lambda key: (-scores[key], order[key]))
    fused = [dataclasses.replace(first[key], score=round(scores[key], 6)) for key in ranked]
    return fused[:limit] if limit is not None else fused


async def hybrid_search(
    conn: Conn,
    repository_id: UUID,
    query: str,
    *,
    embed_query: QueryEmbedder | None,
    snapshot_id: UUID | None = None,
    limit: int = 10,
    depth: int | None = None,
    path_prefix: str | None = None,
    language: str | None = None,
    kind: str | None = None,
    k: int = RRF_K,
) -> HybridResult:
    """Lexical + semantic candidates of one snapshot, fused; falls back to lexical with a reason."""
    snap = await snapshot_for_search(conn, repository_id, snapshot_id)
    sid = snap.snapshot_id
    depth = depth or max(limit * 3, 30)
    filters: HitFilters = {"path_prefix": path_prefix, "language": language, "kind": kind}
    lexical: list[SearchHit] = []
    lexical_error: InvalidQuery | None = None
    try:
        lexical = await lexical_search(conn, repository_id, query, snapshot_id=sid, limit=depth, **filters)
    except InvalidQuery as exc:  # no searchable words: the semantic half may still answer
        lexical_error = exc
    model = snap.embedding_model
    semantic: list[SearchHit] = []
    reason: str | None = None
    try:
        vector = await _query_vector(conn, snap, query, embed_query)
        semantic = await semantic_search(
            conn, repository_id, vector, model=str(model), snapshot_id=sid, limit=depth, **filters
        )
    except SemanticUnavailable as exc:
        reason = exc.reason + (f": {exc.detail}" if exc.detail else "")
    if reason is not None and lexical_error is not None:
        raise lexical_error
    mode = "hybrid" if reason is None and lexical_error is None else ("lexical" if reason else "semantic")
    return HybridResult(
        hits=reciprocal_rank_fusion([lexical, semantic], k=k, limit=limit),
        mode=mode,
        semantic="unavailable" if reason else "ok",
        reason=reason,
        model=str(model) if model else None,
        snapshot_id=sid,
        embedding_state=snap.embedding_state,
        counts={"lexical": len(lexical), "semantic": len(semantic)},
    )


async def _query_vector(
    conn: Conn, snap: Snapshot, query: str, embed_query: QueryEmbedder | None
) -> Sequence[float]:
    if not await semantic_available(conn):
        raise SemanticUnavailable("pgvector_missing", "the database has no pgvector extension")
    model = snap.embedding_model
    if not model:
        state = snap.embedding_state or "none"
        detail = f"embedding state {state}" + (f" ({snap.embedding_reason})" if snap.embedding_reason else "")
        raise SemanticUnavailable("no_embeddings", detail)
    if embed_query is None:
        raise SemanticUnavailable("no_query_embedder", "no way to embed the query here")
    if not query.strip():
        raise SemanticUnavailable("empty_query")
    try:
        return await embed_query(str(model), query)
    except SemanticUnavailable:
        raise
    except PalimpsestError as exc:
        raise SemanticUnavailable("query_embedding_failed", str(exc)[:200]) from exc
