"""CLI: ``palimpsest review PATH --base REF --head REF``.

The local flow takes the webhook flow's path: the repository is registered (and indexed when it
has no ready snapshot yet), a ``review.requested`` event goes through the outbox and the bus to
the reviewer service, and the command waits for ``review.completed`` and prints the stored review.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any
from uuid import UUID

import click
from nats.aio.client import Client as NATS

from palimpsest.cli.output import emit, fail, progress
from palimpsest.cli.runtime import run_async, settings
from palimpsest.core.db import Pool

__all__ = ["review_cmd", "review_local"]


@click.command("review")
@click.argument("path", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--base", required=True, help="The base revision (branch, tag or sha).")
@click.option("--head", default="HEAD", show_default=True, help="The head revision.")
@click.option("--tenant", default=None, help="Tenant id (default: the local tenant).")
@click.option("--timeout", "timeout_s", default=1800.0, show_default=True)
@click.option("--json", "as_json", is_flag=True)
@run_async
async def review_cmd(
    path: Path, base: str, head: str, tenant: str | None, timeout_s: float, as_json: bool
) -> None:
    """Review the changes from BASE to HEAD of a local repository through the reviewer service."""
    from palimpsest.cli.local import local_tenant
    from palimpsest.cli.session import session

    s = settings()
    async with session(s) as sess:
        pool = sess.infra.pool
        tid = UUID(tenant) if tenant else await local_tenant(pool, s.home)
        out = await review_local(pool, sess.infra.nc, tid, path, base, head, timeout_s=timeout_s)
    emit(out, as_json=as_json, text=review_text(out))
    if out.get("state") == "failed":
        raise SystemExit(1)


def _rev_parse(path: Path, rev: str) -> str:
    proc = subprocess.run(
        ["git", "-C", str(path), "rev-parse", "--verify", "--end-of-options", f"{rev}^{{commit}}"],
        capture_output=True,
        text=True,
        check=False,
        timeout=30,
    )
    if proc.returncode != 0:
        fail(f"{rev!r} names no commit of {path}")
    return proc.stdout.strip()


async def review_local(
    pool: Pool,
    nc: NATS,
    tenant: UUID,
    path: Path,
    base: str,
    head: str,
    *,
    timeout_s: float = 1800.0,
    say: Callable[[str], None] = progress,
) -> dict[str, Any]:
    """Register (and if needed index) ``path``, request the review through the bus, return it."""
    from palimpsest.cli.local import register_path
    from palimpsest.cli.pipeline import index_and_wait, request, wait_for, watching
    from palimpsest.core.db import tenant_tx
    from palimpsest.core.events import ReviewCompleted, ReviewRequested, SnapshotBuilt
    from palimpsest.index.snapshots import for_commit, newest_ready
    from palimpsest.index.stored import load_review

    base_sha, head_sha = _rev_parse(path, base), _rev_parse(path, head)
    repo_id = await register_path(pool, tenant, path)
    async with tenant_tx(pool, tenant) as conn:
        branch = await newest_ready(conn, repo_id)
        on_base = await for_commit(conn, repo_id, base_sha)
    if branch is None:
        say(f"indexing {path} first (repository {repo_id})…")
        await index_and_wait(pool, nc, tenant, repo_id, timeout_s=timeout_s)
    if on_base is None and (branch is None or branch.commit_sha != base_sha):
        say(f"indexing the base {base_sha[:12]} (kept beside the branch's index for reviews of it)…")
        built = await index_and_wait(
            pool, nc, tenant, repo_id, timeout_s=timeout_s, reason="review", commit_sha=base_sha
        )
        if built[SnapshotBuilt].state == "failed":
            say(
                f"note: the base could not be indexed ({built[SnapshotBuilt].reason});"
                " the context comes from the newest indexed commit"
            )
    event = ReviewRequested(
        tenant_id=tenant,
        repository_id=repo_id,
        provider="local",
        base_sha=base_sha,
        head_sha=head_sha,
        base_ref=base,
        head_ref=head,
    )
    say(f"reviewing {base_sha[:12]}..{head_sha[:12]}…")
    async with watching(nc, event.request_id, (ReviewCompleted,)) as waiter:
        await request(pool, event)
        found = await wait_for(waiter, (ReviewCompleted,), timeout_s=timeout_s)
    done = found[ReviewCompleted]
    async with tenant_tx(pool, tenant) as conn:
        stored = await load_review(conn, done.review_id)
    if stored is None:  # a failure before the head was known is not stored
        return {
            "state": done.state,
            "reason": done.reason,
            "snapshot_id": None,
            "context": [],
            "dropped": [],
            "cochange_missing": [],
            "findings": [],
            "summary": "",
        }
    return stored.to_json()


def snapshot_note(out: dict[str, Any]) -> str:
    """Which snapshot the context came from, and why, in plain words."""
    sources = out.get("sources") or {}
    commit = str(sources.get("snapshot_commit") or "")[:12]
    if sources.get("snapshot_on_base"):
        return f"Context from the index of the base commit {commit}."
    stale = sum(1 for d in out.get("dropped") or [] if d.get("reason") == "stale")
    return (
        f"Context from the index of {commit}, not of the base {str(out.get('base_sha') or '')[:12]}:"
        " the base has no snapshot (the index follows the default branch's head). Candidates whose"
        f" text differs at the head were dropped as stale ({stale})."
    )


def dropped_text(dropped: list[dict[str, Any]]) -> str:
    """What was left out, by reason: the files named (once each), except for the budget, counted."""
    by_reason: dict[str, list[str]] = {}
    for d in dropped:
        by_reason.setdefault(d["reason"], []).append(str(d.get("path") or d.get("repository")))
    parts = []
    for reason, paths in by_reason.items():
        unique = list(dict.fromkeys(paths))
        if reason == "budget":
            parts.append(
                f"{len(paths)} chunks of {len(unique)} files over the budget (--json lists them, ranked)"
            )
        else:
            parts.append(f"{reason}: " + ", ".join(unique))
    return "; ".join(parts)


def review_text(out: dict[str, Any]) -> str:
    if out.get("state") == "failed":
        return f"review failed: {out.get('reason')}"
    lines = [out.get("summary") or "", "", snapshot_note(out), "Context (prompt order):"]
    for c in out.get("context", []):
        note = f"  {c['annotation']}" if c.get("annotation") else ""
        label = f"{c['source']} {c['repository']}" if c.get("repository") else c["source"]
        why = f"  — {c['reason']}" if c.get("reason") else ""
        lines.append(f"  [{label}] {c['path']}:{c['start_line']}-{c['end_line']}{note}{why}")
    if out.get("dropped"):
        lines.append("Dropped: " + dropped_text(out["dropped"]))
    for f in out.get("findings", []):
        lines.append(f"{f['severity']:>8}  {f['path']}:{f['start_line']}-{f['end_line']}  {f['message']}")
    return "\n".join(lines)
