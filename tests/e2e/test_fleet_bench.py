"""``bench fleet`` end to end, small: four repositories of two tenants installed through signed
webhooks from the loopback GitHub (git over https on 127.0.0.1:443), then a short day of pushes and
pull requests; every pull request must get its review posted on the fake, every push indexed.

Palimpsest registers an installation's repositories only as https URLs on the default port, so the
fake git host listens on 127.0.0.1:443: the test is skipped where this user may not bind it.
"""

from __future__ import annotations

import errno
import socket
from pathlib import Path

import pytest

from palimpsest.core.settings import BaseServiceSettings
from palimpsest.devtools.bench.fleet import run_bench_fleet
from palimpsest.devtools.bench.fleet_day import DayRates, day_plan

RATES = DayRates(active_share=1.0, active=(3.0, 2.0, 0.0), quiet=(0.0, 0.0, 0.0))
DAY_S = 20.0
SEED = 3


def _may_bind_443() -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", 443))
        except PermissionError:
            return False
        except OSError as exc:  # taken: the run would fail, and must say so
            return exc.errno == errno.EADDRINUSE
    return True


@pytest.mark.skipif(
    not _may_bind_443(), reason="binding 127.0.0.1:443 needs root or a lower unprivileged port start"
)
async def test_a_small_fleet_is_installed_by_webhook_and_every_pull_request_of_its_day_is_reviewed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plan = day_plan(4, DAY_S, SEED, RATES)
    assert sum(1 for p in plan if p.kind == "pr_open") >= 2 and any(p.kind == "push" for p in plan)
    for name in ("PALIMPSEST_DATABASE_URL", "PALIMPSEST_NATS_URL", "PALIMPSEST_MIGRATION_DATABASE_URL"):
        monkeypatch.delenv(name, raising=False)
    settings = BaseServiceSettings(home=tmp_path / "home")
    report = await run_bench_fleet(
        settings,
        repos=4,
        tenants=2,
        large_files=300,
        seed=SEED,
        day_s=DAY_S,
        rates=RATES,
        onboarding_timeout_s=240,
    )
    assert report["not_ready"] == 0 and report["all_ready_s"] is not None, report
    assert set(report["per_tenant"]) == {"0", "1"}
    day = report["day"]
    assert day["events"] == len(plan) and day["deliveries_refused"] == 0, day
    reviews = day["reviews"]
    assert reviews["pull_request_events"] == sum(1 for p in plan if p.kind != "push")
    assert reviews["not_posted"] == 0 and reviews["posted"] == reviews["pull_request_events"], reviews
    assert day["pushes"]["not_indexed"] == 0 and day["pushes"]["sent"] > 0, day["pushes"]
    assert {"onboarding", "day"} <= set(report["lag"]) and "chunker" in report["lag"]["onboarding"]
    assert report["lag"]["onboarding"]["chunker"]["samples"] > 0
    assert {"ingest", "chunker", "reviewer"} <= set(report["peak_rss_mb"])
    assert report["db_bytes_per_repo"] > 0 and report["relay_events"] > 0
    assert report["unauthorized_api_calls"] == 0
    assert set(report["targets"]) == {
        "all_ready_within_2x_linear",
        "no_tenant_over_3x_median",
        "every_review_within_60s",
    }
