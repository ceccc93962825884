"""Semantic search: nearest chunks to a query vector, among vectors of the snapshot's model only.

Vectors live in ``code_chunk_embeddings`` as ``real[]``, one partition per repository (migration
0037); with pgvector, each partition has an HNSW index per dimension it holds, and migration 0007
adds ``palimpsest_semantic_candidates``, a SECURITY DEFINER
function that applies the tenant predicate itself so the (non-LEAKPROOF) distance operator can
use the index under row-level security. Without pgvector that function does not exist and
semantic search raises :class:`SemanticUnavailable` — callers fall back to lexical search.
The query must have been embedded with the snapshot's model (``embedding_model``); a vector of
another model is never compared, because the candidates are filtered by model.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from palimpsest.core.db import Conn, fetch_all_as, fetch_one_as
from palimpsest.core.stores import Store
from palimpsest.index.errors import IndexNotReady, SemanticUnavailable
from palimpsest.index.search import SearchHit, fetch_hits, hit_filters
from palimpsest.index.snapshots import Snapshot, get_snapshot, newest_ready

# the embedder's vectors, read beside the chunker's chunks and file rows; the candidates come from
# a SECURITY DEFINER function (migration 0007), the hits from search.fetch_hits
STORE = Store(owner="embedder", reads=("code_chunk_embeddings", "code_chunks", "code_index_files"))

# vector (HNSW indexes vector up to 2000 dimensions) and halfvec for 3072 — see migration 0007
SUPPORTED_DIMENSIONS = (384, 768, 1024, 1536, 3072)
_FUNCTION = "palimpsest_semantic_candidates(uuid,uuid,text,real[],integer)"
DEFAULT_EF_SEARCH = 100


@dataclass(frozen=True, slots=True)
class _Candidate:
    blob_sha: str
    ordinal: int
    distance: float


@dataclass(frozen=True, slots=True)
class _Exists:
    ok: bool


async def semantic_available(conn: Conn) -> bool:
    """True when pgvector and its indexes (migration 0007) exist in this database."""
    found = await fetch_one_as(conn, _Exists, "SELECT to_regprocedure(%s) IS NOT NULL AS ok", (_FUNCTION,))
    return bool(found and found.ok)


async def snapshot_for_search(conn: Conn, repository_id: UUID, snapshot_id: UUID | None) -> Snapshot:
    """The snapshot a search runs against: the given one (of this repository), else the newest ready one."""
    if snapshot_id is None:
        snap = await newest_ready(conn, repository_id)
    else:
        snap = await get_snapshot(conn, snapshot_id)
        if snap is not None and snap.repository_id != repository_id:
            snap = None
    if snap is None:
        raise IndexNotReady("the repository has no ready snapshot yet")
    return snap


def check_vector(vector: Sequence[float]) -> list[float]:
    if len(vector) not in SUPPORTED_DIMENSIONS:
        raise SemanticUnavailable(
            "unsupported_dimensions", f"{len(vector)} dimensions; supported: {SUPPORTED_DIMENSIONS}"
        )
    if not all(math.isfinite(x) for x in vector):
        raise SemanticUnavailable("invalid_query_vector", "the query vector is not finite")
    return [float(x) for x in vector]


async def semantic_search(
    conn: Conn,
    repository_id: UUID,
    vector: Sequence[float],
    *,
    model: str,
    snapshot_id: UUID,
    limit: int = 10,
    path_prefix: str | None = None,
    language: str | None = None,
    kind: str | None = None,
    ef_search: int = DEFAULT_EF_SEARCH,
) -> list[SearchHit]:
    """Chunks of ``snapshot_id`` nearest to ``vector`` among vectors of ``model`` (cosine; score 1 - d).

    ``ef_search`` is the HNSW candidate list size (pgvector's default is 40): larger finds more
    of the true nearest neighbours for a little more time; it is set for this transaction only.
    """
    query = check_vector(vector)
    if not await semantic_available(conn):
        raise SemanticUnavailable("pgvector_missing", "the database has no pgvector extension")
    params: dict[str, Any] = {
        "repo": repository_id,
        "snap": snapshot_id,
        "model": model,
        "vec": query,
        "limit": limit,
        # filters apply after the nearest-neighbour pass, so fetch a deeper pool when filtering
        "pool": limit * 20 if (path_prefix or language or kind) else limit,
    }
    filters = hit_filters(params, path_prefix=path_prefix, language=language, kind=kind)
    # pgvector accepts 1..1000; a candidate pool larger than ef_search comes from iterative scans
    ef = min(max(ef_search, params["pool"]), 1000)
    await conn.execute("SELECT set_config('hnsw.ef_search', %s, true)", (str(ef),))
    top = await fetch_all_as(
        conn,
        _Candidate,
        "SELECT blob_sha, ordinal, distance FROM palimpsest_semantic_candidates("
        " %(repo)s, %(snap)s, %(model)s, %(vec)s::real[], %(pool)s)",
        params,
    )
    if not top:
        return []
    # Two statements, not one: inside a single query the planner sees a set-returning function
    # of "1000 rows" and hash-joins it against every chunk of the tenant (~100 ms at 100 000
    # chunks); an unnest of the actual candidates is planned as index lookups.
    params.update(
        shas=[r.blob_sha for r in top],
        ords=[r.ordinal for r in top],
        dists=[r.distance for r in top],
    )
    return await fetch_hits(
        conn,
        "SELECT * FROM unnest(%(shas)s::text[], %(ords)s::integer[], %(dists)s::real[])"
        " AS u(blob_sha, ordinal, measure)",
        params,
        filters,
        descending=False,
        score=lambda distance: 1.0 - distance,
    )
