"""The Grafana dashboards query only metrics the code registers, and cover what operators watch."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from palimpsest.core.metrics import REGISTRY

from .support import CHART_DIR, REPO_ROOT

DASHBOARDS = sorted((CHART_DIR / "dashboards").glob("*.json"))

# PromQL words that look like metric names but are not.
_KEYWORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "bool", "offset",
             "and", "or", "unless", "inf", "nan"}  # fmt: skip
_LABEL_LISTS = re.compile(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)")
_IDENTIFIER = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")


def exposed_metric_names() -> set[str]:
    """Names the /metrics endpoint exposes for everything in palimpsest.core.metrics."""
    suffixes = {
        "counter": ("_total",),
        "histogram": ("_bucket", "_sum", "_count"),
        "gauge": ("",),
        "summary": ("_sum", "_count", ""),
    }
    return {family.name + suffix for family in REGISTRY.collect() for suffix in suffixes[family.type]}


def metric_names(expr: str) -> set[str]:
    """Metric names a PromQL expression (or a Grafana label_values() query) reads."""
    expr = re.sub(r"label_values\(([^,()]*(?:\{[^}]*\})?)\s*,\s*\w+\s*\)", r"\1", expr)
    expr = re.sub(r'"(?:[^"\\]|\\.)*"', "", expr)
    expr = re.sub(r"\{[^}]*\}", "", expr)
    expr = re.sub(r"\[[^\]]*\]", "", expr)
    expr = re.sub(r"\$\{?\w+\}?", "", expr)
    expr = _LABEL_LISTS.sub("", expr)
    expr = re.sub(r"\b[0-9][0-9a-zA-Z.+-]*", "", expr)
    names = set()
    for match in _IDENTIFIER.finditer(expr):
        rest = expr[match.end() :].lstrip()
        if rest.startswith("(") or match.group() in _KEYWORDS:
            continue
        names.add(match.group())
    return names


def _panels(panels: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    for panel in panels:
        yield panel
        yield from _panels(panel.get("panels", []))


def queries(dashboard: dict[str, Any]) -> Iterator[str]:
    """Every PromQL expression of the panels and every templating query."""
    for panel in _panels(dashboard["panels"]):
        for target in panel.get("targets", []):
            yield target["expr"]
    for variable in dashboard.get("templating", {}).get("list", []):
        if variable["type"] == "query":
            query = variable["query"]
            yield query["query"] if isinstance(query, dict) else query


@pytest.fixture(scope="module")
def dashboards() -> dict[str, dict[str, Any]]:
    return {p.name: json.loads(p.read_text("utf-8")) for p in DASHBOARDS}


def test_metric_name_extraction() -> None:
    expr = (
        'histogram_quantile(0.95, sum by (le, consumer) (rate(a_bucket{consumer=~"$consumer"}'
        "[$__rate_interval]))) / ignoring(x) sum without (pod) (b_total offset 5m) or vector(0)"
    )

    assert metric_names(expr) == {"a_bucket", "b_total"}
    assert metric_names("label_values(palimpsest_x_total, tenant)") == {"palimpsest_x_total"}
    assert "palimpsest_events_consumed" not in exposed_metric_names()  # counters end in _total


def test_every_queried_metric_is_registered(dashboards: dict[str, dict[str, Any]]) -> None:
    known = exposed_metric_names()
    unknown = {
        f"{name}: {metric}"
        for name, dashboard in dashboards.items()
        for expr in queries(dashboard)
        for metric in metric_names(expr)
        if metric not in known
    }

    assert known, "palimpsest.core.metrics registers no metric"
    assert unknown == set()


def test_dashboards_cover_what_operators_watch(dashboards: dict[str, dict[str, Any]]) -> None:
    used = {m for d in dashboards.values() for e in queries(d) for m in metric_names(e)}

    assert {
        "palimpsest_events_consumed_total",  # pipeline throughput per consumer
        "palimpsest_consumer_pending_messages",  # lag per consumer
        "palimpsest_index_build_seconds_bucket",  # index build duration
        "palimpsest_index_builds_total",  # failures by reason
        "palimpsest_recency_scans_total",  # recency scan failures
        "palimpsest_embedding_runs_total",  # embedding state
        "palimpsest_llm_tokens_total",  # tokens by feature and tenant
        "palimpsest_llm_cost_usd_total",  # cost by feature and tenant
        "palimpsest_webhook_deliveries_total",  # deliveries by outcome
        "palimpsest_dead_letters_total",  # dead letters
        "palimpsest_review_seconds_bucket",  # review latency
        "palimpsest_review_feedback_total",  # finding acceptance by category and repository
    } <= used


def test_dashboards_are_well_formed(dashboards: dict[str, dict[str, Any]]) -> None:
    uids = [d["uid"] for d in dashboards.values()]

    assert len(set(uids)) == len(uids)
    for name, dashboard in dashboards.items():
        panels = list(_panels(dashboard["panels"]))
        ids = [p["id"] for p in panels]
        assert len(set(ids)) == len(ids), name
        assert dashboard["title"].startswith("Palimpsest / "), name
        for panel in panels:
            if panel["type"] == "row":
                continue
            assert panel["datasource"]["uid"] == "${datasource}", f"{name}: {panel['title']}"
            assert panel["targets"], f"{name}: {panel['title']}"


def test_deploy_grafana_folder_is_the_charts_dashboards() -> None:
    folder = REPO_ROOT / "deploy" / "grafana" / "dashboards"

    assert sorted(p.name for p in folder.glob("*.json")) == [p.name for p in DASHBOARDS]
    for path in DASHBOARDS:
        assert (folder / path.name).read_bytes() == Path(path).read_bytes()
