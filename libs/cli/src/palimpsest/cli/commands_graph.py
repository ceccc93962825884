"""CLI: ``palimpsest context`` and ``palimpsest index-report`` (alias ``report``).

``index report`` is not offered as a sub-command: ``index`` is a command taking a positional
TARGET (``palimpsest index PATH``), and click cannot make it a group as well without either
swallowing ``report`` as a TARGET or changing how ``index PATH`` parses; so the negative control
is ``palimpsest index-report --repo R`` with the shorter alias ``palimpsest report --repo R``.
"""

from __future__ import annotations

from typing import Any

import click

from palimpsest.cli.options import local_tenant_id, repo_option, tenant_option
from palimpsest.cli.output import emit
from palimpsest.cli.runtime import run_async, settings

__all__ = ["context_cmd", "index_report", "index_report_cmd", "parse_hops", "report_cmd"]


def parse_hops(value: str) -> int | None:
    """``--hops``: a positive number of file-to-file steps, or ``all`` for the unconfined walk."""
    if value.strip().lower() in {"all", "none", "unbounded"}:
        return None
    try:
        hops = int(value)
    except ValueError:
        raise click.BadParameter("expected a positive integer or 'all'") from None
    if hops < 1:
        raise click.BadParameter("expected a positive integer or 'all'")
    return hops


@click.command("context")
@repo_option()
@click.option("--seed", "seeds", multiple=True, required=True, help="A path, directory or symbol name.")
@click.option("--budget", default=2000, show_default=True, type=click.IntRange(min=1), help="Token budget.")
@click.option("--hops", default="1", show_default=True, help="File-to-file hops, or 'all'.")
@click.option("--no-history", is_flag=True, help="Rank by the graph alone (no co-change or recency).")
@tenant_option
@click.option("--json", "as_json", is_flag=True)
@run_async
async def context_cmd(
    repo: str,
    seeds: tuple[str, ...],
    budget: int,
    hops: str,
    no_history: bool,
    tenant: str | None,
    as_json: bool,
) -> None:
    """Ranked paths around the seeds, each with the edge or signal that put it there."""
    from palimpsest.cli.local import find_repository
    from palimpsest.cli.session import session
    from palimpsest.core.db import tenant_tx
    from palimpsest.index.graph.query import graph_context

    depth = parse_hops(hops)
    s = settings()
    async with session(s, services=False) as sess:
        tid = await local_tenant_id(sess.infra.pool, s.home, tenant)
        repo_id = await find_repository(sess.infra.pool, tid, repo)
        async with tenant_tx(sess.infra.pool, tid) as conn:
            result = await graph_context(
                conn, repo_id, list(seeds), budget=budget, hops=depth, history=not no_history
            )
    emit(result.as_dict(), as_json=as_json, text=result.text())


def _report_command(name: str, help_text: str) -> click.Command:
    @click.command(name, help=help_text)
    @repo_option()
    @tenant_option
    @click.option("--json", "as_json", is_flag=True)
    @run_async
    async def report_cmd(repo: str, tenant: str | None, as_json: bool) -> None:
        out, text = await index_report(settings(), repo, tenant)
        emit(out, as_json=as_json, text=text)

    return report_cmd


index_report_cmd = _report_command(
    "index-report", "The negative control: what the graph of the newest snapshot cannot see."
)
report_cmd = _report_command("report", "Same as index-report.")


async def index_report(settings: Any, repo: str, tenant: str | None) -> tuple[dict[str, Any], str]:
    from palimpsest.cli.local import find_repository
    from palimpsest.cli.session import session
    from palimpsest.core.db import tenant_tx
    from palimpsest.index.graph.query import graph_report

    async with session(settings, services=False) as sess:
        tid = await local_tenant_id(sess.infra.pool, settings.home, tenant)
        repo_id = await find_repository(sess.infra.pool, tid, repo)
        async with tenant_tx(sess.infra.pool, tid) as conn:
            snapshot, found = await graph_report(conn, repo_id)
    out = {
        "repository_id": str(repo_id),
        "snapshot_id": str(snapshot.snapshot_id),
        "commit": snapshot.commit_sha,
        **found.as_dict(),
    }
    return out, f"snapshot   {snapshot.commit_sha[:12]}\n{found.text()}"
