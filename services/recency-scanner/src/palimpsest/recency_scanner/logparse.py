"""One streaming pass over ``git log`` that yields per-file recency and co-change counts.

The log (its command, :func:`log_args`, and its layout) is read by
:class:`palimpsest.core.gitlog.GitLogReader`, which applies the lineage rules (renames fold
older history onto the current path; added, deleted or renamed-to paths end a lineage;
skipped commits are not read). This module turns its commits into the scanner's aggregates;
memory is O(paths ever seen + pair cap), never the size of the log.

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
* **Commit counts** (issue 43): per current path, the commits of 1..N files that changed it and
  the oldest of them (``commit_counts``), and how many such commits the scan read
  (``counted_commits``): the denominators of a pair's conditional share and of a path's base rate
  of change (:mod:`palimpsest.index.cochange`). Oversized and boundary commits count for neither,
  as they count for no pair.
* **Shallow boundaries** (``skip_commits``): git shows a shallow clone's boundary commit as a
  root whose every file is "added"; its file list is ignored so files older than the window
  stay absent (age unknown) instead of getting the boundary's date.
"""

from __future__ import annotations

import heapq
import random
import time
from collections.abc import AsyncIterable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, NamedTuple

from palimpsest.core.gitlog import GitLogReader, LogCommit, RenameMode, log_args
from palimpsest.index.evidence import add_weight, pair_weight

__all__ = [
    "DEFAULT_MAX_FILES_PER_COMMIT",
    "DEFAULT_PAIR_CAP",
    "CoChange",
    "CommitCount",
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


class FileChange(NamedTuple):
    """The last commit that changed a path (as of the scanned branch head)."""

    commit: str
    when: datetime


class CommitCount(NamedTuple):
    """How many counted commits (1..N files) changed a path, and the oldest of them."""

    commits: int
    since: datetime


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
    commit_counts: dict[str, CommitCount] = field(default_factory=dict)  # per path: its counted commits
    counted_commits: int = 0  # commits of 1..max_files_per_commit files (the pairs' universe)


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
        self._reader = GitLogReader(skip_commits=skip_commits)
        self._files: dict[str, FileChange] = {}
        self._counts: dict[str, list[Any]] = {}  # path -> [counted commits, oldest date]
        self._counted = 0
        self._pairs: dict[tuple[str, str], _Pair] = {}
        self._commits = 0
        self._oversized = 0
        self._pruned = 0
        self._boundaries = 0
        self._head: str | None = None
        self._last: str | None = None  # the previous commit's sha

    def feed(self, chunk: bytes) -> None:
        """Consume the next piece of output; chunk boundaries may fall anywhere."""
        for commit in self._reader.feed(chunk):
            self._take(commit)

    def close(self) -> RecencyResult:
        """Finish the stream and return what it held."""
        for commit in self._reader.close():
            self._take(commit)
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
            commit_counts={path: CommitCount(n, since) for path, (n, since) in self._counts.items()},
            counted_commits=self._counted,
        )

    def _take(self, commit: LogCommit) -> None:
        if self._head is None:
            self._head = commit.sha
        if commit.sha != self._last:
            self._commits += 1  # `-m` output repeats a merge's header once per parent
        self._last = commit.sha
        if commit.skipped:
            self._boundaries += 1
            return
        for path in commit.paths:  # newest first: the first sighting holds the date
            if path not in self._files:
                self._files[path] = FileChange(commit.sha, commit.when)
        self._count_pairs(commit)

    def _count_pairs(self, commit: LogCommit) -> None:
        if commit.touched > self._max_files:
            self._oversized += 1
            return
        if commit.touched >= 1:
            self._counted += 1
            counts = self._counts
            for path in commit.paths:  # newest first: the last sighting is the oldest
                entry = counts.get(path)
                if entry is None:
                    counts[path] = [1, commit.when]
                else:
                    entry[0] += 1
                    entry[1] = commit.when
        if commit.touched < 2 or not self._pair_cap:
            return
        live = sorted(commit.paths)
        when = commit.when
        weight = pair_weight(commit.touched)
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
