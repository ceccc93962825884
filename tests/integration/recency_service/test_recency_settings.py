"""The recency-scanner's settings: on/off spelling, window, bounds, and the options they make."""

from __future__ import annotations

from pathlib import Path

import pytest

from palimpsest.core.errors import SettingsError
from palimpsest.core.settings import load
from palimpsest.recency_scanner.service import Settings


@pytest.mark.parametrize(("value", "enabled"), [("off", False), ("on", True), ("false", False), ("1", True)])
def test_recency_scan_accepts_on_and_off(value: str, enabled: bool) -> None:
    assert load(Settings, recency_scan=value).scan_options().enabled is enabled


def test_defaults() -> None:
    options = load(Settings).scan_options()
    assert options.enabled is True
    assert options.window is None
    assert (options.max_files_per_commit, options.pair_cap, options.timeout_s) == (30, 50_000, 600.0)


def test_window_and_limits_reach_the_options(tmp_path: Path) -> None:
    options = load(
        Settings,
        recency_window=" 2 years ago ",
        recency_max_files_per_commit="12",
        recency_pair_cap="1000",
        recency_timeout_s="30",
        recency_tmp_dir=str(tmp_path),
        allow_local_sources="true",
        ack_wait_s="6",
    ).scan_options()
    assert options.window == "2 years ago"
    assert (options.max_files_per_commit, options.pair_cap, options.timeout_s) == (12, 1000, 30.0)
    assert options.tmp_dir == tmp_path
    assert options.allow_local_sources is True
    assert options.heartbeat_s == 2.0


def test_a_blank_window_means_no_window() -> None:
    assert load(Settings, recency_window="  ").scan_options().window is None


@pytest.mark.parametrize(
    ("field", "value"),
    [("recency_scan", "maybe"), ("recency_max_files_per_commit", "1"), ("recency_timeout_s", "0")],
)
def test_invalid_values_name_the_variable(field: str, value: str) -> None:
    with pytest.raises(SettingsError) as info:
        load(Settings, **{field: value})
    assert f"PALIMPSEST_{field.upper()}" in str(info.value)
