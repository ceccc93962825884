"""``bench fleet``'s parts: the size spread, the linear yardstick, the fairness figures, the day's
Poisson plan, the targets, the speed-up, and the loopback GitHub's listing, deliveries and commits."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import httpx

from palimpsest.devtools.bench.fleet import FleetRepo, fairness, linear, size_spread, speedup, targets
from palimpsest.devtools.bench.fleet_day import DayRates, day_plan
from palimpsest.devtools.bench.fleet_github import commit_change, head, make_repo
from palimpsest.devtools.chaos.github import (
    LISTING_PAGE,
    FakeGitHubAPI,
    installation_payload,
    installation_repositories_payload,
    serving,
)


def test_most_repositories_are_small_and_a_few_large() -> None:
    sizes = size_spread(100, 5000, seed=3)
    assert len(sizes) == 100 and sizes == size_spread(100, 5000, seed=3)
    assert sizes.count(5000) == 5
    assert sum(1 for s in sizes if 300 <= s <= 800) == 15
    assert sum(1 for s in sizes if 20 <= s <= 150) == 80
    assert size_spread(12, 900, seed=1).count(900) == 1  # ten or more: at least one large
    assert 900 not in size_spread(4, 900, seed=1)


def test_the_yardstick_is_the_line_through_both_points_summed_over_the_fleet() -> None:
    points = [(100, 2.0), (1100, 12.0)]  # 1 s + 0.01 s per file
    assert linear(points, [100, 100, 1100]) == 16.0
    assert linear(points, [600]) == 7.0
    assert linear([(50, 3.0), (50, 3.0)], [50, 50]) == 6.0  # one size: its time per repository


def _repo(tenant: int, wait: float | None) -> FleetRepo:
    r = FleetRepo(tenant, "r", 10, Path("/nonexistent"), registered=100.0)
    r.ready = None if wait is None else 100.0 + wait
    return r


def test_fairness_is_the_slowest_tenants_median_against_the_median() -> None:
    repos = [_repo(0, 1.0), _repo(0, 2.0), _repo(1, 2.0), _repo(1, 3.0), _repo(2, 8.0), _repo(2, 10.0)]
    got = fairness(repos)
    assert got["wait_median_s"] == 2.5 and got["wait_max_s"] == 10.0
    assert got["per_tenant"]["2"] == {"median_s": 9.0, "max_s": 10.0, "repos": 2}
    assert got["slowest_tenant_median_over_median"] == 3.6
    assert fairness([_repo(0, None)]) == {}


# ---------------------------------------------------------------------------- the simulated day


def test_the_days_poisson_plan_is_seeded_and_reproducible() -> None:
    plan = day_plan(200, 180.0, seed=5)
    assert plan == day_plan(200, 180.0, seed=5)
    assert plan != day_plan(200, 180.0, seed=6)
    assert all(0 <= p.at_s < 180.0 for p in plan)
    assert [p.at_s for p in plan] == sorted(p.at_s for p in plan)


def test_the_days_rates_are_those_of_a_working_team_and_most_repositories_are_quiet() -> None:
    rates = DayRates()
    repos = 2000
    plan = day_plan(repos, 100.0, seed=11, rates=rates)
    active = round(repos * rates.active_share)
    quiet = repos - active
    pushes = sum(1 for p in plan if p.kind == "push")
    prs = sum(1 for p in plan if p.kind != "push")
    want_pushes = active * rates.active[0] + quiet * rates.quiet[0]
    want_prs = active * sum(rates.active[1:]) + quiet * sum(rates.quiet[1:])
    assert abs(pushes - want_pushes) < 4 * want_pushes**0.5, (pushes, want_pushes)
    assert abs(prs - want_prs) < 4 * want_prs**0.5, (prs, want_prs)
    assert len({p.repo for p in plan}) < repos  # many repositories have a day without an event


def test_an_update_is_never_planned_before_its_pull_request_is_opened() -> None:
    rates = DayRates(active_share=1.0, active=(0.0, 0.5, 6.0))
    plan = day_plan(50, 60.0, seed=2, rates=rates)
    opened: set[int] = set()
    assert any(p.kind == "pr_sync" for p in plan)
    for p in plan:
        assert p.kind != "pr_sync" or p.repo in opened
        if p.kind == "pr_open":
            opened.add(p.repo)


def _report(ready_s: float | None, linear_s: float, fair: float, within: int, posted: int) -> dict[str, Any]:
    return {
        "all_ready_s": ready_s,
        "all_ready_over_linear": None if ready_s is None else round(ready_s / linear_s, 2),
        "not_ready": 0 if ready_s is not None else 1,
        "yardstick": {"linear_s": linear_s},
        "slowest_tenant_median_over_median": fair,
        "day": {
            "reviews": {
                "pull_request_events": 4,
                "superseded": 1,
                "not_posted": 3 - posted,
                "within_60s": within,
            }
        },
    }


def test_each_target_is_met_or_not_by_its_own_figure() -> None:
    met = targets(_report(150.0, 100.0, 2.5, 3, 3))
    assert all(t["met"] for t in met.values()), met
    assert met["all_ready_within_2x_linear"]["limit_s"] == 200.0
    slow = targets(_report(201.0, 100.0, 2.5, 3, 3))
    assert not slow["all_ready_within_2x_linear"]["met"] and slow["no_tenant_over_3x_median"]["met"]
    assert not targets(_report(None, 100.0, 2.5, 3, 3))["all_ready_within_2x_linear"]["met"]
    assert not targets(_report(150.0, 100.0, 3.2, 3, 3))["no_tenant_over_3x_median"]["met"]
    late = targets(_report(150.0, 100.0, 2.5, 2, 3))  # one review posted after 60 s
    assert not late["every_review_within_60s"]["met"]
    lost = targets(_report(150.0, 100.0, 2.5, 2, 2))  # one never posted
    assert not lost["every_review_within_60s"]["met"]


def test_the_speedup_is_the_first_runs_figure_over_the_others() -> None:
    one = {"replicas": 1, "all_ready_s": 300.0, "yardstick": {"linear_s": 200.0}, "wait_median_s": 100.0}
    two = {"replicas": 2, "all_ready_s": 200.0, "yardstick": {"linear_s": 200.0}, "wait_median_s": 80.0}
    got = speedup(one, [two])["1_to_2_replicas"]
    assert got["all_ready"] == 1.5 and got["yardstick_linear"] == 1.0 and got["wait_median"] == 1.25
    assert got["review_latency_p95"] is None  # no day in either run


# ---------------------------------------------------------------------------- the loopback GitHub


def test_the_fake_lists_an_installations_repositories_page_by_page_to_its_token_only() -> None:
    api = FakeGitHubAPI()
    api.listings["tok-a"] = [{"id": i, "full_name": f"a/r{i}"} for i in range(LISTING_PAGE + 5)]
    api.listings["tok-b"] = [{"id": 999, "full_name": "b/only"}]
    with serving(api) as url, httpx.Client() as http:
        first = http.get(
            f"{url}/installation/repositories?per_page=100", headers={"Authorization": "Bearer tok-a"}
        )
        assert first.status_code == 200 and len(first.json()["repositories"]) == LISTING_PAGE
        second = http.get(first.links["next"]["url"], headers={"Authorization": "Bearer tok-a"})
        assert [r["id"] for r in second.json()["repositories"]] == list(range(LISTING_PAGE, LISTING_PAGE + 5))
        assert "next" not in second.links and first.json()["total_count"] == LISTING_PAGE + 5
        other = http.get(f"{url}/installation/repositories", headers={"Authorization": "Bearer tok-b"})
        assert other.json()["repositories"] == [{"id": 999, "full_name": "b/only"}]
        refused = http.get(f"{url}/installation/repositories", headers={"Authorization": "Bearer nope"})
        assert refused.status_code == 401 and api.unauthorized == 1


def test_installation_deliveries_name_the_hosts_repositories_as_ingest_reads_them() -> None:
    from palimpsest.ingest.webhooks import github
    from palimpsest.ingest.webhooks._payload import Node

    tenant_repos = [
        FleetRepo(0, f"r{i}", 10, Path("/nonexistent"), login="acme", external_id=70 + i) for i in range(3)
    ]
    created = installation_payload("created", 55, "acme", tenant_repos[:2], "https://127.0.0.1")
    _, changed = github._installation(Node(created), "installation", "bot")
    assert [r.clone_url for r in changed.added] == [  # type: ignore[union-attr]
        "https://127.0.0.1/acme/r0.git",
        "https://127.0.0.1/acme/r1.git",
    ]
    added = installation_repositories_payload("added", 55, "acme", tenant_repos[2:], web="https://127.0.0.1")
    _, more = github._installation_repositories(Node(added), "installation_repositories", "bot")
    assert [(r.external_id, r.full_name) for r in more.added] == [("72", "acme/r2")]  # type: ignore[union-attr]


def test_a_days_commit_appends_to_a_file_of_the_tree_on_its_branch(tmp_path: Path) -> None:
    repo = FleetRepo(0, "r", 30, tmp_path / "acme" / "r.git", login="acme", external_id=1)
    make_repo(repo.path, 30, seed=4)
    base = head(repo)
    pushed = commit_change(repo, "main", base, seed=4)
    assert head(repo) == pushed.sha and pushed.parent == base and len(pushed.modified) == 1
    pr = commit_change(repo, "pr-1", pushed.sha, seed=4)
    assert head(repo, "pr-1") == pr.sha and head(repo) == pushed.sha  # main did not move
    diff = subprocess.run(
        ["git", "-C", str(repo.path), "diff", "--name-only", pushed.sha, pr.sha],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert diff == sorted([*pr.modified, *pr.added])
