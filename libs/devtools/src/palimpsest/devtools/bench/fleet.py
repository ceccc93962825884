"""``palimpsest bench fleet``: a fleet of repositories installed across tenants, then one simulated
day of pushes and pull requests (issue 39 points 4 and 6), on its own stack with every service as
processes (``--replicas`` of each; several counts run the fleet once per count and report the
speed-up).

Repositories are generated (most small, some medium, a few large: a spread seeded per repository,
so no two share their content) on a loopback GitHub (:mod:`palimpsest.devtools.bench.fleet_github`:
git over https on 127.0.0.1:443 and the REST API). Each tenant's GitHub App installation reaches
Palimpsest as signed webhook deliveries (``installation`` created, then
``installation_repositories`` added), all tenants at once; the repositories are cloned from the
fake and indexed through the bus. Then the day (:mod:`palimpsest.devtools.bench.fleet_day`): a
Poisson stream of pushes and pull requests, reviewed without a model (the mechanical review) and
posted to the fake. Reported:

* ``all_ready_s``: from the first installation delivery until every repository has a ready snapshot;
* per repository its wait (its delivery's answer → its first ready snapshot), and per tenant the
  median and the maximum; the slowest tenant's median wait against the median of all;
* ``day``: reviews posted, within 60 s of their pull-request event, their latency p50/p95/max;
  pushes indexed and their latency;
* ``lag``: every service consumer's backlog sampled each second, p50/p95/max per phase
  (:mod:`palimpsest.devtools.bench.fleet_lag`);
* each service process's peak RSS (with its children, e.g. the chunker's parse workers) and CPU
  seconds per phase;
* the database's growth per repository and per indexed file over the onboarding;
* events per second through the relays over the onboarding;
* ``targets``: all ready within 2x the linear yardstick, no tenant's median wait over 3x the
  median, every review of the day within 60 s; each met or not.

Yardstick, in the same run and on the same stack before the fleet: one median-sized and one large
repository installed alone, one after the other, for a tenant of their own; a line through both
(seconds = a + b·files) summed over the fleet's repositories gives ``yardstick.linear_s``, the time
one-at-a-time onboarding would take.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import shutil
import statistics
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx
import psutil
import psycopg

from palimpsest.cli.output import progress
from palimpsest.cli.processes import Supervisor, supervised
from palimpsest.cli.stack import open_stack
from palimpsest.core.settings import BaseServiceSettings
from palimpsest.devtools.bench.fleet_day import (
    DEFAULT_RATES,
    REVIEW_TARGET_S,
    DayRates,
    SnapshotWatch,
    day_report,
    run_day,
    settle,
)
from palimpsest.devtools.bench.fleet_github import FleetGitHub, FleetRepo, FleetTenant, make_repo
from palimpsest.devtools.bench.fleet_lag import LagSampler
from palimpsest.devtools.chaos.soak import _ingest_port

__all__ = ["FleetRepo", "fairness", "linear", "run_bench_fleet", "size_spread", "targets"]

READY_TARGET = 2.0  # all ready within this many times the linear yardstick
FAIRNESS_TARGET = 3.0  # no tenant's median wait over this many times the median


def size_spread(repos: int, large_files: int, seed: int) -> list[int]:
    """Files per repository: about 80 % small (20-150), 15 % medium (300-800), 5 % (at least one
    when there are 10 or more) large (``large_files``)."""
    rng = random.Random(seed)  # noqa: S311 - a reproducible fleet
    large = max(1 if repos >= 10 else 0, round(repos * 0.05))
    medium = round(repos * 0.15)
    sizes = [large_files] * large + [rng.randint(300, 800) for _ in range(medium)]
    sizes += [rng.randint(20, 150) for _ in range(repos - len(sizes))]
    rng.shuffle(sizes)
    return sizes


def linear(points: Sequence[tuple[int, float]], sizes: Sequence[int]) -> float:
    """Σ (a + b·files) over ``sizes`` for the line through the (files, seconds) ``points``."""
    (f0, t0), (f1, t1) = points[0], points[-1]
    b = (t1 - t0) / (f1 - f0) if f1 != f0 else 0.0
    a = t0 - b * f0
    return round(sum(max(0.0, a + b * f) for f in sizes), 1)


def fairness(repos: Sequence[FleetRepo]) -> dict[str, Any]:
    waits = [r.wait_s for r in repos if r.wait_s is not None]
    by_tenant: dict[int, list[float]] = {}
    for r in repos:
        if r.wait_s is not None:
            by_tenant.setdefault(r.tenant, []).append(r.wait_s)
    if not waits:
        return {}
    median = statistics.median(waits)
    tenants = {
        str(t): {"median_s": round(statistics.median(w), 2), "max_s": round(max(w), 2), "repos": len(w)}
        for t, w in sorted(by_tenant.items())
    }
    slowest = max(v["median_s"] for v in tenants.values())
    slowest_max = max(v["max_s"] for v in tenants.values())
    return {
        "wait_median_s": round(median, 2),
        "wait_p95_s": round(sorted(waits)[max(0, int(len(waits) * 0.95) - 1)], 2),
        "wait_max_s": round(max(waits), 2),
        "slowest_tenant_median_over_median": round(slowest / median, 2) if median else None,
        "slowest_tenant_max_over_median": round(slowest_max / median, 2) if median else None,
        "per_tenant": tenants,
    }


def targets(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The issue's three targets, each with its figure and whether it was met."""
    linear_s = report["yardstick"]["linear_s"]
    ready_over = report.get("all_ready_over_linear")
    fair = report.get("slowest_tenant_median_over_median")
    reviews = report.get("day", {}).get("reviews", {})
    expected = reviews.get("pull_request_events", 0) - reviews.get("superseded", 0)
    return {
        "all_ready_within_2x_linear": {
            "all_ready_s": report.get("all_ready_s"),
            "limit_s": round(READY_TARGET * linear_s, 1),
            "met": ready_over is not None and report.get("not_ready", 0) == 0 and ready_over <= READY_TARGET,
        },
        "no_tenant_over_3x_median": {
            "slowest_tenant_median_over_median": fair,
            "limit": FAIRNESS_TARGET,
            "met": fair is not None and fair <= FAIRNESS_TARGET,
        },
        "every_review_within_60s": {
            "within_60s": reviews.get("within_60s"),
            "reviews": expected,
            "met": bool(reviews) and reviews.get("not_posted") == 0 and reviews.get("within_60s") == expected,
        },
    }


class ServiceUsage:
    """Peak RSS of each service process with its children, and its CPU seconds so far (its own,
    its reaped children's and its live children's), sampled every ``interval_s``."""

    def __init__(self, sup: Supervisor, interval_s: float = 0.5) -> None:
        self.sup = sup
        self.interval_s = interval_s
        self.peak_mb: dict[str, float] = {}
        self.cpu_s: dict[str, float] = {}

    def sample(self) -> None:
        for name, p in self.sup.processes.items():
            if p.pid is None:
                continue
            with contextlib.suppress(psutil.Error):
                proc = psutil.Process(p.pid)
                rss = proc.memory_info().rss
                t = proc.cpu_times()
                cpu = t.user + t.system + t.children_user + t.children_system
                for child in proc.children(recursive=True):
                    with contextlib.suppress(psutil.Error):
                        rss += child.memory_info().rss
                        ct = child.cpu_times()
                        cpu += ct.user + ct.system
                self.peak_mb[name] = max(self.peak_mb.get(name, 0.0), round(rss / 2**20, 1))
                self.cpu_s[name] = max(self.cpu_s.get(name, 0.0), cpu)

    def cpu_now(self) -> dict[str, float]:
        self.sample()
        return dict(self.cpu_s)

    async def run(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            self.sample()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), self.interval_s)


def _cpu_between(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
    return {name: round(after[name] - before.get(name, 0.0), 1) for name in sorted(after)}


async def _wait_ready(owner_url: str, repos: Sequence[FleetRepo], timeout_s: float) -> None:
    """Until each of ``repos`` has a ready snapshot, or ``timeout_s``. A repository's ``ready`` is
    when this poll (every 0.25 s) first saw one: the snapshot's ``ready_at`` is its build
    transaction's start (``now()``), not when readiness became visible. A repository's id is read
    once its installation registered it."""
    by_external = {str(r.external_id): r for r in repos}
    deadline = time.monotonic() + timeout_s
    async with await psycopg.AsyncConnection.connect(owner_url, autocommit=True) as conn:
        while True:
            cur = await conn.execute(
                "SELECT r.external_id, r.repository_id::text, bool_or(s.ready_at IS NOT NULL)"
                " FROM repositories r LEFT JOIN code_index_snapshots s ON s.tenant_id = r.tenant_id"
                " AND s.repository_id = r.repository_id"
                " WHERE r.provider = 'github' AND r.external_id = ANY(%s) GROUP BY 1, 2",
                ([k for k, r in by_external.items() if r.ready is None],),
            )
            now = time.time()
            for external_id, repository_id, ready in await cur.fetchall():
                r = by_external[external_id]
                r.repository_id = repository_id
                if ready:
                    r.ready = now
            if all(r.ready is not None for r in repos) or time.monotonic() > deadline:
                return
            await asyncio.sleep(0.25)


async def _db_figures(owner_url: str, since: str) -> dict[str, Any]:
    async with await psycopg.AsyncConnection.connect(owner_url, autocommit=True) as conn:
        cur = await conn.execute(
            "SELECT pg_database_size(current_database()),"
            " (SELECT count(*) FROM outbox WHERE created_at >= %s::timestamptz),"
            " (SELECT extract(epoch FROM max(published_at) - min(published_at)) FROM outbox"
            "  WHERE created_at >= %s::timestamptz)",
            (since, since),
        )
        row = await cur.fetchone()
    assert row is not None
    return {"db_bytes": int(row[0]), "events": int(row[1]), "publish_span_s": float(row[2] or 0.0)}


async def _db_now(owner_url: str) -> str:
    async with await psycopg.AsyncConnection.connect(owner_url, autocommit=True) as conn:
        cur = await conn.execute("SELECT now()::text")
        row = await cur.fetchone()
    assert row is not None
    return str(row[0])


async def run_bench_fleet(
    settings: BaseServiceSettings,
    *,
    repos: int = 24,
    tenants: int = 4,
    replicas: Sequence[int] = (1,),
    large_files: int = 2000,
    seed: int = 1,
    day_s: float = 180.0,
    rates: DayRates = DEFAULT_RATES,
    onboarding_timeout_s: float = 3600.0,
) -> dict[str, Any]:
    """One fleet run per replica count (the same fleet and day each time, on a fresh stack); with
    several counts, each run's report and the speed-up of each over the first."""
    runs = [
        await _run(
            settings,
            repos=repos,
            tenants=tenants,
            replicas=n,
            large_files=large_files,
            seed=seed,
            day_s=day_s,
            rates=rates,
            onboarding_timeout_s=onboarding_timeout_s,
        )
        for n in replicas
    ]
    if len(runs) == 1:
        return runs[0]
    return {"runs": {str(r["replicas"]): r for r in runs}, "speedup": speedup(runs[0], runs[1:])}


def speedup(base: dict[str, Any], others: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Each later run's speed-up over ``base``: the first's figure over its (above 1: faster)."""

    def ratio(a: float | None, b: float | None) -> float | None:
        return round(a / b, 2) if a and b else None

    def review_p95(r: dict[str, Any]) -> float | None:
        value = r.get("day", {}).get("reviews", {}).get("latency_s", {}).get("p95")
        return float(value) if value is not None else None

    def push_p50(r: dict[str, Any]) -> float | None:
        value = r.get("day", {}).get("pushes", {}).get("latency_s", {}).get("p50")
        return float(value) if value is not None else None

    return {
        f"{base['replicas']}_to_{o['replicas']}_replicas": {
            "all_ready": ratio(base.get("all_ready_s"), o.get("all_ready_s")),
            "yardstick_linear": ratio(base["yardstick"]["linear_s"], o["yardstick"]["linear_s"]),
            "wait_median": ratio(base.get("wait_median_s"), o.get("wait_median_s")),
            "review_latency_p95": ratio(review_p95(base), review_p95(o)),
            "push_latency_p50": ratio(push_p50(base), push_p50(o)),
        }
        for o in others
    }


async def _run(
    settings: BaseServiceSettings,
    *,
    repos: int,
    tenants: int,
    replicas: int,
    large_files: int,
    seed: int,
    day_s: float,
    rates: DayRates,
    onboarding_timeout_s: float,
) -> dict[str, Any]:
    home = Path(tempfile.mkdtemp(prefix="palimpsest-fleet-"))
    settings = settings.model_copy(update={"home": home})
    sizes = size_spread(repos, large_files, seed)
    root = home / "github"
    progress(f"fleet: {replicas} replica(s); generating {repos} repositories ({sum(sizes)} files)")
    try:
        with FleetGitHub(root) as gh:
            return await _measure(
                settings, gh, sizes, tenants, replicas, seed, day_s, rates, onboarding_timeout_s
            )
    finally:
        shutil.rmtree(home, ignore_errors=True)


async def _measure(
    settings: BaseServiceSettings,
    gh: FleetGitHub,
    sizes: list[int],
    tenant_count: int,
    replicas: int,
    seed: int,
    day_s: float,
    rates: DayRates,
    onboarding_timeout_s: float,
) -> dict[str, Any]:
    env = {"PALIMPSEST_RETRY_DELAYS_S": "[0.5, 1, 2, 4]", **gh.env()}
    async with (
        open_stack(settings) as stack,
        supervised(settings, stack, extra_env=env, ingest_port=_ingest_port(), replicas=replicas) as sup,
        httpx.AsyncClient(timeout=60.0) as http,
    ):
        admin = sup.processes["ingest"].env["PALIMPSEST_ADMIN_TOKEN"]
        urls = sup.ingest_urls
        yard_tenant = await gh.add_tenant(http, sup.ingest_url, admin, tenant_count, "fleet-yardstick")
        made = [
            await gh.add_tenant(http, sup.ingest_url, admin, t, f"fleet-{t:02d}") for t in range(tenant_count)
        ]
        fleet = [gh.repo(made[i % tenant_count], i, f"repo{i:04d}", files) for i, files in enumerate(sizes)]
        yard = [
            gh.repo(yard_tenant, 0, "yard-small", int(statistics.median(sizes))),
            gh.repo(yard_tenant, 1, "yard-large", max(sizes)),
        ]
        for i, r in enumerate([*fleet, *yard]):
            await asyncio.to_thread(make_repo, r.path, r.files, seed * 100_000 + i)
        usage = ServiceUsage(sup)
        lag = LagSampler(stack.nats_url)
        stop = asyncio.Event()
        samplers = [asyncio.create_task(usage.run(stop)), asyncio.create_task(lag.run(stop))]
        try:
            lag.phase = "yardstick"
            points = await _yardstick(
                gh, http, urls, stack.owner_url, yard_tenant, yard, onboarding_timeout_s
            )
            since = await _db_now(stack.owner_url)
            before = await _db_figures(stack.owner_url, since)
            cpu0 = usage.cpu_now()
            progress(f"fleet: installing {len(fleet)} repositories of {tenant_count} tenants at once")
            lag.phase = "onboarding"
            started = time.time()
            await asyncio.gather(
                *(_install(gh, http, urls, t, [r for r in fleet if r.tenant == t.index]) for t in made)
            )
            await _wait_ready(stack.owner_url, fleet, onboarding_timeout_s)
            ready = [r.ready for r in fleet if r.ready is not None]
            all_ready_s = round(max(ready) - started, 2) if len(ready) == len(fleet) else None
            after = await _db_figures(stack.owner_url, since)
            cpu1 = usage.cpu_now()
            day: dict[str, Any]
            if all_ready_s is None:
                day = {
                    "skipped": f"{len(fleet) - len(ready)} repositories not ready in {onboarding_timeout_s:.0f} s"
                }
                cpu2 = cpu1
            else:
                lag.phase = "day"
                watch = SnapshotWatch(stack.owner_url, [r.repository_id for r in fleet])
                samplers.append(asyncio.create_task(watch.run(stop)))
                played = await run_day(gh, http, urls, made, fleet, day_s, seed, rates)
                progress("fleet: the day's deliveries sent; waiting for its reviews and indexes")
                settle_s = await settle(gh, watch, played, timeout_s=max(REVIEW_TARGET_S * 2, day_s))
                day = day_report(played, day_s, settle_s)
                cpu2 = usage.cpu_now()
        finally:
            stop.set()
            await asyncio.gather(*samplers)
    files = sum(sizes)
    grown = after["db_bytes"] - before["db_bytes"]
    linear_s = linear(points, sizes)
    report: dict[str, Any] = {
        "repos": len(fleet),
        "tenants": tenant_count,
        "replicas": replicas,
        "files": files,
        "sizes": {"min": min(sizes), "median": int(statistics.median(sizes)), "max": max(sizes)},
        "installed_by": "signed installation and installation_repositories deliveries",
        "all_ready_s": all_ready_s,
        "not_ready": len(fleet) - len(ready),
        "yardstick": {"points_files_s": points, "linear_s": linear_s},
        "all_ready_over_linear": round(all_ready_s / linear_s, 2) if all_ready_s and linear_s else None,
        **fairness(fleet),
        "day": day,
        "lag": lag.report(),
        "peak_rss_mb": usage.peak_mb,
        "cpu_s": {"onboarding": _cpu_between(cpu0, cpu1), "day": _cpu_between(cpu1, cpu2)},
        "db_growth_bytes": grown,
        "db_bytes_per_repo": grown // len(fleet),
        "db_bytes_per_file": grown // max(1, files),
        "relay_events": after["events"],
        "relay_events_per_s": round(after["events"] / after["publish_span_s"], 1)
        if after["publish_span_s"]
        else None,
        "redeliveries": gh.redeliveries,
        "unauthorized_api_calls": gh.api.unauthorized,
    }
    report["targets"] = targets(report)
    return report


async def _yardstick(
    gh: FleetGitHub,
    http: httpx.AsyncClient,
    urls: Sequence[str],
    owner_url: str,
    tenant: FleetTenant,
    yard: Sequence[FleetRepo],
    timeout_s: float,
) -> list[tuple[int, float]]:
    """(files, seconds to ready) of each yardstick repository, installed alone one after the other
    (the first by ``installation created``, the next added to it)."""
    progress("fleet: yardstick (a median and a large repository, alone, one tenant)")
    points: list[tuple[int, float]] = []
    for i, r in enumerate(yard):
        await gh.install(http, urls, tenant, [] if i else [r], [r] if i else [])
        await _wait_ready(owner_url, [r], timeout_s)
        if r.wait_s is None:
            raise RuntimeError(f"the yardstick's {r.name} was not ready in {timeout_s:.0f} s")
        points.append((r.files, r.wait_s))
    return points


async def _install(
    gh: FleetGitHub, http: httpx.AsyncClient, urls: Sequence[str], tenant: FleetTenant, repos: list[FleetRepo]
) -> None:
    """A tenant's installation: three quarters of its repositories selected at install time, the
    rest added right after (both webhook paths GitHub takes)."""
    cut = max(1, (len(repos) * 3 + 3) // 4)
    await gh.install(http, urls, tenant, repos[:cut], repos[cut:])
