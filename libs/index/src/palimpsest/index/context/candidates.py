"""The context sources of a review, read from one snapshot of the code index.

Five sources read the PR's own repository; ``linked`` and ``pattern`` chunks come from other
repositories of the tenant through the same queries (:mod:`palimpsest.index.context.crossrepo`).

Each source returns ranked :class:`Candidate` chunks (best first); the core
(:mod:`palimpsest.index.context.assemble`) fuses, checks them against head, demotes and budgets them.
Every query runs in the caller's tenant transaction and stays on indexed access paths (symbol
names, blob ids, snapshot paths) so a review of a 50 000-file repository stays fast; the chunk
reads are :mod:`.candidate_store`'s, the graph, search and recency reads their own modules'.
"""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Literal
from uuid import UUID

from palimpsest.core.db import Conn
from palimpsest.core.errors import PalimpsestError
from palimpsest.index.cochange import DEFAULT_LIMIT, MissingPartner, missing_partners
from palimpsest.index.codefacts import Kind, classify, is_doc, is_test
from palimpsest.index.context import candidate_store as store
from palimpsest.index.context.candidate_store import ChunkRow
from palimpsest.index.evidence import decayed
from palimpsest.index.graph import EdgeKind, graph_context, snapshot_graph
from palimpsest.index.recency import cochange_evidence, cochange_neighbours, counted_paths
from palimpsest.index.search import SearchHit, lexical_search

log = logging.getLogger(__name__)

Source = Literal["definitions", "usage", "related", "neighbourhood", "cochange", "linked", "pattern"]
OWN_SOURCES: tuple[Source, ...] = ("definitions", "usage", "related", "neighbourhood", "cochange")
CROSS_SOURCES: tuple[Source, ...] = ("linked", "pattern")  # other repositories (crossrepo)
SOURCES: tuple[Source, ...] = OWN_SOURCES + CROSS_SOURCES

# (model, text) → the query's vector (hybrid repositories only)
QueryEmbedder = Callable[[str, str], Awaitable[Sequence[float]]]

MAX_DEFINERS = 3  # a called name defined in more files of the snapshot is ambiguous: not looked up
COCHANGE_PER_PATH = 40  # partners read per changed file (the strongest by decayed evidence)
MIN_MENTION_NAME = 4  # shorter names say too little to follow through the text
MAX_MENTION_FILES = 25  # a name found in more files is too common to point at its users
MAX_MENTION_NAMES = 12  # names of the diff followed through the text
MENTION_CANDIDATES = 400
MAX_TEST_PAIRS = 3
FOCUS_BEFORE, FOCUS_AFTER = (
    6,
    14,
)  # lines kept around a use when a chunk is longer  # test files (or code under test) paired by name with one changed file  # lexical-index matches read per name
RELATED_CANDIDATES = 300  # GIN matches ranked per pass: related code is a hint, keep it cheap


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


def _candidate(source: Source, row: ChunkRow, reason: str) -> Candidate:
    return Candidate(
        source=source,
        path=row.path,
        start_line=row.start_line,
        end_line=row.end_line,
        content=row.content,
        blob_sha=row.blob_sha,
        ordinal=row.ordinal,
        reason=reason,
    )


def focus(cand: Candidate, line: int, *, before: int = FOCUS_BEFORE, after: int = FOCUS_AFTER) -> Candidate:
    """Narrow a long chunk to the lines around ``line`` (a use of a changed name): a reviewer needs
    the use and its surroundings, and the budget then reaches more files."""
    lines = cand.content.split("\n")
    if len(lines) <= before + after + 1 or not cand.start_line <= line <= cand.end_line:
        return cand
    lo = max(0, line - cand.start_line - before)
    hi = min(len(lines), lo + before + after + 1)
    cand.content = "\n".join(lines[lo:hi])
    cand.start_line, cand.end_line = cand.start_line + lo, cand.start_line + hi - 1
    return cand


def _match_line(row: ChunkRow, pattern: re.Pattern[str] | None) -> int | None:
    found = pattern.search(row.content) if pattern is not None else None
    return row.start_line + row.content.count("\n", 0, found.start()) if found else None


async def definitions(
    conn: Conn,
    repository_id: UUID,
    snapshot_id: UUID,
    names: Sequence[str],
    limit: int,
    *,
    max_definers: int = MAX_DEFINERS,
) -> list[Candidate]:
    """The chunks that define ``names`` (in the order of ``names``), one per definition; a name
    defined in more than ``max_definers`` files of the snapshot is left out (ambiguous)."""
    if not names or limit <= 0:
        return []
    rows = await store.defining_chunks(conn, repository_id, snapshot_id, names, limit, max_definers)
    return [_candidate("definitions", row, f"defines {row.name}") for row in rows]


async def touched_definitions(
    conn: Conn, repository_id: UUID, snapshot_id: UUID, old_lines: Mapping[str, Sequence[int]]
) -> list[str]:
    """Names of the base's definitions (the index's symbols) whose span has a line the diff
    removes or inserts after — the class around a changed method too, which the diff text alone
    does not name. Only meaningful when the snapshot is the base's."""
    if not old_lines:
        return []
    names: dict[str, None] = {}
    for span in await store.definition_spans(conn, repository_id, snapshot_id, list(old_lines)):
        lines = old_lines[span.path]
        if any(span.start_line <= n <= span.end_line for n in lines):
            names.setdefault(span.name)
    return list(names)


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
    rows = await store.using_chunks(conn, repository_id, snapshot_id, paths, names)
    return [
        focus(_candidate("usage", row, f"uses `{row.name}` (changed in this diff)"), row.focus)
        for row in rows
    ]


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
    conn: Conn,
    repository_id: UUID,
    snapshot_id: UUID,
    changed: frozenset[str],
    limit: int,
    *,
    words: Sequence[str] = (),
    memo: ChunkMemo | None = None,
) -> list[Candidate]:
    """The changed files' tests (or code under test), then the graph's 1-hop ranking blended with
    co-change history and recency, seeded by the changed code files the graph knows; each file
    shown at the part that mentions most of ``words`` (the diff's names), else its start."""
    if not changed or limit <= 0:
        return []
    try:
        _, graph, _ = await snapshot_graph(conn, repository_id, snapshot_id=snapshot_id)
        seeds = sorted(p for p in history_sources(sorted(changed)) if p in graph.path_index)
        if not seeds:
            return []
        result = await graph_context(
            conn,
            repository_id,
            seeds,
            budget=10**9,
            hops=1,
            snapshot_id=snapshot_id,
            history=True,
            limit=limit + len(changed),
        )
    except PalimpsestError as exc:
        log.info("neighbourhood source unavailable: %s", exc)
        return []
    reasons: dict[str, str] = {}
    for path, partner in paired_tests(graph.paths, seeds):  # the changed files' tests, or code under test
        reasons.setdefault(path, f"tests {partner}" if is_test(path) else f"the code {partner} tests")
    for entry in result.entries:
        if entry.path not in changed and len(reasons) < limit:
            reasons.setdefault(entry.path, entry.reason)
    rows = await best_chunks(conn, repository_id, snapshot_id, list(reasons)[:limit], words, memo=memo)
    return _focused("neighbourhood", rows, reasons, words)


@dataclass(frozen=True, slots=True)
class Partner:
    """A co-change partner of the changed files: its decayed evidence summed over them, and the
    changed file it pairs with most strongly with their shared commits."""

    path: str
    commits: int
    strength: float
    partner_of: str


async def partners(
    conn: Conn, repository_id: UUID, changed: Sequence[str], *, per_path: int = COCHANGE_PER_PATH
) -> list[Partner]:
    """Files that changed together with the changed files (not in the PR), strongest first; each
    names the changed file it is most strongly paired with and their shared commits."""
    touched = frozenset(changed)
    strength: dict[str, float] = {}  # evidence decayed to now (the count where none is stored)
    best: dict[str, tuple[float, str, int]] = {}  # partner -> its strongest pair (weight, path, commits)
    now = datetime.now(UTC)
    for path in history_sources(changed):
        for neighbour in await cochange_neighbours(conn, repository_id, path, limit=per_path):
            if neighbour.path in touched:
                continue
            evidence = neighbour.evidence
            weight = neighbour.commits if evidence is None else decayed(evidence, neighbour.last_at, now)
            strength[neighbour.path] = strength.get(neighbour.path, 0.0) + weight
            if neighbour.path not in best or weight > best[neighbour.path][0]:
                best[neighbour.path] = (weight, path, neighbour.commits)
    ranked = sorted(strength, key=lambda p: (-strength[p], p))
    return [Partner(p, best[p][2], strength[p], best[p][1]) for p in ranked]


def history_sources(changed: Sequence[str]) -> list[str]:
    """The changed files whose history speaks for the change: its code (a changelog or a doc
    changes with every feature and says nothing about which code belongs), else all of them."""
    code = [p for p in changed if not is_doc(p)]
    return code or list(changed)


async def cochange(
    conn: Conn,
    repository_id: UUID,
    snapshot_id: UUID,
    changed: Sequence[str],
    limit: int,
    *,
    words: Sequence[str] = (),
    warning: CoChangeWarning | None = None,
    memo: ChunkMemo | None = None,
) -> tuple[list[Candidate], list[MissingPartner]]:
    """Files that historically change with the changed files but are not in the pull request.

    Returns the context chunks — of each partner the snapshot has (strongest by decayed evidence
    first), the chunk that mentions most of ``words`` (the diff's names), else its first — and
    the warning: the partners whose evidence clears the bar
    (:func:`palimpsest.index.cochange.missing_partners`, the one list every reader shows).
    """
    warning = warning or CoChangeWarning()
    found = await partners(conn, repository_id, changed)
    speaking = history_sources(changed)
    evidence = await cochange_evidence(conn, repository_id, speaking)
    counted = await counted_paths(conn, repository_id, speaking)
    names = [p.path for p in found] + [e.partner for e in evidence]
    present = await store.present_paths(conn, snapshot_id, list(dict.fromkeys(names)))
    found = [p for p in found if p.path in present]  # a partner the tree no longer has is not missing
    touched = frozenset([*changed, *warning.touched])
    missing = missing_partners(
        evidence,
        touched=touched,
        present=lambda path: path in present and path not in warning.deleted_at_head,
        include=warning.include,
        limit=warning.limit,
        sources=counted,
    )
    reasons = {
        p.path: f"changed together with {p.partner_of} in {p.commits} commit{'s' if p.commits != 1 else ''}"
        for p in (found[:limit] if limit > 0 else [])
    }
    rows = await best_chunks(conn, repository_id, snapshot_id, list(reasons), words, memo=memo)
    return _focused("cochange", rows, reasons, words), missing


@dataclass(frozen=True, slots=True)
class CoChangeWarning:
    """What shapes the co-change warning of one review: the repository's rules
    (``review.cochange_max``, ``review.cochange_include``) and the head's facts."""

    limit: int = DEFAULT_LIMIT
    include: frozenset[str] = frozenset()  # excludable kinds the repository asks to be warned about
    touched: frozenset[str] = frozenset()  # every path of the pull request (old names of renames too)
    deleted_at_head: frozenset[str] = frozenset()


def _focused(
    source: Source, rows: Sequence[ChunkRow], reasons: Mapping[str, str], words: Sequence[str]
) -> list[Candidate]:
    """Candidates of ``rows`` (one chunk per path), each narrowed to the lines around the first
    mention of ``words`` when it has one."""
    pattern = _words_pattern(words)
    out = []
    for row in rows:
        cand = _candidate(source, row, reasons[row.path])
        line = _match_line(row, pattern)
        out.append(focus(cand, line) if line is not None else cand)
    return out


ChunkMemo = dict[tuple[str, tuple[str, ...]], ChunkRow]  # (path, words) -> its best chunk


async def best_chunks(
    conn: Conn,
    repository_id: UUID,
    snapshot_id: UUID,
    paths: Sequence[str],
    words: Sequence[str],
    *,
    memo: ChunkMemo | None = None,
) -> list[ChunkRow]:
    """Per path (in order): the chunk that mentions most of ``words`` as whole words (the part of
    the file that relates to the change), else the file's first chunk. ``memo`` keeps what one
    context assembly already read (the neighbourhood and co-change share many files)."""
    if not paths:
        return []
    if not words:
        return await first_chunks(conn, repository_id, snapshot_id, paths)
    memo = memo if memo is not None else {}
    key = tuple(words)
    wanted = [p for p in paths if (p, key) not in memo]
    if wanted:
        for path, row in (await _best_chunks(conn, repository_id, snapshot_id, wanted, words)).items():
            memo[(path, key)] = row
    return [memo[(p, key)] for p in paths if (p, key) in memo]


async def _best_chunks(
    conn: Conn, repository_id: UUID, snapshot_id: UUID, paths: Sequence[str], words: Sequence[str]
) -> dict[str, ChunkRow]:
    rows = await store.file_chunks(conn, repository_id, snapshot_id, paths)
    pattern = _words_pattern(words)
    best: dict[str, tuple[int, ChunkRow]] = {}
    for row in rows:
        hits = len(set(pattern.findall(row.content))) if pattern is not None else 0
        if row.path not in best or hits > best[row.path][0]:
            best[row.path] = (hits, row)
    return {path: row for path, (_, row) in best.items()}


def _words_pattern(words: Sequence[str]) -> re.Pattern[str] | None:
    usable = sorted({w for w in words if w}, key=len, reverse=True)
    if not usable:
        return None
    return re.compile(r"(?<![\w$])(" + "|".join(re.escape(w) for w in usable) + r")(?![\w$])")


async def mentions(
    conn: Conn,
    repository_id: UUID,
    snapshot_id: UUID,
    names: Sequence[str],
    changed: frozenset[str],
    limit: int,
) -> list[Candidate]:
    """Files whose text names a definition the diff changes (whole word, any file the index has:
    code the graph could not resolve, tests, docs, configuration), rarer names first.

    A name of fewer than ``MIN_MENTION_NAME`` characters, or one found in more than
    ``MAX_MENTION_FILES`` files, says too little to be followed. The candidates come from the
    lexical index (one GIN probe per name); the whole-word check runs on the chunk's text.
    """
    wanted = [n for n in dict.fromkeys(names) if len(n) >= MIN_MENTION_NAME][:MAX_MENTION_NAMES]
    if not wanted or limit <= 0:
        return []
    files_of: dict[str, dict[str, ChunkRow]] = {}  # name -> path -> its best chunk row
    for name in wanted:
        lexeme = re.sub(r"[^0-9a-z]", "", name.lower())
        if len(lexeme) < 2:
            continue
        rows = await store.mentioning_chunks(conn, repository_id, snapshot_id, lexeme, MENTION_CANDIDATES)
        pattern = _words_pattern([name])
        assert pattern is not None
        per_path: dict[str, ChunkRow] = {}
        for row in rows:
            if row.path not in changed and row.path not in per_path and pattern.search(row.content):
                per_path[row.path] = row
        if 0 < len(per_path) <= MAX_MENTION_FILES:
            files_of[name] = per_path
    weight: dict[str, float] = {}
    first: dict[str, tuple[str, ChunkRow]] = {}
    for name, per_path in files_of.items():
        idf = 1.0 / math.log2(1 + len(per_path))
        for path, row in per_path.items():
            weight[path] = weight.get(path, 0.0) + idf
            first.setdefault(path, (name, row))
    out = []
    for path in sorted(weight, key=lambda p: (-weight[p], p))[:limit]:
        named = [n for n, per_path in files_of.items() if path in per_path]
        name, row = first[path]
        cand = _candidate(
            "usage", row, "mentions " + ", ".join(f"`{n}`" for n in named[:3]) + " (changed in this diff)"
        )
        line = _match_line(row, _words_pattern([name]))
        out.append(focus(cand, line) if line is not None else cand)
    return out


def paired_tests(paths: Sequence[str], changed: Sequence[str]) -> list[tuple[str, str]]:
    """(file, changed file it pairs with): the tests of the changed files and the code under test
    of changed tests, by the languages' naming conventions (``test_x.py``, ``x_test.go``,
    ``x.test.ts``, ``x.spec.js``, ``XTest.java``, ``x_spec.rb``), in the same language family;
    the nearest (longest shared directory prefix) first, a few per changed file. Benchmarks and
    examples pair with nothing: ``bench/object.ts`` is not the code ``object.test.ts`` tests.
    What a test is, is the shared classifier's answer (:func:`is_test`); a test known only by its
    folder (``e2e/login.ts``, ``test/create.ts``) pairs only with the one code file of its name
    (not every ``__init__.py``, not both ``types.ts``)."""
    by_name = _name_index(paths)
    changed_set = set(changed)
    found: list[tuple[str, str]] = []
    for partner in changed:
        stem = _stem(partner)
        if not stem:
            continue
        for path in by_name.get((_tested_stem(stem).lower(), _family(partner)), ()):
            if path in changed_set or is_test(path) == is_test(partner) or not _pairs(path):
                continue
            test, code = (path, partner) if is_test(path) else (partner, path)
            if _named_as_test(test) or _only_code_of_its_name(code, by_name):
                found.append((path, partner))
    found.sort(key=lambda pair: (-_shared_dirs(*pair), pair[0]))
    per_partner: dict[str, int] = {}
    kept = []
    for path, partner in found:
        per_partner[partner] = per_partner.get(partner, 0) + 1
        if per_partner[partner] <= MAX_TEST_PAIRS:
            kept.append((path, partner))
    return kept


def _pairs(path: str) -> bool:
    facts = classify(path)
    return not facts.benchmark and facts.kind in (Kind.CODE, Kind.TEST)


def _named_as_test(path: str) -> bool:
    """A test whose file name says so (``test_x.py``, ``x.spec.ts``, ``XTest.java``)."""
    stem = _stem(path)
    return bool(stem) and _tested_stem(stem) != stem


def _only_code_of_its_name(code: str, by_name: dict[tuple[str, str], list[str]]) -> bool:
    """Whether ``code`` is the only code file of its name and language family in the tree."""
    if classify(code).kind is not Kind.CODE:
        return False
    same = by_name.get((_tested_stem(_stem(code)).lower(), _family(code)), [])
    return sum(1 for p in same if classify(p).kind is Kind.CODE and not is_test(p)) == 1


_NAME_INDEXES: dict[int, tuple[Sequence[str], dict[tuple[str, str], list[str]]]] = {}


def _name_index(paths: Sequence[str]) -> dict[tuple[str, str], list[str]]:
    """(tested stem, language family) → paths, built once per path list (a snapshot's graph keeps
    its list; 50 000 paths take ~0.1 s to index)."""
    cached = _NAME_INDEXES.get(id(paths))
    if cached is not None and cached[0] is paths:
        return cached[1]
    index: dict[tuple[str, str], list[str]] = {}
    for path in paths:
        stem = _stem(path)
        if stem:
            index.setdefault((_tested_stem(stem).lower(), _family(path)), []).append(path)
    if len(_NAME_INDEXES) >= 8:
        _NAME_INDEXES.pop(next(iter(_NAME_INDEXES)))
    _NAME_INDEXES[id(paths)] = (paths, index)  # the reference keeps the id from being reused
    return index


def _shared_dirs(a: str, b: str) -> int:
    n = 0
    for x, y in zip(a.split("/")[:-1], b.split("/")[:-1], strict=False):
        if x != y:
            break
        n += 1
    return n


_FAMILIES = {"ts": "js", "tsx": "js", "jsx": "js", "mjs": "js", "cjs": "js", "mts": "js", "cts": "js"}
_TEST_PREFIXES = ("test_", "tests_")
_TEST_SUFFIXES = ("_test", "_tests", "_spec", ".test", ".spec", "Test", "Tests", "Spec")


def _family(path: str) -> str:
    name = path.rsplit("/", 1)[-1]
    ext = name.rsplit(".", 1)[-1].lower() if "." in name else ""
    return _FAMILIES.get(ext, ext)


def _stem(path: str) -> str:
    """The file name without its last extension ("billing.test" for "billing.test.ts")."""
    name = path.rsplit("/", 1)[-1]
    return "" if name.startswith(".") else name.rsplit(".", 1)[0]


def _tested_stem(stem: str) -> str:
    for prefix in _TEST_PREFIXES:
        if stem.lower().startswith(prefix) and len(stem) > len(prefix):
            return stem[len(prefix) :]
    for suffix in _TEST_SUFFIXES:
        if stem.endswith(suffix) and len(stem) > len(suffix):
            return stem[: -len(suffix)]
    return stem


async def first_chunks(
    conn: Conn, repository_id: UUID, snapshot_id: UUID, paths: Sequence[str]
) -> list[ChunkRow]:
    """The first chunk of each of ``paths`` in the snapshot, in the order of ``paths``."""
    if not paths:
        return []
    return await store.first_chunks(conn, repository_id, snapshot_id, paths)
