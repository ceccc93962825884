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


def _quickstart_values() -> dict[str, Any]:
    text = (REPO_ROOT / "docs/quickstart-cluster.md").read_text("utf-8")
    blocks = [b for b in text.split("```yaml\n")[1:] if b.startswith("image:")]
    assert len(blocks) == 1, "the quickstart has one values file"
    values: dict[str, Any] = yaml.safe_load(blocks[0].split("```", 1)[0])
    return values


def test_the_cluster_quickstart_values_and_the_argocd_example_configure_a_model() -> None:
    from palimpsest.core.llm import LLMSettings
    from palimpsest.ingest.settings import Settings as IngestSettings

    known = {
        f"PALIMPSEST_{name.upper()}" for name in {*LLMSettings.model_fields, *IngestSettings.model_fields}
    }
    app = _load("deploy/argocd/application.yaml")["spec"]["source"]["helm"]["valuesObject"]
    for values in (_quickstart_values(), app):
        with helm.Chart.load(CHART_DIR) as chart:
            chart.validate_schema(values)
        env = values["config"]["env"]
        assert env["PALIMPSEST_LLM_MODEL"], "a model for reviews and analyses"
        assert set(env) <= known, set(env) - known
        assert values["secrets"]["llmApiKey"]["secretName"]
        ingest = render(values).named("Deployment", "ingest")
        names = {e["name"] for e in ingest["spec"]["template"]["spec"]["containers"][0]["env"]}
        assert {"PALIMPSEST_LLM_MODEL", "PALIMPSEST_BOT_NAME"} <= names
