"""The soak: two tenants, generated repositories, signed deliveries, and faults while they flow.

Plan (deterministic for a seed): each repository gets a share of the deliveries — pushes to
``main`` (a new commit each), pull requests opened and updated (``synchronize``), redeliveries of
earlier deliveries (same ``X-GitHub-Delivery``), and pushes held back and sent after newer ones
(out of order). Senders behave like a provider that redelivers: a connection error, a timeout or
a 5xx is retried with the same delivery id until it is answered.

Reviews get a deterministic model (:mod:`palimpsest.devtools.chaos.model`, one finding on the first
added line of the diff under review), so findings are posted inline, kept across pushes and
redeliveries, and must never be posted twice; the summary comment is edited in place.

Faults, spread over the sending phase by progress: the outbox relays of every service process
are paused (SIGUSR1) and resumed (SIGUSR2); random service processes are killed with SIGKILL (the
supervisor restarts them); the embedded NATS server is killed and restarted once; the embedded
PostgreSQL is restarted once. With configured (external) servers the server restarts are skipped
and reported so.

Clustered (``--nats-cluster 3 --replicas 2 [--pgbouncer]``, issue 39): a JetStream cluster of that
many nodes on loopback with stream replicas equal to its size, ``replicas`` processes of every
service, and the services' database URL through a loopback PgBouncer in transaction mode. Instead
of the single server's restart, each NATS node is lost once (kill -9, the stream leader first,
restarted after a few seconds; see :mod:`palimpsest.devtools.chaos.cluster`), with a probe
measuring how long each loss stalled publishing and consuming; and one replica of each service is
killed and kept down a while, so its twin carries its consumers meanwhile. The checks are the same.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import random
import secrets
import shutil
import tempfile
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from palimpsest.cli.output import progress
from palimpsest.cli.processes import Supervisor, supervised
from palimpsest.cli.stack import Servers, StackInfo, open_stack
from palimpsest.core import bus
from palimpsest.core.settings import BaseServiceSettings
from palimpsest.devtools.chaos.cluster import NodeLoss, StallProbe, lose_node
from palimpsest.devtools.chaos.github import (
    FakeGitHubAPI,
    api_call,
    delivery_headers,
    install_tenant,
    pull_request_payload,
    push_payload,
    serving,
)
from palimpsest.devtools.chaos.model import MODEL, calls, chaos_model
from palimpsest.devtools.chaos.repos import ChaosRepo
from palimpsest.devtools.chaos.verify import Expectations, Tenant, verify

log = logging.getLogger(__name__)

KILLABLE = ("ingest", "recency-scanner", "chunker", "analyzer", "reviewer", "embedder")
SEND_GIVE_UP_S = 300.0


@dataclass(frozen=True, slots=True)
class ChaosConfig:
    repos: int = 20
    deliveries: int = 2000
    seed: int = 1
    kills: int | None = None  # default: one per 150 deliveries, at least 3
    concurrency: int = 6
    quiescence_timeout_s: float = 1200.0
    relay_pause_s: float = 5.0
    home: Path | None = None
    keep: bool = False
    nats_cluster: int = 0  # ≥ 2: a JetStream cluster of that many nodes, stream replicas = its size
    replicas: int = 1  # processes of every service
    pgbouncer: bool = False  # the services' database URL through PgBouncer in transaction mode
    node_down_s: float = 5.0  # how long a lost NATS node stays down
    replica_hold_s: float = 8.0  # how long a killed replica stays down while its twin works


@dataclass(slots=True)
class Delivery:
    delivery_id: str
    event: str
    tenant: str
    body: bytes
    repo: ChaosRepo
    kind: str  # push | pr_open | pr_sync | pr_again | redelivery | late_push | hostile:<what>
    expect: int | None = None  # hostile deliveries: the status they must get (and no event)
    secret: str | None = None  # hostile deliveries: signed with this instead of the tenant's secret
    status: int | None = None
    outcome: str | None = None
    event_ids: list[str] = field(default_factory=list)
    attempts: int = 0


@dataclass(slots=True)
class Run:
    cfg: ChaosConfig
    sup: Supervisor
    servers: Servers
    stack: StackInfo
    tenants: dict[str, Tenant]
    repos: list[ChaosRepo]
    api: FakeGitHubAPI
    http: httpx.AsyncClient
    rng: random.Random
    sent: list[Delivery] = field(default_factory=list)
    counts: Counter[str] = field(default_factory=Counter)
    faults: list[dict[str, Any]] = field(default_factory=list)
    kills: int = 0
    restarts: dict[str, int] = field(default_factory=lambda: {"nats": 0, "postgres": 0})
    started: float = field(default_factory=time.monotonic)
    probe: StallProbe | None = None
    node_losses: list[NodeLoss] = field(default_factory=list)
    nodes_lost: set[str] = field(default_factory=set)
    nats_lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    sends: int = 0


async def run_chaos(cfg: ChaosConfig, settings: BaseServiceSettings) -> dict[str, Any]:
    home = cfg.home or Path(tempfile.mkdtemp(prefix="palimpsest-chaos-"))
    settings = settings.model_copy(update={"home": home})
    clustered = cfg.nats_cluster > 1
    if clustered:
        if settings.nats_url is not None:
            raise RuntimeError("--nats-cluster starts its own cluster: unset PALIMPSEST_NATS_URL")
        settings = settings.model_copy(update={"stream_replicas": cfg.nats_cluster})
        # the harness's own NATS clients (probe, cluster queries) lose their server on purpose:
        # the client library's connection tracebacks are expected noise; the checks judge the run
        logging.getLogger("nats.aio.client").setLevel(logging.CRITICAL)
    rng = random.Random(cfg.seed)  # noqa: S311 - a reproducible schedule, not security
    api = FakeGitHubAPI()
    model = chaos_model("sk-chaos-" + secrets.token_urlsafe(18))
    servers = Servers()
    progress(f"chaos: home {home}")
    with serving(api) as api_url, model:
        env = {
            "PALIMPSEST_REVIEW_GITHUB_API_URL": api_url,
            # reviews (only) get a model: findings are posted inline and must never be posted twice
            "PALIMPSEST_LLM_REVIEW_MODEL": MODEL,
            "PALIMPSEST_LLM_API_BASE": model.base_url,
            "PALIMPSEST_LLM_API_KEY": str(model.api_key),
            "PALIMPSEST_RETRY_DELAYS_S": "[0.5, 1, 2, 4]",
            "PALIMPSEST_ALLOW_LOCAL_SOURCES": "true",  # the soak's repositories are local paths
            # every service declares the bus too: with the stream's replicas, never scaling it down
            "PALIMPSEST_STREAM_REPLICAS": str(settings.stream_replicas),
        }
        if cfg.pgbouncer:
            # after a failed server login (PostgreSQL restarting) PgBouncer refuses every login for
            # server_login_retry (15 s, its default kept here): the retries before a dead letter must
            # outlast it plus the restart, as the production defaults (1, 5, 30, 120 s) do
            env["PALIMPSEST_RETRY_DELAYS_S"] = "[1, 3, 8, 16]"
        async with (
            open_stack(
                settings, servers=servers, nats_cluster=cfg.nats_cluster, pgbouncer=cfg.pgbouncer
            ) as stack,
            # a port of its own unless one is configured: the ingest is killed and restarted, and on
            # a shared machine a fixed port (8080) can be taken by another process meanwhile
            supervised(
                settings, stack, extra_env=env, ingest_port=_ingest_port(), replicas=cfg.replicas
            ) as sup,
            httpx.AsyncClient(timeout=30.0) as http,
        ):
            tenants = await _tenants(sup, http, rng)
            repos = await _repositories(cfg, home, tenants, sup, http, api, stack.owner_url)
            run = Run(cfg, sup, servers, stack, tenants, repos, api, http, rng)
            await _wait_first_snapshots(run)
            progress(f"chaos: {len(repos)} repositories indexed; sending {cfg.deliveries} deliveries")
            await _send_all(run)
            sup.pause_relays(False)
            cluster_report = _cluster_report(run)
            sending_s = round(time.monotonic() - run.started, 1)
            progress("chaos: deliveries sent; waiting for quiescence")
            expectations = _expectations(run)
            report = await verify(run.stack, run.sup, run.tenants, run.repos, run.api, expectations, cfg)
        for name, p in sup.processes.items():
            report.setdefault("process_starts", {})[name] = p.starts
    if cluster_report is not None:
        report["nats_cluster"] = cluster_report
        report["discrepancies"].extend(
            f"NATS node {loss['node']}: {loss['error']}"
            for loss in cluster_report["losses"]
            if "error" in loss
        )
        if cluster_report["probe"]["lost"]:
            report["discrepancies"].append(
                f"{cluster_report['probe']['lost']} acknowledged probe publishes were never consumed"
            )
        if len(cluster_report["losses"]) < cfg.nats_cluster:
            report["discrepancies"].append(
                f"only {len(cluster_report['losses'])} of {cfg.nats_cluster} NATS nodes were lost once"
            )
    report["model_calls"], refused = calls(model)
    if refused:
        report["discrepancies"].append(f"the review model refused {refused} call(s) (wrong key)")
    report.update(
        {
            "repos": cfg.repos,
            "deliveries": len(run.sent),
            "delivery_kinds": dict(run.counts),
            "kills": run.kills,
            "restarts": {**run.restarts, "processes": sup.restarts},
            "faults": run.faults,
            "send_s": sending_s,
            "seed": cfg.seed,
            "replicas": cfg.replicas,
            "pgbouncer": cfg.pgbouncer,
        }
    )
    if report["discrepancies"] or cfg.home is not None or cfg.keep:
        report["home"] = str(home)  # kept: the logs, repositories and database to look into
    else:
        shutil.rmtree(home, ignore_errors=True)
    return report


# ------------------------------------------------------------------------------------ setup


def _ingest_port() -> int | None:
    """The configured PALIMPSEST_INGEST_PORT (None: the supervisor's rule), else a free port."""
    import os

    from palimpsest.cli.embedded import free_port

    return None if os.environ.get("PALIMPSEST_INGEST_PORT") else free_port()


async def _tenants(sup: Supervisor, http: httpx.AsyncClient, rng: random.Random) -> dict[str, Tenant]:
    admin = sup.processes["ingest"].env.get("PALIMPSEST_ADMIN_TOKEN")
    if not admin:
        raise RuntimeError(
            "chaos needs the operator admin token (PALIMPSEST_ADMIN_TOKEN or the embedded home)"
        )
    tenants: dict[str, Tenant] = {}
    for key in ("a", "b"):
        made = await install_tenant(
            http,
            sup.ingest_url,
            admin,
            f"chaos-{key}-{uuid.uuid4().hex[:6]}",
            rng.randrange(10_000_000, 99_999_999),
        )
        tenants[key] = Tenant(
            key=key,
            tenant_id=made.tenant_id,
            api_token=made.api_token,
            installation_external_id=made.installation_external_id,
            login=f"chaos-{key}",
            webhook_secret=made.webhook_secret,
            access_token=made.access_token,
            installation_id=made.installation_id,
        )
    return tenants


async def _repositories(
    cfg: ChaosConfig,
    home: Path,
    tenants: dict[str, Tenant],
    sup: Supervisor,
    http: httpx.AsyncClient,
    api: FakeGitHubAPI,
    owner_url: str,
) -> list[ChaosRepo]:
    repos: list[ChaosRepo] = []
    for i in range(cfg.repos):
        tenant = tenants["a" if i % 2 == 0 else "b"]
        repo = ChaosRepo(
            tenant.key,
            f"svc{i:02d}",
            home / "repos" / tenant.key / f"svc{i:02d}",
            500_000 + i,
            cfg.seed * 100 + i,
        )
        await asyncio.to_thread(repo.create)
        made = await api_call(
            http,
            "POST",
            f"{sup.ingest_url}/v1/tenants/{tenant.tenant_id}/repositories",
            tenant.api_token,
            {
                "url": str(repo.path),
                "default_branch": "main",
                "visibility": "private",
                "index_mode": "lexical",
            },
        )
        repo.repository_id = made["repository_id"]
        api.tokens[repo.full_name] = tenant.access_token
        repos.append(repo)
    await _link_installations(owner_url, repos, tenants)
    return repos


async def _link_installations(owner_url: str, repos: list[ChaosRepo], tenants: dict[str, Tenant]) -> None:
    """Make each local repository its tenant's GitHub repository (the harness's one shortcut).

    The API links only https repositories on the installation's host to a GitHub installation; the
    soak's repositories are local paths (read in place, as the embedded default allows). So the
    GitHub identity — provider, repository id, full name and installation, which route webhooks and
    let the reviewer post with the installation's token — is set here, as the database owner.
    """
    import psycopg

    async with await psycopg.AsyncConnection.connect(owner_url, autocommit=True) as conn:
        for repo in repos:
            await conn.execute(
                "UPDATE repositories SET installation_id = %s, provider = 'github', external_id = %s,"
                " full_name = %s WHERE repository_id = %s",
                (
                    tenants[repo.tenant].installation_id,
                    str(repo.external_id),
                    repo.full_name,
                    repo.repository_id,
                ),
            )


async def _wait_first_snapshots(run: Run, timeout_s: float = 600.0) -> None:
    import psycopg

    deadline = time.monotonic() + timeout_s
    ids = [r.repository_id for r in run.repos]
    async with await psycopg.AsyncConnection.connect(run.stack.owner_url, autocommit=True) as conn:
        while True:
            cur = await conn.execute(
                "SELECT count(DISTINCT repository_id) FROM code_index_snapshots WHERE state = 'ready'"
                " AND repository_id = ANY(%s::uuid[])",
                (ids,),
            )
            row = await cur.fetchone()
            if row is not None and row[0] == len(ids):
                return
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"only {row[0] if row else 0} of {len(ids)} repositories indexed in {timeout_s:.0f}s"
                )
            await asyncio.sleep(0.5)


# ------------------------------------------------------------------------------------ sending


def _plan(cfg: ChaosConfig, repos: list[ChaosRepo], rng: random.Random) -> list[tuple[str, ChaosRepo]]:
    """The kind of each delivery, in sending order (redeliveries and late pushes included)."""
    kinds = ["push"] * 40 + ["pr_open"] * 14 + ["pr_sync"] * 20 + ["redelivery"] * 16 + ["late_push"] * 10
    kinds += ["pr_again"] * 10  # the same head asked for again (a new delivery): answered, never reposted
    kinds += ["hostile"] * 5
    plan: list[tuple[str, ChaosRepo]] = []
    opened: set[str] = set()
    for _ in range(cfg.deliveries):
        repo = rng.choice(repos)
        kind = rng.choice(kinds)
        if kind in ("pr_sync", "pr_again") and repo.name not in opened:
            kind = "pr_open"
        if kind == "pr_open":
            opened.add(repo.name)
        plan.append((kind, repo))
    return plan


async def _send_all(run: Run) -> None:
    cfg = run.cfg
    plan = _plan(cfg, run.repos, run.rng)
    total = len(plan)
    cluster = run.servers.nats_cluster
    faults = _fault_schedule(cfg, total, cluster.size if cluster is not None else 0)
    queue: asyncio.Queue[tuple[int, str, ChaosRepo] | None] = asyncio.Queue()
    for i, (kind, repo) in enumerate(plan):
        queue.put_nowait((i, kind, repo))
    for _ in range(cfg.concurrency):
        queue.put_nowait(None)
    held: dict[str, list[Delivery]] = {}
    pr_numbers: dict[str, int] = {}
    done = 0
    fault_tasks: list[asyncio.Task[None]] = []
    if run.servers.nats_cluster is not None:
        run.probe = StallProbe(run.stack.nats_url)
        await run.probe.start()

    async def worker() -> None:
        nonlocal done
        while (item := await queue.get()) is not None:
            i, kind, repo = item
            while faults and faults[0][0] <= i:
                _, name = faults.pop(0)
                fault_tasks.append(asyncio.create_task(_fault(run, name)))
            for delivery in await _make(run, kind, repo, held, pr_numbers):
                await _send(run, delivery)
            done += 1
            if done % max(1, total // 10) == 0:
                progress(f"chaos: {done}/{total} deliveries sent")

    await asyncio.gather(*(worker() for _ in range(cfg.concurrency)))
    for late in [d for ds in held.values() for d in ds]:  # anything still held goes out last
        await _send(run, late)
    await asyncio.gather(*fault_tasks)
    if run.probe is not None:
        await asyncio.sleep(2.0)  # the probe's view after the last loss
        await run.probe.stop()


async def _make(
    run: Run, kind: str, repo: ChaosRepo, held: dict[str, list[Delivery]], pr_numbers: dict[str, int]
) -> list[Delivery]:
    """The deliveries to send now, in order (a push releases the older pushes held before it)."""
    tenant = run.tenants[repo.tenant]
    if kind == "hostile":
        return [_hostile(run, repo)]
    if kind == "redelivery":
        earlier = [d for d in run.sent if d.kind != "redelivery" and d.expect is None]
        if not earlier:
            kind = "push"
        else:
            original = run.rng.choice(earlier)
            run.counts["redelivery"] += 1
            d = original
            return [Delivery(d.delivery_id, d.event, d.tenant, d.body, d.repo, "redelivery")]
    async with repo.lock:
        if kind in ("push", "late_push"):
            commit = await asyncio.to_thread(repo.push_commit)
            payload = push_payload(repo, tenant.installation_external_id, tenant.login, commit)
            delivery = _new(tenant.key, "push", payload, repo, kind)
            if kind == "late_push":  # sent after the next push of this repository: out of order
                held.setdefault(repo.name, []).append(delivery)
                run.counts["late_push"] += 1
                return []
            run.counts["push"] += 1
            return [delivery, *held.pop(repo.name, [])]
        if kind == "pr_sync" and repo.prs:
            number = run.rng.choice(sorted(repo.prs))
            base, head = await asyncio.to_thread(repo.update_pr, number)
            action = "synchronize"
        elif kind == "pr_again" and repo.prs:
            number = run.rng.choice(sorted(repo.prs))
            base, head = repo.prs[number]
            action = "reopened"
        else:
            number = pr_numbers.get(repo.name, 0) + 1
            pr_numbers[repo.name] = number
            base, head = await asyncio.to_thread(repo.open_pr, number)
            action, kind = "opened", "pr_open"
        payload = pull_request_payload(
            repo, tenant.installation_external_id, tenant.login, action, number, base, head
        )
        run.counts[kind] += 1
        return [_new(tenant.key, "pull_request", payload, repo, kind)]


def _hostile(run: Run, repo: ChaosRepo) -> Delivery:
    """A delivery that must be refused or ignored and must emit nothing: a wrong signature, the
    other tenant's secret, a malformed body, an unknown installation."""
    tenant = run.tenants[repo.tenant]
    other = run.tenants["b" if repo.tenant == "a" else "a"]
    commit_sha = repo.prs[max(repo.prs)][1] if repo.prs else "0" * 40
    base = pull_request_payload(
        repo, tenant.installation_external_id, tenant.login, "opened", 9999, commit_sha, commit_sha
    )
    what = run.rng.choice(("bad_signature", "other_tenant_secret", "malformed", "unknown_installation"))
    run.counts[f"hostile:{what}"] += 1
    body = json.dumps(base).encode()
    d = _new(tenant.key, "pull_request", {}, repo, f"hostile:{what}")
    d.body = body
    if what == "bad_signature":
        d.secret, d.expect = secrets.token_urlsafe(24), 401
    elif what == "other_tenant_secret":
        d.secret, d.expect = other.webhook_secret, 401
    elif what == "malformed":
        d.body, d.expect = body[: len(body) // 2], 400
    else:
        base["installation"]["id"] = 1 + other.installation_external_id + tenant.installation_external_id
        d.body, d.expect = json.dumps(base).encode(), 202
    return d


def _new(tenant: str, event: str, payload: dict[str, Any], repo: ChaosRepo, kind: str) -> Delivery:
    body = json.dumps(payload).encode()
    return Delivery(str(uuid.uuid4()), event, tenant, body, repo, kind)


async def _send(run: Run, d: Delivery) -> None:
    """POST one delivery, redelivering (same id) on connection errors, timeouts and 5xx."""
    run.sent.append(d)
    tenant = run.tenants[d.tenant]
    headers = delivery_headers(d.event, d.delivery_id, d.secret or tenant.webhook_secret, d.body)
    deadline = time.monotonic() + SEND_GIVE_UP_S
    delay = 0.25
    urls = run.sup.ingest_urls
    while True:
        d.attempts += 1
        run.sends += 1  # round robin over the ingest replicas, like a load balancer (a retry moves on)
        try:
            r = await run.http.post(
                f"{urls[run.sends % len(urls)]}/webhooks/github",
                content=d.body,
                headers=headers,
                timeout=15.0,
            )
            if r.status_code < 500:
                d.status = r.status_code
                with contextlib.suppress(ValueError):
                    answer = r.json()
                    d.outcome = answer.get("outcome")
                    d.event_ids = list(answer.get("events") or [])
                return
            d.status = r.status_code
        except httpx.HTTPError:
            d.status = None
        if time.monotonic() > deadline:
            return
        await asyncio.sleep(delay)
        delay = min(delay * 2, 3.0)


# ------------------------------------------------------------------------------------ faults


def _fault_schedule(cfg: ChaosConfig, total: int, nodes: int = 0) -> list[tuple[int, str]]:
    """(delivery index, fault) in order; ``nodes``: the size of the NATS cluster (0: one server)."""
    kills = cfg.kills if cfg.kills is not None else max(3, total // 150)
    schedule = [(int(total * 0.15), "pause_relays"), (int(total * 0.6), "restart_postgres")]
    if nodes:  # each node lost once, one at a time (the losses queue behind each other)
        schedule += [(int(total * (0.2 + 0.6 * k / nodes)), "lose_nats_node") for k in range(nodes)]
    else:
        schedule.append((int(total * 0.35), "restart_nats"))
    for k in range(kills):
        schedule.append((int(total * (0.1 + 0.8 * (k + 0.5) / kills)), "kill"))
    if cfg.replicas > 1:  # one replica of each service down a while, its twin consuming
        for k, service in enumerate(KILLABLE):
            schedule.append((int(total * (0.12 + 0.76 * k / len(KILLABLE))), f"kill_replica:{service}"))
    return sorted(schedule)


async def _fault(run: Run, name: str) -> None:
    at = round(time.monotonic() - run.started, 1)
    if name == "kill" or name.startswith("kill_replica:"):
        _kill(run, name, at)
        return
    if name == "lose_nats_node":
        await _lose_nats_node(run)
        return
    if name == "pause_relays":
        run.sup.pause_relays(True)
        run.faults.append({"at_s": at, "fault": "relays paused", "for_s": run.cfg.relay_pause_s})
        await asyncio.sleep(run.cfg.relay_pause_s)
        run.sup.pause_relays(False)
        return
    if name == "restart_nats":
        nats = run.servers.nats
        if nats is None:
            run.faults.append({"at_s": at, "fault": "nats restart skipped (configured server)"})
            return
        await asyncio.to_thread(nats.kill)
        await asyncio.sleep(2.0)
        await asyncio.to_thread(nats.start)
        run.restarts["nats"] += 1
        run.faults.append({"at_s": at, "fault": "nats kill -9 + restart"})
        return
    if name == "restart_postgres":
        pg = run.servers.pg
        if pg is None:
            run.faults.append({"at_s": at, "fault": "postgres restart skipped (configured server)"})
            return
        await asyncio.to_thread(pg.stop)
        await asyncio.sleep(2.0)
        await asyncio.to_thread(pg.start)
        run.restarts["postgres"] += 1
        run.faults.append({"at_s": at, "fault": "postgres restart (fast shutdown)"})


def _kill(run: Run, name: str, at: float) -> None:
    """``kill``: a random service process (restarted at once); ``kill_replica:<service>``: one
    replica of that service, kept down ``replica_hold_s`` while its twin consumes."""
    if name == "kill":
        victim = run.rng.choice(KILLABLE)
        replicas = run.sup.replicas_of(victim)
        if len(replicas) > 1:
            victim = run.rng.choice(replicas)
        if run.sup.kill(victim):
            run.kills += 1
            run.faults.append({"at_s": at, "fault": "kill -9", "service": victim})
        return
    victim = run.rng.choice(run.sup.replicas_of(name.split(":", 1)[1]))
    if run.sup.kill(victim, hold_s=run.cfg.replica_hold_s):
        run.kills += 1
        run.faults.append(
            {"at_s": at, "fault": "kill -9, kept down", "service": victim, "for_s": run.cfg.replica_hold_s}
        )


async def _lose_nats_node(run: Run) -> None:
    cluster = run.servers.nats_cluster
    assert cluster is not None
    async with run.nats_lock:  # one node down at a time: three nodes keep a quorum through one
        nc = await bus.connect(run.stack.nats_url, name="chaos-cluster")
        try:
            loss = await lose_node(cluster, nc, run.nodes_lost, down_s=run.cfg.node_down_s)
        finally:
            await nc.close()
    if loss is not None:
        run.node_losses.append(loss)
        run.restarts["nats"] += 1
        what = "nats node kill -9 + restart" + (" (stream leader)" if loss.was_leader else "")
        run.faults.append({"at_s": round(loss.at - run.started, 1), "fault": what, "service": loss.node})


def _cluster_report(run: Run) -> dict[str, Any] | None:
    """The cluster's figures: each node loss with the publish/consume stall it caused, and the
    probe's median gap over the whole sending phase (what no stall looks like on this machine)."""
    cluster = run.servers.nats_cluster
    if cluster is None:
        return None
    probe = run.probe
    return {
        "nodes": cluster.size,
        "stream_replicas": cluster.size,
        "losses": [loss.report(run.started, probe) for loss in run.node_losses],
        "probe": {
            **(probe.baseline() if probe else {}),
            "published": len(probe.published) if probe else 0,
            "received": len(probe.received) if probe else 0,
            "lost": probe.lost() if probe else 0,  # acknowledged, never consumed
            "errors": probe.errors if probe else 0,
        },
    }


def _expectations(run: Run) -> Expectations:
    return Expectations(deliveries=run.sent)
