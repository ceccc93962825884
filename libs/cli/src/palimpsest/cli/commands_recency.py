"""CLI: ``palimpsest recency``: which files, and which docs, are old."""

from __future__ import annotations

from typing import Any

import click

from palimpsest.cli.options import local_tenant_id, repo_option, tenant_option
from palimpsest.cli.output import emit
from palimpsest.cli.runtime import run_async, settings

__all__ = ["recency_cmd", "recency_text"]


@click.command("recency")
@repo_option()
@tenant_option
@click.option("--json", "as_json", is_flag=True)
@run_async
async def recency_cmd(repo: str, tenant: str | None, as_json: bool) -> None:
    """Every indexed file with its last change and kind, oldest first; stale docs marked.

    A doc (.md .mdx .txt .rst) is stale when it is more than six months older than the
    median date of the code files; an unknown date is never stale. Read-only.
    """
    from palimpsest.cli.local import find_repository
    from palimpsest.cli.session import session
    from palimpsest.core.db import tenant_tx
    from palimpsest.index.recency import list_recency

    s = settings()
    async with session(s, services=False) as sess:
        tid = await local_tenant_id(sess.infra.pool, s.home, tenant)
        repo_id = await find_repository(sess.infra.pool, tid, repo)
        async with tenant_tx(sess.infra.pool, tid) as conn:
            listing = await list_recency(conn, repo_id)
    out = listing.as_dict()
    emit(out, as_json=as_json, text=recency_text(out))


def recency_text(listing: dict[str, Any]) -> str:
    """Aligned text: date, kind, staleness, path; then where the list came from."""
    lines = []
    for f in listing["files"]:
        date = (f["last_modified_at"] or "unknown")[:10]
        mark = "STALE" if f["stale"] else ""
        age = f"  ({f['age']})" if f["age"] else ""
        lines.append(f"{date:<10}  {f['kind']:<4}  {mark:<5}  {f['path']}{age}")
    stale = sum(1 for f in listing["files"] if f["stale"])
    scan = listing.get("scan") or {}
    status = scan.get("status", "never scanned")
    reason = f" ({scan['reason']})" if scan.get("reason") else ""
    lines.append(
        f"{len(listing['files'])} files from the {listing['source']}, {stale} stale docs;"
        f" median code date {(listing['median_code_date'] or 'unknown')[:10]}; last scan: {status}{reason}"
    )
    return "\n".join(lines)
