"""Proof from git history for documentation claims: one first-parent pass, blobs read once.

A documentation finding says "this doc names X; the code no longer has X". It is reported only
when history proves that X existed in the repository's code, and says where:

* ``last_seen_commit`` -- a commit at which X existed (a file or directory path, or an
  identifier *defined* in a non-doc file);
* ``removed_in_commit`` -- the first-parent commit that made it disappear (its first parent is
  ``last_seen_commit``);
* ``renamed_to`` -- what that commit made of it, when it renamed or moved it: the moved path
  (followed through later renames to its current name), or a definition that the same file
  gained in the same commit and that still exists.

One pass over ``git log --first-parent --raw`` (newest first) gives all of it. Paths need no
blob: a path first seen as the source of a deletion or a rename is a removed path. For
identifiers the walk keeps an invariant: at the snapshot no candidate is defined anywhere, so
going back one commit, a candidate can only reappear in that commit's *old* blobs. The first
commit whose old blob of a code file defines it is where it was removed. What a blob defines is
the code-facts library's answer (:func:`palimpsest.index.codefacts.definitions`: the chunker's
tree-sitter tags, a keyword regex for languages without a grammar). Old blobs are read in batches
through one ``cat-file --batch`` per batch; only a blob that names a candidate is parsed, and its
definitions are cached by blob id for the process (:data:`DEFINITIONS_CACHE`, which the analyzer
passes), so a blob is parsed once across analyses (reverts, renames and cherry-picks share blobs
too). Reading stops as soon as every candidate is resolved,
and at ``max_blob_bytes``.

Whether the doc named X while X existed comes from the doc's own history: the oldest commit
that added the name to the doc (``git log --follow -S<name> -- <doc>``), or, when the pickaxe
finds none, ``git blame`` of the line. A claim true when written that went stale is the finding
users want most; the pickaxe is not fooled by a later reformatting of the line, as blame is.
"""

from __future__ import annotations

import asyncio
import contextlib
import difflib
import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from palimpsest.core.git import decode_path, read_blobs, stream_git
from palimpsest.core.git_errors import GitError
from palimpsest.index.codefacts import is_definition_site
from palimpsest.index.codefacts.definitions import (
    Definitions,
    DefinitionsCache,
    LruDefinitionsCache,
    defined_names,
    definitions,
)
from palimpsest.index.codefacts.settings import MARKERS

__all__ = [
    "DEFAULT_MAX_BLOB_BYTES",
    "DEFINITIONS_CACHE",
    "Evidence",
    "History",
    "LineOrigin",
    "blame_lines",
    "defined_names",
    "first_mentions",
    "read_history",
]

DEFAULT_MAX_BLOB_BYTES = 2 * 1024**3
# definitions of blobs by blob id, for every pass of this process; bounded by the definitions held
# (~180 bytes each with the entry around them, names interned: some 55 MB at most)
DEFINITIONS_CACHE = LruDefinitionsCache(max_definitions=300_000)
_PASS_CACHE_DEFINITIONS = 200_000  # one pass's own cache, when it is given none
BATCH_COMMITS = 400
MAX_BLAMES = 300
MAX_SIBLINGS = 40  # other code files of a removing commit searched for what a name became
_ZERO = "0" * 40


@dataclass(frozen=True, slots=True)
class Evidence:
    """Where history shows a claim's subject, and where it stopped existing."""

    last_seen_commit: str
    last_seen_at: datetime
    removed_in_commit: str
    removed_at: datetime
    renamed_to: str | None = None
    seen_in: str | None = None  # the code file that defined an identifier at last_seen
    # identifiers: "defined" there, "member" (only ever as a method) or "read" as a key; paths: None
    how: str | None = None
    reader_deleted: bool = False  # identifiers: the removing commit deleted the file (not changed it)
    line_commit: str | None = None  # the commit that first named it in the doc (pickaxe, else blame)
    line_written_at: datetime | None = None
    subject: str | None = None  # what was looked up: the path as resolved, or the identifier

    @property
    def written_while_existed(self) -> bool | None:
        """True: the line predates the removal (true when written, went stale)."""
        if self.line_written_at is None:
            return None
        return self.line_written_at < self.removed_at

    def as_dict(self) -> dict[str, Any]:
        return {
            "last_seen_commit": self.last_seen_commit,
            "last_seen_at": self.last_seen_at.isoformat(),
            "removed_in_commit": self.removed_in_commit,
            "removed_at": self.removed_at.isoformat(),
            "renamed_to": self.renamed_to,
            "seen_in": self.seen_in,
            "how": self.how,
            "line_commit": self.line_commit,
            "line_written_at": self.line_written_at.isoformat() if self.line_written_at else None,
            "written_while_existed": self.written_while_existed,
            "subject": self.subject,
        }

    def with_line(self, origin: LineOrigin | None) -> Evidence:
        if origin is None:
            return self
        return replace(self, line_commit=origin.commit, line_written_at=origin.when)


@dataclass(frozen=True, slots=True)
class LineOrigin:
    commit: str
    when: datetime


@dataclass(slots=True)
class _Removal:
    order: int  # walk position of the removing commit (0 = the snapshot)
    commit: str
    when: datetime
    parent: str
    renamed_to: str | None = None
    seen_in: str | None = None
    new_blob: str | None = None  # identifiers: the same file's blob after the removal
    old_blob: str | None = None  # … and before it
    new_path: str | None = None  # identifiers: that file's path after the removal
    # identifiers: the other code files the removing commit changed, (path, old blob, new blob)
    siblings: tuple[tuple[str, str | None, str | None], ...] = ()
    how: str | None = None  # identifiers: "defined", "member" or "read" (see Evidence.how)


@dataclass(slots=True)
class _Entry:
    status: str
    old_blob: str
    new_blob: str
    old_path: str
    new_path: str


@dataclass(slots=True)
class _Commit:
    order: int
    sha: str
    parent: str | None
    when: datetime
    entries: list[_Entry] = field(default_factory=list)


@dataclass(slots=True)
class History:
    """What one pass learned; ask it about paths, directories and identifiers."""

    commits: int = 0
    blobs_read: int = 0
    bytes_read: int = 0
    complete: bool = True  # False: the blob budget ran out before every identifier was resolved
    renames: str = "similar"  # "exact": renames with edits could not be compared (unreadable blobs)
    removed_paths: dict[str, _Removal] = field(default_factory=dict)
    identifiers: dict[str, _Removal] = field(default_factory=dict)
    dates: dict[str, datetime] = field(default_factory=dict)  # every commit walked
    # old blobs by how their definitions were read: tree_sitter, regex (no grammar), skipped (binary
    # or too large), no_candidate (read, but names no candidate: not parsed)
    definitions: dict[str, int] = field(default_factory=dict)
    definitions_cached: int = 0  # … of which the definitions cache had

    def path(self, path: str) -> Evidence | None:
        """A removed file, or the newest removal of a file under a removed directory."""
        found = self.removed_paths.get(path)
        if found is not None:
            return self._evidence(found)
        prefix = path.rstrip("/") + "/"
        inside = [(r.order, p) for p, r in self.removed_paths.items() if p.startswith(prefix)]
        if not inside:
            return None
        newest = min(inside)[0]
        moved = [(p, self.removed_paths[p]) for o, p in inside if o == newest]
        first = moved[0][1]
        return self._evidence(first, renamed_to=_moved_directory(path, moved), seen_in=None)

    def identifier(self, name: str) -> Evidence | None:
        found = self.identifiers.get(name)
        return self._evidence(found) if found is not None else None

    def _evidence(
        self, removal: _Removal, *, renamed_to: str | None = None, seen_in: str | None = None
    ) -> Evidence | None:
        parent_at = self.dates.get(removal.parent)
        if parent_at is None:  # the parent lies beyond a shallow boundary: not provable here
            return None
        return Evidence(
            removal.parent,
            parent_at,
            removal.commit,
            removal.when,
            renamed_to if renamed_to is not None else removal.renamed_to,
            seen_in if seen_in is not None else removal.seen_in,
            removal.how,
            removal.new_blob is None and removal.old_blob is not None,
        )


def _moved_directory(directory: str, moved: list[tuple[str, _Removal]]) -> str | None:
    """Where a directory went: the one prefix every file moved out of it shares, if any."""
    prefix = directory.rstrip("/") + "/"
    targets: set[str] = set()
    for path, removal in moved:
        rest = path[len(prefix) :]
        if removal.renamed_to is None or not removal.renamed_to.endswith("/" + rest):
            return None
        targets.add(removal.renamed_to[: -len(rest) - 1])
    return targets.pop() if len(targets) == 1 else None


# ----------------------------------------------------------------------------- the pass


def log_args(head: str, *, exact_renames: bool) -> list[str]:
    return [
        "-c",
        "log.showSignature=false",
        "log",
        "-z",
        "--no-use-mailmap",
        "--no-color",
        "--no-ext-diff",
        "--no-relative",
        "--raw",
        "--no-abbrev",
        "--format=%H %P %cI",
        "--first-parent",
        "--diff-merges=first-parent",
        "-M100%" if exact_renames else "-M",
        "--end-of-options",
        head,
        "--",
    ]


async def read_history(
    git_dir: Path,
    head: str,
    identifiers: Iterable[str],
    *,
    head_paths: Iterable[str] = (),
    exact_renames: bool = False,
    max_blob_bytes: int = DEFAULT_MAX_BLOB_BYTES,
    timeout_s: float = 1800.0,
    cache: DefinitionsCache | None = None,
) -> History:
    """One pass over ``head``'s first-parent history: removed paths and removed definitions.
    ``cache``: definitions by blob id shared with other passes (the analyzer passes
    :data:`DEFINITIONS_CACHE`); without one the pass keeps its own."""
    if cache is None:
        cache = LruDefinitionsCache(max_definitions=_PASS_CACHE_DEFINITIONS)
    walker = _Walker(git_dir, set(identifiers), set(head_paths), max_blob_bytes, cache)
    parser = _RawLogParser()
    stream = stream_git(log_args(head, exact_renames=exact_renames), cwd=git_dir, timeout_s=timeout_s)
    async with contextlib.aclosing(stream) as chunks:
        async for chunk in chunks:
            for commit in parser.feed(chunk):
                await walker.add(commit)
    for commit in parser.close():
        await walker.add(commit)
    await walker.finish()
    return walker.history


class _RawLogParser:
    """Incremental parser of ``log -z --raw --format='%H %P %cI'`` into commits."""

    def __init__(self) -> None:
        self._rest = b""
        self._order = 0
        self._commit: _Commit | None = None
        self._meta: list[str] | None = None
        self._paths: list[str] = []

    def feed(self, chunk: bytes) -> list[_Commit]:
        tokens = (self._rest + chunk).split(b"\0")
        self._rest = tokens.pop()
        done: list[_Commit] = []
        for token in tokens:
            self._token(token, done)
        return done

    def close(self) -> list[_Commit]:
        done: list[_Commit] = []
        if self._rest:
            self._token(self._rest, done)
            self._rest = b""
        if self._commit is not None:
            done.append(self._commit)
            self._commit = None
        return done

    def _token(self, token: bytes, done: list[_Commit]) -> None:
        if self._meta is not None:
            self._paths.append(decode_path(token))
            if len(self._paths) == (2 if self._meta[4][:1] in ("R", "C") else 1):
                self._entry()
            return
        token = token.lstrip(b"\n")
        if token.startswith(b":"):
            self._meta = token[1:].decode("ascii", "replace").split()
            self._paths = []
        elif token:
            if self._commit is not None:
                done.append(self._commit)
            self._commit = self._header(token)

    def _header(self, token: bytes) -> _Commit:
        parts = token.decode("ascii", "replace").split(" ")
        sha, when = parts[0], datetime.fromisoformat(parts[-1])
        parents = [p for p in parts[1:-1] if p]
        self._order += 1
        return _Commit(self._order, sha, parents[0] if parents else None, when.astimezone(UTC))

    def _entry(self) -> None:
        meta, paths = self._meta or [], self._paths
        self._meta, self._paths = None, []
        if self._commit is None or len(meta) < 5:
            return
        self._commit.entries.append(_Entry(meta[4], meta[2], meta[3], paths[0], paths[-1]))


class _Walker:
    """Applies commits newest first: path removals at once, identifiers in blob batches."""

    def __init__(
        self,
        git_dir: Path,
        names: set[str],
        head_paths: set[str],
        max_bytes: int,
        blob_cache: DefinitionsCache,
    ) -> None:
        self.git_dir = git_dir
        self.blob_cache = blob_cache
        self.history = History()
        self.unresolved = set(names)
        self.head_paths = head_paths
        self.max_bytes = max_bytes
        self.alias: dict[str, str | None] = {}  # going back: old path → current path (None: dead)
        self.batch: list[_Commit] = []
        self.cache: dict[str, frozenset[str]] = {}  # blob id → candidate names it defines or reads
        self.read_only: dict[str, frozenset[str]] = {}  # blob id → names it only quotes as keys
        self.members_only: dict[str, frozenset[str]] = {}  # blob id → names it defines only as methods

    async def add(self, commit: _Commit) -> None:
        self.history.commits += 1
        self.history.dates[commit.sha] = commit.when  # a removal's parent is found later in the walk
        self._paths(commit)
        if self.unresolved and self.history.complete:
            self.batch.append(commit)
            if len(self.batch) >= BATCH_COMMITS:
                await self._identifiers()

    async def finish(self) -> None:
        if self.batch:
            await self._identifiers()
        await self._renamed_definitions()

    # ------------------------------------------------------------------ paths

    def _current(self, path: str) -> str | None:
        if path in self.alias:
            return self.alias[path]
        return path if path in self.head_paths else None

    def _paths(self, commit: _Commit) -> None:
        removed = self.history.removed_paths
        renames: list[tuple[str, str | None]] = []
        born: list[str] = []
        for entry in commit.entries:
            kind = entry.status[:1]
            if kind in ("D", "R") and commit.parent is not None and entry.old_path not in removed:
                self._removed(commit, entry, commit.parent)
            if kind == "R":
                renames.append((entry.old_path, self._current(entry.new_path)))
            if kind in ("A", "C", "R"):
                born.append(entry.new_path)
            if kind == "D":
                born.append(entry.old_path)
        for path in born:  # older mentions of these paths are another lineage
            self.alias[path] = None
        for old, current in renames:
            self.alias[old] = current

    def _removed(self, commit: _Commit, entry: _Entry, parent: str) -> None:
        """``entry.old_path`` disappears in ``commit`` (the newest such commit: first sighting)."""
        if entry.old_path in self.head_paths or self._current(entry.old_path) is not None:
            return
        target = self._current(entry.new_path) if entry.status[:1] == "R" else None
        self.history.removed_paths[entry.old_path] = _Removal(
            commit.order, commit.sha, commit.when, parent, target
        )

    # ------------------------------------------------------------------ identifiers

    async def _identifiers(self) -> None:
        batch, self.batch = self.batch, []
        wanted = {
            e.old_blob: e.old_path
            for c in batch
            if c.parent is not None
            for e in c.entries
            if _code_entry(e) and e.old_blob not in self.cache
        }
        await self._read(wanted)
        for commit in batch:
            if commit.parent is not None and self.unresolved:
                self._resolve(commit)

    async def _read(self, blobs: dict[str, str]) -> None:
        """Definitions of ``blobs`` (blob id → path): from the cache, else read and, when the
        blob names a candidate at all (one trie regex over its bytes), parsed and cached."""
        missing: dict[str, str] = {}
        for sha, path in blobs.items():
            found = self.blob_cache.get(sha)
            if found is None:
                missing[sha] = path
            else:
                self.history.definitions_cached += 1
                self._learn(sha, found)
        if not missing:
            return
        probe = _probe(self.unresolved)
        # an environment variable a settings class reads is named by no blob (``SHOP_CACHE_DIR``
        # is the field ``cache_dir`` under ``env_prefix="SHOP_"``): a Python file declaring
        # settings is parsed whenever such a name is still a candidate
        settings = any(_ENV_NAME.match(n) for n in self.unresolved)
        try:
            async for sha, content in read_blobs(self.git_dir, missing, missing_ok=True, lazy_fetch=False):
                self.history.blobs_read += 1
                self.history.bytes_read += len(content)
                declares = settings and missing[sha].endswith((".py", ".pyi")) and MARKERS.search(content)
                if probe is None or (probe.search(content) is None and not declares):
                    # names no candidate: nothing to learn now (the candidates only shrink)
                    self.cache[sha] = frozenset()
                    counts = self.history.definitions
                    counts[_NO_CANDIDATE] = counts.get(_NO_CANDIDATE, 0) + 1
                else:
                    found = definitions(missing[sha], content)
                    self.blob_cache.put(sha, found)
                    self._learn(sha, found)
                if self.history.bytes_read > self.max_bytes:
                    self.history.complete = False
                    break
        except GitError:
            self.history.complete = False

    def _learn(self, sha: str, found: Definitions) -> None:
        """Which candidates blob ``sha`` defines, only reads as a quoted setting-like key
        (``settings["friendfeed_consumer_key"]``: the code reading the key is what the doc
        describes), or defines only as methods."""
        counts = self.history.definitions
        counts[found.method] = counts.get(found.method, 0) + 1
        names = found.names()
        defined = names & self.unresolved
        read = (found.keys_read - names) & self.unresolved
        self.cache[sha] = defined | read
        if read:
            self.read_only[sha] = read
        members = found.members() & defined
        if members:
            self.members_only[sha] = members

    def _resolve(self, commit: _Commit) -> None:
        """The candidates ``commit``'s old blobs define are removed by it; where several of its
        files had one, the file that defined it outright speaks (a Go interface lists the method
        its implementation defines: ``defined`` before ``member`` before ``read``)."""
        best: dict[str, tuple[int, _Entry, str]] = {}
        for position, entry in enumerate(commit.entries):
            if not _code_entry(entry):
                continue
            for name in self.cache.get(entry.old_blob, frozenset()) & self.unresolved:
                how = self._how(name, entry.old_blob)
                known = best.get(name)
                if known is None or _HOW_RANK[how] < _HOW_RANK[known[2]]:
                    best[name] = (position, entry, how)
        assert commit.parent is not None or not best
        for name, (_, entry, how) in best.items():
            self.unresolved.discard(name)
            self.history.identifiers[name] = _Removal(
                commit.order,
                commit.sha,
                commit.when,
                commit.parent or "",
                seen_in=entry.old_path,
                new_blob=_blob(entry.new_blob),
                new_path=entry.new_path,
                old_blob=entry.old_blob,
                siblings=_siblings(commit, entry),
                how=how,
            )

    def _how(self, name: str, blob: str) -> str:
        if name in self.read_only.get(blob, ()):
            return "read"
        return "member" if name in self.members_only.get(blob, ()) else "defined"

    async def _renamed_definitions(self) -> None:
        """A removed name whose file, in the same commit, gained a definition in its place; or,
        when its file was deleted or gained nothing like it, a definition very like it that the
        commit's other code files gained (``call_metric_recorder.go`` deleted and
        ``call_metrics.go`` added: ``CallMetricRecorder`` became ``CallMetricsRecorder``)."""
        found = self.history.identifiers
        paths: dict[str, str] = {}
        for r in found.values():
            if r.old_blob and r.seen_in:
                paths[r.old_blob] = r.seen_in
            if r.new_blob and r.new_path:
                paths[r.new_blob] = r.new_path
            for path, old, new in r.siblings:
                paths.update((blob, path) for blob in (old, new) if blob)
        defined = await self._definitions(paths)
        for name, removal in found.items():
            before, after = defined.get(removal.old_blob or ""), defined.get(removal.new_blob or "")
            if before is not None and after is not None:
                removal.renamed_to = _replacement(name, before, after)
            if removal.renamed_to is None and removal.siblings:
                olds = [defined.get(old or "", frozenset()) for _, old, _ in removal.siblings]
                news = [defined.get(new or "", frozenset()) for _, _, new in removal.siblings]
                removal.renamed_to = _moved_definition(name, olds, news)

    async def _definitions(self, paths: dict[str, str]) -> dict[str, frozenset[str]]:
        """The names each blob (blob id → path) defines, from the cache or read and parsed."""
        out: dict[str, frozenset[str]] = {}
        missing: dict[str, str] = {}
        for sha, path in paths.items():
            cached = self.blob_cache.get(sha)
            if cached is None:
                missing[sha] = path
            else:
                out[sha] = cached.names()
        with contextlib.suppress(GitError):
            async for sha, content in read_blobs(self.git_dir, missing, missing_ok=True, lazy_fetch=False):
                found = definitions(missing[sha], content)
                self.blob_cache.put(sha, found)
                out[sha] = found.names()
        return out


_HOW_RANK = {"defined": 0, "member": 1, "read": 2}
_NO_CANDIDATE = "no_candidate"  # read, named no candidate, so not parsed
_ENV_NAME = re.compile(r"^[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+$")


def _probe(names: Iterable[str]) -> re.Pattern[bytes] | None:
    """Any of ``names`` as a whole token: one trie regex, ~2x faster than tokenising a blob."""
    encoded = sorted({n.encode() for n in names})
    return re.compile(rb"(?<![\w$])" + _trie(encoded) + rb"(?![\w$])") if encoded else None


def _trie(words: list[bytes]) -> bytes:
    """A regex matching exactly ``words``, with common prefixes shared."""
    root: dict[int, Any] = {}
    for word in words:
        node = root
        for byte in word:
            node = node.setdefault(byte, {})
        node[-1] = {}  # the end of a word
    return _trie_node(root)


def _trie_node(node: dict[int, Any]) -> bytes:
    branches = [
        re.escape(bytes([key])) + _trie_node(child) for key, child in sorted(node.items()) if key >= 0
    ]
    if not branches:
        return b""
    body = branches[0] if len(branches) == 1 else b"(?:" + b"|".join(branches) + b")"
    return b"(?:" + body + b")?" if -1 in node else body


def _blob(sha: str) -> str | None:
    return sha if sha != _ZERO else None


def _siblings(commit: _Commit, entry: _Entry) -> tuple[tuple[str, str | None, str | None], ...]:
    """The other code files ``commit`` changed or added (path, old and new blob), a few dozen at
    most: a commit that touched more is a sweep, not a rename."""
    others = [
        (e.new_path or e.old_path, _blob(e.old_blob), _blob(e.new_blob))
        for e in commit.entries
        if e is not entry and is_definition_site(e.new_path or e.old_path) and _blob(e.new_blob)
    ]
    return tuple(others) if len(others) <= MAX_SIBLINGS else ()


def _code_entry(entry: _Entry) -> bool:
    """An entry whose old side is a code file (not documentation, not an asset)."""
    if entry.old_blob == _ZERO or entry.status[:1] == "A":
        return False
    return is_definition_site(entry.old_path)


def _replacement(name: str, old: frozenset[str], new: frozenset[str]) -> str | None:
    """What ``name`` became in the commit that removed it from a file (``old`` and ``new``: what
    the file defined before and after): the one definition the file gained when it lost only
    ``name``, else the gained definition most like it."""
    gained, lost = sorted(new - old), old - new
    if len(gained) == 1 and lost == {name}:
        return gained[0]
    close = difflib.get_close_matches(name.lower(), [g.lower() for g in gained], n=1, cutoff=0.6)
    return next((g for g in gained if close and g.lower() == close[0]), None)


def _moved_definition(name: str, olds: list[frozenset[str]], news: list[frozenset[str]]) -> str | None:
    """The definition most like ``name`` that the commit's other files gained (a close match only:
    across files a loose one would be a guess)."""
    gained: set[str] = set()
    for names in news:
        gained |= names
    for names in olds:
        gained -= names
    gained.discard(name)
    close = difflib.get_close_matches(name.lower(), [g.lower() for g in gained], n=1, cutoff=0.85)
    return next((g for g in sorted(gained) if close and g.lower() == close[0]), None)


# ----------------------------------------------------------------------------- when the doc named it


async def first_mentions(
    git_dir: Path, commit: str, items: Iterable[tuple[str, int, str]], *, timeout_s: float = 60.0
) -> dict[tuple[str, int], LineOrigin]:
    """When each doc first named each text: ``(doc, line, text)`` → the oldest commit of ``doc``'s
    history (following renames) that added ``text``, or the blame of the line when none did."""
    wanted = list(dict.fromkeys(items))[:MAX_BLAMES]
    blamed = await blame_lines(git_dir, commit, ((doc, line) for doc, line, _ in wanted), timeout_s=timeout_s)
    gate = asyncio.Semaphore(4)

    async def one(doc: str, line: int, text: str) -> tuple[tuple[str, int], LineOrigin | None]:
        async with gate:
            return (doc, line), await _added(git_dir, commit, doc, text, timeout_s)

    found = dict(await asyncio.gather(*(one(*item) for item in wanted)))
    out: dict[tuple[str, int], LineOrigin] = {}
    for key, origin in found.items():
        best = origin if origin is not None else blamed.get(key)
        if best is not None:
            out[key] = best
    return out


async def _added(git_dir: Path, commit: str, doc: str, text: str, timeout_s: float) -> LineOrigin | None:
    from palimpsest.core.git import run_git

    if not text.strip() or "\n" in text:
        return None
    args = ["log", "--follow", "--no-color", "--format=%H %cI", f"-S{text}", commit, "--", doc]
    try:
        out = await run_git(args, cwd=git_dir, timeout_s=timeout_s)
    except GitError:
        return None
    lines = out.decode("ascii", "replace").split()
    if len(lines) < 2:
        return None
    sha, when = lines[-2], lines[-1]
    return LineOrigin(sha, datetime.fromisoformat(when).astimezone(UTC))


# ----------------------------------------------------------------------------- blame


async def blame_lines(
    git_dir: Path, commit: str, lines: Iterable[tuple[str, int]], *, timeout_s: float = 60.0
) -> dict[tuple[str, int], LineOrigin]:
    """The commit that last wrote each ``(doc, line)`` at ``commit`` (at most MAX_BLAMES)."""
    wanted = list(dict.fromkeys(lines))[:MAX_BLAMES]
    by_doc: dict[str, list[int]] = defaultdict(list)
    for doc, line in wanted:
        by_doc[doc].append(line)
    gate = asyncio.Semaphore(4)

    async def one(doc: str, numbers: list[int]) -> dict[tuple[str, int], LineOrigin]:
        async with gate:
            return await _blame(git_dir, commit, doc, numbers, timeout_s)

    results = await asyncio.gather(*(one(d, n) for d, n in by_doc.items()))
    return {k: v for part in results for k, v in part.items()}


async def _blame(
    git_dir: Path, commit: str, doc: str, numbers: list[int], timeout_s: float
) -> dict[tuple[str, int], LineOrigin]:
    args = ["blame", "--porcelain"]
    for number in sorted(set(numbers)):
        args += ["-L", f"{max(number, 1)},{max(number, 1)}"]
    try:
        from palimpsest.core.git import run_git

        out = await run_git([*args, commit, "--", doc], cwd=git_dir, timeout_s=timeout_s)
    except GitError:
        return {}
    return _porcelain(doc, out.decode("utf-8", "replace"))


def _porcelain(doc: str, text: str) -> dict[tuple[str, int], LineOrigin]:
    """``(doc, final line) → origin`` from ``blame --porcelain`` output."""
    times: dict[str, datetime] = {}
    out: dict[tuple[str, int], LineOrigin] = {}
    current: tuple[str, int] | None = None
    for line in text.splitlines():
        head = line.split(" ")
        if len(head) >= 3 and len(head[0]) in (40, 64) and head[1].isdigit() and head[2].isdigit():
            current = (head[0], int(head[2]))
        elif line.startswith("committer-time ") and current is not None:
            times[current[0]] = datetime.fromtimestamp(int(line.split(" ", 1)[1]), UTC)
        elif line.startswith("\t") and current is not None:
            sha, number = current
            if sha in times:
                out[(doc, number)] = LineOrigin(sha, times[sha])
            current = None
    return out
