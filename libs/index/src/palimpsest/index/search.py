"""Lexical search over the code index: code-aware tokens, GIN candidates, ``ts_rank_cd`` ranking.

The query goes through the same tokenizer as the chunks (:func:`palimpsest.index.tokens.query_terms`).
Scores are ``ts_rank_cd`` normalised to 0..1 and weighted by the chunk's static prior (its
file's kind by the shared classifier, stored by the chunker: product code 1, tests 0.6, generated
and vendored files 0.4, :mod:`palimpsest.index.ranking`, migration 0056), plus 1 for the chunk that
defines the identifier the query names and a small bonus for definition chunks over plain windows. The chunks that define
the identifier (as written) join every pass's candidates, however many chunks name it (migration 0053). A query of several
plain words is first looked up as a phrase (the words in order, adjacent: ``<->``). The next pass asks for
chunks that contain *every* token (an identifier matches its whole form and its parts); if that
yields fewer than ``limit`` hits, a second pass accepts chunks that hold *any* of the query's
terms, where a term is held by its whole form or by all of its words (``getUserName``: the
lexeme ``getusername``, or ``get``, ``user`` and ``name`` together). A lone word of a compound
never stands for it: the second pass of ``VerificationFailureRate`` must not fill the list with
every chunk that says "rate". Each pass ranks at most ``candidates`` GIN matches (the phrase and
padding passes of a query of several terms a quarter of them), so the cost stays bounded on huge
repositories. A word with more matches than that is ranked among its matches in the prior's order,
product code first, then docs, configuration and examples, then tests, generated and vendored
files (the tiers of :data:`palimpsest.index.ranking.TIER_BOUNDS`, migration 0057), not among the
first in storage order. With a language, path prefix or kind filter, the candidates are the chunks that
pass it, read from the filtered files or from the GIN matches, whichever the filter's size makes
cheaper (migration 0046).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from typing import Any, Literal
from uuid import UUID

from palimpsest.core.db import Conn, fetch_all_as
from palimpsest.core.stores import Store
from palimpsest.index.errors import IndexNotReady, InvalidQuery
from palimpsest.index.snapshots import newest_ready
from palimpsest.index.tokens import QueryTerm, query_terms

# the chunker's chunks and file rows, read through the candidate functions (migrations 0053, 0056,
# 0057: SECURITY DEFINER, so the GIN indexes serve under row-level security) and fetch_hits
STORE = Store(owner="chunker", reads=("code_chunks", "code_index_files", "code_blobs"))

DEFAULT_CANDIDATES = 2000
# the phrase pass and the padding pass rank this share of ``candidates`` (see lexical_search)
SIDE_PASS_SHARE = 4
FilterPlan = Literal["files", "ranked"]
_IDENTIFIER = re.compile(r"[A-Za-z_$][\w$]*")


@dataclass(frozen=True, slots=True)
class SearchHit:
    path: str
    start_line: int
    end_line: int
    kind: str
    name: str | None
    language: str | None
    score: float
    blob_sha: str
    ordinal: int
    content: str

    def as_dict(self, *, with_content: bool = True) -> dict[str, Any]:
        d = asdict(self)
        if not with_content:
            d.pop("content")
        return d


def _tsquery(tokens: Iterable[str], op: str) -> str:
    return f" {op} ".join(f"'{t}'" for t in tokens)


def _widens(term: QueryTerm) -> bool:
    """Whether the term's words match more than its whole form (a plain word is its own word)."""
    return bool(term.words) and term.words != term.tokens[:1]


def _held(term: QueryTerm) -> str:
    """A tsquery for the chunks that hold the term: its whole form, or all of its words."""
    whole = f"'{term.tokens[0]}'"
    return f"({whole} | {_tsquery(term.words, '&')})" if _widens(term) else whole


def passes(query: str) -> list[str]:
    """The tsqueries of the search passes: every token; then, if that can differ, any term."""
    terms = query_terms(query)
    tokens = dict.fromkeys(t for term in terms for t in term.tokens)
    if not tokens:
        raise InvalidQuery("the query has no searchable words")
    every = _tsquery(tokens, "&")
    if len(terms) == 1 and not _widens(terms[0]):
        return [every]
    # words in the query's order, next to each other, first (``account the cart``): the AND pass
    # ranks at most ``candidates`` chunks that hold every word somewhere, and where thousands do,
    # the ones that say the phrase were often not among them
    phrase = (
        [" <-> ".join(f"'{t.tokens[0]}'" for t in terms)] if all(len(t.tokens) == 1 for t in terms) else []
    )
    return [*phrase, every, " | ".join(map(_held, terms))]


def hit_filters(
    params: dict[str, Any], *, path_prefix: str | None, language: str | None, kind: str | None
) -> str:
    """SQL conditions on a hit's file ``f`` and chunk ``c`` for the given filters; adds their
    parameters to ``params``. Shared by lexical and semantic search."""
    filters = ""
    if path_prefix:
        filters += " AND f.path LIKE %(prefix)s"
        params["prefix"] = path_prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
    if language:
        filters += " AND f.language = %(language)s"
        params["language"] = language
    if kind:
        filters += " AND c.kind = %(kind)s"
        params["kind"] = kind
    return filters


async def lexical_search(
    conn: Conn,
    repository_id: UUID,
    query: str,
    *,
    snapshot_id: UUID | None = None,
    limit: int = 10,
    path_prefix: str | None = None,
    language: str | None = None,
    kind: str | None = None,
    candidates: int = DEFAULT_CANDIDATES,
    filter_plan: FilterPlan | None = None,
) -> list[SearchHit]:
    """The best ``limit`` chunks for ``query`` (see the module docstring).

    With a language, path prefix or kind filter the candidates are the chunks that pass it, found
    by the plan that suits the filter's size (migration 0046): ``files`` reads the chunks of the
    files that pass it, ``ranked`` the query's GIN matches; None lets the database choose, a plan
    forces it (tests compare the two)."""
    tsqueries = passes(query)
    if snapshot_id is None:
        snap = await newest_ready(conn, repository_id)
        if snap is None:
            raise IndexNotReady("the repository has no ready snapshot yet")
        snapshot_id = snap.snapshot_id
    # a query that is one identifier: its definition (a chunk of that name) ranks first, and is a
    # candidate however many chunks name it (migration 0053)
    symbol = query.strip() if _IDENTIFIER.fullmatch(query.strip()) else None
    hits: list[SearchHit] = []
    seen: set[tuple[str, int]] = set()
    # The pass of every token ranks ``candidates`` GIN matches. For a query of several terms, the
    # phrase pass before it and the padding pass after it rank a quarter of that: every phrase
    # candidate says the phrase (the GIN index cannot tell adjacency, so each is rechecked in its
    # row, and common pairs such as "test that" recheck thousands), and the padding pass only fills
    # the list with chunks that hold some term; on kafka those two passes were most of the phrase
    # shapes' p95 (60-210 ms of it). A single identifier's padding pass keeps the full pool
    main = next(i for i, t in enumerate(tsqueries) if "<->" not in t)
    side = max(limit, candidates // SIDE_PASS_SHARE) if len(query_terms(query)) > 1 else candidates
    for i, tsq in enumerate(tsqueries):
        found = await _run(
            conn,
            repository_id,
            snapshot_id,
            tsq,
            limit,
            path_prefix,
            language,
            kind,
            candidates if i == main else side,
            symbol,
            filter_plan,
            # the definitions join the main pass only: a chunk named as the identifier holds every
            # token of it, so a later, looser pass would find the same chunks again
            definitions=i == main,
        )
        for hit in found:
            key = (hit.blob_sha, hit.ordinal)
            if key not in seen and len(hits) < limit:
                seen.add(key)
                hits.append(hit)
        if len(hits) >= limit:
            break
    return hits


async def _run(
    conn: Conn,
    repository_id: UUID,
    snapshot_id: UUID,
    tsq: str,
    limit: int,
    path_prefix: str | None,
    language: str | None,
    kind: str | None,
    candidates: int,
    symbol: str | None,
    filter_plan: FilterPlan | None,
    *,
    definitions: bool,
) -> list[SearchHit]:
    params: dict[str, Any] = {
        "symbol": symbol,
        "repo": repository_id,
        "snap": snapshot_id,
        "q": tsq,
        "limit": limit,
        "cand": candidates,
        "ident": symbol.lower() if symbol else None,
        "pool": limit * 2 + 10,
        "language": None,
        "prefix": None,
        "kind": None,
        "plan": filter_plan,
    }
    filters = hit_filters(params, path_prefix=path_prefix, language=language, kind=kind)
    # candidates come from a SECURITY DEFINER function that can use the GIN index under RLS
    # (migration 0004 explains why); paths and content are then read under the tenant's policy.
    # With filters, the candidates are the chunks that pass them (migrations 0041, 0046): the
    # function reads either the filtered files' chunks or the query's GIN matches, whichever is
    # fewer. Ranking the unfiltered best first and filtering them after was wasted where the
    # filter is narrow (a language of 270 of kafka's 6 360 files: 2 000 chunks ranked for none)
    if not filters:
        candidates_sql = (
            "SELECT blob_sha, ordinal, score AS measure FROM palimpsest_lexical_candidates("
            " %(repo)s, %(snap)s, to_tsquery('simple', %(q)s), %(ident)s, %(cand)s, %(pool)s)"
        )
    else:
        candidates_sql = (
            "SELECT blob_sha, ordinal, score AS measure FROM palimpsest_lexical_filtered_candidates("
            " %(repo)s, %(snap)s, to_tsquery('simple', %(q)s), %(ident)s, %(cand)s, %(pool)s,"
            " %(language)s, %(prefix)s, %(kind)s, %(plan)s)"
        )
    if symbol and definitions:
        # the identifier's definitions join the pool, scored as the candidates are: a chunk in both
        # comes back once (migration 0053)
        candidates_sql += (
            " UNION SELECT blob_sha, ordinal, score AS measure FROM palimpsest_lexical_definitions("
            " %(repo)s, %(snap)s, to_tsquery('simple', %(q)s), %(symbol)s, %(pool)s,"
            " %(language)s, %(prefix)s, %(kind)s)"
        )
    return await fetch_hits(conn, candidates_sql, params, filters, descending=True, score=float)


async def fetch_hits(
    conn: Conn,
    candidates: str,
    params: dict[str, Any],
    filters: str,
    *,
    descending: bool,
    score: Callable[[float], float],
) -> list[SearchHit]:
    """The search hits of lexical and semantic search, built once.

    ``candidates`` selects ``blob_sha, ordinal, measure`` (a rank or a distance); each candidate
    chunk becomes a hit at its first file of the snapshot ``%(snap)s`` that passes ``filters``
    (from :func:`hit_filters`), best ``measure`` first, at most ``%(limit)s``; the hit's score is
    ``score(measure)`` rounded to 6 places.
    """
    hits = await fetch_all_as(
        conn,
        SearchHit,
        f"WITH t AS ({candidates})"
        " SELECT f.path, c.start_line, c.end_line, c.kind, c.name, f.language, t.measure AS score, t.blob_sha,"
        "   t.ordinal, c.content"
        " FROM t JOIN code_chunks c ON c.repository_id = %(repo)s AND c.blob_sha = t.blob_sha"
        "   AND c.ordinal = t.ordinal"
        " CROSS JOIN LATERAL (SELECT f.path, f.language FROM code_index_files f"
        "   WHERE f.snapshot_id = %(snap)s AND f.blob_sha = t.blob_sha"
        f"  {filters} ORDER BY f.path LIMIT 1) f"
        f" ORDER BY t.measure {'DESC' if descending else 'ASC'}, f.path, c.start_line LIMIT %(limit)s",
        params,
    )
    return [dataclasses.replace(h, score=round(score(float(h.score)), 6)) for h in hits]
