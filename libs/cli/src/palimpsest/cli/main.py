"""The ``palimpsest`` command line: run the stack, operate it, drive the pipeline, benchmark it.

Every command is defined at module level in its area's module; this is the one place that puts
them together. No command module imports this one.

The measurement commands (``bench``, ``chaos``) live in ``palimpsest.devtools``, which drives the
services through this package's embedded stack: it imports the CLI, so the CLI never imports it.
A distribution adds commands through the ``palimpsest.commands`` entry-point group (devtools
declares its two there); without devtools installed the command simply has no ``bench``.
"""

from __future__ import annotations

from importlib.metadata import entry_points

import click

from palimpsest.cli.commands_admin import audit, backfill, link, token
from palimpsest.cli.commands_analyze import analysis_group, analyze_cmd
from palimpsest.cli.commands_github import github
from palimpsest.cli.commands_graph import context_cmd, index_report_cmd, report_cmd
from palimpsest.cli.commands_index import index_cmd, search_cmd, snapshots_cmd
from palimpsest.cli.commands_ingest import deliveries, installation, repo, tenant
from palimpsest.cli.commands_mcp import mcp_cmd
from palimpsest.cli.commands_models import budget, model
from palimpsest.cli.commands_recency import recency_cmd
from palimpsest.cli.commands_review import review_cmd
from palimpsest.cli.commands_stack import bus, db, dead_letters, demo, status, up
from palimpsest.cli.output import fail
from palimpsest.cli.settings_registry import bad_values, settings_cmd
from palimpsest.cli.target import WHERE_HELP

COMMAND_GROUP = "palimpsest.commands"  # entry points: name → a click command to add


@click.group(context_settings={"help_option_names": ["-h", "--help"]}, epilog=WHERE_HELP)
@click.version_option(package_name="palimpsest", prog_name="palimpsest")
@click.option(
    "--insecure-http",
    is_flag=True,
    help="Allow a plain-http PALIMPSEST_INGEST_URL that is not loopback (the token crosses in clear).",
)
@click.pass_context
def cli(ctx: click.Context, insecure_http: bool) -> None:
    """Palimpsest: a recency-aware, doc-skeptical code index and review-context platform."""
    if ctx.invoked_subcommand == settings_cmd.name:
        return  # it lists what is wrong with the environment instead of refusing
    refuse_a_bad_environment()


def refuse_a_bad_environment() -> None:
    """Stop every command before it acts (before ``up`` starts a database, before a command calls a
    running stack) on a mistyped ``PALIMPSEST_*`` name or a value some service's settings refuse:
    one line per problem, naming the variable and what it expects."""
    from palimpsest.core.errors import SettingsError
    from palimpsest.core.settings import check_environment

    lines = []
    try:
        check_environment()
    except SettingsError as exc:
        lines.append(str(exc))
    lines += [f"invalid setting: {line}" for line in bad_values().values()]
    if lines:
        for line in lines[:-1]:
            click.echo(f"error: {line}", err=True)
        fail(lines[-1])


COMMANDS: tuple[click.Command, ...] = (
    # the stack
    up,
    status,
    db,
    bus,
    dead_letters,
    demo,
    # the pipeline and the index
    index_cmd,
    search_cmd,
    snapshots_cmd,
    recency_cmd,
    context_cmd,
    index_report_cmd,
    report_cmd,
    analyze_cmd,
    analysis_group,
    review_cmd,
    mcp_cmd,
    # the ingest API
    tenant,
    installation,
    repo,
    deliveries,
    token,
    link,
    audit,
    backfill,
    settings_cmd,
    github,
    model,
    budget,
)


def plugin_commands() -> list[click.Command]:
    """The commands other distributions declare under :data:`COMMAND_GROUP` (devtools: ``bench``,
    ``chaos``), by name; one that does not load is an error, not a silently missing command."""
    found = []
    for entry in sorted(entry_points(group=COMMAND_GROUP), key=lambda e: e.name):
        command = entry.load()
        if not isinstance(command, click.Command):
            raise TypeError(f"entry point {entry.name} = {entry.value} is not a click command")
        found.append(command)
    return found


for _command in (*COMMANDS, *plugin_commands()):
    cli.add_command(_command)


def main() -> None:
    cli(prog_name="palimpsest")


if __name__ == "__main__":
    main()
