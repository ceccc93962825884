"""values.schema.json: it covers every value in values.yaml and rejects bad ones."""

from __future__ import annotations

from typing import Any

import helm_python as helm
import jsonschema
import pytest

from .support import ALL_ON, CHART_DIR


def _leaf_paths(values: Any, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    if isinstance(values, dict) and values:
        return [p for k, v in values.items() for p in _leaf_paths(v, (*prefix, k))]
    return [prefix]


def _resolve(schema: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in node:
        target: Any = schema
        for part in node["$ref"].removeprefix("#/").split("/"):
            target = target[part]
        node = target
    return node


def _declared(schema: dict[str, Any], path: tuple[str, ...]) -> bool:
    """Whether the schema names every key on the path (free-form maps count as declared)."""
    node = _resolve(schema, schema)
    for key in path:
        properties = node.get("properties")
        if properties is None:
            return node.get("type") == "object" and node.get("additionalProperties") is not False
        if key not in properties:
            return False
        node = _resolve(schema, properties[key])
    return True


def _objects_without_closed_properties(node: Any, where: str = "#") -> list[str]:
    found = []
    if isinstance(node, dict):
        if "properties" in node and node.get("additionalProperties") is not False:
            found.append(where)
        for key, child in node.items():
            found += _objects_without_closed_properties(child, f"{where}/{key}")
    elif isinstance(node, list):
        for i, child in enumerate(node):
            found += _objects_without_closed_properties(child, f"{where}/{i}")
    return found


def test_schema_is_valid_json_schema(values_schema: dict[str, Any]) -> None:
    jsonschema.Draft7Validator.check_schema(values_schema)


def test_schema_declares_every_value(values_schema: dict[str, Any], chart_values: dict[str, Any]) -> None:
    undeclared = [".".join(p) for p in _leaf_paths(chart_values) if not _declared(values_schema, p)]

    assert undeclared == []


def test_schema_closes_every_object_it_describes(values_schema: dict[str, Any]) -> None:
    assert _objects_without_closed_properties(values_schema) == []


@pytest.mark.parametrize("values", [None, ALL_ON], ids=["defaults", "all-on"])
def test_schema_accepts_the_shipped_configurations(values: dict[str, Any] | None) -> None:
    with helm.Chart.load(CHART_DIR) as chart:
        chart.validate_schema(values)


@pytest.mark.parametrize(
    ("values", "where"),
    [
        ({"services": {"chunker": {"replicas": "three"}}}, "/services/chunker/replicas"),
        ({"securityContext": {"readOnlyRootFilesystem": False}}, "readOnlyRootFilesystem"),
        ({"podSecurityContext": {"runAsNonRoot": False}}, "runAsNonRoot"),
        ({"services": {"embedder": {"autoscaling": {"lagThreshold": 0}}}}, "lagThreshold"),
        ({"servicez": {}}, "servicez"),
        ({"services": {"unknown-service": {}}}, "unknown-service"),
        ({"secrets": {"llmApiKey": {"services": ["billing"]}}}, "/secrets/llmApiKey/services"),
        ({"config": {"natsUrl": "http://nats:4222"}}, "/config/natsUrl"),
    ],
)
def test_schema_rejects_a_bad_value(values: dict[str, Any], where: str) -> None:
    with helm.Chart.load(CHART_DIR) as chart, pytest.raises(helm.HelmValuesError) as caught:
        chart.validate_schema(values)

    assert where in str(caught.value)


def test_rendering_refuses_a_bad_value() -> None:
    with helm.Chart.load(CHART_DIR) as chart, pytest.raises(helm.HelmError):
        chart.render({"services": {"chunker": {"replicas": "three"}}}, name="pal", namespace="pal")
