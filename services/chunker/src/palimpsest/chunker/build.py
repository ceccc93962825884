"""One snapshot build: list the tree, parse only unseen blobs, write with COPY, keep two ready.

The build runs inside the handler's tenant transaction (``ctx.transaction()``), serialised per
repository by an advisory lock, so everything it writes — blobs, chunks, symbols, facts, files, the
snapshot's ``ready`` state, superseding, garbage collection and the ``snapshot.built`` event —
commits together or not at all. Parsing happens in worker processes while the previous batch is
written, so the CPU and the database work at the same time.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import time
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from concurrent.futures import Executor
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

from palimpsest.chunker import store
from palimpsest.chunker.errors import BuildFailed, BuildSkipped
from palimpsest.chunker.parsing import ANALYSIS_VERSION, detect_language, is_doc
from palimpsest.chunker.source import Source
from palimpsest.chunker.store import KnownBlob
from palimpsest.chunker.work import (
    BatchResult,
    BlobSummary,
    analyze_batch,
    blob_copy_line,
    copy_field,
    copy_lines,
)
from palimpsest.core.db import Conn
from palimpsest.core.git import TreeEntry, decode_path, ls_tree, object_sizes, read_blobs, run_git
from palimpsest.core.git_errors import GitError, GitFailure

log = logging.getLogger(__name__)

ANALYZE_AFTER_BLOBS = 500
KEEP_PINNED = 3  # snapshots of review bases kept per repository (the newest)
REGULAR_MODES = frozenset({"100644", "100755"})
SYMLINK_MODE = "120000"
GITLINK_MODE = "160000"
_COMMIT = re.compile(r"[0-9a-f]{40}(?:[0-9a-f]{24})?")


@dataclass(frozen=True, slots=True)
class Limits:
    max_file_bytes: int = 256 * 1024
    max_files: int = 50_000
    tenant_bytes: int = 2 * 1024**3
    time_budget_s: float = 600.0
    keep_ready: int = 2
    batch_bytes: int = 2 * 1024 * 1024
    workers: int = 2


@dataclass(slots=True)
class FileRow:
    path: str
    sha: str
    language: str | None
    kind: str
    size: int | None  # None until asked for (a listing without sizes)
    skip_reason: str | None = None


@dataclass(slots=True)
class BuildStats:
    files: int = 0
    chunks: int = 0
    symbols: int = 0
    bytes: int = 0
    parsed_blobs: int = 0
    reused_blobs: int = 0
    skipped: Counter[str] = field(default_factory=Counter)
    timings: dict[str, float] = field(default_factory=dict)


Progress = Callable[[int, int], Awaitable[None]]


def tree_skip(e: TreeEntry) -> str | None:
    """Why a tree entry is not a file to read (its mode), or None for a regular file."""
    if e.mode == GITLINK_MODE or e.type == "commit":
        return "submodule"
    if e.mode == SYMLINK_MODE:
        return "symlink"
    if e.type != "blob" or e.mode not in REGULAR_MODES:
        return "unsupported_mode"
    return None


def classify(entries: list[TreeEntry], stats: BuildStats) -> list[FileRow]:
    """Tree entries → file rows; symlinks and submodules are counted, not read."""
    rows: list[FileRow] = []
    for e in entries:
        skip = tree_skip(e)
        if skip is not None:
            stats.skipped[skip] += 1
            continue
        rows.append(
            FileRow(e.path, e.sha, detect_language(e.path), "doc" if is_doc(e.path) else "code", e.size)
        )
    return rows


@dataclass(slots=True)
class Base:
    """The previous ready snapshot an incremental build copies its unchanged file rows from."""

    snapshot_id: UUID
    changed: list[str]  # paths whose rows are not copied (changed, added or deleted since)
    totals: BuildStats  # the base's totals less the rows that are not copied


def _diff_entries(out: bytes) -> tuple[list[TreeEntry], list[TreeEntry]]:
    """``diff-tree -r -z`` raw records → (entries before, entries after); absent sides left out."""
    old: list[TreeEntry] = []
    new: list[TreeEntry] = []
    fields = out.split(b"\0")
    for i in range(0, len(fields) - 1, 2):
        meta, raw_path = fields[i], fields[i + 1]
        parts = meta.lstrip(b":").decode("ascii").split()
        if len(parts) != 5:
            raise GitError(GitFailure.PARSE_ERROR, "unexpected diff-tree record")
        path = decode_path(raw_path)
        for mode, sha, side in ((parts[0], parts[2], old), (parts[1], parts[3], new)):
            if mode != "000000":
                side.append(TreeEntry(path, mode, "commit" if mode == GITLINK_MODE else "blob", sha))
    return old, new


async def incremental_base(
    conn: Conn, repository_id: UUID, source: Source, limits: Limits
) -> tuple[Base, list[FileRow]] | None:
    """Start from the newest ready snapshot when its commit is in ``source``: copy its file rows
    except the paths ``git diff-tree`` reports, which are listed anew (returned as file rows).

    None means "list the whole tree": no ready snapshot, one built by another analysis version
    (its rows' languages and skip reasons may differ), one with blobs skipped as too large that
    the current limit admits, or a previous commit this clone does not have (a shallow clone).
    """
    prev = await store.newest_ready_build(conn, repository_id)
    if prev is None or prev.analysis_version != ANALYSIS_VERSION or prev.commit_sha == source.commit:
        return None  # (the same commit again is an explicit rebuild: list everything)
    if not (_COMMIT.fullmatch(prev.commit_sha) and _COMMIT.fullmatch(source.commit)):
        return None
    if await store.skipped_too_large_up_to(conn, prev.snapshot_id, limits.max_file_bytes):
        return None
    try:
        out = await run_git(
            ["diff-tree", "-r", "-z", "--no-renames", "--no-abbrev", prev.commit_sha, source.commit],
            cwd=source.git_dir,
            timeout_s=limits.time_budget_s,
        )
    except GitError as exc:
        if exc.reason == GitFailure.TIMEOUT:
            raise
        return None
    old, new = _diff_entries(out)
    changed = list(dict.fromkeys(e.path for e in [*old, *new]))
    totals = BuildStats(
        files=prev.files,
        chunks=prev.chunks,
        symbols=prev.symbols,
        bytes=prev.bytes,
        skipped=Counter({k: int(n) for k, n in prev.skipped.items()}),
    )
    # the totals of the rows that are not copied (the base's totals were summed the same way)
    for r in await store.totals_at(conn, repository_id, prev.snapshot_id, changed):
        totals.files -= r.files
        if r.skip_reason is None:
            totals.chunks -= r.chunks
            totals.symbols -= r.symbols
            totals.bytes -= r.bytes
        else:
            totals.skipped[r.skip_reason] -= r.files
    for e in old:
        skip = tree_skip(e)
        if skip is not None:
            totals.skipped[skip] -= 1
    rows = classify(new, totals)
    totals.skipped = Counter({k: n for k, n in totals.skipped.items() if n > 0})
    return Base(prev.snapshot_id, changed, totals), rows


@dataclass(slots=True)
class BlobInfo:
    """What a file row and the snapshot's totals need to know of a blob."""

    language: str | None
    size: int
    skip_reason: str | None
    chunk_count: int
    symbol_count: int


def needs_parse(row: FileRow, known: KnownBlob | None, limits: Limits) -> bool:
    if known is None:
        return True
    if known.skip_reason == "too_large" and known.size <= limits.max_file_bytes:
        return True  # the limit was raised since
    # a blob whose language changed (new grammar, new mapping) or an older analysis is re-chunked
    return known.language != row.language or known.analysis_version != ANALYSIS_VERSION


async def build(conn: Conn, **kwargs: Any) -> BuildStats:
    """Fill the index for ``source.commit`` inside ``conn``'s transaction; raises BuildFailed."""
    try:
        return await _build(conn, **kwargs)
    except GitError as exc:  # reading the local tree or its blobs
        if exc.reason == GitFailure.TIMEOUT:
            raise BuildFailed("time_budget", str(exc)) from exc
        raise BuildFailed(f"git_{exc.reason}", str(exc)) from exc


def _timed(stats: BuildStats, name: str, since: float) -> float:
    now = time.monotonic()
    stats.timings[name] = round(now - since, 3)
    return now


async def _build(
    conn: Conn,
    *,
    tenant_id: UUID,
    repository_id: UUID,
    snapshot_id: UUID,
    source: Source,
    limits: Limits,
    executor: Executor | None,
    progress: Progress | None = None,
    heartbeat: Callable[[], Awaitable[None]] | None = None,
    skip_if_ready: bool = False,
    pinned: bool = False,
) -> BuildStats:
    """The build's phases: lock and prepare, plan (what to parse), file rows while the first
    batches parse, parse and write, settle the file rows of blobs the parse saw otherwise."""
    started = time.monotonic()
    stats = BuildStats()
    first = await _prepare(
        conn, repository_id, snapshot_id, source, skip_if_ready=skip_if_ready, pinned=pinned
    )
    t = _timed(stats, "lock_s", started)
    plan = await _plan(conn, repository_id, source, limits, stats, first=first)
    t = plan.timed
    write_s = 0.0
    # the database is idle until the first batch is parsed: the file rows are written meanwhile
    files = asyncio.create_task(_write_files(conn, tenant_id, snapshot_id, plan, stats))
    try:
        async for batch in _parse(source, plan.todo, limits, executor, started):
            await asyncio.shield(files)
            tw = time.monotonic()
            await store.write_batch(conn, tenant_id, repository_id, batch.blob_rows, batch.chunks)
            write_s += time.monotonic() - tw
            for b in batch.blobs:
                plan.blobs[b.sha] = BlobInfo(b.language, b.size, b.skip_reason, b.chunk_count, b.symbol_count)
            stats.parsed_blobs += len(batch.blobs)
            if progress is not None:
                await progress(stats.parsed_blobs, len(plan.todo))
            if heartbeat is not None:
                await heartbeat()
    finally:  # the connection is never left in the middle of the file rows' COPY
        await _settled(files)
    await files  # (its failure, where no batch awaited it)
    t = _timed(stats, "parse_write_s", t)
    stats.timings["write_s"] = round(write_s, 3)
    await _finish(conn, snapshot_id, plan, stats, t)
    return stats


async def _settled(task: asyncio.Task[None]) -> None:
    """Wait for ``task`` to end; its failure is retrieved here and left to whoever awaits it."""
    await asyncio.wait([task])
    if not task.cancelled():
        task.exception()


async def _prepare(
    conn: Conn, repository_id: UUID, snapshot_id: UUID, source: Source, *, skip_if_ready: bool, pinned: bool
) -> bool:
    """Take the repository's build lock, make sure the snapshot still exists, set up the load;
    whether this is the repository's first build (every blob new). Raises BuildSkipped/BuildFailed."""
    await store.lock_repository(conn, repository_id)
    if skip_if_ready:  # another request built this commit while we waited for the lock
        ready = await store.ready_of_commit(conn, repository_id, source.commit, pinned=pinned)
        if ready is not None:
            raise BuildSkipped("up_to_date", ready)
    # what a foreign key's check did (migration 0013 replaced it): the snapshot cannot be deleted
    # while its file rows are written, so its deletion's trigger always sees and removes them
    if not await store.hold_snapshot(conn, snapshot_id):
        raise BuildFailed("interrupted", "the snapshot was deleted before its build started")
    await store.create_staging(conn)
    # bulk-load settings for this transaction only; losing the last commits of a build on a crash
    # only means a rebuild
    await store.bulk_load_settings(conn)
    return not await store.has_blobs(conn, repository_id)


@dataclass(slots=True)
class _Plan:
    """What a build writes: the file rows, the blobs to parse, what is known of every blob."""

    base: Base | None
    rows: list[FileRow]
    todo: list[FileRow]
    blobs: dict[str, BlobInfo]  # every blob: known ones as stored, the others as listed until parsed
    listed: dict[str, BlobInfo]  # the blobs to parse as listed (what their file rows are written with)
    timed: float  # when planning ended (monotonic)


async def _plan(
    conn: Conn, repository_id: UUID, source: Source, limits: Limits, stats: BuildStats, *, first: bool
) -> _Plan:
    """List the tree (or the change since a base snapshot), find the blobs to parse, drop the rows of
    blobs to re-chunk, and check the file and storage caps."""
    t = time.monotonic()
    base, rows = await _listing(conn, repository_id, source, limits, stats, first=first)
    t = _timed(stats, "ls_tree_s" if base is None else "diff_tree_s", t)
    files = stats.files + len(rows)
    if files > limits.max_files:
        raise BuildFailed("file_cap", f"{files} files > limit {limits.max_files}")
    # a first build looks nothing up (one index probe per blob of the tree, all finding nothing)
    by_sha: dict[str, FileRow] = {}
    for r in rows:
        by_sha.setdefault(r.sha, r)
    known = {} if first else await store.known_blobs(conn, repository_id, list(by_sha))
    todo = [r for sha, r in by_sha.items() if needs_parse(r, known.get(sha), limits)]
    # sizes only for blobs not seen before, where the listing did not carry them (an incremental
    # build's: ls-tree --long would look up every blob of the tree)
    unsized = [r.sha for r in todo if r.size is None]
    sizes = await object_sizes(source.git_dir, unsized, timeout_s=limits.time_budget_s) if unsized else {}
    for r in todo:
        if r.size is None:
            r.size = sizes.get(r.sha, 0)
        if r.size > limits.max_file_bytes:
            r.skip_reason = "too_large"
    t = _timed(stats, "known_s", t)
    stale = [r.sha for r in todo if r.sha in known]
    if stale:  # re-chunked blobs: drop the old rows (0013's trigger removes their chunks, symbols, facts)
        await store.delete_blobs(conn, repository_id, stale)
    stats.reused_blobs = len(by_sha) - len(todo)
    await _check_storage(conn, limits, sum(r.size or 0 for r in todo if r.skip_reason is None))
    blobs: dict[str, BlobInfo] = {
        sha: BlobInfo(k.language, k.size, k.skip_reason, k.chunk_count, k.symbol_count)
        for sha, k in known.items()
        if sha not in stale
    }
    listed = {r.sha: BlobInfo(r.language, r.size or 0, r.skip_reason, 0, 0) for r in todo}
    return _Plan(base, rows, todo, blobs | listed, listed, t)


async def _finish(conn: Conn, snapshot_id: UUID, plan: _Plan, stats: BuildStats, t: float) -> None:
    """Settle and total the snapshot's file rows, then leave the index ready to search."""
    await _settle_files(conn, snapshot_id, plan, stats)
    t = _timed(stats, "settle_files_s", t)
    # The planner's statistics predate this load; without them it estimates "1 row" and picks
    # nested loops that make the set operations below quadratic. Large loads refresh the statistics
    # (as the owner, through a function of migration 0004); hash joins suit these statements.
    await store.no_nested_loops(conn)
    if plan.base is not None:
        # the base snapshot's unchanged file rows, copied in SQL (their totals are already counted)
        await store.copy_files(conn, snapshot_id, plan.base.snapshot_id, plan.base.changed)
        t = _timed(stats, "copy_files_s", t)
    if stats.parsed_blobs:  # searches should not have to scan the GIN pending list this load left
        await store.merge_lexical_index(conn)
        t = _timed(stats, "merge_gin_s", t)
    if stats.parsed_blobs >= ANALYZE_AFTER_BLOBS:
        await store.analyze_code_index(conn)
        _timed(stats, "analyze_s", t)
    else:
        # every build writes a whole snapshot of file rows (an incremental one copies its base's), and
        # each search looks its hits' paths up by that snapshot's id: unknown to the statistics, it was
        # estimated at one row and the lookup read every file of the snapshot per hit (migration 0055)
        await store.analyze_code_files(conn)
        _timed(stats, "analyze_files_s", t)


async def _listing(
    conn: Conn, repository_id: UUID, source: Source, limits: Limits, stats: BuildStats, *, first: bool
) -> tuple[Base | None, list[FileRow]]:
    """The file rows to write, and the snapshot whose other rows are copied (None: every row)."""
    found = None if first else await incremental_base(conn, repository_id, source, limits)
    if found is not None:
        base, rows = found
        known = await store.known_blobs(conn, repository_id, [r.sha for r in rows])
        # a known blob that is re-chunked may be shared by copied rows, whose language and skip
        # reason must then come from the new analysis: list the whole tree instead
        if not any(needs_parse(r, known[r.sha], limits) for r in rows if r.sha in known):
            t = base.totals
            stats.files, stats.chunks, stats.symbols, stats.bytes = t.files, t.chunks, t.symbols, t.bytes
            stats.skipped = t.skipped
            return found
    # a first build reads every blob: sizes with the listing (one ls-tree --long) beat a lookup per
    # blob after it; an incremental one asks only for the sizes of the blobs it has not seen
    entries = await ls_tree(source.git_dir, source.commit, with_sizes=first, timeout_s=limits.time_budget_s)
    return None, classify(entries, stats)


async def _check_storage(conn: Conn, limits: Limits, new_bytes: int) -> None:
    used = await store.source_bytes(conn)
    if used + new_bytes > limits.tenant_bytes:
        raise BuildFailed(
            "storage_cap",
            f"tenant would hold {used + new_bytes} bytes of source > limit {limits.tenant_bytes}",
        )


async def _parse(
    source: Source, todo: list[FileRow], limits: Limits, executor: Executor | None, started: float
) -> AsyncIterator[BatchResult]:
    """Yield analysed batches; reading, parsing (in workers) and the caller's writes overlap."""
    too_large = [r for r in todo if r.skip_reason is not None]
    if too_large:
        skipped = [BlobSummary(r.sha, r.language, r.size or 0, r.skip_reason, 0, 0, 0) for r in too_large]
        yield BatchResult(skipped, copy_lines([blob_copy_line(b) for b in skipped]), b"")
    wanted = {r.sha: r for r in todo if r.skip_reason is None}
    if not wanted:
        return
    loop = asyncio.get_running_loop()
    inflight: list[asyncio.Future[BatchResult]] = []
    max_inflight = max(2, limits.workers * 2)
    batch: list[tuple[str, str, bytes]] = []
    batch_bytes = 0
    unread = sum(r.size or 0 for r in wanted.values())

    def submit(items: list[tuple[str, str, bytes]]) -> asyncio.Future[BatchResult]:
        if executor is None:
            fut: asyncio.Future[BatchResult] = loop.create_future()
            fut.set_result(analyze_batch(items, limits.max_file_bytes))
            return fut
        return asyncio.wrap_future(executor.submit(analyze_batch, items, limits.max_file_bytes))

    def over_budget() -> None:
        if time.monotonic() - started > limits.time_budget_s:
            raise BuildFailed("time_budget", f"reading and chunking exceeded {limits.time_budget_s:.0f}s")

    blobs = read_blobs(source.git_dir, list(wanted), timeout_s=limits.time_budget_s)
    async with contextlib.aclosing(blobs) as stream:
        async for sha, data in stream:
            batch.append((wanted[sha].path, sha, data))
            batch_bytes += len(data)
            unread -= len(data)
            if batch_bytes >= _batch_target(limits, batch_bytes + unread):
                inflight.append(submit(batch))
                batch, batch_bytes = [], 0
                while len(inflight) >= max_inflight:
                    yield await inflight.pop(0)
                    over_budget()
    if batch:
        inflight.append(submit(batch))
    while inflight:
        yield await inflight.pop(0)
        over_budget()


def _batch_target(limits: Limits, left: int) -> int:
    """Bytes for the batch being filled, ``left`` bytes not yet submitted: the configured size until
    fewer than ``2 * workers`` such batches are left, then ``left / (2 * workers)``, so batches
    shrink as the end nears (down to 64 KiB). Writing the last batches is the one part of the load
    that no parsing overlaps (a core idles); small last batches keep it short."""
    return max(_TAIL_BATCH_BYTES, min(limits.batch_bytes, left // (2 * max(1, limits.workers))))


_TAIL_BATCH_BYTES = 64 * 1024


def _file_values(r: FileRow, info: BlobInfo) -> tuple[str | None, int, str | None]:
    """A file row's language, size and skip reason: its blob's (a blob is analysed once, at the
    first path that lists it), the language by the row's own path where the blob has none."""
    return info.language or r.language, info.size, info.skip_reason


async def _write_files(
    conn: Conn, tenant_id: UUID, snapshot_id: UUID, plan: _Plan, stats: BuildStats
) -> None:
    """Write the snapshot's file rows: known blobs as stored, the blobs to parse as listed."""
    started = time.monotonic()
    tenant, snapshot = str(tenant_id), str(snapshot_id)
    lines: list[str] = []
    for r in plan.rows:
        info = plan.blobs.get(r.sha)
        if info is None:  # cannot happen: every blob is known or to parse
            raise BuildFailed("internal", f"no blob record for {r.path}")
        language, size, skip_reason = _file_values(r, info)
        # rows formatted here and sent as one COPY block (cheaper than a write_row per file)
        lines.append(
            f"{tenant}\t{snapshot}\t{copy_field(r.path)}\t{r.sha}\t{copy_field(language)}"
            f"\t{r.kind}\t{size}\t{copy_field(skip_reason)}"
        )
    if lines:
        await store.write_files(conn, copy_lines(lines))
    _timed(stats, "write_files_s", started)


async def _settle_files(conn: Conn, snapshot_id: UUID, plan: _Plan, stats: BuildStats) -> None:
    """Correct the file rows of blobs the parse saw otherwise than listed (binary, unreadable,
    another language), and total up the snapshot."""
    changed: list[tuple[str, str | None, int, str | None]] = []
    for r in plan.rows:
        info = plan.blobs[r.sha]
        listed = plan.listed.get(r.sha)
        if listed is not None and (values := _file_values(r, info)) != _file_values(r, listed):
            changed.append((r.path, *values))
        stats.files += 1
        if info.skip_reason is None:
            stats.chunks += info.chunk_count
            stats.symbols += info.symbol_count
            stats.bytes += info.size
        else:
            stats.skipped[info.skip_reason] += 1
    if changed:
        paths, languages, sizes, reasons = (list(c) for c in zip(*changed, strict=True))
        await store.correct_files(conn, snapshot_id, paths, languages, sizes, reasons)


async def finish(
    conn: Conn,
    repository_id: UUID,
    snapshot_id: UUID,
    stats: BuildStats,
    duration_s: float,
    keep_ready: int,
    *,
    pinned: bool = False,
) -> None:
    """Mark ready, supersede the previous ready snapshot, delete beyond ``keep_ready``, collect blobs.

    The branch's snapshots and a review base's pinned ones are kept apart: a branch build
    supersedes and prunes only the branch's; a pinned one supersedes nothing and the repository
    keeps its ``KEEP_PINNED`` newest pinned snapshots."""
    t = time.monotonic()
    await store.mark_ready(
        conn,
        snapshot_id,
        files=stats.files,
        chunks=stats.chunks,
        symbols=stats.symbols,
        bytes=stats.bytes,
        parsed_blobs=stats.parsed_blobs,
        skipped=dict(stats.skipped),
        duration_s=duration_s,
        analysis_version=ANALYSIS_VERSION,
    )
    if not pinned:
        await store.supersede(conn, repository_id, snapshot_id)
    await store.prune(conn, repository_id, pinned=pinned, keep=KEEP_PINNED if pinned else keep_ready)
    t = _timed(stats, "supersede_s", t)
    await store.collect_garbage(conn, repository_id)
    _timed(stats, "gc_s", t)
    await store.stamp_index_updated(conn, repository_id)
