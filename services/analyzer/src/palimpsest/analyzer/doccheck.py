"""The mechanical documentation check: what the docs claim that the snapshot no longer contains.

No model is needed. The chunker recorded, per document, the identifiers and paths it names
(inline code, fenced code, link targets) and its ``Governs:`` lines (``code_facts``); the check
compares them with the snapshot:

* ``missing_identifier`` -- an identifier that is neither a definition (``code_symbols``) nor
  present anywhere in the snapshot's code (the lexical index, through the SECURITY DEFINER
  function ``palimpsest_code_lexemes_present``). Inline code counts as a claim. Names from fenced
  examples, SCREAMING_CASE names (environment variables, settings) and lone PascalCase words
  (states and types of other systems) are reported only when a current definition is a probable
  rename of them, since examples and prose name many things that are not the repository's code;
* ``missing_path`` -- a path (relative to the document for links, to it or to the root for inline
  code) that is neither a file nor a directory of the snapshot. Globs, placeholders, home and
  system paths, generated directories and domain-like first segments are not claims about the
  tree; neither are bare file names in inline code (often runtime files) — links to them are;
* ``unmatched_governs`` -- a ``Governs:`` target matching no file or directory, by path segment
  (``src/bill`` covers ``src/bill/…``, not ``src/billing_old``);
* ``stale_doc`` -- a doc stale by the shared rule (:mod:`palimpsest.index.staleness`).

Each finding cites the doc and line and, where one exists, the nearest current match: a renamed
definition (shares a word and looks alike) or a moved file or directory (same last segment).
"""

from __future__ import annotations

import difflib
import posixpath
import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from palimpsest.analyzer.snapshot import SnapshotIndex
from palimpsest.core.db import Conn
from palimpsest.index.staleness import is_stale, stale_annotation
from palimpsest.index.tokens import code_tokens

__all__ = ["MAX_FINDINGS", "DocFinding", "FindingKind", "check_documentation"]

FindingKind = Literal["missing_identifier", "missing_path", "unmatched_governs", "stale_doc"]
MAX_FINDINGS = 500
MAX_NEAREST_LOOKUPS = 400
_RENAME_CUTOFF = 0.6  # a strong claim's nearest match
_WEAK_CUTOFF = 0.7  # a weak claim is reported only with a match this close (and alike in words)
_PATH_CUTOFF = 0.75
_GENERATED = frozenset(
    {
        "node_modules", "dist", "build", "target", "out", ".venv", "venv", "env", "__pycache__", ".git",
        ".cache", "coverage", "tmp", ".tox", ".mypy_cache", ".pytest_cache", ".ruff_cache", ".next",
        "vendor", "site-packages",
    }
)  # fmt: skip
_PLACEHOLDER = re.compile(r"[*?\[\]{}<>$%|]")
_DOMAIN = re.compile(
    r"^[a-z0-9-]+(\.[a-z0-9-]+)*\.(com|org|net|io|dev|app|co|rs|me|sh|ai|gov|edu|info)$", re.I
)
# SCREAMING_CASE (settings, environment variables) and a lone PascalCase word (a Kubernetes
# state, a product, a type of another system) are often not this repository's code
_WEAK_NAME = re.compile(r"^(?:[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+|[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]+)*)$")
_SEGMENTS = re.compile(r"\.|::|#|->")


@dataclass(frozen=True, slots=True)
class DocFinding:
    doc: str
    line: int
    kind: FindingKind
    claim: str
    nearest: str | None = None
    detail: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "doc": self.doc,
            "line": self.line,
            "claim": self.claim,
            "kind": self.kind,
            "nearest": self.nearest,
            "detail": self.detail,
        }


@dataclass(frozen=True, slots=True)
class _Mention:
    doc: str
    line: int
    fact: str  # mention | governs
    name: str
    target: str | None  # identifier | path (mentions)
    source: str | None  # code | fence | link (mentions)


# ----------------------------------------------------------------------------- entry point


async def check_documentation(conn: Conn, index: SnapshotIndex) -> list[DocFinding]:
    """Every finding for the snapshot's docs, ordered by doc, line and kind (at most MAX_FINDINGS)."""
    tree = _Tree.of(f.path for f in index.files)
    mentions = await _doc_mentions(conn, index)
    symbols = _Symbols(await _symbol_names(conn, index))
    findings: list[DocFinding] = []
    identifiers: list[_Mention] = []
    for mention in mentions:
        if mention.fact == "governs":
            findings.extend(_check_governs(mention, tree))
        elif mention.target == "path":
            findings.extend(_check_path(mention, tree))
        elif mention.target == "identifier" and not symbols.defines(mention.name):
            identifiers.append(mention)
    present = await _present_lexemes(conn, index, identifiers)
    findings.extend(_check_identifiers(identifiers, present, symbols))
    findings.extend(_stale_docs(index))
    findings.sort(key=lambda f: (f.doc, f.line, f.kind, f.claim))
    return findings[:MAX_FINDINGS]


# ----------------------------------------------------------------------------- reading the index


async def _doc_mentions(conn: Conn, index: SnapshotIndex) -> list[_Mention]:
    docs: dict[str, list[str]] = defaultdict(list)
    for f in index.files:
        if f.kind == "doc" and f.skip_reason is None:
            docs[f.blob_sha].append(f.path)
    if not docs:
        return []
    cur = await conn.execute(
        "SELECT blob_sha, kind, name, line, target, detail FROM code_facts"
        " WHERE repository_id = %s AND blob_sha = ANY(%s::text[]) AND kind IN ('mention', 'governs')"
        " ORDER BY blob_sha, line, ordinal",
        (index.repository_id, list(docs)),
    )
    out: list[_Mention] = []
    for row in await cur.fetchall():
        for path in docs[row["blob_sha"]]:
            out.append(_Mention(path, row["line"], row["kind"], row["name"], row["target"], row["detail"]))
    return out


async def _symbol_names(conn: Conn, index: SnapshotIndex) -> set[str]:
    cur = await conn.execute(
        "SELECT DISTINCT s.name FROM code_index_files f"
        " JOIN code_symbols s ON s.repository_id = %s AND s.blob_sha = f.blob_sha"
        " WHERE f.snapshot_id = %s",
        (index.repository_id, index.snapshot_id),
    )
    return {row["name"] for row in await cur.fetchall()}


async def _present_lexemes(conn: Conn, index: SnapshotIndex, mentions: list[_Mention]) -> set[str]:
    """Which of the mentions' lexemes occur somewhere in the snapshot's code."""
    wanted = sorted({lex for m in mentions for lex in _lexemes(m.name)})
    present: set[str] = set()
    for start in range(0, len(wanted), 2000):
        cur = await conn.execute(
            "SELECT l AS lexeme FROM palimpsest_code_lexemes_present(%s, %s, %s::text[]) AS l",
            (index.repository_id, index.snapshot_id, wanted[start : start + 2000]),
        )
        present.update(row["lexeme"] for row in await cur.fetchall())
    return present


def _lexemes(name: str) -> list[str]:
    """The lexemes standing for ``name``: its last segment's joined form (and the whole, if qualified)."""
    segments = [s for s in _SEGMENTS.split(name) if s]
    if not segments:
        return []
    out: list[str] = []
    for text in (segments[-1], name):
        tokens = code_tokens(text).split()
        if tokens and tokens[0] not in out:
            out.append(tokens[0])
    return out


# ----------------------------------------------------------------------------- identifiers


class _Symbols:
    """Definition names of the snapshot, with a word index to find a renamed one quickly."""

    def __init__(self, names: Iterable[str]) -> None:
        self.names = set(names)
        self.lower = {n.lower() for n in self.names}
        self.by_word: dict[str, set[str]] = defaultdict(set)
        for name in self.names:
            for word in _words(name):
                self.by_word[word].add(name)
        self.lookups = 0

    def defines(self, name: str) -> bool:
        last = [s for s in _SEGMENTS.split(name) if s][-1:] or [name]
        return name in self.names or last[0] in self.names or last[0].lower() in self.lower

    def nearest(self, name: str, *, strict: bool) -> str | None:
        """The current definition ``name`` most probably became, or None.

        Candidates share a word with ``name``'s last segment. A strict match (for weak claims)
        must also look alike (ratio ≥ 0.7), share at least half of the words, and not merely drop
        words (``generate_key`` → ``generate`` is another thing, ``compute_total`` →
        ``compute_invoice_total`` a rename).
        """
        if self.lookups >= MAX_NEAREST_LOOKUPS:
            return None
        self.lookups += 1
        last = ([s for s in _SEGMENTS.split(name) if s] or [name])[-1]
        words = set(_words(last))
        candidates: set[str] = set()
        for word in words:
            candidates |= self.by_word.get(word, set())
        key = _joined(last)
        scored = sorted((-_similarity(key, c), c) for c in candidates if c != last)
        if not scored:
            return None
        ratio, best = -scored[0][0], scored[0][1]
        if ratio < (_WEAK_CUTOFF if strict else _RENAME_CUTOFF):
            return None
        if strict:
            theirs = set(_words(best))
            if len(words & theirs) * 2 < len(words | theirs) or theirs < words:
                return None
        return best


def _similarity(key: str, candidate: str) -> float:
    return difflib.SequenceMatcher(None, key, _joined(candidate)).ratio()


def _words(name: str) -> list[str]:
    tokens = code_tokens(name).split()
    words = tokens[1:] if len(tokens) > 1 else tokens
    return [w for w in words if len(w) >= 3]


def _joined(name: str) -> str:
    tokens = code_tokens(name).split()
    return tokens[0] if tokens else name.lower()


def _check_identifiers(mentions: list[_Mention], present: set[str], symbols: _Symbols) -> list[DocFinding]:
    findings: list[DocFinding] = []
    for mention in mentions:
        if len(mention.name) < 3 or any(lex in present for lex in _lexemes(mention.name)):
            continue
        weak = mention.source == "fence" or bool(_WEAK_NAME.match(mention.name))
        nearest = symbols.nearest(mention.name, strict=weak)
        if weak and nearest is None:
            continue
        findings.append(
            DocFinding(
                mention.doc,
                mention.line,
                "missing_identifier",
                f"`{mention.name}`",
                nearest,
                "no definition or use of this identifier in the code"
                + (" (named in a fenced example)" if mention.source == "fence" else ""),
            )
        )
    return findings


# ----------------------------------------------------------------------------- paths


@dataclass(frozen=True, slots=True)
class _Tree:
    files: frozenset[str]
    dirs: frozenset[str]
    by_last: dict[str, list[str]]  # last segment → files and directories ending in it

    @classmethod
    def of(cls, paths: Iterable[str]) -> _Tree:
        files = frozenset(paths)
        dirs: set[str] = set()
        for path in files:
            parts = path.split("/")
            for i in range(1, len(parts)):
                dirs.add("/".join(parts[:i]))
        by_last: dict[str, list[str]] = defaultdict(list)
        for entry in sorted(files | dirs):
            by_last[entry.rsplit("/", 1)[-1]].append(entry)
        return cls(files, frozenset(dirs), dict(by_last))

    def exists(self, path: str) -> bool:
        return path in ("", ".") or path in self.files or path in self.dirs

    def top_level(self, segment: str) -> bool:
        return segment in self.files or segment in self.dirs

    def nearest(self, path: str) -> str | None:
        """A moved file or directory: the entry with the same last segment most like ``path``."""
        last = path.rsplit("/", 1)[-1]
        candidates = [c for c in self.by_last.get(last, []) if c != path]
        if candidates:
            return max(candidates, key=lambda c: (difflib.SequenceMatcher(None, path, c).ratio(), c))
        close = difflib.get_close_matches(path, sorted(self.files | self.dirs), n=1, cutoff=_PATH_CUTOFF)
        return close[0] if close else None


def _check_path(mention: _Mention, tree: _Tree) -> list[DocFinding]:
    target = mention.name.strip()
    if not _is_tree_claim(target, mention.source, tree):
        return []
    resolved = _resolutions(mention.doc, target, mention.source)
    if not resolved or any(tree.exists(p) for p in resolved):
        return []
    shown = resolved[0]
    detail = "no such file or directory in this snapshot"
    if shown != target:
        detail += f" (read as {shown})"
    return [DocFinding(mention.doc, mention.line, "missing_path", f"`{target}`", tree.nearest(shown), detail)]


def _is_tree_claim(target: str, source: str | None, tree: _Tree) -> bool:
    """Whether a path a doc names is a claim about this repository's tree."""
    if not target or _PLACEHOLDER.search(target) or target.startswith(("~", "#")):
        return False
    if "/" not in target.strip("/") and source != "link":
        return False  # a bare file name in inline code is often a runtime file, not a claim
    first = target.lstrip("./").split("/", 1)[0]
    if first in _GENERATED or (_DOMAIN.match(first) and not tree.top_level(first)):
        return False
    return not (target.startswith("/") and not tree.top_level(first))  # /etc/…: a system path


def _resolutions(doc: str, target: str, source: str | None) -> list[str]:
    """Where ``target`` may point: doc-relative first for links, root-relative first otherwise."""
    if target.startswith("/"):
        candidates = [target.lstrip("/")]
    else:
        here = posixpath.dirname(doc)
        relative = posixpath.join(here, target) if here else target
        candidates = [relative, target] if source == "link" else [target, relative]
    out: list[str] = []
    for candidate in candidates:
        normal = posixpath.normpath(candidate).rstrip("/")
        if normal == ".":
            normal = ""
        if not normal.startswith("..") and normal not in out:
            out.append(normal)
    return out


def _check_governs(mention: _Mention, tree: _Tree) -> list[DocFinding]:
    target = mention.name.strip().strip("/")
    if not target or _matches_governed(target, tree):
        return []
    return [
        DocFinding(
            mention.doc,
            mention.line,
            "unmatched_governs",
            f"Governs: {mention.name}",
            tree.nearest(target) if not _PLACEHOLDER.search(target) else None,
            "the governed path matches no file or directory",
        )
    ]


def _matches_governed(target: str, tree: _Tree) -> bool:
    """Path-segment match (globs allowed): ``src/bill`` covers ``src/bill/…``, not ``src/billing``."""
    if _PLACEHOLDER.search(target):
        import fnmatch

        return any(
            fnmatch.fnmatchcase(p, target) or fnmatch.fnmatchcase(p, f"{target}/*") for p in tree.files
        )
    return tree.exists(target)


# ----------------------------------------------------------------------------- stale docs


def _stale_docs(index: SnapshotIndex) -> list[DocFinding]:
    median = index.median_code
    findings = []
    for f in index.files:
        if f.kind == "doc" and is_stale(f.path, f.last_modified_at, median):
            when: datetime = f.last_modified_at  # type: ignore[assignment]  # stale ⇒ dated
            findings.append(
                DocFinding(
                    f.path,
                    1,
                    "stale_doc",
                    f"last modified {when.date().isoformat()}",
                    None,
                    stale_annotation(f.path, f.last_modified_at, median),
                )
            )
    return findings
