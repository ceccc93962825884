"""CLI: ``palimpsest analyze PATH_OR_URL [--json]`` — Palimpsest's main job from the command line.

It takes the path a webhook takes: the repository is indexed through the bus when its head has no
ready snapshot yet (``index.requested`` → ``snapshot.built``), then the analysis is requested
through the bus (``analysis.requested`` with a request id) and the command waits for the matching
``analysis.completed``. It prints the analysis Markdown, or with ``--json`` at least
``analysis``, ``summary``, ``selection``, ``median_code`` and ``doc_findings``.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlsplit
from uuid import UUID

import click

from palimpsest.cli.options import check_path_target, local_tenant_id, repo_option, tenant_option
from palimpsest.cli.output import emit, fail, progress
from palimpsest.cli.runtime import run_async, settings
from palimpsest.core.errors import PalimpsestError
from palimpsest.core.git_errors import GitError
from palimpsest.core.ids import uuid7

if TYPE_CHECKING:  # the stack, the database driver and git load when a command runs, not for --help
    from palimpsest.cli.session import Session
    from palimpsest.core.db import Pool
    from palimpsest.core.events import AnalysisCompleted
    from palimpsest.core.settings import BaseServiceSettings
    from palimpsest.core.sources import CloneTarget, SourcePolicy

__all__ = [
    "AnalyzeFailed",
    "analysis_group",
    "analyze_cmd",
    "explain_claim",
    "render_explain",
    "render_text",
    "run_analysis",
]

DEFAULT_TIMEOUT_S = 3600.0


class AnalyzeFailed(PalimpsestError):
    """The repository could not be indexed, so there is nothing to analyse."""


@click.command("analyze")
@click.argument("target", metavar="PATH_OR_URL")
@tenant_option
@click.option("--reindex", is_flag=True, help="Index again even if the head already has a snapshot.")
@click.option("--timeout", "timeout_s", default=DEFAULT_TIMEOUT_S, show_default=True, help="Seconds.")
@click.option("--json", "as_json", is_flag=True)
@click.option(
    "--explain",
    "explain",
    default=None,
    metavar="CLAIM",
    help="Also show the path one doc claim took through the check (a name as the doc writes it, or"
    " DOC:LINE): each rule that decided it, by stage. Local repositories only.",
)
@run_async
async def analyze_cmd(
    target: str, tenant: str | None, reindex: bool, timeout_s: float, as_json: bool, explain: str | None
) -> None:
    """Analyse a repository (a local path or a clone URL): index it if needed, then analyse it."""
    check_path_target(target, on_a_branch=True)  # before anything loads or starts
    from palimpsest.cli.session import session

    s = settings()
    if explain is not None and _local_path(target) is None:
        raise click.UsageError("--explain needs a local repository (its history is read in place)")
    async with session(s) as sess:
        tid = await local_tenant_id(sess.infra.pool, s.home, tenant)
        view = await run_analysis(sess, s, target, tenant=tid, reindex=reindex, timeout_s=timeout_s)
        if explain is not None:
            view["explain"] = await explain_claim(sess, s, target, explain, tenant=tid, timeout_s=timeout_s)
    text = render_text(view) + (render_explain(explain, view["explain"]) if explain is not None else "")
    emit(view, as_json=as_json, text=text)
    if view["state"] == "failed":
        raise SystemExit(1)


@click.group("analysis")
def analysis_group() -> None:
    """Stored analyses (``palimpsest analyze`` makes them)."""


@analysis_group.command("show")
@repo_option()
@tenant_option
@click.option("--json", "as_json", is_flag=True)
@run_async
async def analysis_show(repo: str, tenant: str | None, as_json: bool) -> None:
    """Show the newest analysis of a repository: from the cluster's API when PALIMPSEST_INGEST_URL
    is set, else from the local stack."""
    from palimpsest.cli.api import connect
    from palimpsest.cli.target import remote_url

    if remote_url() is not None:
        async with connect() as api:
            tid = await api.tenant(tenant)
            repository_id = await api.repository(tid, repo)
            page = await api.call("GET", f"/v1/tenants/{tid}/repositories/{repository_id}/analyses", limit=1)
            if not page["items"]:
                fail(f"repository {repo} has no analysis yet (palimpsest analyze makes one)")
            view = await api.call("GET", f"/v1/tenants/{tid}/analyses/{page['items'][0]['analysis_id']}")
    else:
        view = await _local_analysis(repo, tenant)
    emit(view, as_json=as_json, text=render_text(view))


async def _local_analysis(repo: str, tenant: str | None) -> dict[str, Any]:
    from palimpsest.cli.local import find_repository
    from palimpsest.cli.session import session
    from palimpsest.core.db import tenant_tx
    from palimpsest.index.stored import analysis_view, list_analyses

    s = settings()
    async with session(s, services=False) as sess:
        pool = sess.infra.pool
        tid = await local_tenant_id(pool, s.home, tenant)
        repository_id = await find_repository(pool, tid, repo)
        async with tenant_tx(pool, tid) as conn:
            newest = await list_analyses(conn, repository_id, limit=1)
            view = await analysis_view(conn, newest[0].analysis_id) if newest else None
    if view is None:
        fail(f"repository {repo} has no analysis yet (palimpsest analyze makes one)")
    return view.to_json()


async def explain_claim(
    sess: Session,
    settings: BaseServiceSettings,
    target: str,
    claim: str,
    *,
    tenant: UUID | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
) -> list[dict[str, Any]]:
    """The steps one claim's mentions take through the check of the local repository's newest
    snapshot: the same claims, proof and judgement as the analysis, followed for one claim."""
    from palimpsest.analyzer.doccheck import gather_claims
    from palimpsest.analyzer.proof import prove_in
    from palimpsest.analyzer.snapshot import load_snapshot
    from palimpsest.cli.local import local_tenant
    from palimpsest.core.db import tenant_tx
    from palimpsest.index.snapshots import readable

    pool = sess.infra.pool
    tid = tenant or await local_tenant(pool, settings.home)
    repo_id, local = await _repository(pool, tid, target, settings.source_policy())
    async with tenant_tx(pool, tid) as conn:
        snapshot = await readable(conn, repo_id, None)
        if snapshot is None or local is None:
            return []
        index = await load_snapshot(conn, repo_id, snapshot)
        claims = await gather_claims(conn, index, explain=claim)
    await prove_in(local, claims, index.commit_sha, timeout_s=timeout_s)
    return claims.steps


def render_explain(claim: str, steps: list[dict[str, Any]]) -> str:
    """The explained claim's path, one line per step."""
    lines = [f"\n## How the check read `{claim}`\n"]
    if not steps:
        lines.append(
            "No doc mention by that name reached the check: the chunker recorded none (not in inline code,"
            " a fence, a role, a link or a prose path; or on a line or in a section that tells history;"
            " or in a changelog)."
        )
    for step in steps:
        lines.append(
            f"- `{step['doc']}:{step['line']}` `{step['name']}` ({step['form']}) — {step['stage']}:"
            f" **{step['rule']}** ({step['verdict']}): {step['why']}"
        )
    return "\n".join(lines) + "\n"


def render_text(view: dict[str, Any]) -> str:
    """The analysis Markdown, then the summary (and the failure reason, if any)."""
    parts = [(view.get("analysis") or "").rstrip()]
    if view.get("summary"):
        parts.append(f"## Summary\n\n{view['summary'].strip()}")
    if view["state"] == "failed":
        parts.append(f"_Analysis stored as failed: {view['reason']}_")
    return "\n\n".join(parts) + "\n"


async def run_analysis(
    sess: Session,
    settings: BaseServiceSettings,
    target: str,
    *,
    tenant: UUID | None = None,
    reindex: bool = False,
    timeout_s: float = DEFAULT_TIMEOUT_S,
) -> dict[str, Any]:
    """Index ``target`` if needed, analyse it through the bus, and return the stored analysis."""
    from palimpsest.analyzer.store import load_analysis
    from palimpsest.cli.local import local_tenant
    from palimpsest.core.db import tenant_tx

    pool = sess.infra.pool
    tid = tenant or await local_tenant(pool, settings.home)
    repo_id, local = await _repository(pool, tid, target, settings.source_policy())
    snapshot_id = await _ensure_snapshot(sess, tid, repo_id, local, reindex=reindex, timeout_s=timeout_s)
    completed = await _request_analysis(sess, tid, repo_id, snapshot_id, timeout_s=timeout_s)
    async with tenant_tx(pool, tid) as conn:
        return (await load_analysis(conn, completed.analysis_id)).to_json()


# ----------------------------------------------------------------------------- the repository


async def _repository(
    pool: Pool, tenant: UUID, target: str, policy: SourcePolicy
) -> tuple[UUID, Path | None]:
    """The repository's id, and its local path when it is one."""
    from palimpsest.cli.local import RepositoryNotFound, branch_to_index, find_repository, register_path

    path = _local_path(target)
    if path is not None and path.exists():
        branch_to_index(path, shown=target)  # an analysis indexes the path's branch first
        return await register_path(pool, tenant, path), path.resolve()
    try:
        return await find_repository(pool, tenant, target), None
    except RepositoryNotFound:
        if not _is_url(target):
            raise
    return await _register_url(pool, tenant, target, policy), None


def _is_url(target: str) -> bool:
    return "://" in target or target.startswith("git@")


def _local_path(target: str) -> Path | None:
    if target.startswith("file://"):
        return Path(unquote(urlsplit(target).path))
    return None if _is_url(target) else Path(target).expanduser()


async def _register_url(pool: Pool, tenant: UUID, url: str, policy: SourcePolicy) -> UUID:
    """Register a remote repository by its clone URL (public, or reachable with installation auth).

    The URL must pass the deployment's source policy before git touches it, like every clone.
    """
    from palimpsest.core.db import tenant_tx
    from palimpsest.core.git import check_remote
    from palimpsest.ingest.store.repositories import NewRepository, insert_repository

    try:
        target = await check_remote(url, policy)
    except GitError as exc:
        raise AnalyzeFailed(str(exc)) from exc
    parts = urlsplit(target.url)
    host = (parts.hostname or "").lower()
    provider = next((p for p in ("github", "gitlab", "bitbucket") if p in host), "local")
    full_name = parts.path.strip("/").removesuffix(".git") or host
    branch = await _remote_default_branch(target)
    new = NewRepository(
        repository_id=uuid7(),
        provider=provider,
        external_id=None,
        full_name=full_name,
        clone_url=target.url,
        default_branch=branch,
        visibility="private",
        index_mode="lexical",
        installation_id=None,
    )
    async with tenant_tx(pool, tenant) as conn:  # through the ingest service's store: it owns the table
        repository_id = (await insert_repository(conn, tenant, new)).repository_id
    progress(f"registered {full_name} ({provider}, branch {branch})")
    return repository_id


async def _remote_default_branch(target: CloneTarget) -> str:
    """The remote's HEAD branch (``git ls-remote --symref``), ``main`` when it cannot be read."""
    from palimpsest.core.git import run_git

    try:
        out = await run_git(
            ["ls-remote", "--symref", "--", target.url, "HEAD"],
            timeout_s=30,
            allowed_protocols=target.protocols,
            pins=target.pins,
        )
    except GitError:
        return "main"
    for line in out.decode("utf-8", "replace").splitlines():
        if line.startswith("ref: refs/heads/") and line.endswith("\tHEAD"):
            return line.removeprefix("ref: refs/heads/").split("\t", 1)[0]
    return "main"


def _local_head(path: Path) -> str | None:
    out = subprocess.run(
        ["git", "-C", str(path), "rev-parse", "--verify", "--quiet", "HEAD"],
        capture_output=True,
        text=True,
        check=False,
        timeout=30,
    )
    return out.stdout.strip() or None


# ----------------------------------------------------------------------------- through the bus


async def _ensure_snapshot(
    sess: Session, tenant: UUID, repo_id: UUID, local: Path | None, *, reindex: bool, timeout_s: float
) -> UUID:
    """A ready snapshot of the head: the existing one, or a new build through the bus."""
    from palimpsest.cli.commands_index import index_result, skipped_snapshot
    from palimpsest.cli.pipeline import index_and_wait
    from palimpsest.core.db import tenant_tx
    from palimpsest.index.snapshots import newest_ready

    pool = sess.infra.pool
    async with tenant_tx(pool, tenant) as conn:
        snap = await newest_ready(conn, repo_id)
    head = _local_head(local) if local is not None else None
    if snap is not None and not reindex and head is not None and snap.commit_sha == head:
        progress(f"using snapshot {snap.snapshot_id} of {head[:12]}")
        return snap.snapshot_id
    progress("indexing through the bus (index.requested → snapshot.built)…")
    found = await index_and_wait(
        pool, sess.infra.nc, tenant, repo_id, reason="rebuild" if reindex else "cli", timeout_s=timeout_s
    )
    built = index_result(repo_id, found, await skipped_snapshot(pool, tenant, found))
    if built["state"] == "failed" or built["snapshot_id"] is None:
        raise AnalyzeFailed(f"indexing failed: {built['reason'] or built['state']}")
    progress(
        f"snapshot {built['snapshot_id']} {built['state']}"
        + (f" ({built['reason']})" if built["reason"] else "")
        + f": {built['files']} files, {built['chunks']} chunks; recency {built['recency']['status']}"
    )
    return UUID(str(built["snapshot_id"]))


async def _request_analysis(
    sess: Session, tenant: UUID, repo_id: UUID, snapshot_id: UUID, *, timeout_s: float
) -> AnalysisCompleted:
    from palimpsest.cli.pipeline import request, wait_for, watching
    from palimpsest.core.events import AnalysisCompleted, AnalysisRequested

    event = AnalysisRequested(tenant_id=tenant, repository_id=repo_id, snapshot_id=snapshot_id)
    progress("analysing through the bus (analysis.requested → analysis.completed)…")
    async with watching(sess.infra.nc, event.request_id, (AnalysisCompleted,)) as waiter:
        await request(sess.infra.pool, event)
        found = await wait_for(waiter, (AnalysisCompleted,), timeout_s=timeout_s)
    return found[AnalysisCompleted]
