"""``bench fleet``'s simulated day: a Poisson stream of pushes and pull requests, and how fast the
system answered each.

The plan (:func:`day_plan`) is seeded and reproducible. A share of the repositories is active
(``DayRates.active_share``, a quarter by default); each repository's pushes to ``main``, pull
requests opened and pull requests updated (``synchronize``) are independent Poisson processes over
one day compressed into ``day_s`` seconds, with per-day rates of a working team: an active
repository a few pushes and about one pull request a day, a quiet one a push every few days. An
update planned before the repository has a pull request opens one instead.

:func:`run_day` plays the plan in real time: each event makes its commit
(:func:`palimpsest.devtools.bench.fleet_github.commit_change`) and sends its signed delivery.
:func:`settle` then waits until every pull-request event's head has a review posted on the fake
(or a later head of the same pull request has: the earlier one was superseded) and every push is
indexed (a ready snapshot at its commit, or at a later push's commit of the same repository: the
index coalesced them), or until its deadline. :class:`SnapshotWatch` polls the snapshots from the
day's start (every 0.5 s) and keeps when each (repository, commit) was first seen ready: a
snapshot's ``ready_at`` is its build transaction's start, and superseded snapshots are collected
later, so neither the column nor a look after the day would do. :func:`day_report` gives, for
reviews, the latency from the delivery's answer to the review's post on the fake (the fake's
clock), and how many were within :data:`REVIEW_TARGET_S`; for pushes, the latency from the
delivery's answer to the first sight of its snapshot.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx
import psycopg

from palimpsest.cli.output import progress
from palimpsest.devtools.bench.bus import _pct
from palimpsest.devtools.bench.fleet_github import FleetGitHub, FleetRepo, FleetTenant, commit_change, head
from palimpsest.devtools.chaos.github import pull_request_payload, push_payload

REVIEW_TARGET_S = 60.0
KINDS = ("push", "pr_open", "pr_sync")


@dataclass(frozen=True, slots=True)
class DayRates:
    """Events per repository per day."""

    active_share: float = 0.25
    active: tuple[float, float, float] = (4.0, 1.0, 0.5)  # pushes, pull requests opened, updates
    quiet: tuple[float, float, float] = (0.3, 0.05, 0.0)


DEFAULT_RATES = DayRates()


@dataclass(frozen=True, slots=True)
class Planned:
    at_s: float  # offset into the compressed day
    repo: int  # index into the fleet
    kind: str  # push | pr_open | pr_sync


def day_plan(repos: int, day_s: float, seed: int, rates: DayRates = DEFAULT_RATES) -> list[Planned]:
    """The day's events in time order (see the module docstring); the same for the same arguments."""
    rng = random.Random(seed)  # noqa: S311 - a reproducible day
    active = set(rng.sample(range(repos), round(repos * rates.active_share)))
    events: list[Planned] = []
    for i in range(repos):
        for kind, per_day in zip(KINDS, rates.active if i in active else rates.quiet, strict=True):
            if per_day <= 0:
                continue
            t = rng.expovariate(per_day)  # in days
            while t < 1.0:
                events.append(Planned(round(t * day_s, 3), i, kind))
                t += rng.expovariate(per_day)
    events.sort(key=lambda e: (e.at_s, e.repo, KINDS.index(e.kind)))
    opened: set[int] = set()
    plan: list[Planned] = []
    for e in events:
        kind = "pr_open" if e.kind == "pr_sync" and e.repo not in opened else e.kind
        if kind == "pr_open":
            opened.add(e.repo)
        plan.append(Planned(e.at_s, e.repo, kind))
    return plan


@dataclass(slots=True)
class DayEvent:
    planned: Planned
    repo: FleetRepo
    sha: str = ""
    number: int = 0  # pull requests
    sent_at: float = 0.0  # wall clock: the delivery was answered
    status: int | None = None
    done_at: float | None = None  # review posted / push indexed (wall clock)
    superseded: bool = False


@dataclass(slots=True)
class Day:
    plan: list[Planned]
    events: list[DayEvent] = field(default_factory=list)
    started: float = 0.0
    sent_s: float = 0.0


async def _play(
    gh: FleetGitHub,
    http: httpx.AsyncClient,
    urls: Sequence[str],
    tenants: Sequence[FleetTenant],
    fleet: Sequence[FleetRepo],
    p: Planned,
    seed: int,
) -> DayEvent:
    repo = fleet[p.repo]
    tenant = tenants[repo.tenant]
    event = DayEvent(p, repo)
    installation, login = tenant.installation_external_id, tenant.login
    async with repo.lock:  # one writer per repository: its refs move in order
        if p.kind == "push":
            commit = await asyncio.to_thread(commit_change, repo, "main", head(repo), seed)
            payload = push_payload(repo, installation, login, commit, gh.web)
            name = "push"
        else:
            if p.kind == "pr_open":
                number, action = len(repo.prs) + 1, "opened"
                parent = base = head(repo)
            else:
                number, action = max(repo.prs), "synchronize"
                parent, base = repo.prs[number], head(repo)
            commit = await asyncio.to_thread(commit_change, repo, f"pr-{number}", parent, seed)
            repo.prs[number] = commit.sha
            event.number = number
            payload = pull_request_payload(
                repo, installation, login, action, number, base, commit.sha, gh.web
            )
            name = "pull_request"
        event.sha = commit.sha
        done = await gh.send(http, urls, tenant, name, payload)
    event.sent_at, event.status = done.at, done.status
    return event


async def run_day(
    gh: FleetGitHub,
    http: httpx.AsyncClient,
    urls: Sequence[str],
    tenants: Sequence[FleetTenant],
    fleet: Sequence[FleetRepo],
    day_s: float,
    seed: int,
    rates: DayRates = DEFAULT_RATES,
) -> Day:
    """Play the day's plan in real time; returns every event with its delivery's answer."""
    day = Day(day_plan(len(fleet), day_s, seed, rates))
    loop = asyncio.get_running_loop()
    day.started = loop.time()

    async def at(p: Planned) -> DayEvent:
        await asyncio.sleep(max(0.0, day.started + p.at_s - loop.time()))
        return await _play(gh, http, urls, tenants, fleet, p, seed)

    progress(f"fleet: the day, {len(day.plan)} events over {day_s:.0f} s")
    day.events = list(await asyncio.gather(*(at(p) for p in day.plan)))
    day.sent_s = round(loop.time() - day.started, 1)
    return day


@dataclass(slots=True)
class SnapshotWatch:
    """When each (repository id, commit) of ``repository_ids`` was first seen with a ready snapshot."""

    owner_url: str
    repository_ids: list[str]
    interval_s: float = 0.5
    seen: dict[tuple[str, str], float] = field(default_factory=dict)

    async def poll(self, conn: psycopg.AsyncConnection[Any]) -> None:
        cur = await conn.execute(
            "SELECT DISTINCT repository_id::text, commit_sha FROM code_index_snapshots"
            " WHERE ready_at IS NOT NULL AND repository_id = ANY(%s::uuid[])",
            (self.repository_ids,),
        )
        now = time.time()
        for rid, sha in await cur.fetchall():
            self.seen.setdefault((rid, sha), now)

    async def run(self, stop: asyncio.Event) -> None:
        async with await psycopg.AsyncConnection.connect(self.owner_url, autocommit=True) as conn:
            while not stop.is_set():
                await self.poll(conn)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), self.interval_s)


async def settle(gh: FleetGitHub, watch: SnapshotWatch, day: Day, timeout_s: float) -> float:
    """Wait until every event is answered (see the module docstring) or ``timeout_s``; seconds waited."""
    started = time.monotonic()
    pushes = [e for e in day.events if e.planned.kind == "push"]
    reviews = [e for e in day.events if e.planned.kind != "push"]
    while True:
        _mark_reviews(gh, reviews)
        _mark_pushes(watch.seen, pushes)
        if all(e.done_at is not None or e.superseded for e in day.events):
            break
        if time.monotonic() - started > timeout_s:
            break
        await asyncio.sleep(1.0)
    return round(time.monotonic() - started, 1)


def _mark_reviews(gh: FleetGitHub, reviews: Sequence[DayEvent]) -> None:
    with gh.api.lock:
        posted = dict(gh.api.posted_at)
    latest: dict[tuple[str, int], DayEvent] = {}
    for e in sorted(reviews, key=lambda e: e.sent_at):
        latest[(e.repo.full_name, e.number)] = e
    for e in reviews:
        e.done_at = posted.get((e.repo.full_name, e.number, e.sha))
        last = latest[(e.repo.full_name, e.number)]
        # an earlier head of a pull request whose later head got its review: superseded, not late
        e.superseded = e.done_at is None and last is not e and last.done_at is not None


def _mark_pushes(ready: dict[tuple[str, str], float], pushes: Sequence[DayEvent]) -> None:
    by_repo: dict[str, list[DayEvent]] = {}
    for e in sorted(pushes, key=lambda e: e.sent_at):
        by_repo.setdefault(e.repo.repository_id, []).append(e)
    for rid, seq in by_repo.items():
        # a push is indexed when its commit, or a later push's commit, has a ready snapshot
        first: float | None = None
        for e in reversed(seq):
            at = ready.get((rid, e.sha))
            if at is not None:
                first = at if first is None else min(first, at)
            if e.done_at is None and first is not None:
                e.done_at = first
                e.superseded = (rid, e.sha) not in ready


def _latency(values: list[float]) -> dict[str, float]:
    if not values:
        return {}
    return {
        "p50": round(_pct(values, 0.5), 2),
        "p95": round(_pct(values, 0.95), 2),
        "max": round(max(values), 2),
    }


def day_report(day: Day, day_s: float, settle_s: float) -> dict[str, Any]:
    pushes = [e for e in day.events if e.planned.kind == "push"]
    reviews = [e for e in day.events if e.planned.kind != "push"]
    review_lat = [e.done_at - e.sent_at for e in reviews if e.done_at is not None]
    push_lat = [e.done_at - e.sent_at for e in pushes if e.done_at is not None]
    unanswered = [e for e in reviews if e.done_at is None and not e.superseded]
    within = sum(1 for v in review_lat if v <= REVIEW_TARGET_S)
    return {
        "day_s": day_s,
        "events": len(day.events),
        "repos_with_events": len({e.repo.name for e in day.events}),
        "sent_s": day.sent_s,
        "settle_s": settle_s,
        "deliveries_refused": sum(1 for e in day.events if e.status != 202),
        "reviews": {
            "pull_request_events": len(reviews),
            "opened": sum(1 for e in reviews if e.planned.kind == "pr_open"),
            "synchronize": sum(1 for e in reviews if e.planned.kind == "pr_sync"),
            "posted": len(review_lat),
            "superseded": sum(1 for e in reviews if e.superseded),
            "not_posted": len(unanswered),
            "within_60s": within,
            "latency_s": _latency(review_lat),
            "not_posted_examples": [f"{e.repo.full_name}#{e.number}@{e.sha[:10]}" for e in unanswered[:5]],
        },
        "pushes": {
            "sent": len(pushes),
            "indexed": len(push_lat),
            "coalesced": sum(1 for e in pushes if e.superseded),
            "not_indexed": sum(1 for e in pushes if e.done_at is None),
            "latency_s": _latency(push_lat),
        },
    }
