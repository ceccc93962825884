"""The operator material in deploy/: the Argo CD example and the OpenTelemetry Collector config."""

from __future__ import annotations

from typing import Any

import helm_python as helm
import yaml

from .support import CHART_DIR, REPO_ROOT, render


def _load(relative: str) -> Any:
    return yaml.safe_load((REPO_ROOT / relative).read_text("utf-8"))


def test_argocd_application_points_at_the_chart_with_valid_values() -> None:
    app = _load("deploy/argocd/application.yaml")
    source = app["spec"]["source"]
    values = source["helm"]["valuesObject"]

    assert (app["apiVersion"], app["kind"]) == ("argoproj.io/v1alpha1", "Application")
    assert (REPO_ROOT / source["path"]).resolve() == CHART_DIR
    with helm.Chart.load(CHART_DIR) as chart:
        chart.validate_schema(values)
    assert render(values).of_kind("ScaledObject")


def test_otel_collector_pipelines_use_only_declared_components() -> None:
    config = _load("deploy/otel/collector.yaml")
    pipelines = config["service"]["pipelines"]

    assert {"traces", "metrics"} <= set(pipelines)
    for pipeline in pipelines.values():
        for section in ("receivers", "processors", "exporters"):
            for component in pipeline.get(section, []):
                assert component in config[section], f"{section}: {component}"
    assert "otlp" in config["receivers"]
    assert config["receivers"]["otlp"]["protocols"]["http"]["endpoint"].endswith(":4318")


def test_grafana_provisioning_is_valid_yaml() -> None:
    config = _load("deploy/grafana/provisioning-dashboards.yaml")

    assert config["providers"][0]["type"] == "file"


def test_operator_docs_exist() -> None:
    for doc in ("deploy/README.md", "helm/palimpsest/README.md"):
        assert len((REPO_ROOT / doc).read_text("utf-8")) > 1000, doc
