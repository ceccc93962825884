"""The Helm chart: lint, offline schema validation of every manifest, and the properties that matter."""

from __future__ import annotations

import json
from typing import Any

import helm_python as helm
import pytest

from .support import (
    ALL_ON,
    CHART_DIR,
    CONSUMERS,
    DEFAULT_VALUES,
    LINT_KUBE_VERSION,
    SERVICES,
    Rendered,
    component_of,
    containers,
    pod_specs,
    render,
    validate_manifest,
)

HELM_WARNING = 2


@pytest.mark.parametrize("values", [None, ALL_ON], ids=["defaults", "all-on"])
def test_helm_lint_is_clean(values: dict[str, Any] | None) -> None:
    report = helm.lint(CHART_DIR, values, strict=True, kube_version=LINT_KUBE_VERSION)

    assert report["errors"] == []
    assert [m for m in report["messages"] if m["severity"] >= HELM_WARNING] == []


@pytest.mark.parametrize("fixture", ["default_render", "all_on_render"])
def test_every_manifest_validates_offline(
    fixture: str, request: pytest.FixtureRequest, crd_validators: Any
) -> None:
    rendered: Rendered = request.getfixturevalue(fixture)

    problems = [p for m in rendered.manifests for p in validate_manifest(m, crd_validators)]

    assert rendered.manifests
    assert problems == []


def test_all_on_renders_every_optional_kind(all_on_render: Rendered) -> None:
    kinds = {m["kind"] for m in all_on_render.manifests}

    assert {
        "Deployment",
        "Service",
        "Ingress",
        "Job",
        "ServiceAccount",
        "ScaledObject",
        "HorizontalPodAutoscaler",
        "PodDisruptionBudget",
        "NetworkPolicy",
        "ServiceMonitor",
        "PrometheusRule",
        "ConfigMap",
    } <= kinds
    assert "Secret" not in kinds


def test_a_deployment_per_service_with_its_own_image_and_module(default_render: Rendered) -> None:
    for service in SERVICES:
        pod = default_render.named("Deployment", service)["spec"]["template"]["spec"]
        (container,) = pod["containers"]
        module = "palimpsest." + service.replace("-", "_")

        assert container["image"] == f"registry.example.com/palimpsest/palimpsest-{service}:0.1.0"
        assert container["command"] == ["python", "-m", module]


def test_probes_and_ops_port(default_render: Rendered) -> None:
    for service in SERVICES:
        pod = default_render.named("Deployment", service)["spec"]["template"]["spec"]
        (container,) = pod["containers"]
        ports = {p["name"]: p["containerPort"] for p in container["ports"]}
        env = {e["name"]: e.get("value") for e in container["env"]}

        assert ports["ops"] == 9090
        assert env["PALIMPSEST_OPS_PORT"] == "9090"
        assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "ops"}
        assert container["startupProbe"]["httpGet"] == {"path": "/healthz", "port": "ops"}
        assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "ops"}


def test_ingest_service_targets_the_http_port(all_on_render: Rendered) -> None:
    pod = all_on_render.named("Deployment", "ingest")["spec"]["template"]["spec"]
    env = {e["name"]: e.get("value") for e in pod["containers"][0]["env"]}
    service = next(
        s for s in all_on_render.of_kind("Service") if s["metadata"]["name"] == "pal-palimpsest-ingest"
    )
    ingress = all_on_render.named("Ingress", "ingest")
    backend = ingress["spec"]["rules"][0]["http"]["paths"][0]["backend"]["service"]

    assert {"name": "http", "containerPort": 8080, "protocol": "TCP"} in pod["containers"][0]["ports"]
    assert env["PALIMPSEST_INGEST_PORT"] == "8080"
    assert env["PALIMPSEST_INGEST_HOST"] == "0.0.0.0"
    assert service["spec"]["ports"][0]["targetPort"] == "http"
    assert service["spec"]["selector"]["app.kubernetes.io/component"] == "ingest"
    assert backend == {"name": "pal-palimpsest-ingest", "port": {"name": "http"}}


def test_each_consumer_scaled_object_names_its_durable_consumer(all_on_render: Rendered) -> None:
    scaled = all_on_render.of_kind("ScaledObject")
    deployments = {d["metadata"]["name"]: component_of(d) for d in all_on_render.of_kind("Deployment")}

    assert sorted(component_of(s) for s in scaled) == sorted(CONSUMERS)
    for obj in scaled:
        (trigger,) = obj["spec"]["triggers"]
        meta = trigger["metadata"]
        consumer = component_of(obj)
        lag = ALL_ON["services"].get(consumer, {}).get("autoscaling", {}).get("lagThreshold")
        defaults = DEFAULT_VALUES["services"][consumer]["autoscaling"]  # set from bench fleet's figures

        assert trigger["type"] == "nats-jetstream"
        assert meta["consumer"] == consumer
        assert meta["stream"] == "PALIMPSEST"
        assert meta["account"] == "$G"
        assert meta["natsServerMonitoringEndpoint"] == "nats.nats.svc.cluster.local:8222"
        assert meta["lagThreshold"] == str(lag or defaults["lagThreshold"])
        assert obj["spec"]["minReplicaCount"] == defaults["minReplicas"]
        assert obj["spec"]["maxReplicaCount"] == defaults["maxReplicas"]
        assert deployments[obj["spec"]["scaleTargetRef"]["name"]] == consumer
        assert trigger["authenticationRef"] == {"name": "nats-monitoring", "kind": "TriggerAuthentication"}


def test_keda_leaves_ingest_to_an_hpa_and_no_target_has_two_scalers(all_on_render: Rendered) -> None:
    hpas = all_on_render.of_kind("HorizontalPodAutoscaler")
    scaled_targets = {s["spec"]["scaleTargetRef"]["name"] for s in all_on_render.of_kind("ScaledObject")}

    assert [component_of(h) for h in hpas] == ["ingest"]
    assert not scaled_targets & {h["spec"]["scaleTargetRef"]["name"] for h in hpas}
    for deployment in all_on_render.of_kind("Deployment"):
        assert "replicas" not in deployment["spec"], "an autoscaled Deployment must not pin replicas"


def test_hpa_fallback_when_keda_is_off() -> None:
    rendered = render({"autoscaling": {"enabled": True, "keda": {"enabled": False}}})
    hpas = rendered.of_kind("HorizontalPodAutoscaler")

    assert rendered.of_kind("ScaledObject") == []
    assert sorted(component_of(h) for h in hpas) == sorted(SERVICES)
    for hpa in hpas:
        (metric,) = hpa["spec"]["metrics"]
        assert metric["resource"]["name"] == "cpu"
        assert hpa["spec"]["minReplicas"] >= 1


def test_defaults_pin_replicas_and_autoscale_nothing(default_render: Rendered) -> None:
    assert default_render.of_kind("ScaledObject") == []
    assert default_render.of_kind("HorizontalPodAutoscaler") == []
    assert default_render.of_kind("ServiceMonitor") == []
    assert default_render.of_kind("Ingress") == []
    assert default_render.named("Deployment", "ingest")["spec"]["replicas"] == 2


@pytest.mark.parametrize("fixture", ["default_render", "all_on_render"])
def test_every_container_runs_restricted_and_non_root(fixture: str, request: pytest.FixtureRequest) -> None:
    rendered: Rendered = request.getfixturevalue(fixture)

    for name, pod in pod_specs(rendered):
        pod_ctx = pod["securityContext"]
        assert pod["automountServiceAccountToken"] is False, name
        assert pod_ctx["seccompProfile"] == {"type": "RuntimeDefault"}, name
        assert pod_ctx["runAsUser"] != 0, name
        mounts = {}
        for container in containers(pod):
            ctx = container["securityContext"]
            assert ctx.get("runAsNonRoot", pod_ctx.get("runAsNonRoot")) is True, name
            assert ctx.get("runAsUser", pod_ctx.get("runAsUser")) != 0, name
            assert ctx["readOnlyRootFilesystem"] is True, name
            assert ctx["allowPrivilegeEscalation"] is False, name
            assert ctx["privileged"] is False, name
            assert ctx["capabilities"]["drop"] == ["ALL"], name
            mounts.update({m["mountPath"]: m["name"] for m in container["volumeMounts"]})
        volumes = {v["name"]: v for v in pod["volumes"]}
        assert "emptyDir" in volumes[mounts["/tmp"]], f"{name}: /tmp must be an emptyDir"


def test_cloning_services_get_a_sizeable_tmp(default_render: Rendered) -> None:
    def tmp_size(service: str) -> str:
        pod = default_render.named("Deployment", service)["spec"]["template"]["spec"]
        return str(next(v for v in pod["volumes"] if v["name"] == "tmp")["emptyDir"]["sizeLimit"])

    assert tmp_size("recency-scanner") == "4Gi"
    assert tmp_size("chunker") == "8Gi"
    assert tmp_size("reviewer") == "1Gi"
    assert tmp_size("ingest") == "1Gi"  # /mcp review_context fetches two commits, as the reviewer does
    assert tmp_size("embedder") == "256Mi"


def test_hook_job_is_a_helm_and_argo_hook_running_migrate_then_bus_init(
    default_render: Rendered,
) -> None:
    job = default_render.named("Job", "migrations")
    annotations = job["metadata"]["annotations"]
    pod = job["spec"]["template"]["spec"]

    assert set(annotations["helm.sh/hook"].split(",")) == {"pre-install", "pre-upgrade"}
    assert annotations["helm.sh/hook-delete-policy"] == "before-hook-creation"
    assert annotations["argocd.argoproj.io/hook"] == "PreSync"
    assert annotations["argocd.argoproj.io/hook-delete-policy"] == "BeforeHookCreation"
    assert [c["command"] for c in containers(pod)] == [
        ["python", "-m", "palimpsest.core.admin", "migrate"],
        ["python", "-m", "palimpsest.core.admin", "bus-init"],
    ]
    assert pod["restartPolicy"] == "Never"
    assert all(c["image"].endswith("palimpsest-ingest:0.1.0") for c in containers(pod))


def test_hook_job_service_account_exists_before_the_job(default_render: Rendered) -> None:
    job = default_render.named("Job", "migrations")
    account = default_render.named("ServiceAccount", "migrations")
    annotations = account["metadata"]["annotations"]

    assert job["spec"]["template"]["spec"]["serviceAccountName"] == account["metadata"]["name"]
    assert annotations["argocd.argoproj.io/hook"] == "PreSync"
    assert int(annotations["helm.sh/hook-weight"]) < int(
        job["metadata"]["annotations"]["helm.sh/hook-weight"]
    )


def _secret_files(pod: dict[str, Any]) -> dict[str, str]:
    volume = next(v for v in pod["volumes"] if v["name"] == "secrets")
    return {
        item["path"]: f"{source['secret']['name']}/{item['key']}"
        for source in volume["projected"]["sources"]
        for item in source["secret"]["items"]
    }


def test_secrets_are_mounted_by_reference_where_needed(all_on_render: Rendered) -> None:
    job_pod = all_on_render.named("Job", "migrations")["spec"]["template"]["spec"]
    files = {
        s: _secret_files(all_on_render.named("Deployment", s)["spec"]["template"]["spec"]) for s in SERVICES
    }

    assert _secret_files(job_pod)["palimpsest_migration_database_url"] == (
        "palimpsest/migration-database-url"
    )
    for service, mounted in files.items():
        assert mounted["palimpsest_database_url"] == "palimpsest/database-url"
        assert mounted["palimpsest_encryption_key"] == "palimpsest/encryption-key"
        assert mounted["nats.creds"] == "palimpsest-nats/user.creds"
        assert "palimpsest_migration_database_url" not in mounted
        assert ("palimpsest_llm_api_key" in mounted) == (
            service in ("ingest", "embedder", "analyzer", "reviewer")
        )
        assert ("palimpsest_admin_token" in mounted) == (service == "ingest")
    for _, pod in pod_specs(all_on_render):
        for container in containers(pod):
            env = {e["name"]: e for e in container["env"]}
            assert env["PALIMPSEST_NATS_CREDS_FILE"]["value"] == "/var/run/secrets/palimpsest/nats.creds"
            assert not any("valueFrom" in e for e in env.values()), "secrets go in files, not env"
            mounts = {m["mountPath"]: m for m in container["volumeMounts"]}
            assert mounts["/var/run/secrets/palimpsest"]["readOnly"] is True


def test_disruption_budgets_and_network_policies_select_each_service(
    all_on_render: Rendered,
) -> None:
    for service in SERVICES:
        pod_labels = all_on_render.named("Deployment", service)["spec"]["template"]["metadata"]["labels"]
        pdb = all_on_render.named("PodDisruptionBudget", service)
        policy = all_on_render.named("NetworkPolicy", service)

        assert pdb["spec"]["selector"]["matchLabels"].items() <= pod_labels.items()
        assert policy["spec"]["podSelector"]["matchLabels"].items() <= pod_labels.items()
        assert set(policy["spec"]["policyTypes"]) == {"Ingress", "Egress"}
        ingress_ports = {p["port"] for rule in policy["spec"]["ingress"] for p in rule["ports"]}
        assert ingress_ports == ({"ops", "http"} if service == "ingest" else {"ops"})
    assert all_on_render.named("NetworkPolicy", "migrations")["spec"]["ingress"] == []


def test_service_monitor_scrapes_every_metrics_service(all_on_render: Rendered) -> None:
    (monitor,) = all_on_render.of_kind("ServiceMonitor")
    selector = monitor["spec"]["selector"]["matchLabels"]
    metrics_services = [
        s for s in all_on_render.of_kind("Service") if selector.items() <= s["metadata"]["labels"].items()
    ]

    assert sorted(component_of(s) for s in metrics_services) == sorted(SERVICES)
    assert monitor["spec"]["endpoints"][0]["port"] == "ops"
    assert monitor["spec"]["endpoints"][0]["path"] == "/metrics"
    assert monitor["metadata"]["labels"]["release"] == "prometheus"
    for service in metrics_services:
        assert service["spec"]["ports"][0]["name"] == "ops"


def test_dashboards_ship_as_labelled_config_maps(default_render: Rendered) -> None:
    maps = [
        m for m in default_render.of_kind("ConfigMap") if m["metadata"]["labels"].get("grafana_dashboard")
    ]
    shipped = {name: json.loads(text) for m in maps for name, text in m["data"].items()}
    on_disk = {p.name: json.loads(p.read_text("utf-8")) for p in (CHART_DIR / "dashboards").glob("*.json")}

    assert all(m["metadata"]["labels"]["grafana_dashboard"] == "1" for m in maps)
    assert shipped == on_disk
    assert len(on_disk) >= 4


def test_notes_render_with_every_feature(all_on_render: Rendered, default_render: Rendered) -> None:
    assert 'KEDA on consumer "chunker"' in all_on_render.notes
    assert "https://palimpsest.example.com/" in all_on_render.notes
    assert "port-forward service/pal-palimpsest-ingest" in default_render.notes


def test_the_validators_catch_a_bad_manifest(crd_validators: Any) -> None:
    """Negative control: the offline validation above would notice a wrong manifest."""
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "x"},
        "spec": {"replicas": "two", "selector": {}, "template": {"spec": {"containers": []}}},
    }
    scaled = {
        "apiVersion": "keda.sh/v1alpha1",
        "kind": "ScaledObject",
        "metadata": {"name": "x"},
        "spec": {
            "scaleTargetRef": {"name": "x"},
            "triggers": [{"type": "nats-jetstream", "metadata": {"lagThreshold": 10}}],
        },
    }
    monitor = {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "ServiceMonitor",
        "metadata": {"name": "x"},
        "spec": {"selector": {}, "endpoints": [{"port": "ops", "intervall": "30s"}]},
    }

    assert validate_manifest(deployment, crd_validators)
    assert validate_manifest(scaled, crd_validators)
    assert validate_manifest(monitor, crd_validators)


def test_clustered_nats_and_a_pooler(default_render: Rendered) -> None:
    """A three-node JetStream seed list with three stream replicas, and PgBouncer in front of
    PostgreSQL: the services get the direct URL for the relay's LISTEN, the hook Job keeps only the
    owner's (direct) URL, and the defaults add neither."""
    seeds = ",".join(f"nats://nats-{i}.nats-headless.nats.svc:4222" for i in range(3))
    clustered = render(
        {
            "config": {"natsUrl": seeds, "streamReplicas": 3},
            "secrets": {"databaseDirectUrl": {"secretName": "palimpsest", "key": "database-direct-url"}},
        }
    )
    for _, pod in pod_specs(clustered):
        for container in containers(pod):
            env = {e["name"]: e.get("value") for e in container["env"]}
            assert env["PALIMPSEST_NATS_URL"] == seeds
            assert env["PALIMPSEST_STREAM_REPLICAS"] == "3"
    for service in SERVICES:
        mounted = _secret_files(clustered.named("Deployment", service)["spec"]["template"]["spec"])
        assert mounted["palimpsest_database_direct_url"] == "palimpsest/database-direct-url"
        default = _secret_files(default_render.named("Deployment", service)["spec"]["template"]["spec"])
        assert "palimpsest_database_direct_url" not in default
    job = _secret_files(clustered.named("Job", "migrations")["spec"]["template"]["spec"])
    assert "palimpsest_database_direct_url" not in job
    assert job["palimpsest_migration_database_url"] == "palimpsest/migration-database-url"
    for _, pod in pod_specs(default_render):
        for container in containers(pod):
            assert {e["name"]: e.get("value") for e in container["env"]}["PALIMPSEST_STREAM_REPLICAS"] == "1"
