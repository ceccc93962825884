"""``palimpsest bench fleet``: onboarding a fleet of repositories across tenants (issue 39 point 4,
its first part), on its own stack with every service as a process (``--replicas`` of each).

Repositories are generated (most small, some medium, a few large: a spread seeded per repository,
so no two share their content), registered through the API all at once per tenant (the
installation moment) and indexed through the bus. Reported:

* ``all_ready_s``: from the first registration until every repository has a ready snapshot;
* per repository its wait (registration → first ready snapshot), and per tenant the median and
  the maximum; ``fairness``: the slowest tenant's median wait against the median of all;
* each service process's peak RSS (with its children, e.g. the chunker's parse workers);
* the database's growth per repository and per indexed file;
* events per second through the relays over the fleet's run.

Yardstick, in the same run and on the same stack before the fleet: one small and one large
repository onboarded alone, for one tenant; a line through both (seconds = a + b·files) scaled to
the fleet's repositories gives ``yardstick_linear_s``, the time one-at-a-time onboarding would take.
The simulated day of pushes and reviews is not part of this bounded form.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import shutil
import statistics
import subprocess
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import psutil
import psycopg

from palimpsest.cli.output import progress
from palimpsest.cli.processes import Supervisor, supervised
from palimpsest.cli.stack import StackInfo, open_stack
from palimpsest.core.settings import BaseServiceSettings
from palimpsest.devtools.bench.index import _fast_import, generate

BYTES_PER_FILE = 1500


@dataclass(slots=True)
class FleetRepo:
    tenant: int
    name: str
    files: int
    path: Path
    repository_id: str = ""
    registered: float = 0.0
    ready: float | None = None

    @property
    def wait_s(self) -> float | None:
        return None if self.ready is None else round(self.ready - self.registered, 2)


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


def make_repo(path: Path, files: int, seed: int) -> None:
    path.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "init", "--quiet", "--bare", "-b", "main", str(path)], check=True)
    corpus = [(p, t) for p, t, _ in generate(files, files * BYTES_PER_FILE, seed=seed)]
    _fast_import(path, corpus, parent=False, message="initial import")


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
    return {
        "wait_median_s": round(median, 2),
        "wait_p95_s": round(sorted(waits)[max(0, int(len(waits) * 0.95) - 1)], 2),
        "wait_max_s": round(max(waits), 2),
        "slowest_tenant_median_over_median": round(slowest / median, 2) if median else None,
        "per_tenant": tenants,
    }


class ServiceRss:
    """Peak RSS of each service process with its children, sampled every ``interval_s``."""

    def __init__(self, sup: Supervisor, interval_s: float = 0.5) -> None:
        self.sup = sup
        self.interval_s = interval_s
        self.peak_mb: dict[str, float] = {}

    def sample(self) -> None:
        for name, p in self.sup.processes.items():
            if p.pid is None:
                continue
            with contextlib.suppress(psutil.Error):
                proc = psutil.Process(p.pid)
                rss = proc.memory_info().rss
                for child in proc.children(recursive=True):
                    with contextlib.suppress(psutil.Error):
                        rss += child.memory_info().rss
                self.peak_mb[name] = max(self.peak_mb.get(name, 0.0), round(rss / 2**20, 1))

    async def run(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            self.sample()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), self.interval_s)


async def _onboard(
    http: httpx.AsyncClient,
    sup: Supervisor,
    stack: StackInfo,
    tenants: list[dict[str, Any]],
    repos: list[FleetRepo],
) -> float:
    """Register ``repos`` (concurrently) and wait until each has a ready snapshot; seconds taken."""
    started = time.monotonic()

    async def register(r: FleetRepo) -> None:
        t = tenants[r.tenant]
        resp = await http.post(
            f"{sup.ingest_url}/v1/tenants/{t['tenant_id']}/repositories",
            headers={"Authorization": f"Bearer {t['api_token']}"},
            json={
                "url": str(r.path),
                "default_branch": "main",
                "visibility": "private",
                "index_mode": "lexical",
            },
        )
        if resp.status_code >= 300:
            raise RuntimeError(f"registering {r.name} answered {resp.status_code}: {resp.text[:200]}")
        r.repository_id = resp.json()["repository_id"]
        r.registered = time.monotonic()

    await asyncio.gather(*(register(r) for r in repos))
    pending = {r.repository_id: r for r in repos}
    async with await psycopg.AsyncConnection.connect(stack.owner_url, autocommit=True) as conn:
        while pending:
            cur = await conn.execute(
                "SELECT DISTINCT repository_id::text FROM code_index_snapshots WHERE state = 'ready'"
                " AND repository_id = ANY(%s::uuid[])",
                (list(pending),),
            )
            now = time.monotonic()
            for (rid,) in await cur.fetchall():
                pending.pop(rid).ready = now
            if pending:
                await asyncio.sleep(0.25)
    return round(time.monotonic() - started, 2)


async def _tenant(http: httpx.AsyncClient, sup: Supervisor, admin: str, name: str) -> dict[str, Any]:
    resp = await http.post(
        f"{sup.ingest_url}/v1/tenants", headers={"Authorization": f"Bearer {admin}"}, json={"name": name}
    )
    resp.raise_for_status()
    return dict(resp.json())


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
    replicas: int = 1,
    large_files: int = 2000,
    seed: int = 1,
) -> dict[str, Any]:
    home = Path(tempfile.mkdtemp(prefix="palimpsest-fleet-"))
    settings = settings.model_copy(update={"home": home, "allow_local_sources": True})
    sizes = size_spread(repos, large_files, seed)
    progress(f"fleet: generating {repos} repositories ({sum(sizes)} files)")
    fleet = [
        FleetRepo(i % tenants, f"repo{i:04d}", files, home / "repos" / f"repo{i:04d}.git")
        for i, files in enumerate(sizes)
    ]
    small_files = int(statistics.median(sizes))
    yard = [
        FleetRepo(0, "yard-small", small_files, home / "repos" / "yard-small.git"),
        FleetRepo(0, "yard-large", max(sizes), home / "repos" / "yard-large.git"),
    ]
    for i, r in enumerate([*fleet, *yard]):
        await asyncio.to_thread(make_repo, r.path, r.files, seed * 100_000 + i)
    env = {"PALIMPSEST_ALLOW_LOCAL_SOURCES": "true"}
    async with (
        open_stack(settings) as stack,
        supervised(settings, stack, extra_env=env, replicas=replicas) as sup,
        httpx.AsyncClient(timeout=60.0) as http,
    ):
        admin = sup.processes["ingest"].env["PALIMPSEST_ADMIN_TOKEN"]
        rss = ServiceRss(sup)
        stop = asyncio.Event()
        sampler = asyncio.create_task(rss.run(stop))
        try:
            progress("fleet: yardstick (one small, then one large repository, alone, one tenant)")
            yard_tenant = [await _tenant(http, sup, admin, "fleet-yardstick")]
            points: list[tuple[int, float]] = []
            for r in yard:
                points.append((r.files, await _onboard(http, sup, stack, yard_tenant, [r])))
            before = await _db_figures(stack.owner_url, await _db_now(stack.owner_url))
            since = await _db_now(stack.owner_url)
            made = [await _tenant(http, sup, admin, f"fleet-{t:02d}") for t in range(tenants)]
            progress(f"fleet: onboarding {repos} repositories of {tenants} tenants at once")
            all_ready_s = await _onboard(http, sup, stack, made, fleet)
            after = await _db_figures(stack.owner_url, since)
        finally:
            stop.set()
            await sampler
    shutil.rmtree(home, ignore_errors=True)
    files = sum(sizes)
    grown = after["db_bytes"] - before["db_bytes"]
    linear_s = linear(points, sizes)
    return {
        "repos": repos,
        "tenants": tenants,
        "replicas": replicas,
        "files": files,
        "sizes": {"min": min(sizes), "median": small_files, "max": max(sizes)},
        "all_ready_s": all_ready_s,
        "yardstick": {"points_files_s": points, "linear_s": linear_s},
        "all_ready_over_linear": round(all_ready_s / linear_s, 2) if linear_s else None,
        **fairness(fleet),
        "peak_rss_mb": rss.peak_mb,
        "db_growth_bytes": grown,
        "db_bytes_per_repo": grown // repos,
        "db_bytes_per_file": grown // max(1, files),
        "relay_events": after["events"],
        "relay_events_per_s": round(after["events"] / after["publish_span_s"], 1)
        if after["publish_span_s"]
        else None,
    }
