"""CLI: ``palimpsest recency`` (which files, and which docs, are old) and ``bench recency``."""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any
from uuid import UUID

import click

from palimpsest.cli.output import emit, fail, progress
from palimpsest.core.settings import BaseServiceSettings

__all__ = ["recency_text", "register", "run_bench_recency"]


def register(cli: click.Group) -> None:
    from palimpsest.cli.main import run_async, settings

    @cli.command("recency")
    @click.option("--repo", "repo", required=True, help="Repository id, full name, clone URL or local path.")
    @click.option("--tenant", default=None, help="Tenant id (default: the local tenant).")
    @click.option("--json", "as_json", is_flag=True)
    @run_async
    async def recency_cmd(repo: str, tenant: str | None, as_json: bool) -> None:
        """Every indexed file with its last change and kind, oldest first; stale docs marked.

        A doc (.md .mdx .txt .rst) is stale when it is more than six months older than the
        median date of the code files; an unknown date is never stale. Read-only.
        """
        from palimpsest.cli.local import find_repository, local_tenant
        from palimpsest.cli.session import session
        from palimpsest.core.db import tenant_tx
        from palimpsest.index.recency import list_recency

        s = settings()
        async with session(s, services=False) as sess:
            tid = UUID(tenant) if tenant else await local_tenant(sess.infra.pool, s.home)
            repo_id = await find_repository(sess.infra.pool, tid, repo)
            async with tenant_tx(sess.infra.pool, tid) as conn:
                listing = await list_recency(conn, repo_id)
        out = listing.as_dict()
        emit(out, as_json=as_json, text=recency_text(out))

    bench = cli.commands["bench"]
    assert isinstance(bench, click.Group)

    @bench.command("recency")
    @click.option("--commits", default=100_000, show_default=True, help="Commits of the generated history.")
    @click.option("--files", default=20_000, show_default=True, help="Files in the generated tree.")
    @click.option("--seed", default=0, show_default=True)
    @click.option(
        "--repo",
        "repo",
        type=click.Path(exists=True, file_okay=False, path_type=Path),
        default=None,
        help="Scan this existing repository (served over HTTP) instead of a generated one.",
    )
    @click.option("--json", "as_json", is_flag=True)
    @run_async
    async def bench_recency(commits: int, files: int, seed: int, repo: Path | None, as_json: bool) -> None:
        """Time a full recency scan (clone + log + parse + write) through the real handler."""
        if repo is None and (commits < 1 or files < 1):
            fail("--commits and --files must be positive")
        result = await run_bench_recency(settings(), commits=commits, files=files, seed=seed, repo=repo)
        emit(result, as_json=True)


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


async def run_bench_recency(
    settings: BaseServiceSettings, *, commits: int, files: int, seed: int, repo: Path | None
) -> dict[str, Any]:
    """Serve a generated (or given) history over HTTP and scan it on a scratch stack."""
    from pydantic import SecretStr

    from palimpsest.cli.stack import open_stack, scratch_settings
    from palimpsest.cli.tenants import create_tenant
    from palimpsest.core.db import tenant_tx
    from palimpsest.core.ids import uuid7
    from palimpsest.core.service import close_infra, open_infra
    from palimpsest.recency_scanner.bench import BenchServer, peak_rss_mb, time_scan
    from palimpsest.recency_scanner.service import Settings

    with tempfile.TemporaryDirectory(prefix="palimpsest-bench-recency-") as tmp:
        root = Path(tmp)
        source = (
            ["--repo", str(repo)] if repo is not None else ["--generate", str(commits), str(files), str(seed)]
        )
        progress("generating the history with git fast-import…" if repo is None else f"serving {repo}…")
        s = scratch_settings(settings, root / "home", local_sources=False)
        with BenchServer(["--root", str(root), *source]) as server:
            info = server.info
            progress(f"history ready ({info.get('generate_s', 0)}s); starting a scratch stack…")
            async with open_stack(s, durable=False) as stack:
                app = s.model_copy(
                    update={"database_url": SecretStr(stack.app_url), "nats_url": stack.nats_url}
                )
                infra = await open_infra(app, "bench-recency")
                try:
                    tenant = await create_tenant(infra.pool, "bench-recency")
                    repository_id = uuid7()
                    async with tenant_tx(infra.pool, tenant) as conn:
                        await conn.execute(
                            "INSERT INTO repositories (tenant_id, repository_id, provider, full_name, clone_url,"
                            " default_branch) VALUES (%s, %s, 'github', 'bench/recency', %s, %s)",
                            (tenant, repository_id, info["url"], info["branch"]),
                        )
                    options = Settings.model_construct(
                        **{
                            **Settings().model_dump(),
                            "recency_scan": True,
                            "recency_tmp_dir": root,
                            # the bench's own git server on loopback: an explicit allowance
                            "private_provider_hosts": ("127.0.0.1",),
                        }
                    ).scan_options()
                    progress("scanning: clone + log + parse + write…")
                    t0 = time.perf_counter()
                    figures = await time_scan(infra.pool, tenant, repository_id, options)
                    wall = time.perf_counter() - t0
                    rss = peak_rss_mb()  # before the server process ends: its memory is not ours
                finally:
                    await close_infra(infra)
                postgres = "embedded" if stack.embedded_db else "external"
    return {
        "benchmark": "recency",
        "source": str(repo) if repo is not None else "generated",
        "commits": info.get("commits", commits),  # in the branch; the scan walks first parents
        "files": info.get("head_files", figures["files_dated"]),
        "scan_s": figures["scan_s"],
        "peak_rss_mb": rss["total"],
        "rows": figures["rows"],
        "status": figures["status"],
        "reason": figures["reason"],
        "detail": figures["detail"],
        "commits_scanned": figures["commits_scanned"],
        "files_dated": figures["files_dated"],
        "cochange_pairs": figures["pairs"],
        "rss_self_mb": rss["self"],
        "rss_largest_child_mb": rss["children"],
        "wall_s": round(wall, 3),
        "generate_s": info.get("generate_s"),
        "postgres": postgres,
        "target_s": 20.0,
        "stats": figures["stats"],
    }
