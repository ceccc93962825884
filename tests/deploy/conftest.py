"""Session fixtures for the deploy tests: each chart rendering happens once per session."""

from __future__ import annotations

import json
from typing import Any

import helm_python as helm
import jsonschema
import pytest

from .support import ALL_ON, CHART_DIR, Rendered, crd_validators, render


@pytest.fixture(scope="session", name="crd_validators")
def crd_validators_fixture() -> dict[tuple[str, str], jsonschema.Draft202012Validator]:
    return crd_validators()


@pytest.fixture(scope="session")
def default_render() -> Rendered:
    return render(None)


@pytest.fixture(scope="session")
def all_on_render() -> Rendered:
    return render(ALL_ON)


@pytest.fixture(scope="session")
def chart_values() -> dict[str, Any]:
    with helm.Chart.load(CHART_DIR) as chart:
        return chart.values


@pytest.fixture(scope="session")
def values_schema() -> dict[str, Any]:
    schema: dict[str, Any] = json.loads((CHART_DIR / "values.schema.json").read_text("utf-8"))
    return schema
