"""The context sources of a review, read from one snapshot of the code index.

Five sources read the PR's own repository; ``linked`` and ``pattern`` chunks come from other
repositories of the tenant through the same queries (:mod:`palimpsest.reviewer.crossrepo`).

Each source returns ranked :class:`Candidate` chunks (best first); the core
(:mod:`palimpsest.reviewer.context`) fuses, checks them against head, demotes and budgets them.
Every query runs in the caller's tenant transaction and stays on indexed access paths (symbol
names, blob ids, snapshot paths) so a review of a 50 000-file repository stays fast.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal
from uuid import UUID

from palimpsest.core.db import Conn
from palimpsest.core.errors import PalimpsestError
from palimpsest.index.evidence import decayed
from palimpsest.index.graph import EdgeKind, graph_context, snapshot_graph
from palimpsest.index.recency import cochange_neighbours
from palimpsest.index.search import SearchHit, lexical_search

log = logging.getLogger(__name__)

Source = Literal["definitions", "usage", "related", "neighbourhood", "cochange", "linked", "pattern"]
OWN_SOURCES: tuple[Source, ...] = ("definitions", "usage", "related", "neighbourhood", "cochange")
CROSS_SOURCES: tuple[Source, ...] = ("linked", "pattern")  # other repositories (crossrepo)
SOURCES: tuple[Source, ...] = OWN_SOURCES + CROSS_SOURCES

# (model, text) → the query's vector (hybrid repositories only)
QueryEmbedder = Callable[[str, str], Awaitable[Sequence[float]]]

COCHANGE_MIN_COMMITS = 2
RELATED_CANDIDATES = 300  # GIN matches ranked per pass: related code is a hint, keep it cheap
_CHUNK_COLUMNS = "c.blob_sha, c.ordinal, c.start_line, c.end_line, c.content"


@dataclass(slots=True)
class Candidate:
    source: Source
    path: str
    start_line: int
    end_line: int
    content: str
    blob_sha: str
    ordinal: int
    reason: str = ""
    score: float = 0.0
    last_modified_at: datetime | None = None
    annotation: str | None = None
    tokens: int = 0
    repository: str | None = None  # full name of another repository (linked/pattern); None: the PR's

    @property
    def key(self) -> tuple[str, str, int]:
        return (self.repository or "", self.blob_sha, self.ordinal)


def _candidate(source: Source, row: dict[str, Any], reason: str) -> Candidate:
    return Candidate(
        source=source,
        path=row["path"],
        start_line=int(row["start_line"]),
        end_line=int(row["end_line"]),
        content=str(row["content"]),
        blob_sha=str(row["blob_sha"]),
        ordinal=int(row["ordinal"]),
        reason=reason,
    )


async def definitions(
    conn: Conn, repository_id: UUID, snapshot_id: UUID, names: Sequence[str], limit: int
) -> list[Candidate]:
    """The chunks that define ``names`` (in the order of ``names``), one per definition."""
    if not names or limit <= 0:
        return []
    cur = await conn.execute(
        # the defining blobs come from the name index (palimpsest_symbol_blobs, migration 0015);
        # each blob's paths through the files' blob index, a blob's first n paths being all the
        # final top n can take from it; the chunk only for the n rows kept
        "WITH s AS (SELECT DISTINCT ON (b.blob_sha, r.name) b.blob_sha, r.name, r.start_line"
        "   FROM palimpsest_symbol_blobs(%(r)s, %(names)s::text[]) b"
        "   CROSS JOIN LATERAL palimpsest_symbol_rows(b.symbols) r"
        "   WHERE r.name = ANY(%(names)s::text[]) ORDER BY b.blob_sha, r.name, r.start_line),"
        " top AS (SELECT f.path, s.name, s.blob_sha, s.start_line FROM s"
        "   CROSS JOIN LATERAL (SELECT f.path FROM code_index_files f WHERE f.snapshot_id = %(snap)s"
        "     AND f.blob_sha = s.blob_sha ORDER BY f.path LIMIT %(n)s) f"
        "   ORDER BY array_position(%(names)s::text[], s.name), f.path LIMIT %(n)s)"
        f" SELECT top.path, top.name, {_CHUNK_COLUMNS} FROM top"
        " CROSS JOIN LATERAL (SELECT * FROM code_chunks c WHERE c.repository_id = %(r)s"
        "   AND c.blob_sha = top.blob_sha AND c.start_line <= top.start_line AND c.end_line >= top.start_line"
        "   ORDER BY (c.name = top.name) DESC NULLS LAST, c.end_line - c.start_line, c.ordinal LIMIT 1) c"
        " ORDER BY array_position(%(names)s::text[], top.name), top.path",
        {"r": repository_id, "snap": snapshot_id, "names": list(names), "n": limit},
    )
    return [_candidate("definitions", row, f"defines {row['name']}") for row in await cur.fetchall()]


async def usages(
    conn: Conn,
    repository_id: UUID,
    snapshot_id: UUID,
    defined: Sequence[str],
    changed: frozenset[str],
    limit: int,
) -> list[Candidate]:
    """Places that reference or call a definition the diff changes (the graph's in-edges)."""
    if not defined or limit <= 0:
        return []
    try:
        _, graph, _ = await snapshot_graph(conn, repository_id, snapshot_id=snapshot_id)
    except PalimpsestError as exc:
        log.info("usage source unavailable: %s", exc)
        return []
    pairs: dict[tuple[str, str], None] = {}
    wanted = {EdgeKind.REFERENCES, EdgeKind.CALLS}
    for name in defined:
        for node in graph.names.get(name, ()):
            owner_path = graph.paths[graph.node_owner[node]]
            if changed and owner_path not in changed:
                continue  # a same-named definition elsewhere: not the one the diff changes
            for edge in graph.edges(node):
                if edge.backward and edge.kind in wanted:
                    user = graph.paths[graph.node_owner[edge.target]]
                    if user not in changed:
                        pairs.setdefault((user, name))
            if len(pairs) >= limit:
                break
    if not pairs:
        return []
    paths = [p for p, _ in pairs][:limit]
    names = [n for _, n in pairs][:limit]
    cur = await conn.execute(
        "WITH u AS (SELECT * FROM unnest(%(paths)s::text[], %(names)s::text[]) WITH ORDINALITY AS u(path, name, i))"
        f" SELECT u.path, u.name, {_CHUNK_COLUMNS} FROM u"
        " JOIN code_index_files f ON f.snapshot_id = %(snap)s AND f.path = u.path"
        " CROSS JOIN LATERAL (SELECT coalesce(min(x.line), 1) AS line FROM code_facts x"
        "   WHERE x.repository_id = %(r)s AND x.blob_sha = f.blob_sha AND x.name = u.name"
        "   AND x.kind IN ('reference', 'call')) x"
        " CROSS JOIN LATERAL (SELECT * FROM code_chunks c WHERE c.repository_id = %(r)s"
        "   AND c.blob_sha = f.blob_sha ORDER BY (c.start_line <= x.line AND c.end_line >= x.line) DESC,"
        "   c.end_line - c.start_line, c.ordinal LIMIT 1) c"
        " ORDER BY u.i",
        {"r": repository_id, "snap": snapshot_id, "paths": paths, "names": names},
    )
    return [_candidate("usage", row, f"uses {row['name']}") for row in await cur.fetchall()]


async def related(
    conn: Conn,
    repository_id: UUID,
    snapshot_id: UUID,
    words: Sequence[str],
    changed: frozenset[str],
    limit: int,
    *,
    embed_query: QueryEmbedder | None = None,
) -> list[Candidate]:
    """Similar code: lexical search (hybrid RRF when the repository has embeddings) over the
    diff's identifiers — a hint, not ground truth."""
    if not words or limit <= 0:
        return []
    query = " ".join(words)
    depth = limit + len(changed) * 2 + 5
    hits: list[SearchHit]
    try:
        if embed_query is not None:
            from palimpsest.index.hybrid import hybrid_search

            result = await hybrid_search(
                conn, repository_id, query, embed_query=embed_query, snapshot_id=snapshot_id, limit=depth
            )
            hits = result.hits
        else:
            hits = await lexical_search(
                conn,
                repository_id,
                query,
                snapshot_id=snapshot_id,
                limit=depth,
                candidates=RELATED_CANDIDATES,
            )
    except PalimpsestError as exc:
        log.info("related source unavailable: %s", exc)
        return []
    out = [
        Candidate(
            "related", h.path, h.start_line, h.end_line, h.content, h.blob_sha, h.ordinal, "similar code"
        )
        for h in hits
        if h.path not in changed
    ]
    return out[:limit]


async def neighbourhood(
    conn: Conn, repository_id: UUID, snapshot_id: UUID, changed: frozenset[str], limit: int
) -> list[Candidate]:
    """The graph's 1-hop personalized ranking seeded by the changed files (those it knows)."""
    if not changed or limit <= 0:
        return []
    try:
        _, graph, _ = await snapshot_graph(conn, repository_id, snapshot_id=snapshot_id)
        seeds = sorted(p for p in changed if p in graph.path_index)
        if not seeds:
            return []
        result = await graph_context(
            conn, repository_id, seeds, budget=10**9, hops=1, snapshot_id=snapshot_id, history=False
        )
    except PalimpsestError as exc:
        log.info("neighbourhood source unavailable: %s", exc)
        return []
    entries = [e for e in result.entries if e.path not in changed][:limit]
    reasons = {e.path: e.reason for e in entries}
    return [
        _candidate("neighbourhood", row, reasons[row["path"]])
        for row in await first_chunks(conn, repository_id, snapshot_id, list(reasons))
    ]


async def cochange(
    conn: Conn,
    repository_id: UUID,
    snapshot_id: UUID,
    changed: Sequence[str],
    limit: int,
    *,
    min_commits: int = COCHANGE_MIN_COMMITS,
) -> tuple[list[Candidate], list[str]]:
    """Files that historically change with the changed files but are not in the pull request.

    "Usually" means at least ``min_commits`` shared commits: one bulk commit is not a habit.

    Returns the context chunks (the first chunk of each partner the snapshot has) and every
    missing partner path, strongest first.
    """
    touched = frozenset(changed)
    counts: dict[str, int] = {}
    strength: dict[str, float] = {}  # evidence decayed to now (the count where none is stored)
    partner_of: dict[str, str] = {}
    now = datetime.now(UTC)
    for path in changed:
        for neighbour in await cochange_neighbours(conn, repository_id, path, limit=10):
            if neighbour.path in touched:
                continue
            counts[neighbour.path] = counts.get(neighbour.path, 0) + neighbour.commits
            evidence = neighbour.evidence
            weight = neighbour.commits if evidence is None else decayed(evidence, neighbour.last_at, now)
            strength[neighbour.path] = strength.get(neighbour.path, 0.0) + weight
            partner_of.setdefault(neighbour.path, path)
    ranked = sorted((p for p in counts if counts[p] >= min_commits), key=lambda p: (-strength[p], p))
    cur = await conn.execute(
        "SELECT path FROM code_index_files WHERE snapshot_id = %s AND path = ANY(%s::text[])",
        (snapshot_id, ranked),
    )
    present = {row["path"] for row in await cur.fetchall()}
    missing = [p for p in ranked if p in present]  # a partner the tree no longer has is not missing
    rows = await first_chunks(conn, repository_id, snapshot_id, missing[:limit]) if limit > 0 else []
    return [
        _candidate(
            "cochange",
            row,
            f"usually changes with {partner_of[row['path']]} ({counts[row['path']]} commits)",
        )
        for row in rows
    ], missing


async def first_chunks(
    conn: Conn, repository_id: UUID, snapshot_id: UUID, paths: Sequence[str]
) -> list[dict[str, Any]]:
    """The first chunk of each of ``paths`` in the snapshot, in the order of ``paths``."""
    if not paths:
        return []
    cur = await conn.execute(
        f"SELECT f.path, {_CHUNK_COLUMNS} FROM unnest(%(paths)s::text[]) WITH ORDINALITY AS p(path, i)"
        " JOIN code_index_files f ON f.snapshot_id = %(snap)s AND f.path = p.path"
        " CROSS JOIN LATERAL (SELECT * FROM code_chunks c WHERE c.repository_id = %(r)s"
        "   AND c.blob_sha = f.blob_sha ORDER BY c.ordinal LIMIT 1) c"
        " ORDER BY p.i",
        {"r": repository_id, "snap": snapshot_id, "paths": list(paths)},
    )
    return [dict(row) for row in await cur.fetchall()]
