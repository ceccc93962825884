"""``make demo``: Palimpsest's main job on the embedded stack, on this repository (or ``--repo``).

It starts the embedded PostgreSQL and NATS and all six services in this process, indexes the
repository through the bus, analyses it through the bus and prints the analysis Markdown — the
same path ``palimpsest analyze`` takes. With no model configured (the default) the analysis is
the mechanical report, which says which sections need a model.
"""

from __future__ import annotations

import time
from pathlib import Path

import click

from palimpsest.cli.commands_analyze import render_text, run_analysis
from palimpsest.cli.output import progress
from palimpsest.cli.session import session
from palimpsest.core.settings import BaseServiceSettings


async def run_demo(settings: BaseServiceSettings, repo: Path | None) -> None:
    target = (repo or Path.cwd()).resolve()
    t0 = time.perf_counter()
    progress(f"palimpsest demo: {target}")
    progress("starting the stack (embedded PostgreSQL + NATS JetStream unless configured) and six services…")
    async with session(settings) as sess:
        progress(f"stack ready in {time.perf_counter() - t0:.1f}s")
        view = await run_analysis(sess, settings, str(target))
    click.echo(render_text(view))
    progress(
        f"analysis {view['analysis_id']} ({view['state']}, {view['mode']}) in {time.perf_counter() - t0:.1f}s;"
        f" {len(view['selection'])} chunks selected, {len(view['doc_findings'])} documentation finding(s)"
    )
