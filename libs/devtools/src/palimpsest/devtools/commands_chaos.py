"""CLI: ``palimpsest chaos`` — the soak with faults, and its verdict (see :mod:`palimpsest.devtools.chaos`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from palimpsest.cli.output import emit
from palimpsest.cli.runtime import run_async, settings

__all__ = ["chaos", "chaos_text"]


@click.command("chaos")
@click.option("--repos", default=20, show_default=True, type=click.IntRange(2, 500))
@click.option("--deliveries", default=2000, show_default=True, type=click.IntRange(10, 100_000))
@click.option("--seed", default=1, show_default=True, type=int, help="Same seed, same plan and faults.")
@click.option(
    "--kills",
    default=None,
    type=click.IntRange(0, 1000),
    help="kill -9s (default: 1 per 150 deliveries, ≥ 3).",
)
@click.option("--concurrency", default=6, show_default=True, type=click.IntRange(1, 64))
@click.option(
    "--timeout", "timeout_s", default=1200.0, show_default=True, help="Quiescence timeout, seconds."
)
@click.option(
    "--home",
    type=click.Path(path_type=Path),
    default=None,
    help="Scratch home (default: a new temp dir).",
)
@click.option("--keep", is_flag=True, help="Keep the scratch home even when every check passed.")
@click.option(
    "--nats-cluster",
    default=0,
    type=click.IntRange(0, 5),
    help="A JetStream cluster of this many nodes on loopback (stream replicas = nodes); each node"
    " is lost once, the stream leader first, and the stall each loss caused is reported.",
)
@click.option(
    "--replicas",
    default=1,
    show_default=True,
    type=click.IntRange(1, 4),
    help="Processes of every service; with 2+, one replica of each is killed and kept down a while.",
)
@click.option(
    "--pgbouncer",
    is_flag=True,
    help="The services' database URL through a loopback PgBouncer in transaction mode (Debian's"
    " pgbouncer); migrations and the relay's LISTEN stay direct.",
)
@click.option("--json", "as_json", is_flag=True)
@run_async
async def chaos(
    repos: int,
    deliveries: int,
    seed: int,
    kills: int | None,
    concurrency: int,
    timeout_s: float,
    home: Path | None,
    keep: bool,
    nats_cluster: int,
    replicas: int,
    pgbouncer: bool,
    as_json: bool,
) -> None:
    """A bounded soak with faults on loopback; exits 1 when any promise did not hold.

    Starts its own stack (embedded PostgreSQL and NATS unless URLs are configured) with every
    service as its own process, two tenants and generated git repositories; sends signed
    GitHub deliveries (pushes, pull requests, redeliveries, out-of-order pushes) while it
    kill -9s services, restarts NATS and PostgreSQL once each and pauses the relays; then
    waits for quiescence and verifies: one event per accepted delivery, each applied once per
    consumer, snapshots equal to git, each review stored and posted once, no dead letters,
    no cross-tenant reads, no secret in logs, events or process arguments.

    Clustered (``--nats-cluster 3 --replicas 2 --pgbouncer``): three NATS nodes with the stream
    on all three, two processes of every service, PgBouncer in transaction mode in front of the
    database; it loses each NATS node once instead of restarting the one server and kills one
    replica of each service while its twin keeps consuming. Same checks.
    """
    if nats_cluster == 1:
        raise click.BadParameter("a cluster has 2 nodes or more (0: one server)", param_hint="--nats-cluster")
    if nats_cluster and settings().nats_url is not None:
        raise click.UsageError("--nats-cluster starts its own cluster on loopback: unset PALIMPSEST_NATS_URL")
    from palimpsest.devtools.chaos.soak import ChaosConfig, run_chaos

    cfg = ChaosConfig(
        repos=repos,
        deliveries=deliveries,
        seed=seed,
        kills=kills,
        concurrency=concurrency,
        quiescence_timeout_s=timeout_s,
        home=home,
        keep=keep,
        nats_cluster=nats_cluster,
        replicas=replicas,
        pgbouncer=pgbouncer,
    )
    report = await run_chaos(cfg, settings())
    emit(report, as_json=as_json, text=chaos_text(report))
    if report["discrepancies"]:
        raise SystemExit(1)


def chaos_text(report: dict[str, Any]) -> str:
    lines = [
        f"deliveries {report['deliveries']} ({', '.join(f'{k} {v}' for k, v in report['delivery_kinds'].items())})",
        f"accepted {report['accepted']}  events {report['events']}  reviews {report['reviews']}",
        f"kills {report['kills']}  restarts {report['restarts']}  quiescence {report['quiescence_s']} s",
    ]
    lines += [
        f"fault at {f['at_s']} s: {f['fault']} {f.get('service', '')}".rstrip() for f in report["faults"]
    ]
    cluster = report.get("nats_cluster")
    if cluster:
        probe = cluster["probe"]
        lines.append(
            f"nats cluster of {cluster['nodes']}: probe median gap publish {probe.get('publish_gap_median_s')} s,"
            f" consume {probe.get('consume_gap_median_s')} s"
        )
        lines += [
            f"  lost {loss['node']}{' (leader)' if loss['was_stream_leader'] else ''} at {loss['at_s']} s:"
            f" publish stall {loss.get('publish_stall_s')} s, consume stall {loss.get('consume_stall_s')} s,"
            f" rejoined after {loss.get('rejoined_after_s')} s"
            for loss in cluster["losses"]
        ]
    problems = report["discrepancies"]
    lines.append(f"discrepancies: {len(problems)}")
    lines += [f"  - {p}" for p in problems[:50]]
    return "\n".join(lines)
