"""``make demo``: run the pipeline that exists on one repository, on the embedded stack."""

from __future__ import annotations

import time
from pathlib import Path

import click

from palimpsest.cli.output import progress
from palimpsest.cli.session import session
from palimpsest.cli.status import collect
from palimpsest.core.settings import BaseServiceSettings


async def run_demo(settings: BaseServiceSettings, repo: Path | None) -> None:
    target = (repo or Path.cwd()).resolve()
    t0 = time.perf_counter()
    progress(f"palimpsest demo: {target}")
    progress("starting the embedded stack (PostgreSQL 18 + pgvector, NATS JetStream) and six services…")
    async with session(settings) as sess:
        progress(f"stack ready in {time.perf_counter() - t0:.1f}s: {sess.stack.timings_s}")
        report = await collect(
            settings.model_copy(update={"database_url": None, "nats_url": sess.stack.nats_url})
        )
        for name, comp in report["components"].items():
            click.echo(f"  {name:<18} {'ok' if comp.get('ok') else 'unavailable'}")
    click.echo("The indexing and analysis pipeline is still to come (issues 3-9).")
