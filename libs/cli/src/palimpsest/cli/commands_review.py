"""CLI: ``palimpsest review PATH --base REF --head REF``.

The local flow takes the webhook flow's path: the repository is registered (and indexed when it
has no ready snapshot yet), a ``review.requested`` event goes through the outbox and the bus to
the reviewer service, and the command waits for ``review.completed`` and prints the stored review.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any
from uuid import UUID

import click

from palimpsest.cli.options import as_uuid, check_path_target, local_tenant_id, tenant_option
from palimpsest.cli.output import emit, fail, progress
from palimpsest.cli.runtime import run_async, settings

if TYPE_CHECKING:  # the bus client and the database driver load when a command runs
    from nats.aio.client import Client as NATS

    from palimpsest.core.db import Pool

__all__ = ["review_cmd", "review_local"]


class _ReviewGroup(click.Group):
    """``palimpsest review PATH --base REF`` reviews (the ``run`` command); ``review show ID`` reads."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and args[0] not in ctx.help_option_names:
            args = ["run", *args]
        return super().parse_args(ctx, args)


@click.group("review", cls=_ReviewGroup)
def review_cmd() -> None:
    """Review a local repository's changes (``review [run] PATH --base REF``), or show a stored
    review (``review show ID``)."""


@review_cmd.command("run")
@click.argument("path", type=click.Path(path_type=Path))
@click.option("--base", required=True, help="The base revision (branch, tag or sha).")
@click.option("--head", default="HEAD", show_default=True, help="The head revision.")
@tenant_option
@click.option("--timeout", "timeout_s", default=1800.0, show_default=True)
@click.option("--json", "as_json", is_flag=True)
@run_async
async def review_run(
    path: Path, base: str, head: str, tenant: str | None, timeout_s: float, as_json: bool
) -> None:
    """Review the changes from BASE to HEAD of a local repository through the reviewer service."""
    check_path_target(str(path.expanduser().absolute()))
    for rev in (base, head):  # both name commits: checked before any stack starts
        _rev_parse(path, rev)
    from palimpsest.cli.session import session

    s = settings()
    async with session(s) as sess:
        pool = sess.infra.pool
        tid = await local_tenant_id(pool, s.home, tenant)
        out = await review_local(pool, sess.infra.nc, tid, path, base, head, timeout_s=timeout_s)
    emit(out, as_json=as_json, text=review_text(out))
    if out.get("state") == "failed":
        raise SystemExit(1)


@review_cmd.command("show")
@click.argument("review_id")
@tenant_option
@click.option("--json", "as_json", is_flag=True)
@run_async
async def review_show(review_id: str, tenant: str | None, as_json: bool) -> None:
    """Show a stored review (by review id or request id): from the cluster's API when
    PALIMPSEST_INGEST_URL is set, else from the local stack."""
    from palimpsest.cli.api import connect
    from palimpsest.cli.target import remote_url

    if as_uuid(review_id) is None:
        fail(f"{review_id!r} is not a review id")
    if remote_url() is not None:
        async with connect() as api:
            tid = await api.tenant(tenant)
            out = await api.call("GET", f"/v1/tenants/{tid}/reviews/{review_id}")
    else:
        out = await _local_review(tenant, UUID(review_id))
    emit(out, as_json=as_json, text=review_text(out))


async def _local_review(tenant: str | None, review_id: UUID) -> dict[str, Any]:
    from palimpsest.cli.session import session
    from palimpsest.core.db import tenant_tx
    from palimpsest.index.stored import load_review, review_by_request

    s = settings()
    async with session(s, services=False) as sess:
        tid = await local_tenant_id(sess.infra.pool, s.home, tenant)
        async with tenant_tx(sess.infra.pool, tid) as conn:
            found = await load_review(conn, review_id) or await review_by_request(conn, review_id)
    if found is None:
        fail(f"no review {review_id} in tenant {tid}")
    return found.to_json()


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


def _about_lines(out: dict[str, Any]) -> list[str]:
    """What the review was of: the pull request, its title and author, the branches."""
    from palimpsest.index.stored import review_about

    about = review_about(out)
    if about.pull_request:
        lines = [f"Pull request: {out.get('provider')} #{out.get('number')}", f"Title: {about.title}"]
        lines.append(f"Author: {about.author}")
    else:
        lines = ["Pull request: none (a review of commits through the CLI or the API)"]
        if out.get("title"):
            lines.append(f"Title: {about.title}")
    refs = [f"{side} {out[f'{side}_ref']}" for side in ("base", "head") if out.get(f"{side}_ref")]
    if refs:
        lines.append("Branches: " + ", ".join(refs))
    return lines


def review_text(out: dict[str, Any]) -> str:
    """The review for people, the result first: its id, the findings, the co-change warning, the
    summary; then where the context came from, the context itself and what was dropped."""
    review_id = out.get("review_id")
    if out.get("state") == "failed":
        return (
            f"review {review_id} failed: {out.get('reason')}"
            if review_id
            else f"review failed: {out.get('reason')}"
        )
    head = str(out.get("head_sha") or "")[:12]
    base = str(out.get("base_sha") or "")[:12]
    lines = [f"Review {review_id or '(not stored)'} · {out.get('state')} · {base or '?'}..{head or '?'}"]
    if review_id:
        lines += _about_lines(out)
    findings = out.get("findings") or []
    lines.append(f"Findings ({len(findings)}):" if findings else "Findings: none.")
    for f in findings:
        lines.append(f"{f['severity']:>8}  {f['path']}:{f['start_line']}-{f['end_line']}  {f['message']}")
    missing = out.get("cochange_missing") or []
    if missing:
        lines.append("Usually changes with these, not in this change:")
        for p in missing:
            lines.append(f"  {p['path']}: {p.get('reason') or ''}" if isinstance(p, dict) else f"  {p}")
    lines += [
        "",
        "Summary:",
        out.get("summary") or "(none)",
        "",
        snapshot_note(out),
        "Context (prompt order):",
    ]
    for c in out.get("context", []):
        note = f"  {c['annotation']}" if c.get("annotation") else ""
        label = f"{c['source']} {c['repository']}" if c.get("repository") else c["source"]
        why = f"  — {c['reason']}" if c.get("reason") else ""
        lines.append(f"  [{label}] {c['path']}:{c['start_line']}-{c['end_line']}{note}{why}")
    if out.get("dropped"):
        lines.append("Dropped: " + dropped_text(out["dropped"]))
    if review_id:
        lines += ["", f"Show it again: palimpsest review show {review_id}"]
    return "\n".join(lines)
