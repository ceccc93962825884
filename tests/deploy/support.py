"""Helpers for the deploy tests: render the chart with Helm's own engine, offline.

The chart is rendered by ``helm-python-sdk`` (Helm's Go engine through its C ABI: no helm
binary, no cluster, no network) a few times per session, and every rendered manifest is
validated offline: built-in kinds with ``kubernetes-validate``'s bundled schemas, the KEDA
``ScaledObject`` and Prometheus Operator ``ServiceMonitor`` and ``PrometheusRule`` with the CRD schemas in
``tests/deploy/schemas``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import helm_python as helm
import jsonschema
import kubernetes_validate
import yaml

REPO_ROOT = Path(__file__).resolve().parents[2]
CHART_DIR = REPO_ROOT / "helm" / "palimpsest"
SCHEMA_DIR = Path(__file__).resolve().parent / "schemas"
RELEASE = "pal"
NAMESPACE = "palimpsest"

# Oldest Kubernetes the chart supports (Chart.yaml kubeVersion) and a current release.
KUBERNETES_VERSIONS = ("1.29.0", "1.33.0")
LINT_KUBE_VERSION = "v1.33.0"

SERVICES = ("ingest", "recency-scanner", "chunker", "embedder", "analyzer", "reviewer")
CONSUMERS = tuple(s for s in SERVICES if s != "ingest")

CRD_SCHEMAS = {
    ("keda.sh/v1alpha1", "ScaledObject"): "keda.sh_v1alpha1_scaledobject.json",
    ("monitoring.coreos.com/v1", "ServiceMonitor"): "monitoring.coreos.com_v1_servicemonitor.json",
    ("monitoring.coreos.com/v1", "PrometheusRule"): "monitoring.coreos.com_v1_prometheusrule.json",
}

# The chart's own defaults (values.yaml), as a user gets them.
DEFAULT_VALUES: dict[str, Any] = yaml.safe_load((CHART_DIR / "values.yaml").read_text())

# Every optional feature switched on, with non-default references to exercise the templates.
ALL_ON: dict[str, Any] = {
    "autoscaling": {
        "enabled": True,
        "keda": {
            "enabled": True,
            "useHttps": True,
            "authenticationRef": {"name": "nats-monitoring", "kind": "TriggerAuthentication"},
        },
    },
    "metrics": {
        "serviceMonitor": {"enabled": True, "labels": {"release": "prometheus"}},
        "prometheusRule": {"enabled": True, "labels": {"release": "prometheus"}},
    },
    "ingest": {
        "ingress": {
            "enabled": True,
            "className": "nginx",
            "annotations": {"nginx.ingress.kubernetes.io/proxy-body-size": "25m"},
            "tls": [{"secretName": "palimpsest-tls", "hosts": ["palimpsest.example.com"]}],
        }
    },
    "config": {
        "otlpEndpoint": "http://otel-collector.observability.svc:4318",
        "env": {"PALIMPSEST_MAX_DELIVER": "6"},
    },
    "secrets": {
        "natsCreds": {"secretName": "palimpsest-nats", "key": "user.creds"},
        "llmApiKey": {
            "secretName": "palimpsest-llm",
            "key": "api-key",
            "services": ["ingest", "embedder", "analyzer", "reviewer"],
        },
        "extra": [
            {
                "secretName": "palimpsest-admin",
                "key": "admin-token",
                "setting": "admin_token",
                "services": ["ingest"],
            }
        ],
    },
    "networkPolicy": {
        "opsFrom": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}}],
        "ingestFrom": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "ingress"}}}],
    },
    "imagePullSecrets": ["registry-credentials"],
    "serviceAccount": {"annotations": {"iam.example.com/role": "palimpsest"}},
    "services": {
        "chunker": {
            "image": {"digest": "sha256:" + "ab" * 32},
            "nodeSelector": {"pool": "batch"},
            "tolerations": [{"key": "batch", "operator": "Exists", "effect": "NoSchedule"}],
            "env": {"PALIMPSEST_PARSE_WORKERS": "2"},
        },
    },
}


@dataclass(frozen=True)
class Rendered:
    """One rendering of the chart: the parsed manifests and the NOTES text."""

    manifests: list[dict[str, Any]]
    notes: str

    def of_kind(self, kind: str) -> list[dict[str, Any]]:
        return [m for m in self.manifests if m["kind"] == kind]

    def named(self, kind: str, component: str) -> dict[str, Any]:
        found = [m for m in self.of_kind(kind) if component_of(m) == component]
        assert len(found) == 1, f"expected one {kind} for {component}, found {len(found)}"
        return found[0]


def component_of(manifest: dict[str, Any]) -> str:
    """The app.kubernetes.io/component label ("" when absent)."""
    labels = manifest["metadata"].get("labels") or {}
    return str(labels.get("app.kubernetes.io/component", ""))


def render(values: dict[str, Any] | None) -> Rendered:
    """Render the chart as an install of release ``pal`` would, and parse every manifest."""
    with helm.Chart.load(CHART_DIR) as chart:
        files = chart.render(values, name=RELEASE, namespace=NAMESPACE, is_install=True)
    manifests: list[dict[str, Any]] = []
    notes = ""
    for path, text in sorted(files.items()):
        if path.endswith("NOTES.txt"):
            notes = text
        elif path.endswith(".yaml"):
            manifests.extend(doc for doc in yaml.safe_load_all(text) if doc)
    return Rendered(manifests, notes)


def pod_specs(rendered: Rendered) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every pod template of every workload, with a name for messages."""
    for kind in ("Deployment", "Job"):
        for manifest in rendered.of_kind(kind):
            yield f"{kind}/{manifest['metadata']['name']}", manifest["spec"]["template"]["spec"]


def containers(pod: dict[str, Any]) -> list[dict[str, Any]]:
    return [*pod.get("initContainers", []), *pod["containers"]]


def crd_validators() -> dict[tuple[str, str], jsonschema.Draft202012Validator]:
    validators = {}
    for key, filename in CRD_SCHEMAS.items():
        schema = json.loads((SCHEMA_DIR / filename).read_text(encoding="utf-8"))
        jsonschema.Draft202012Validator.check_schema(schema)
        validators[key] = jsonschema.Draft202012Validator(schema)
    return validators


def validate_manifest(
    manifest: dict[str, Any], validators: dict[tuple[str, str], jsonschema.Draft202012Validator]
) -> list[str]:
    """Problems of one manifest against every Kubernetes version in KUBERNETES_VERSIONS."""
    name = f"{manifest.get('kind')}/{manifest.get('metadata', {}).get('name')}"
    crd = validators.get((manifest["apiVersion"], manifest["kind"]))
    if crd is not None:
        return [f"{name}: {'.'.join(map(str, e.path))}: {e.message}" for e in crd.iter_errors(manifest)]
    problems = []
    for version in KUBERNETES_VERSIONS:
        try:
            kubernetes_validate.validate(manifest, version, strict=True)
        except kubernetes_validate.ValidationError as exc:
            path = ".".join(map(str, exc.path))
            problems.append(f"{name} (Kubernetes {version}): {path}: {exc.message}")
        except kubernetes_validate.SchemaNotFoundError as exc:
            problems.append(f"{name}: {exc.message}")
    return problems
