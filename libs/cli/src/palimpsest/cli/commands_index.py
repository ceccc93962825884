"""CLI: ``palimpsest index``, ``palimpsest search`` and ``palimpsest snapshots``."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, NotRequired, TypedDict
from uuid import UUID

import click

from palimpsest.cli.options import check_path_target, local_tenant_id, repo_option, tenant_option
from palimpsest.cli.output import emit, progress
from palimpsest.cli.runtime import run_async, settings

if TYPE_CHECKING:
    from palimpsest.cli.pipeline import Arrived
    from palimpsest.core.db import Pool
    from palimpsest.index.snapshots import Snapshot

__all__ = ["index_cmd", "index_result", "search_cmd", "skipped_snapshot", "snapshots_cmd"]


@click.command("index")
@click.argument("target")
@tenant_option
@click.option("--mode", type=click.Choice(["off", "lexical", "hybrid"]), default=None)
@click.option("--rebuild", is_flag=True, help="Build even if the head commit is already indexed.")
@click.option("--json", "as_json", is_flag=True)
@run_async
async def index_cmd(target: str, tenant: str | None, mode: str | None, rebuild: bool, as_json: bool) -> None:
    """Index a repository (a local path) through the bus and wait for the snapshot."""
    from palimpsest.cli.local import find_repository, register_path
    from palimpsest.cli.pipeline import index_and_wait
    from palimpsest.cli.session import session
    from palimpsest.core.db import tenant_tx
    from palimpsest.index.snapshots import by_request

    check_path_target(target, on_a_branch=True)  # before any stack starts
    s = settings()
    async with session(s) as sess:
        pool = sess.infra.pool
        tid = await local_tenant_id(pool, s.home, tenant)
        path = Path(target).expanduser()
        if path.exists():
            repo_id = await register_path(pool, tid, path, mode=mode)
        else:
            repo_id = await find_repository(pool, tid, target)
        progress(f"indexing {target} (repository {repo_id})…")
        last = [-1]

        async def tick(request_id: UUID) -> None:
            async with tenant_tx(pool, tid) as conn:
                snap = await by_request(conn, request_id)
            if snap is not None and snap.parsed_blobs != last[0]:
                last[0] = snap.parsed_blobs
                progress(f"  {snap.state}: {snap.parsed_blobs} blobs parsed")

        found = await index_and_wait(
            pool, sess.infra.nc, tid, repo_id, reason="rebuild" if rebuild else "cli", tick=tick
        )
        there = await skipped_snapshot(pool, tid, found)
    out = index_result(repo_id, found, there)
    emit(out, as_json=as_json, text=_index_text(out))
    if out["state"] == "failed":
        raise SystemExit(1)


@click.command("search")
@click.argument("query")
@repo_option()
@tenant_option
@click.option("--limit", default=10, show_default=True)
@click.option("--path-prefix", default=None)
@click.option("--language", default=None)
@click.option("--kind", default=None, help="Chunk kind: function, class, method, window, section, …")
@click.option(
    "--mode",
    type=click.Choice(["lexical", "hybrid"]),
    default="lexical",
    show_default=True,
    help="hybrid: lexical + semantic (the snapshot's embeddings model), fused by RRF.",
)
@click.option("--json", "as_json", is_flag=True)
@run_async
async def search_cmd(
    query: str,
    repo: str,
    tenant: str | None,
    limit: int,
    path_prefix: str | None,
    language: str | None,
    kind: str | None,
    mode: str,
    as_json: bool,
) -> None:
    """Search the newest ready snapshot of a repository (lexical, or hybrid with --mode hybrid)."""
    from palimpsest.cli.local import find_repository
    from palimpsest.cli.session import session
    from palimpsest.core.db import tenant_tx
    from palimpsest.index.search import lexical_search

    s = settings()
    async with session(s, services=False) as sess:
        tid = await local_tenant_id(sess.infra.pool, s.home, tenant)
        repo_id = await find_repository(sess.infra.pool, tid, repo)
        if mode == "hybrid":  # issue 7: palimpsest.cli.commands_embed
            from palimpsest.cli.commands_embed import hybrid_cli_search

            data, text = await hybrid_cli_search(
                sess.infra.pool,
                tid,
                repo_id,
                query,
                limit=limit,
                as_json=as_json,
                path_prefix=path_prefix,
                language=language,
                kind=kind,
            )
            emit(data, as_json=as_json, text=text)
            return
        async with tenant_tx(sess.infra.pool, tid) as conn:
            hits = await lexical_search(
                conn, repo_id, query, limit=limit, path_prefix=path_prefix, language=language, kind=kind
            )
    rows = [h.as_dict(with_content=as_json) for h in hits]
    text = (
        "\n".join(
            f"{h.score:8.4f}  {h.path}:{h.start_line}-{h.end_line}  {h.kind} {h.name or ''}" for h in hits
        )
        or "no matches"
    )
    emit(rows, as_json=as_json, text=text)


@click.command("snapshots")
@repo_option()
@tenant_option
@click.option("--json", "as_json", is_flag=True)
@run_async
async def snapshots_cmd(repo: str, tenant: str | None, as_json: bool) -> None:
    """Snapshots of a repository, newest first, with state, reason and counts."""
    from palimpsest.cli.local import find_repository
    from palimpsest.cli.session import session
    from palimpsest.core.db import tenant_tx
    from palimpsest.index.snapshots import list_snapshots

    s = settings()
    async with session(s, services=False) as sess:
        tid = await local_tenant_id(sess.infra.pool, s.home, tenant)
        repo_id = await find_repository(sess.infra.pool, tid, repo)
        async with tenant_tx(sess.infra.pool, tid) as conn:
            rows = await list_snapshots(conn, repo_id)
    text = (
        "\n".join(
            f"{r.snapshot_id}  {r.commit_sha[:12]}  {r.state:<10} {r.reason or ''}"
            f"  files={r.files} chunks={r.chunks} embedding={r.embedding_state}"
            + (f" ({r.embedding_reason})" if r.embedding_reason else "")
            for r in rows
        )
        or "no snapshots"
    )
    emit([r.to_json() for r in rows], as_json=as_json, text=text)


async def skipped_snapshot(pool: Pool, tenant: UUID, found: Arrived) -> Snapshot | None:
    """The snapshot that is there when the build was skipped because its commit is indexed
    (``up_to_date``): the event names it but carries none of its figures."""
    from palimpsest.core.db import tenant_tx
    from palimpsest.core.events import SnapshotBuilt
    from palimpsest.index.snapshots import get_snapshot

    built = found[SnapshotBuilt]
    if built.state != "skipped" or built.snapshot_id is None:
        return None
    async with tenant_tx(pool, tenant) as conn:
        return await get_snapshot(conn, built.snapshot_id)


class RecencyNote(TypedDict):
    """What the recency scan of the build said (``unknown`` with a reason when it said nothing)."""

    status: str
    reason: str | None
    files: NotRequired[int]


class IndexResult(TypedDict):
    """``palimpsest index --json``: the build's snapshot.built (or the snapshot already there)."""

    repository_id: str
    snapshot_id: str | None
    commit: str | None
    state: str
    reason: str | None
    already_indexed: bool
    files: int
    chunks: int
    symbols: int
    bytes: int
    parsed_blobs: int
    skipped: dict[str, int]
    duration_s: float
    recency: RecencyNote


def index_result(repo_id: UUID, found: Arrived, there: Snapshot | None = None) -> IndexResult:
    """What ``palimpsest index`` prints of a build: its snapshot.built and recency.scanned events;
    for a skipped build, the figures of the snapshot ``there`` (:func:`skipped_snapshot`)."""
    from palimpsest.core.events import RecencyScanned, SnapshotBuilt

    built = found[SnapshotBuilt]
    recency = found.get(RecencyScanned)
    figures: Snapshot | SnapshotBuilt = built
    commit: str | None = built.commit_sha
    if there is not None and built.state == "skipped" and there.snapshot_id == built.snapshot_id:
        figures, commit = there, there.commit_sha  # already indexed: the snapshot there, nothing parsed now
    skipped = figures.skipped
    recency_note: RecencyNote = (
        {"status": recency.status, "reason": recency.reason, "files": recency.files}
        if recency
        else {"status": "unknown", "reason": "no recency.scanned event (is the recency-scanner running?)"}
    )
    return {
        "repository_id": str(repo_id),
        "snapshot_id": str(built.snapshot_id) if built.snapshot_id else None,
        "commit": commit,
        "state": built.state,
        "reason": built.reason,
        "already_indexed": figures is there,
        "files": figures.files,
        "chunks": figures.chunks,
        "symbols": figures.symbols,
        "bytes": figures.bytes,
        "parsed_blobs": built.parsed_blobs,
        "skipped": skipped,
        "duration_s": built.duration_s,
        "recency": recency_note,
    }


def _index_text(out: IndexResult) -> str:
    if out["already_indexed"]:
        state = f"already indexed at {str(out['commit'])[:12]}: nothing to build"
    else:
        state = f"{out['state']}{': ' + out['reason'] if out['reason'] else ''}"
    lines = [
        f"snapshot   {out['snapshot_id']}  ({state})",
        f"commit     {out['commit']}",
        f"files      {out['files']}   chunks {out['chunks']}   symbols {out['symbols']}   bytes {out['bytes']}",
        f"parsed     {out['parsed_blobs']} new blobs in {out['duration_s']}s",
        f"recency    {out['recency']['status']}"
        + (f" ({out['recency']['reason']})" if out["recency"].get("reason") else ""),
    ]
    if out["skipped"]:
        lines.append("skipped    " + ", ".join(f"{k}={v}" for k, v in sorted(out["skipped"].items())))
    return "\n".join(lines)
