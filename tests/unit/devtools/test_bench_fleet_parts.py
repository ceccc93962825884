"""``bench fleet``'s arithmetic: the size spread, the linear yardstick, the fairness figures."""

from __future__ import annotations

from pathlib import Path

from palimpsest.devtools.bench.fleet import FleetRepo, fairness, linear, size_spread


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
