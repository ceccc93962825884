"""The image tooling's own logic: the wheelhouse bookkeeping, the audit verdict, the base script.

No network here: what reaches the package index or an advisory service runs in ``make
images-test``; these tests feed the same functions real files and real pip-audit-shaped output.
"""

from __future__ import annotations

import hashlib
import importlib.util
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest
import yaml

from .support import REPO_ROOT, SERVICES


def _load(name: str) -> ModuleType:
    path = REPO_ROOT / "deploy" / "scripts" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"palimpsest_deploy_{name}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


wheelhouse = _load("wheelhouse")
audit = _load("audit")
images = _load("images")


def _wheel(folder: Path, name: str, content: bytes) -> str:
    (folder / name).write_bytes(content)
    return hashlib.sha256(content).hexdigest()


def test_a_wheelhouse_with_every_pinned_hash_needs_no_download_and_loses_stale_wheels(tmp_path: Path) -> None:
    house = tmp_path / "wheelhouse"
    house.mkdir()
    a = _wheel(house, "a-1.0-py3-none-any.whl", b"a")
    b = _wheel(house, "b-2.0-py3-none-any.whl", b"b")
    _wheel(house, "old-0.1-py3-none-any.whl", b"left over from an older lock")
    requirements = tmp_path / "svc.txt"
    requirements.write_text(
        f"# comment\na==1.0 \\\n    --hash=sha256:{a} \\\n    --hash=sha256:{'0' * 64}\nb==2.0 \\\n"
        f"    --hash=sha256:{b}\n",
        encoding="utf-8",
    )

    assert wheelhouse.entry_hashes(requirements) == [{a, "0" * 64}, {b}]
    assert wheelhouse.satisfied(requirements, {a, b})
    assert not wheelhouse.satisfied(requirements, {a})  # b's wheel is missing: pip must run
    removed = wheelhouse.prune(house, wheelhouse.pinned_hashes([requirements]))
    assert removed == ["old-0.1-py3-none-any.whl"]
    assert sorted(p.name for p in house.iterdir()) == ["a-1.0-py3-none-any.whl", "b-2.0-py3-none-any.whl"]


def test_a_wheelhouse_made_for_another_architecture_counts_for_nothing(tmp_path: Path) -> None:
    house = tmp_path / "wheelhouse"
    house.mkdir()
    digest = _wheel(house, "a-1.0-cp311-cp311-manylinux_2_17_x86_64.whl", b"a")
    (house / wheelhouse.MANIFEST).write_text('{"arch": "x86_64"}', encoding="utf-8")

    assert wheelhouse.present_hashes(house, "x86_64") == {digest}
    assert wheelhouse.present_hashes(house, "aarch64") == set()


def test_wheels_are_chosen_for_the_images_interpreter_not_this_machine(tmp_path: Path) -> None:
    command = wheelhouse.pip_download_command(tmp_path, tmp_path / "svc.txt", "aarch64")

    assert command[command.index("--python-version") + 1] == "3.11"
    assert "--only-binary=:all:" in command and "--require-hashes" in command and "--no-deps" in command
    tags = [command[i + 1] for i, arg in enumerate(command) if arg == "--platform"]
    assert "manylinux_2_36_aarch64" in tags and "manylinux2014_aarch64" in tags
    assert all(tag.endswith("_aarch64") for tag in tags)
    assert not any(tag.startswith("manylinux_2_3" + "7") for tag in tags)  # bookworm's glibc is 2.36
    assert not any("://" in arg for arg in command)  # the index is the machine's pip configuration


def _listing(*deps: dict[str, object]) -> dict[str, object]:
    return {"dependencies": list(deps), "fixes": []}


def test_an_advisory_source_that_knows_no_pin_is_unreachable_not_clean() -> None:
    skipped = {
        "name": "httpx",
        "skip_reason": "Dependency not found on PyPI and could not be audited: httpx (0.28.1)",
    }

    result = audit.summarize("pypi", _listing(skipped, {**skipped, "name": "psycopg"}))

    assert result["status"] == "unreachable" and result["audited"] == 0 and result["skipped"] == 2
    assert "not found on PyPI" in result["detail"]


def test_a_vulnerable_pin_is_listed_with_the_images_that_install_it() -> None:
    vulnerable = {
        "name": "psycopg",
        "version": "3.2.0",
        "vulns": [
            {"id": "PYSEC-0000-1", "aliases": ["CVE-0000-1"], "fix_versions": ["3.2.1"], "description": ""}
        ],
    }
    clean = {"name": "fastapi", "version": "0.1", "vulns": []}

    result = audit.summarize("pypi", _listing(vulnerable, clean, {"name": "x", "skip_reason": "not on PyPI"}))

    assert (result["status"], result["audited"], result["skipped"]) == ("listed", 2, 1)
    [item] = result["vulnerable"]
    assert item["advisories"] == [
        {"id": "PYSEC-0000-1", "aliases": ["CVE-0000-1"], "fix_versions": ["3.2.1"]}
    ]
    assert set(item["images"]) == set(SERVICES)  # every service talks to PostgreSQL


def test_git_images_match_the_dockerfile_and_the_tags_follow_the_chart() -> None:
    dockerfile = (REPO_ROOT / "deploy" / "Dockerfile").read_text("utf-8")
    match = re.search(r'case "\$\{SERVICE\}" in \\\s*\n\s*([a-z|-]+)\)', dockerfile)

    assert match and set(match.group(1).split("|")) == images.GIT_SERVICES
    assert images.SERVICES == SERVICES
    chart = yaml.safe_load((REPO_ROOT / "helm" / "palimpsest" / "Chart.yaml").read_text("utf-8"))
    assert images.project_version(REPO_ROOT) == str(chart["appVersion"])  # the chart's default tag


DPKG_STATUS = """Package: libc6
Status: install ok installed
Architecture: amd64
Source: glibc
Version: 2.36-9+deb12u10

Package: git
Status: deinstall ok config-files
Architecture: amd64
Version: 1:2.39.5-0+deb12u2

Package: python3.11
Status: install ok installed
Architecture: amd64
Version: 3.11.2-6+deb12u6
Description: Interactive high-level object-oriented language
 Python is a high-level, interactive, object-oriented language.
"""


def test_the_sbom_gains_the_images_installed_debian_packages_only() -> None:
    sbom: dict[str, object] = {"components": [{"bom-ref": "pkg:pypi/httpx@0.28.1", "name": "httpx"}]}

    added = images.add_debian_packages(sbom, DPKG_STATUS, 'ID=debian\nVERSION_ID="12"\n')
    again = images.add_debian_packages(sbom, DPKG_STATUS, 'ID=debian\nVERSION_ID="12"\n')

    assert (added, again) == (2, 0)  # git's configuration files alone are not an installed package
    components = sbom["components"]
    assert isinstance(components, list)
    assert [c["name"] for c in components] == ["httpx", "libc6", "python3.11"]
    assert components[1]["purl"] == "pkg:deb/debian/libc6@2.36-9+deb12u10?arch=amd64&distro=debian-12"
    assert components[1]["properties"] == [{"name": "debian:source", "value": "glibc"}]


@pytest.mark.parametrize(
    "script", sorted((REPO_ROOT / "deploy" / "images").glob("*.sh")), ids=lambda p: p.name
)
def test_image_scripts_parse_and_name_no_host(script: Path) -> None:
    assert subprocess.run(["bash", "-n", str(script)], capture_output=True, check=False).returncode == 0
    assert "://" not in script.read_text("utf-8")  # mirrors come from the machine's apt sources


def test_no_image_tool_names_a_package_host() -> None:
    for path in [
        *(REPO_ROOT / "deploy" / "scripts").glob("*.py"),
        REPO_ROOT / "deploy" / "requirements" / "tools.in",
    ]:
        text = path.read_text("utf-8")
        assert not re.search(r"https?://", text), path
