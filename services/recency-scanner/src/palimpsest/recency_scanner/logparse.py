"""One streaming pass over ``git log`` that yields per-file recency and co-change counts.

Input is the byte stream of the command built by :func:`log_args` —
``git log -z --format='%H %cI' --name-status --first-parent --diff-merges=first-parent``.
With ``-z`` every field ends in NUL and paths are never quoted, so names with spaces, tabs,
newlines, quotes or any UTF-8 pass through untouched. The layout is::

    <sha> <iso-date> NUL [ LF <status> NUL <path> NUL [<path> NUL] { <status> NUL <path> NUL ... } ]

(a commit without file changes has no status block). The parser is a small state machine fed
arbitrary chunks; memory is O(paths ever seen + pair cap), never the size of the log.

Decisions, documented because they shape the data:

* **Newest first, first sighting wins.** git log runs newest first, so the first commit that
  touches a path holds its last-modified date. A path first seen being deleted is not current
  and never appears in ``files``.
* **Merges: first-parent.** We walk ``--first-parent`` and diff a merge against its first
  parent (``--diff-merges=first-parent``). A merge is then the moment its changes *landed on
  the branch*: every file the merge brought in (octopus merges included) and every conflict
  resolution gets the merge's date. Walking side branches instead (``--cc``) would credit the
  side commits' older dates, show a merge only where it differs from *all* parents, and can
  mis-report deletions resolved in the merge. Merges are also PR-sized units, which is the
  co-change unit the reviewer asks about ("files usually changed with these").
* **Renames** (``R<score> old new``) credit the new path. Older history of ``old`` is folded
  forward onto the current path (through any chain of later renames) for both dates and
  co-change, so a renamed file keeps its co-change partners. Copies (``C<score> src dst``)
  credit ``dst`` only; ``src`` did not change.
* **Lineages.** Going back in time, a path that was added, deleted or renamed *to* in a
  commit names a different, dead file before that commit; its older mentions are ignored.
* **Co-change**: for a commit touching 2..N files (N = ``max_files_per_commit``), every pair of
  its still-current paths gets +1 and the commit date, and *evidence*: the commit weighted by its
  size and age (:mod:`palimpsest.index.evidence` — a commit of n entries counts
  ``1 / (n - 1) ** (1/3)``, halving every three years, as of the pair's last co-change), which
  ranking uses in place of the count (measured with ``palimpsest bench cochange``). The table is bounded by ``pair_cap``:
  when it reaches twice the cap it is pruned to the strongest ``pair_cap`` pairs (count, then
  recency), and trimmed to the cap at the end. Counts of kept pairs never overstate.
* **Shallow boundaries** (``skip_commits``): git shows a shallow clone's boundary commit as a
  root whose every file is "added"; its file list is ignored so files older than the window
  stay absent (age unknown) instead of getting the boundary's date.
"""

from __future__ import annotations

import heapq
import random
import re
import time
from collections.abc import AsyncIterable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Literal, NamedTuple

from palimpsest.core.git import decode_path
from palimpsest.core.git_errors import GitError, GitFailure
from palimpsest.index.evidence import add_weight, pair_weight

__all__ = [
    "DEFAULT_MAX_FILES_PER_COMMIT",
    "DEFAULT_PAIR_CAP",
    "CoChange",
    "FileChange",
    "LogParser",
    "RecencyResult",
    "RenameMode",
    "bench_parse",
    "log_args",
    "parse_log",
    "parse_log_stream",
    "synthetic_log",
]

DEFAULT_MAX_FILES_PER_COMMIT = 30
DEFAULT_PAIR_CAP = 50_000

RenameMode = Literal["exact", "full", "off"]
_RENAME_FLAGS: dict[str, str] = {"exact": "-M100%", "full": "-M", "off": "--no-renames"}

_EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
_OID = re.compile(rb"[0-9a-f]{40}(?:[0-9a-f]{24})?")
_UPPER = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ")
_TWO_PATHS = frozenset(b"RC")


class FileChange(NamedTuple):
    """The last commit that changed a path (as of the scanned branch head)."""

    commit: str
    when: datetime


class CoChange(NamedTuple):
    """How often two paths changed in the same commit, when they last did, and the evidence."""

    commits: int  # commits that changed both paths
    last: datetime
    evidence: float = 0.0  # those commits weighted by size and age, as of ``last``


@dataclass
class RecencyResult:
    """What one scan learned; paths absent from ``files`` have an unknown age."""

    files: dict[str, FileChange] = field(default_factory=dict)
    cochange: dict[tuple[str, str], CoChange] = field(default_factory=dict)
    commits: int = 0
    oversized_commits: int = 0  # commits over max_files_per_commit: dates kept, no pairs
    pairs_pruned: int = 0  # pair entries dropped to stay within pair_cap
    boundary_commits: int = 0  # shallow boundaries whose file lists were ignored
    head: str | None = None  # the newest commit the log showed (the scanned branch head)


def log_args(rev: str, *, window: str | None = None, renames: RenameMode = "exact") -> list[str]:
    """The git argv whose output :class:`LogParser` reads.

    ``renames="exact"`` (``-M100%``) is for blob-less clones: exact renames are found from
    blob ids alone, while similarity detection would fetch every candidate blob lazily.
    ``window`` adds ``--since`` (for local repositories; clones apply it with
    ``--shallow-since`` instead).
    """
    args = [
        "-c",
        "log.showSignature=false",
        # newer git reads HEAD:.gitattributes in bare repositories — a blob a blob-less clone
        # lacks; the empty tree as the attribute source means "no attributes" (older git
        # ignores the key)
        "-c",
        f"attr.tree={_EMPTY_TREE}",
        "log",
        "-z",
        "--no-use-mailmap",  # log.mailmap reads HEAD:.mailmap, a blob a blob-less clone lacks
        "--no-color",
        "--no-ext-diff",
        "--no-relative",
        "--format=%H %cI",
        "--name-status",
        "--first-parent",
        "--diff-merges=first-parent",
        _RENAME_FLAGS[renames],
    ]
    if window is not None:
        args.append(f"--since={window}")
    return [*args, "--end-of-options", rev, "--"]


class _Pair:
    __slots__ = ("commits", "evidence", "last")

    def __init__(self, when: datetime, weight: float) -> None:
        self.commits = 1
        self.last = when
        self.evidence = weight

    def add(self, when: datetime, weight: float) -> None:
        """One more commit of this pair (the log runs newest first: usually an older one)."""
        self.commits += 1
        self.evidence = add_weight(self.evidence, self.last, when, weight)
        self.last = max(self.last, when)


class LogParser:
    """Feed it chunks of ``git log`` output (:func:`log_args`), then :meth:`close` it."""

    def __init__(
        self,
        *,
        max_files_per_commit: int = DEFAULT_MAX_FILES_PER_COMMIT,
        pair_cap: int = DEFAULT_PAIR_CAP,
        skip_commits: Iterable[str] = (),
    ) -> None:
        self._max_files = max_files_per_commit
        self._pair_cap = max(pair_cap, 0)
        self._skip_commits = frozenset(skip_commits)
        self._rest = b""
        self._files: dict[str, FileChange] = {}
        self._pairs: dict[tuple[str, str], _Pair] = {}
        # Going back in time: path -> current path it became, or None for a dead lineage.
        self._alias: dict[str, str | None] = {}
        self._commits = 0
        self._oversized = 0
        self._pruned = 0
        self._boundaries = 0
        self._head: str | None = None
        # the commit being read
        self._sha: str | None = None
        self._when: datetime | None = None
        self._skip = False
        self._status = b""
        self._need = 0
        self._paths: list[bytes] = []
        self._touched = 0
        self._live: list[str] = []
        self._born: list[str] = []  # added, copied-to, renamed-to, deleted paths
        self._renamed: list[tuple[str, str | None]] = []  # (old path, current path of new)

    # ------------------------------------------------------------------ input

    def feed(self, chunk: bytes) -> None:
        """Consume the next piece of output; chunk boundaries may fall anywhere."""
        data = self._rest + chunk if self._rest else chunk
        tokens = data.split(b"\0")
        self._rest = tokens.pop()
        for token in tokens:
            if self._need:
                self._paths.append(token)
                self._need -= 1
                if not self._need:
                    self._entry()
            else:
                self._status_or_header(token)

    def close(self) -> RecencyResult:
        """Finish the stream and return what it held."""
        if self._rest or self._need:
            raise GitError(GitFailure.PARSE_ERROR, "git log output ended mid-record")
        self._end_commit()
        if len(self._pairs) > self._pair_cap:
            self._prune()
        return RecencyResult(
            files=self._files,
            cochange={key: CoChange(p.commits, p.last, p.evidence) for key, p in self._pairs.items()},
            commits=self._commits,
            oversized_commits=self._oversized,
            pairs_pruned=self._pruned,
            boundary_commits=self._boundaries,
            head=self._head,
        )

    def _status_or_header(self, token: bytes) -> None:
        if token[:1] == b"\n":
            token = token[1:]
        if token and token[0] in _UPPER:
            if self._sha is None:
                raise GitError(GitFailure.PARSE_ERROR, "git log file entry before any commit")
            self._status = token
            self._need = 2 if token[0] in _TWO_PATHS else 1
            self._paths = []
        else:
            self._end_commit()
            self._begin_commit(token)

    def _begin_commit(self, token: bytes) -> None:
        raw_sha, _, raw_date = token.partition(b" ")
        if not _OID.fullmatch(raw_sha):
            raise GitError(GitFailure.PARSE_ERROR, "git log commit header is malformed")
        try:
            when = datetime.fromisoformat(raw_date.decode("ascii"))
        except (UnicodeDecodeError, ValueError) as exc:
            raise GitError(GitFailure.PARSE_ERROR, "git log commit date is malformed") from exc
        sha = raw_sha.decode("ascii")
        if self._head is None:
            self._head = sha
        if sha != self._sha:
            self._commits += 1  # `-m` output repeats a merge's header once per parent
        self._sha, self._when = sha, when
        self._skip = sha in self._skip_commits
        if self._skip:
            self._boundaries += 1

    # ------------------------------------------------------------------ one commit

    def _resolve(self, path: str) -> str | None:
        return self._alias.get(path, path)

    def _credit(self, current: str | None) -> None:
        if current is None:
            return
        if current not in self._files:
            assert self._sha is not None
            assert self._when is not None
            self._files[current] = FileChange(self._sha, self._when)
        self._live.append(current)

    def _entry(self) -> None:
        if self._skip:
            return
        self._touched += 1
        kind = self._status[0]
        if kind in _TWO_PATHS:
            new = decode_path(self._paths[1])
            current = self._resolve(new)
            self._credit(current)
            self._born.append(new)
            if kind == ord("R"):
                self._renamed.append((decode_path(self._paths[0]), current))
            return
        path = decode_path(self._paths[0])
        if self._status.strip(b"D") == b"":
            self._born.append(path)  # deleted here: older mentions are another lineage
            return
        self._credit(self._resolve(path))
        if kind == ord("A"):
            self._born.append(path)

    def _end_commit(self) -> None:
        if self._sha is None:
            return
        if not self._skip:
            self._count_pairs()
            self._update_aliases()
        self._touched = 0
        self._live = []
        self._born = []
        self._renamed = []

    def _update_aliases(self) -> None:
        renamed_from = {old for old, _ in self._renamed}
        for path in self._born:
            if path not in renamed_from:
                self._alias[path] = None
        for old, current in self._renamed:
            self._alias[old] = current

    def _count_pairs(self) -> None:
        if self._touched > self._max_files:
            self._oversized += 1
            return
        if self._touched < 2 or not self._pair_cap:
            return
        live = sorted(set(self._live))
        when = self._when
        assert when is not None
        weight = pair_weight(self._touched)
        pairs = self._pairs
        for i, first in enumerate(live):
            for second in live[i + 1 :]:
                key = (first, second)
                pair = pairs.get(key)
                if pair is None:
                    pairs[key] = _Pair(when, weight)
                else:
                    pair.add(when, weight)
        if len(pairs) >= 2 * self._pair_cap:
            self._prune()

    def _prune(self) -> None:
        """Keep the strongest ``pair_cap`` pairs: higher count, then more recent, then older
        insertion (= seen earlier = newer history)."""
        keep = heapq.nlargest(
            self._pair_cap, self._pairs.items(), key=lambda item: (item[1].commits, item[1].last)
        )
        self._pruned += len(self._pairs) - len(keep)
        self._pairs = dict(keep)


def parse_log(
    data: bytes,
    *,
    max_files_per_commit: int = DEFAULT_MAX_FILES_PER_COMMIT,
    pair_cap: int = DEFAULT_PAIR_CAP,
    skip_commits: Iterable[str] = (),
) -> RecencyResult:
    """Parse a complete ``git log`` output held in memory (tests, small repositories)."""
    parser = LogParser(
        max_files_per_commit=max_files_per_commit, pair_cap=pair_cap, skip_commits=skip_commits
    )
    parser.feed(data)
    return parser.close()


async def parse_log_stream(
    chunks: AsyncIterable[bytes],
    *,
    max_files_per_commit: int = DEFAULT_MAX_FILES_PER_COMMIT,
    pair_cap: int = DEFAULT_PAIR_CAP,
    skip_commits: Iterable[str] = (),
) -> RecencyResult:
    """Parse ``git log`` output as it streams in (e.g. from ``stream_git``)."""
    parser = LogParser(
        max_files_per_commit=max_files_per_commit, pair_cap=pair_cap, skip_commits=skip_commits
    )
    async for chunk in chunks:
        parser.feed(chunk)
    return parser.close()


# ---------------------------------------------------------------------------------- benchmark


def synthetic_log(commits: int, files: int, *, seed: int = 0, chunk_size: int = 64 * 1024) -> list[bytes]:
    """A deterministic, realistic-looking ``git log -z`` output split into chunks.

    Newest first, one commit per hour; most commits touch 1-4 files, some are empty, a few
    rename or delete, and one in fifty is a large (over the pair bound) commit.
    """
    rng = random.Random(seed)  # noqa: S311 - benchmark data, not security
    names = [f"pkg{i % 97}/mod{i % 13}/file_{i}.py".encode() for i in range(files)]
    start = datetime(2026, 1, 1, tzinfo=UTC)
    out = bytearray()
    chunks: list[bytes] = []
    for n in range(commits):
        when = (start - timedelta(hours=n)).isoformat().encode()
        out += b"%040x %s\0" % (n + 1, when)
        roll = rng.random()
        touched = 0 if roll < 0.03 else 40 if roll < 0.05 else rng.choice((1, 1, 2, 2, 3, 4))
        for i in range(touched):
            out += b"\n" if i == 0 else b""
            kind = rng.random()
            path = names[rng.randrange(files)]
            if kind < 0.02:
                out += b"R100\0%s.old\0%s\0" % (path, path)
            elif kind < 0.04:
                out += b"D\0%s\0" % path
            else:
                out += b"M\0%s\0" % path
        if len(out) >= chunk_size:
            chunks.append(bytes(out))
            out.clear()
    chunks.append(bytes(out))
    return chunks


def bench_parse(commits: int = 100_000, files: int = 20_000, *, seed: int = 0) -> dict[str, float]:
    """Parse a synthetic log of ``commits`` commits over ``files`` paths; report throughput."""
    chunks = synthetic_log(commits, files, seed=seed)
    started = time.perf_counter()
    parser = LogParser()
    for chunk in chunks:
        parser.feed(chunk)
    result = parser.close()
    seconds = time.perf_counter() - started
    return {
        "commits": float(result.commits),
        "seconds": seconds,
        "commits_per_s": result.commits / seconds if seconds else float("inf"),
        "mib_per_s": sum(map(len, chunks)) / 2**20 / seconds if seconds else float("inf"),
        "files": float(len(result.files)),
        "pairs": float(len(result.cochange)),
    }
