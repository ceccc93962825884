"""CLI: ``palimpsest up``, ``status``, ``db``, ``bus``, ``dead-letters`` and ``demo`` — run and operate the stack."""

from __future__ import annotations

import asyncio
import errno
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from palimpsest.cli.output import emit, fail, progress
from palimpsest.cli.runtime import run_async, settings
from palimpsest.cli.target import announce_local, refuse_remote

if TYPE_CHECKING:
    from palimpsest.cli.status import StatusReport
    from palimpsest.core.ops import OpsServer

# ------------------------------------------------------------------------------------------- stack


@click.command()
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
    from palimpsest.core.service import install_signal_handlers

    refuse_remote()
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
    ops = _ops_server(s)  # before the servers start: a port given and taken ends `up` at once
    async with open_stack(s) as stack, running_services(s, stack, ops=ops) as infra:
        stack.ops_url = f"http://127.0.0.1:{ops.bound_port}" if ops.bound_port else None
        stack.ingest_url = infra.ingest_url
        await _serve(s, stack, stop, as_json, "every service")
    progress("stopped")


def _ops_server(s: Any) -> OpsServer:
    """The ops endpoint of the in-process stack, bound on loopback: the configured port
    (``PALIMPSEST_OPS_PORT``; one in use is a one-line error), or the default 9090 and, when
    something else has that (a Prometheus, another stack), a free port, as the ingest API does."""
    from palimpsest.core.ops import OpsServer

    ops = OpsServer("127.0.0.1", s.ops_port)
    try:
        ops.bind()
    except OSError as exc:
        if exc.errno != errno.EADDRINUSE:
            raise
        if "ops_port" in s.model_fields_set:
            fail(
                f"the ops endpoint cannot listen on 127.0.0.1:{s.ops_port} (in use);"
                " set PALIMPSEST_OPS_PORT to a free port (0: any)"
            )
        ops = OpsServer("127.0.0.1", 0)
        ops.bind()
        progress(f"port {s.ops_port} is in use; the ops endpoint listens on {ops.bound_port} instead")
    return ops


async def _up_processes(s: Any, stop: asyncio.Event, as_json: bool) -> None:
    from palimpsest.cli.processes import supervised
    from palimpsest.cli.stack import open_stack

    async with open_stack(s) as stack, supervised(s, stack) as sup:
        stack.ingest_url = sup.ingest_url
        stack.processes = sup.describe()
        await _serve(s, stack, stop, as_json, "every service process")


async def _serve(s: Any, stack: Any, stop: asyncio.Event, as_json: bool, what: str) -> None:
    """Record the running stack, describe it, and wait for Ctrl-C (or SIGTERM)."""
    from palimpsest.cli.stack import clear_state, write_state

    write_state(stack)
    try:
        described = {**stack.public(), "sign_in": sign_in(s, stack)}
        emit(described, as_json=as_json, text=_describe_stack(stack, described["sign_in"]))
        progress(f"running; Ctrl-C stops {what} and the embedded servers")
        await stop.wait()
    finally:
        clear_state(stack)


SIGN_IN_TOKEN_COMMAND = "palimpsest token create --tenant TENANT --scope read"  # noqa: S105 - a command, not a secret


def sign_in(s: Any, stack: Any) -> dict[str, str | None]:
    """How to open the web view of a running stack: its address, the command that makes a token to
    sign in with, and where the operator token is (a variable's name or a file's path; never the
    token). Under ``up`` the ingest service uses ``PALIMPSEST_ADMIN_TOKEN`` when set, else the one it
    generates into the home (in-process, and handed to ``--processes`` children)."""
    from palimpsest.ingest.settings import ingest_settings
    from palimpsest.ingest.tokens import ADMIN_TOKEN_FILE
    from palimpsest.ingest.web.routes import PREFIX

    configured = ingest_settings(s).admin_token
    return {
        "web_url": f"{stack.ingest_url}{PREFIX}/" if stack.ingest_url else None,
        "token_command": SIGN_IN_TOKEN_COMMAND,
        "operator_token": "PALIMPSEST_ADMIN_TOKEN"
        if configured
        else str(Path(stack.home) / ADMIN_TOKEN_FILE),
    }


def _describe_stack(stack: Any, how: dict[str, str | None]) -> str:
    lines = [
        f"PostgreSQL  {'embedded' if stack.embedded_db else 'external'}  {stack.public()['app_url']}",
        f"NATS        {'embedded' if stack.embedded_nats else 'external'}  {stack.nats_url}",
        f"home        {stack.home}",
    ]
    if stack.ingest_url:
        lines.append(f"ingest      {stack.ingest_url}  (webhooks, /v1 API, /openapi.json)")
    if how["web_url"]:
        lines += [
            f"web view    {how['web_url']}  (sign in with a tenant token that holds the read scope)",
            f"token       {how['token_command']}  (a tenant first: palimpsest tenant create NAME)",
            f"operator    the operator token (every tenant) is in {how['operator_token']}",
        ]
    if stack.ops_url:
        lines.append(f"ops         {stack.ops_url}/healthz  /readyz  /metrics")
    for name, proc in stack.processes.items():
        lines.append(f"process     {name:<16} pid {proc['pid']}  ops :{proc['ops_port']}  log {proc['log']}")
    if stack.timings_s:
        lines.append("start       " + "  ".join(f"{k}={v}" for k, v in stack.timings_s.items()))
    return "\n".join(lines)


@click.command()
@click.option("--json", "as_json", is_flag=True)
@run_async
async def status(as_json: bool) -> None:
    """Report each component: database, bus, consumers, the running stack, and the repositories
    that cannot be indexed (degraded). Exits 1 when a component does not answer."""
    from palimpsest.cli.status import collect

    refuse_remote()
    s = settings()
    report = await collect(s)
    emit(report, as_json=as_json, text=_status_text(report))
    if not report["ok"]:
        raise SystemExit(1)


def _status_text(report: StatusReport) -> str:
    lines = []
    for name, comp in report["components"].items():
        mark = "ok " if comp.get("ok") else "DEG" if comp.get("degraded") else "ERR"
        detail = ", ".join(f"{k}={v}" for k, v in comp.items() if k != "ok")
        lines.append(f"[{mark}] {name:<16} {detail}")
    if report.get("degraded"):
        lines.append("degraded: some repositories cannot be indexed or analysed (see above)")
    return "\n".join(lines)


@click.group()
def db() -> None:
    """Database administration."""


@db.command("migrate")
@click.option("--json", "as_json", is_flag=True)
@run_async
async def db_migrate(as_json: bool) -> None:
    """Apply pending migrations (idempotent) — to the configured or embedded server."""
    from palimpsest.cli.stack import open_stack, read_running
    from palimpsest.core.migrate import migrate

    refuse_remote()
    s = settings()
    running = read_running(s.home)
    announce_local(s, running_pid=running.pid if running is not None else None)
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


@click.group()
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

    refuse_remote()
    s = settings()
    running = read_running(s.home)
    announce_local(s, running_pid=running.pid if running is not None else None)
    out: dict[str, object]
    if running is not None or s.nats_url:
        url = running.nats_url if running else s.nats_url
        assert url is not None
        out = dict(await core_bus.bus_init(url, bus_config(s), creds_file=s.nats_creds_file))
    else:
        async with open_stack(s) as stack:
            out = {"declared": True, "timings_s": stack.timings_s}
    emit(out, as_json=as_json)


@click.group("dead-letters")
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


@click.command()
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
