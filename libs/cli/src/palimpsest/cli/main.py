"""The ``palimpsest`` command line: run the stack, operate it, drive the pipeline, benchmark it."""

from __future__ import annotations

import asyncio
import functools
import signal
import threading
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

import click

from palimpsest.cli.output import emit, fail, progress
from palimpsest.core.errors import PalimpsestError
from palimpsest.core.settings import BaseServiceSettings, load

P = ParamSpec("P")
R = TypeVar("R")


def run_async(fn: Callable[P, Coroutine[Any, Any, R]]) -> Callable[P, R | None]:
    """Run an async click command; Palimpsest errors become one line on stderr and exit code 2."""

    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R | None:
        # SIGTERM (a supervisor, `timeout`) unwinds like Ctrl-C, so embedded servers this command
        # started are stopped instead of being orphaned
        if threading.current_thread() is threading.main_thread():  # tests drive commands from threads
            signal.signal(signal.SIGTERM, _interrupt)
        try:
            return asyncio.run(fn(*args, **kwargs))
        except PalimpsestError as exc:
            fail(str(exc))
        except KeyboardInterrupt:
            fail("interrupted", 130)
        return None

    return wrapper


def _interrupt(signum: int, frame: object) -> None:
    # asyncio.run treats SIGINT by cancelling the main task, which unwinds every context manager
    signal.raise_signal(signal.SIGINT)


def settings() -> BaseServiceSettings:
    try:
        return load(BaseServiceSettings)
    except PalimpsestError as exc:
        fail(str(exc))
        raise  # unreachable


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def cli() -> None:
    """Palimpsest: a recency-aware, doc-skeptical code index and review-context platform."""


# ------------------------------------------------------------------------------------------- stack


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="Print the stack description as JSON once ready.")
@click.option(
    "--processes",
    is_flag=True,
    help="Run each service as its own OS process (as in a cluster), restarted when it dies.",
)
@run_async
async def up(as_json: bool, processes: bool) -> None:
    """Start the stack (embedded PostgreSQL + NATS unless URLs are set) and run every service."""
    from palimpsest.cli.runner import running_services
    from palimpsest.cli.stack import open_stack, read_running
    from palimpsest.core import telemetry
    from palimpsest.core.ops import OpsServer
    from palimpsest.core.service import install_signal_handlers

    s = settings()
    telemetry.setup("up", log_level=s.log_level, log_format=s.log_format)
    running = read_running(s.home)
    if running is not None:
        fail(f"a stack is already running (pid {running.pid}) under {s.home}")
    stop = asyncio.Event()
    install_signal_handlers(stop)
    progress("starting the stack…")
    if processes:
        await _up_processes(s, stop, as_json)
        progress("stopped")
        return
    async with open_stack(s) as stack:
        ops = OpsServer("127.0.0.1", s.ops_port if s.ops_port else 0)
        async with running_services(s, stack, ops=ops) as infra:
            stack.ops_url = f"http://127.0.0.1:{ops.bound_port}" if ops.bound_port else None
            stack.ingest_url = infra.extras.get("ingest_url")
            await _serve(stack, stop, as_json, "every service")
    progress("stopped")


async def _up_processes(s: Any, stop: asyncio.Event, as_json: bool) -> None:
    from palimpsest.cli.processes import supervised
    from palimpsest.cli.stack import open_stack

    async with open_stack(s) as stack, supervised(s, stack) as sup:
        stack.ingest_url = sup.ingest_url
        stack.processes = sup.describe()
        await _serve(stack, stop, as_json, "every service process")


async def _serve(stack: Any, stop: asyncio.Event, as_json: bool, what: str) -> None:
    """Record the running stack, describe it, and wait for Ctrl-C (or SIGTERM)."""
    from palimpsest.cli.stack import clear_state, write_state

    write_state(stack)
    try:
        emit(stack.public(), as_json=as_json, text=_describe_stack(stack))
        progress(f"running; Ctrl-C stops {what} and the embedded servers")
        await stop.wait()
    finally:
        clear_state(stack)


def _describe_stack(stack: Any) -> str:
    lines = [
        f"PostgreSQL  {'embedded' if stack.embedded_db else 'external'}  {stack.public()['app_url']}",
        f"NATS        {'embedded' if stack.embedded_nats else 'external'}  {stack.nats_url}",
        f"home        {stack.home}",
    ]
    if stack.ingest_url:
        lines.append(f"ingest      {stack.ingest_url}  (webhooks, /v1 API, /openapi.json)")
    if stack.ops_url:
        lines.append(f"ops         {stack.ops_url}/healthz  /readyz  /metrics")
    for name, proc in stack.processes.items():
        lines.append(f"process     {name:<16} pid {proc['pid']}  ops :{proc['ops_port']}  log {proc['log']}")
    if stack.timings_s:
        lines.append("start       " + "  ".join(f"{k}={v}" for k, v in stack.timings_s.items()))
    return "\n".join(lines)


@cli.command()
@click.option("--json", "as_json", is_flag=True)
@run_async
async def status(as_json: bool) -> None:
    """Report each component: database, bus, consumers, the running stack."""
    from palimpsest.cli.status import collect

    s = settings()
    report = await collect(s)
    emit(report, as_json=as_json, text=_status_text(report))
    if not report["ok"]:
        raise SystemExit(1)


def _status_text(report: dict[str, Any]) -> str:
    lines = []
    for name, comp in report["components"].items():
        mark = "ok " if comp.get("ok") else "ERR"
        detail = ", ".join(f"{k}={v}" for k, v in comp.items() if k != "ok")
        lines.append(f"[{mark}] {name:<16} {detail}")
    return "\n".join(lines)


@cli.group()
def db() -> None:
    """Database administration."""


@db.command("migrate")
@click.option("--json", "as_json", is_flag=True)
@run_async
async def db_migrate(as_json: bool) -> None:
    """Apply pending migrations (idempotent) — to the configured or embedded server."""
    from palimpsest.cli.stack import open_stack, read_running
    from palimpsest.core.migrate import migrate

    s = settings()
    running = read_running(s.home)
    configured = s.migration_database_url or s.database_url
    out: dict[str, object]
    if running is not None or configured is not None:
        url = running.owner_url if running is not None else configured.get_secret_value()  # type: ignore[union-attr]
        report = await migrate(url, app_role=s.app_role)
        out = {
            "applied": report.applied,
            "skipped": report.skipped,
            "already": report.already,
            "extensions": report.extensions,
        }
    else:
        async with open_stack(s) as stack:
            out = {"migrated": True, "extensions": stack.extensions, "timings_s": stack.timings_s}
    emit(out, as_json=as_json)


@cli.group()
def bus() -> None:
    """NATS JetStream administration."""


@bus.command("init")
@click.option("--json", "as_json", is_flag=True)
@run_async
async def bus_init_cmd(as_json: bool) -> None:
    """Declare the stream and every durable consumer (idempotent)."""
    from palimpsest.cli.stack import open_stack, read_running
    from palimpsest.core import bus as core_bus
    from palimpsest.core.admin import bus_config

    s = settings()
    running = read_running(s.home)
    out: dict[str, object]
    if running is not None or s.nats_url:
        url = running.nats_url if running else s.nats_url
        assert url is not None
        out = dict(await core_bus.bus_init(url, bus_config(s), creds_file=s.nats_creds_file))
    else:
        async with open_stack(s) as stack:
            out = {"declared": True, "timings_s": stack.timings_s}
    emit(out, as_json=as_json)


@cli.group("dead-letters")
def dead_letters() -> None:
    """Messages that exhausted their deliveries."""


@dead_letters.command("list")
@click.option("--all", "include_replayed", is_flag=True, help="Include dead letters already replayed.")
@click.option("--json", "as_json", is_flag=True)
@run_async
async def dead_letters_list(include_replayed: bool, as_json: bool) -> None:
    """List dead letters (newest last) with the handler's last error."""
    from palimpsest.cli.session import session
    from palimpsest.core.deadletters import list_dead_letters

    async with session(settings(), services=False) as sess:
        rows = [
            d.as_dict() for d in await list_dead_letters(sess.infra.pool, include_replayed=include_replayed)
        ]
    text = (
        "\n".join(
            f"#{r['id']} {r['consumer']} {r['event_type']} {r['event_id']} deliveries={r['deliveries']}"
            f" replayed={r['replay_count']} error={r['last_error']}"
            for r in rows
        )
        or "no dead letters"
    )
    emit(rows, as_json=as_json, text=text)


@dead_letters.command("replay")
@click.argument("ids", nargs=-1, type=int, required=True)
@click.option("--json", "as_json", is_flag=True)
@run_async
async def dead_letters_replay(ids: tuple[int, ...], as_json: bool) -> None:
    """Republish dead letters; consumers that applied them before skip them (inbox)."""
    from palimpsest.cli.session import session
    from palimpsest.core.deadletters import replay

    out = []
    async with session(settings(), services=False) as sess:
        for i in ids:
            try:
                out.append((await replay(sess.infra.pool, sess.infra.nc, i)).as_dict())
            except KeyError:
                fail(f"no dead letter #{i}")
    emit(out, as_json=as_json, text="\n".join(f"replayed #{d['id']} ({d['event_type']})" for d in out))


# ------------------------------------------------------------------------------------------- demo


@cli.command()
@click.option(
    "--repo",
    "repo",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    default=None,
    help="Repository to analyse (default: this checkout).",
)
@run_async
async def demo(repo: Path | None) -> None:
    """The main job on the embedded stack: the whole pipeline on one repository."""
    from palimpsest.cli.demo import run_demo

    await run_demo(settings(), repo)


# ------------------------------------------------------------------------------------------- bench


@cli.group()
def bench() -> None:
    """Benchmarks: each prints JSON figures."""


@bench.command("bus")
@click.option("--events", default=5000, show_default=True, help="Events for the relay throughput run.")
@click.option("--latency-events", default=300, show_default=True, help="Events for the latency run.")
@click.option("--json", "as_json", is_flag=True)
@run_async
async def bench_bus(events: int, latency_events: int, as_json: bool) -> None:
    """Relay throughput (events/s with PubAck) and end-to-end latency (outbox write → handler done)."""
    from palimpsest.cli.benchbus import run_bench_bus

    result = await run_bench_bus(settings(), events=events, latency_events=latency_events)
    emit(result, as_json=True)


@bench.command("stack")
@click.option("--runs", default=3, show_default=True)
@click.option("--json", "as_json", is_flag=True)
@run_async
async def bench_stack(runs: int, as_json: bool) -> None:
    """Embedded stack start time: PostgreSQL + NATS up, migrated, bus declared (fresh and warm)."""
    from palimpsest.cli.benchbus import run_bench_stack

    result = await run_bench_stack(settings(), runs=runs)
    emit(result, as_json=True)


def _register_commands() -> None:
    """Command modules of each area add their commands to the group (one module per area)."""
    import importlib

    for name in (
        "commands_index",
        "commands_recency",
        "commands_ingest",
        "commands_admin",
        "commands_analyze",
        "commands_embed",
        "commands_graph",
        "commands_review",
        "commands_chaos",
        "commands_mcp",
    ):
        importlib.import_module(f"palimpsest.cli.{name}").register(cli)


_register_commands()


def main() -> None:
    cli(prog_name="palimpsest")


if __name__ == "__main__":
    main()
