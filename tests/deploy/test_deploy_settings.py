"""Every ``PALIMPSEST_*`` name the chart and its documented examples set is a setting (or one of
the declared non-settings): a name the services would refuse at start never ships in an example."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from palimpsest.core.settings import check_environment, is_declared, setting_names

from .support import ALL_ON, CHART_DIR, REPO_ROOT, Rendered, containers, pod_specs, render

ARGOCD_APPLICATION = REPO_ROOT / "deploy" / "argocd" / "application.yaml"
VALUES_FILE = CHART_DIR / "values.yaml"


def _values_yaml_example() -> dict[str, Any]:
    """The example of ``config.env`` in values.yaml's comment (``e.g. {NAME: "value"}``)."""
    text = VALUES_FILE.read_text("utf-8")
    found = re.search(r"# -- Extra non-secret settings for every service, e\.g\. (\{[^}]*\})", text)
    assert found, "values.yaml documents an example of config.env"
    example = yaml.safe_load(found.group(1))
    assert isinstance(example, dict) and example
    return {"config": {"env": example}}


def _argocd_values() -> dict[str, Any]:
    app = yaml.safe_load(ARGOCD_APPLICATION.read_text("utf-8"))
    values: dict[str, Any] = app["spec"]["source"]["helm"]["valuesObject"]
    return values


EXAMPLES = {
    "defaults": lambda: None,
    "all-on": lambda: ALL_ON,
    "values.yaml example": _values_yaml_example,
    "argocd application": _argocd_values,
}


def _names(rendered: Rendered) -> dict[str, set[str]]:
    """Per container: its PALIMPSEST_* env names and the palimpsest_* secret files it mounts."""
    out: dict[str, set[str]] = {}
    for where, pod in pod_specs(rendered):
        files = {
            item["path"].upper()
            for volume in pod.get("volumes", [])
            for source in (volume.get("projected") or {}).get("sources", [])
            for item in (source.get("secret") or {}).get("items", [])
            if item["path"].startswith("palimpsest_")
        }
        for container in containers(pod):
            env = {e["name"] for e in container.get("env", []) if e["name"].startswith("PALIMPSEST_")}
            out[f"{where}/{container['name']}"] = env | files
    return out


@pytest.mark.parametrize("example", list(EXAMPLES))
def test_every_name_the_chart_sets_is_a_setting(example: str) -> None:
    names = _names(render(EXAMPLES[example]()))
    assert names, "the chart renders pods"
    for where, found in names.items():
        unknown = sorted(n for n in found if not is_declared(n))
        assert not unknown, f"{example}: {where} sets {unknown}, which no setting declares"
        # and a process started with exactly this environment starts
        check_environment(dict.fromkeys(found, "x"), secrets_dir=None)


def test_the_old_example_would_have_been_refused(tmp_path: Path) -> None:
    """The check the test above relies on fails on the name values.yaml used to show."""
    with pytest.raises(Exception, match="PALIMPSEST_MAX_FILES_PER_REPOSITORY"):
        check_environment({"PALIMPSEST_MAX_FILES_PER_REPOSITORY": "50000"}, secrets_dir=None)
    (tmp_path / "palimpsest_github_app_private_key").write_text("k")
    with pytest.raises(Exception, match="PALIMPSEST_GITHUB_APP_PRIVATE_KEY"):
        check_environment({}, secrets_dir=tmp_path)


def test_the_docs_name_only_real_settings() -> None:
    """Every PALIMPSEST_* name in the operator docs and deploy material is declared."""
    from palimpsest.core.bus import ADVISORY_STREAM, STREAM

    streams = {ADVISORY_STREAM, STREAM}  # JetStream stream names, not environment variables
    sources = [REPO_ROOT / "README.md", *sorted((REPO_ROOT / "docs").glob("*.md"))]
    sources += [
        p for root in ("helm", "deploy") for p in sorted((REPO_ROOT / root).rglob("*")) if p.is_file()
    ]
    bad = []
    for path in sources:
        if path.suffix not in (".md", ".yaml", ".yml", ".txt", ".tpl", ".json", ".py", ".sh", ""):
            continue
        for name in set(re.findall(r"PALIMPSEST_[A-Z0-9_]*[A-Z0-9]", path.read_text("utf-8", "replace"))):
            family = any(n.startswith(name + "_") for n in setting_names())  # "PALIMPSEST_LLM_*"
            if name not in streams and not family and not is_declared(name) and not is_declared(name + "_"):
                bad.append(f"{path.relative_to(REPO_ROOT)}: {name}")
    assert not bad, bad
