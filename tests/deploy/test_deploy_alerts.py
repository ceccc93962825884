"""The chart's PrometheusRule: off by default, on with one value; every alert names a runbook
section that docs/operations.md has, and queries only metrics a service's /metrics exports."""

from __future__ import annotations

import asyncio
import re
from typing import Any

import httpx

from palimpsest.core.ops import OpsServer

from .support import ALL_ON, REPO_ROOT, Rendered, render

ALERTS = {
    "PalimpsestConsumerLag",
    "PalimpsestDeadLetters",
    "PalimpsestOutboxStuck",
    "PalimpsestStreamReplicaBehind",
    "PalimpsestIndexBuildsFailing",
    "PalimpsestRepositoriesFailing",
    "PalimpsestModelBudgetNearlyExhausted",
}
_FUNCTIONS = {"max", "min", "sum", "by", "increase", "min_over_time", "rate", "avg"}


def _rules(rendered: Rendered) -> list[dict[str, Any]]:
    (rule,) = rendered.of_kind("PrometheusRule")
    return [r for g in rule["spec"]["groups"] for r in g["rules"]]


def _anchors(markdown: str) -> set[str]:
    """GitHub's anchors of the headings of ``markdown``."""
    out = set()
    for line in markdown.splitlines():
        m = re.match(r"^#{1,6}\s+(.*)$", line)
        if m:
            text = re.sub(r"[^\w\- ]", "", m.group(1).strip().lower())
            out.add(text.replace(" ", "-"))
    return out


def test_off_by_default_and_on_with_one_value(default_render: Rendered) -> None:
    assert default_render.of_kind("PrometheusRule") == []
    on = render({"metrics": {"prometheusRule": {"enabled": True}}})
    assert {r["alert"] for r in _rules(on)} == ALERTS


def test_each_alert_names_its_runbook_section(all_on_render: Rendered) -> None:
    anchors = _anchors((REPO_ROOT / "docs" / "operations.md").read_text(encoding="utf-8"))
    for rule in _rules(all_on_render):
        url = rule["annotations"]["runbook_url"]
        page, _, anchor = url.partition("#")
        assert page == "docs/operations.md", url
        assert anchor == rule["alert"].lower() and anchor in anchors, f"{rule['alert']}: no section #{anchor}"
        assert rule["annotations"]["summary"]
        assert rule["labels"]["severity"] in {"info", "warning", "critical"}
    assert ALL_ON["metrics"]["prometheusRule"]["labels"].items() <= (
        all_on_render.of_kind("PrometheusRule")[0]["metadata"]["labels"].items()
    )


async def _exported() -> set[str]:
    """The sample names a service's /metrics serves (a counter's _total, a histogram's _bucket, ...)."""
    ops = OpsServer("127.0.0.1", 0)
    port = ops.bind()
    stop = asyncio.Event()
    task = asyncio.create_task(ops.serve(stop))
    try:
        async with httpx.AsyncClient() as client:
            for _ in range(100):
                try:
                    text = (await client.get(f"http://127.0.0.1:{port}/metrics", timeout=2)).text
                    break
                except httpx.TransportError:
                    await asyncio.sleep(0.05)
            else:
                raise AssertionError("the ops endpoint did not answer")
    finally:
        stop.set()
        await task
    names: set[str] = set()
    suffixes = {"histogram": ("_bucket", "_sum", "_count")}
    for line in text.splitlines():
        m = re.match(r"^# TYPE (\S+) (\w+)$", line)
        if m:  # a counter's TYPE line already names its _total series
            names.update(m.group(1) + s for s in suffixes.get(m.group(2), ("",)))
    return names


async def test_every_expression_queries_exported_metrics(all_on_render: Rendered) -> None:
    exported = await _exported()
    assert "palimpsest_consumer_pending_messages" in exported  # the parse found the registry
    for rule in _rules(all_on_render):
        expr = re.sub(r"\{[^}]*\}|\[[^\]]*\]", "", rule["expr"])  # drop matchers and ranges
        queried = {w for w in re.findall(r"[a-z_][a-z0-9_]*", expr) if w.startswith("palimpsest_")}
        assert queried, rule["alert"]
        assert queried <= exported, f"{rule['alert']} queries {sorted(queried - exported)}, not exported"
        others = set(re.findall(r"[a-z_][a-z0-9_]*", expr)) - queried - _FUNCTIONS
        assert others <= {"consumer", "replica", "tenant", "kind"}, f"{rule['alert']}: {others}"
