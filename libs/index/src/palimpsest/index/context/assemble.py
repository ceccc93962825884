"""The review core: the context a pull request is reviewed with, the same for every caller.

:func:`assemble_context` is called by the webhook flow and the local/API flow alike. The diff
and the files at head come from the caller (the provider or the local repository); the index
supplies candidates only — from the ready snapshot of the base commit, else the newest ready one:

1. gather the five sources (:mod:`palimpsest.index.context.candidates`);
2. drop candidates whose content no longer matches head (``stale``);
3. rank: the tenant's rerank model when one is routed, else the calibrated per-source model
   (:func:`_score`: each source's n-th file is relevant with a measured probability, sources
   combine as independent witnesses; cross-repository chunks keep a reciprocal rank);
4. :func:`apply_recency` — docs demoted by the analyzer's doc states, read through
   :func:`palimpsest.index.docstates.doc_states` (the newest analysis): ``drift`` and
   ``unverified_old`` docs dropped unless their score is ≥ 0.6 (``drift_doc``, ``stale_doc``),
   ``verified`` and ``reference`` docs never demoted for their age; with no analysis, THE shared
   age rule (:mod:`palimpsest.index.staleness`, the median taken from the retrieved code chunks).
   Surviving docs are headed ``(documentation — verify against code)`` with their state, dated
   chunks ``last modified <date>``; unknown dates change nothing;
5. split the token budget across the sources; what does not fit is reported (``budget``).

Cross-repository context (:mod:`palimpsest.index.context.crossrepo`, links read from the base commit's
``.palimpsest/config.yml`` by the caller) is gathered first and takes at most ``cross_share``
(25 %) of the budget — chunks past that are dropped as ``cross_repo_budget`` — and the PR's own
repository gets the rest. Those chunks are labelled ``linked``/``pattern`` with their repository's
full name and come after the PR's own context in the prompt.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol
from uuid import UUID

from palimpsest.core.db import Conn
from palimpsest.core.errors import PalimpsestError
from palimpsest.index.cochange import DEFAULT_LIMIT, MissingPartner
from palimpsest.index.codefacts import is_doc
from palimpsest.index.context import candidates as sources
from palimpsest.index.context import crossrepo
from palimpsest.index.context.candidates import OWN_SOURCES, SOURCES, Candidate, QueryEmbedder, Source
from palimpsest.index.context.crossrepo import LinkConfig
from palimpsest.index.context.diff import ChangedFile, DiffNames, changed_paths, diff_names, parse_diff
from palimpsest.index.docstates import DocState, demotion, doc_states
from palimpsest.index.errors import IndexNotReady
from palimpsest.index.recency import last_modified_at
from palimpsest.index.snapshots import Snapshot, for_commit, newest_ready
from palimpsest.index.staleness import median_code_date

log = logging.getLogger(__name__)

DOC_ANNOTATION = "(documentation — verify against code)"
KEEP_STALE_DOC_SCORE = 0.6
FROM_HEAD_NOTE = "shown as of the pull request's head"
STALE_USAGE_NOTE = "stale: names what this change touches, may need updating"
DRIFT_USAGE_NOTE = "drift: names what this change touches, may need updating"
# what a kept doc's state adds to its header (a demoted state says so whether kept or not)
STATE_NOTES: dict[DocState, str] = {
    "drift": "drift: the latest analysis proved a claim of it out of date",
    "verified": "verified: its claims held at the latest analysis",
    "reference": "generated reference",
}
RRF_K = 60  # cross-repository chunks: reciprocal rank in their source
# The graph neighbourhood hands the ranking its one-hop list this many times deeper than the other
# sources are asked (480 files at the default 12), co-change four times: a file far down the
# neighbourhood that another source found too, or whose chunk is short, can still earn its place,
# and the calibrated model and the budget decide rather than the cut at 48. Replayed merged
# changes (issue 42's closing note): no repository of ten worse by more than 0.005, chi 0.974 -> 1.0;
# the price is reading the best chunk of up to 480 files (assembly p50 0.15-0.27 s -> 0.22-0.70 s).
NEIGHBOURHOOD_DEPTH = 40
COCHANGE_DEPTH = 4
# The chance that a source's n-th file (0-based) belongs in the review is a · (1 + n) ** -k, as
# measured on real merged changes replayed as pull requests (`palimpsest bench replay --signals`: 96 changes
# of eight public repositories in six languages; the truth is the rest of the change and the
# files that use what it changes). Fitted by maximum likelihood; fitted on seven repositories, the
# eighth's recall moved by at most 0.02. Usage stays likely deep into its list; co-change and the
# graph neighbourhood fall off fast; similar text is a weak hint throughout.
SOURCE_PRECISION: dict[str, tuple[float, float]] = {
    "usage": (0.60, 0.20),
    "neighbourhood": (0.64, 0.70),
    "cochange": (0.56, 0.60),
    "definitions": (0.56, 0.55),
    "related": (0.30, 0.30),
}


def file_chance(ranks: Mapping[str, int]) -> float:
    """The chance that a file belongs in the review, from its rank (0-based) in each source that
    found it: ``1 - Π (1 - a · (1 + rank) ** -k)`` over those sources (independent witnesses)."""
    missing = 1.0
    for source, rank in ranks.items():
        a, k = SOURCE_PRECISION.get(source, (0.0, 1.0))
        missing *= 1.0 - a * (1.0 + rank) ** -k
    return 1.0 - missing


# (query, documents) → one 0..1 relevance score per document, in document order
Reranker = Callable[[str, Sequence[str]], Awaitable[Sequence[float]]]


class HeadReader(Protocol):
    """The repository at the pull request's head, for candidates of an older snapshot."""

    async def changed_since(self, commit: str) -> Mapping[str, str | None]:
        """Every path whose content differs between ``commit`` and head → its head text (None: gone)."""
        ...


@dataclass(frozen=True, slots=True)
class ContextOptions:
    per_source: int = 12  # candidates asked of each source (the neighbourhood and co-change more: *_DEPTH)
    max_chunk_tokens: int = 800  # a longer chunk is cut (and says so): room for more files
    cross_share: float = 0.25  # at most this part of the budget goes to other repositories
    cochange_max: int = DEFAULT_LIMIT  # partners the co-change warning lists at most (review.cochange_max)
    cochange_include: frozenset[str] = frozenset()  # excludable kinds warned about (review.cochange_include)


@dataclass(slots=True)
class ReviewContext:
    repository_id: UUID
    snapshot_id: UUID
    snapshot_commit: str
    base_sha: str | None
    budget: int
    changed: list[str]
    names: DiffNames
    old_lines: dict[str, list[int]] = field(default_factory=dict)  # base-side lines the diff touches
    items: list[Candidate] = field(default_factory=list)  # in prompt order
    dropped: list[dict[str, Any]] = field(default_factory=list)
    # the co-change warning (palimpsest.index.cochange.MissingPartner.as_dict), most confident first
    cochange_missing: list[dict[str, Any]] = field(default_factory=list)
    median_code_date: datetime | None = None
    doc_rule: str = "age"  # how docs were demoted: "analysis" (stored doc states) | "age" (none stored)
    ranking: str = "fused"  # fused | rerank
    cross: dict[str, Any] = field(default_factory=dict)  # cross-repository context: config, links, tokens
    timings: dict[str, float] = field(default_factory=dict)  # phase → milliseconds, for operators
    # per candidate file: each source's rank of it (0-based) — how its score was reached
    file_signals: dict[str, dict[str, int]] = field(default_factory=dict)

    @property
    def on_base(self) -> bool:
        return self.base_sha is not None and self.snapshot_commit == self.base_sha

    def sources(self) -> dict[str, dict[str, int]]:
        """Per source: the chunks used and their tokens."""
        out: dict[str, dict[str, int]] = {s: {"items": 0, "tokens": 0} for s in SOURCES}
        for item in self.items:
            out[item.source]["items"] += 1
            out[item.source]["tokens"] += item.tokens
        return out

    def context_dicts(self) -> list[dict[str, Any]]:
        return [
            {
                "source": c.source,
                "repository": c.repository,  # another repository's full name (linked/pattern); None: the PR's
                "path": c.path,
                "start_line": c.start_line,
                "end_line": c.end_line,
                "last_modified_at": c.last_modified_at.isoformat() if c.last_modified_at else None,
                "annotation": c.annotation,
                "score": round(c.score, 4),
                "reason": c.reason,
                "tokens": c.tokens,
            }
            for c in self.items
        ]


async def pick_snapshot(conn: Conn, repository_id: UUID, base_sha: str | None) -> Snapshot:
    """The ready snapshot of the base commit, else the newest ready one."""
    snap = await for_commit(conn, repository_id, base_sha) if base_sha else None
    if snap is None:  # a kept (ready or superseded) snapshot of exactly the base, else the newest
        snap = await newest_ready(conn, repository_id)
    if snap is None:
        raise IndexNotReady("the repository has no ready snapshot yet (index it first)")
    return snap


async def assemble_context(
    conn: Conn,
    repository_id: UUID,
    diff: str | Sequence[ChangedFile],
    changed_files_at_head: Mapping[str, str | None],
    budget: int,
    *,
    base_sha: str | None = None,
    head: HeadReader | None = None,
    rerank: Reranker | None = None,
    embed_query: QueryEmbedder | None = None,
    options: ContextOptions | None = None,
    links: LinkConfig | None = None,
) -> ReviewContext:
    """The review context of a diff (see the module docstring); runs in a tenant transaction.

    ``links`` is the base commit's cross-repository config (None: no cross-repository context).
    """
    options = options or ContextOptions()
    started = time.perf_counter()
    files = parse_diff(diff) if isinstance(diff, str) else list(diff)
    snap = await pick_snapshot(conn, repository_id, base_sha)
    sid = snap.snapshot_id
    ctx = ReviewContext(
        repository_id=repository_id,
        snapshot_id=sid,
        snapshot_commit=snap.commit_sha,
        base_sha=base_sha,
        budget=budget,
        changed=changed_paths(files),
        names=diff_names(files),
        old_lines={f.old_path or f.path: f.old_touched for f in files if f.old_touched},
    )
    at_head = dict(changed_files_at_head)
    if head is not None and not ctx.on_base:
        at_head = {**(await head.changed_since(ctx.snapshot_commit)), **at_head}
    cross = await _cross_repo(conn, ctx, links, options) if links is not None else []
    warning = sources.CoChangeWarning(
        limit=options.cochange_max,
        include=options.cochange_include,
        touched=frozenset(p for f in files for p in (f.path, f.old_path) if p),
        deleted_at_head=frozenset(p for p, text in at_head.items() if text is None),
    )
    found, missing = await _gather(conn, ctx, options, embed_query, warning)
    ctx.cochange_missing = [m.as_dict() for m in missing]
    fresh = _fresh_only(found, at_head, ctx.dropped, own=frozenset(ctx.changed))
    ctx.ranking = await _score(fresh, ctx, rerank)
    await _dates(conn, repository_id, fresh)
    states = await doc_states(conn, repository_id)
    ctx.doc_rule = "age" if states is None else "analysis"
    ctx.median_code_date, kept = apply_recency(fresh, ctx.dropped, states)
    own_budget = budget - sum(c.tokens for c in cross)
    ctx.items = _within_budget(kept, own_budget, options, ctx.dropped) + cross
    ctx.timings["total"] = round((time.perf_counter() - started) * 1000, 2)
    return ctx


async def _cross_repo(
    conn: Conn, ctx: ReviewContext, links: LinkConfig, options: ContextOptions
) -> list[Candidate]:
    """Other repositories' chunks within ``cross_share`` of the budget (annotated like our own)."""
    started = time.perf_counter()
    resolved = await crossrepo.resolve_links(conn, ctx.repository_id, links, ctx.dropped)
    found = await crossrepo.gather(conn, resolved, ctx.names, ctx.changed, options.per_source)
    for rank, cand in enumerate(found):
        cand.score = 1.0 / (1 + rank / RRF_K)
        _annotate(cand)
    allowance = math.floor(ctx.budget * options.cross_share)
    chosen: list[Candidate] = []
    used = 0
    for cand in found:
        _measure(cand, options)
        if used + cand.tokens <= allowance:
            used += cand.tokens
            chosen.append(cand)
        else:
            ctx.dropped.append(_drop(cand, "cross_repo_budget"))
    ctx.cross = {
        "config": links.summary(),
        "linked": [lk.full_name for lk in resolved if lk.role == "linked"],
        "pattern": [lk.full_name for lk in resolved if lk.role == "pattern"],
        "budget": allowance,
        "tokens": used,
        "truncated": len(found) - len(chosen),
    }
    ctx.timings["cross_repo"] = round((time.perf_counter() - started) * 1000, 2)
    # prompt order: linked before pattern, repositories in config order, best first within each
    order: dict[tuple[str, str], int] = {(lk.role, lk.full_name): i for i, lk in enumerate(resolved)}
    return sorted(chosen, key=lambda c: order.get((c.source, c.repository or ""), 0))


async def _gather(
    conn: Conn,
    ctx: ReviewContext,
    options: ContextOptions,
    embed_query: QueryEmbedder | None,
    warning: sources.CoChangeWarning,
) -> tuple[list[Candidate], list[MissingPartner]]:
    n, rid, sid = options.per_source, ctx.repository_id, ctx.snapshot_id
    changed = frozenset(ctx.changed)
    names = ctx.names
    clock = _Clock(ctx.timings)
    touched = await sources.touched_definitions(conn, rid, sid, ctx.old_lines) if ctx.on_base else []
    defined = list(dict.fromkeys([*names.defined, *touched]))
    found = await sources.definitions(conn, rid, sid, [*names.defined, *names.called], n)
    clock("definitions")
    found += await sources.usages(conn, rid, sid, defined, changed, n)
    found += await sources.mentions(conn, rid, sid, defined, changed, n * 2)
    clock("usage")
    words = list(dict.fromkeys([*names.defined[:3], *names.called[:3], *names.mentioned]))[:6]
    found += await sources.related(conn, rid, sid, words, changed, n, embed_query=embed_query)
    clock("related")
    wanted = [*defined, *names.called]  # what a chunk of a neighbour or partner should mention
    memo: sources.ChunkMemo = {}
    found += await sources.neighbourhood(
        conn, rid, sid, changed, n * NEIGHBOURHOOD_DEPTH, words=wanted, memo=memo
    )
    clock("neighbourhood")
    partners, missing = await sources.cochange(
        conn, rid, sid, ctx.changed, n * COCHANGE_DEPTH, words=wanted, warning=warning, memo=memo
    )
    clock("cochange")
    return found + partners, missing


class _Clock:
    def __init__(self, into: dict[str, float]) -> None:
        self.into = into
        self.last = time.perf_counter()

    def __call__(self, phase: str) -> None:
        now = time.perf_counter()
        self.into[phase] = round((now - self.last) * 1000, 2)
        self.last = now


def _fresh_only(
    found: Sequence[Candidate],
    at_head: Mapping[str, str | None],
    dropped: list[dict[str, Any]],
    *,
    own: frozenset[str] = frozenset(),
) -> list[Candidate]:
    """Candidates whose text is still in the file at head (lines re-pointed); the rest ``stale``.

    A chunk of the pull request's ``own`` files whose text the pull request changed is shown as
    the head has those lines (the change is what the review is about, not a stale leftover); one
    of a file the pull request deletes is left out without a word (the diff says it all)."""
    out: list[Candidate] = []
    for cand in found:
        if cand.path not in at_head:
            out.append(cand)
            continue
        text = at_head[cand.path]
        index = text.find(cand.content) if text is not None and cand.content else -1
        if index < 0 and cand.path in own:
            if text is not None and _from_head(cand, text):
                out.append(cand)
            continue
        if index < 0:
            dropped.append(_drop(cand, "stale"))
            continue
        start = text.count("\n", 0, index) + 1 if text is not None else cand.start_line
        cand.end_line = start + (cand.end_line - cand.start_line)
        cand.start_line = start
        out.append(cand)
    return out


def _from_head(cand: Candidate, text: str) -> bool:
    """Point ``cand`` at the same lines of the head's ``text`` (clamped); False when none are left."""
    lines = text.splitlines(keepends=True)
    if not lines:
        return False
    start = min(max(cand.start_line, 1), len(lines))
    end = min(max(cand.end_line, start), len(lines))
    cand.content = "".join(lines[start - 1 : end])
    cand.start_line, cand.end_line = start, end
    cand.reason = "; ".join(filter(None, [cand.reason, FROM_HEAD_NOTE]))
    return True


async def _score(found: list[Candidate], ctx: ReviewContext, rerank: Reranker | None) -> str:
    """Score every file by the evidence of all the sources that found it, then its chunks.

    Each source's n-th file (0-based) belongs in the review with a measured probability
    ``a · (1 + n) ** -k`` (:data:`SOURCE_PRECISION`); a file found by several sources gets
    ``1 - Π (1 - p)`` — the sources are independent witnesses, so agreement raises it. A chunk
    scores its file's probability, the file's chunks in the order the sources gave them; each
    chunk's reason lists every source's evidence for its file. Duplicate chunks keep their first
    source.
    """
    reasons: dict[str, dict[str, None]] = {}
    ranks: dict[Source, dict[str, int]] = {}
    for cand in found:
        seen_paths = ranks.setdefault(cand.source, {})
        if cand.path not in seen_paths:
            seen_paths[cand.path] = ctx.file_signals.setdefault(cand.path, {})[cand.source] = len(seen_paths)
        reasons.setdefault(cand.path, {})[cand.reason] = None
    chance = {path: file_chance(signals) for path, signals in ctx.file_signals.items()}
    seen: set[tuple[str, str, int]] = set()
    unique = []
    for cand in found:
        if cand.key not in seen:
            seen.add(cand.key)
            unique.append(cand)
    found[:] = unique
    order: dict[str, int] = {}
    for cand in found:
        within = order[cand.path] = order.get(cand.path, -1) + 1
        cand.score = chance[cand.path] * (0.999**within)
        cand.reason = "; ".join(r for r in reasons[cand.path] if r)
    if rerank is None or not found:
        return "fused"
    query = " ".join([*ctx.changed[:10], *ctx.names.defined[:10], *ctx.names.called[:10]])
    try:
        scores = await rerank(query, [c.content[:4000] for c in found])
    except PalimpsestError as exc:  # the model failing must not fail the review: fused scores stand
        log.warning("rerank failed, using fused scores: %s", exc)
        return "fused (rerank failed)"
    if len(scores) != len(found):
        return "fused (rerank failed)"
    for cand, score in zip(found, scores, strict=True):
        cand.score = min(1.0, max(0.0, float(score)))
    return "rerank"


async def _dates(conn: Conn, repository_id: UUID, found: Sequence[Candidate]) -> None:
    dates = await last_modified_at(conn, repository_id, [c.path for c in found])
    for cand in found:
        cand.last_modified_at = dates.get(cand.path)


def apply_recency(
    ranked: Sequence[Candidate],
    dropped: list[dict[str, Any]],
    states: Mapping[str, DocState] | None = None,
) -> tuple[datetime | None, list[Candidate]]:
    """Doc demotion and annotation, after ranking.

    A doc is demoted by its stored state (``states``, from :func:`~palimpsest.index.docstates.doc_states`):
    ``drift`` (``drift_doc``) and ``unverified_old`` (``stale_doc``); ``verified`` and ``reference``
    docs never are, whatever their age. A doc the analysis did not judge, or every doc when there
    is no analysis (``states`` None), is demoted by the shared age rule: stale against the median
    date of the retrieved *code* chunks' files (``stale_doc``). A demoted doc is dropped unless its
    score is ≥ 0.6 or it names a definition the diff changes (``usage``: the change may be what
    makes it wrong, so it is shown, marked). Kept docs are headed ``(documentation — verify against
    code)`` and their state; every chunk with a known date carries ``last modified <date>``.
    """
    median = median_code_date((c.path, c.last_modified_at) for c in ranked)
    kept: list[Candidate] = []
    for cand in ranked:
        demoted = demotion(cand.path, cand.last_modified_at, median, states)
        if demoted and cand.score < KEEP_STALE_DOC_SCORE and cand.source != "usage":
            dropped.append(_drop(cand, demoted))
            continue
        _annotate(cand, states.get(cand.path) if states else None)
        if demoted and cand.source == "usage":
            note = DRIFT_USAGE_NOTE if demoted == "drift_doc" else STALE_USAGE_NOTE
            cand.annotation = f"{cand.annotation}, {note}"
        elif demoted == "drift_doc":
            cand.annotation = f"{cand.annotation}, {STATE_NOTES['drift']}"
        kept.append(cand)
    return median, kept


def _annotate(cand: Candidate, state: DocState | None = None) -> None:
    notes = [DOC_ANNOTATION] if is_doc(cand.path) else []
    if notes and state in ("verified", "reference"):
        notes.append(STATE_NOTES[state])
    if cand.last_modified_at is not None:
        notes.append(f"last modified {cand.last_modified_at.date().isoformat()}")
    cand.annotation = ", ".join(notes) or None


def estimate_tokens(text: str) -> int:
    """About four characters per token (no tokenizer is needed to split a budget)."""
    return max(1, math.ceil(len(text) / 4))


def _within_budget(
    kept: Sequence[Candidate], budget: int, options: ContextOptions, dropped: list[dict[str, Any]]
) -> list[Candidate]:
    """Files in score order, each with its best chunk first; then more chunks of the files taken,
    best first, while the budget lasts. What does not fit is dropped (``budget``, with its rank)."""
    ranked = sorted(kept, key=lambda c: -c.score)
    for cand in ranked:
        _measure(cand, options)
    chosen: set[tuple[str, str, int]] = set()
    used = 0
    first_of: dict[str, Candidate] = {}
    for cand in ranked:
        first_of.setdefault(cand.path, cand)
    for cand in first_of.values():
        if used + cand.tokens <= budget:
            used += cand.tokens
            chosen.add(cand.key)
    taken = {c.path for c in ranked if c.key in chosen}
    for cand in ranked:
        if cand.key not in chosen and cand.path in taken and used + cand.tokens <= budget:
            used += cand.tokens
            chosen.add(cand.key)
    rank = {cand.key: i for i, cand in enumerate(ranked, 1)}
    out: list[Candidate] = []
    for source in OWN_SOURCES:
        for cand in ranked:
            if cand.source != source:
                continue
            if cand.key in chosen:
                out.append(cand)
            else:
                dropped.append(
                    {**_drop(cand, "budget"), "rank": rank[cand.key], "score": round(cand.score, 4)}
                )
    return out


def _measure(cand: Candidate, options: ContextOptions) -> None:
    """Cut an over-long chunk (saying so) and count its tokens with its header."""
    cap = options.max_chunk_tokens * 4
    if len(cand.content) > cap:
        cand.content = cand.content[:cap] + "\n… (cut to fit the context budget)"
    cand.tokens = estimate_tokens(cand.content) + estimate_tokens(cand.path) + 8
    if cand.repository:
        cand.tokens += estimate_tokens(cand.repository)


def _drop(cand: Candidate, reason: str) -> dict[str, Any]:
    out = {
        "path": cand.path,
        "reason": reason,
        "source": cand.source,
        "start_line": cand.start_line,
        "end_line": cand.end_line,
    }
    return {**out, "repository": cand.repository} if cand.repository else out
