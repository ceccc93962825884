"""Every module of the CLI and of the measurement code imports on its own, in a fresh interpreter.

An import cycle (a command module importing back from ``palimpsest.cli.main``, which imports the
command modules) only shows when the module is the first one imported, so each module gets its
own interpreter. The modules are found on disk, so a new one is checked without being listed.
"""

from __future__ import annotations

import ast
import subprocess
import sys
import tomllib
from collections.abc import Iterable
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
PACKAGES = {
    "palimpsest.cli": ROOT / "libs/cli/src/palimpsest/cli",
    "palimpsest.devtools": ROOT / "libs/devtools/src/palimpsest/devtools",
}


def _modules() -> list[str]:
    found = []
    for package, folder in PACKAGES.items():
        for path in sorted(folder.rglob("*.py")):
            parts = path.relative_to(folder).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found.append(".".join((package, *parts)))
    return found


def test_the_modules_are_found() -> None:
    modules = _modules()
    assert "palimpsest.cli.main" in modules
    assert "palimpsest.cli.commands_ingest" in modules
    assert "palimpsest.devtools.commands_bench" in modules


@pytest.mark.parametrize("module", _modules())
def test_the_module_imports_on_its_own(module: str) -> None:
    proc = subprocess.run(
        [sys.executable, "-c", f"import {module}"], capture_output=True, text=True, timeout=120, check=False
    )
    assert proc.returncode == 0, f"import {module} failed:\n{proc.stderr[-3000:]}"


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def test_no_module_imports_from_main() -> None:
    """``main`` imports the command modules to register them; none of them may import it back."""
    offenders = [
        str(path.relative_to(ROOT))
        for folder in PACKAGES.values()
        for path in folder.rglob("*.py")
        if path.name != "main.py" and "palimpsest.cli.main" in _imports(path)
    ]
    assert offenders == []


# ---------------------------------------------------------------- layering across the packages

# Every first-party package, by the folder it lives in (palimpsest.<name>), and its distribution.
SOURCES = {
    path.name: path
    for path in sorted([*ROOT.glob("libs/*/src/palimpsest/*/"), *ROOT.glob("services/*/src/palimpsest/*/")])
    if (path / "__init__.py").is_file()
}
LIBRARIES = {"core", "index"}
SERVICES = {name for name, path in SOURCES.items() if path.is_relative_to(ROOT / "services")}
# What each package may import besides itself (docs/architecture.md, section 1): the core nothing,
# the index (the review context included) only the core, a service only the two libraries, the
# CLI anything but the measurement code, and the measurement code anything.
ALLOWED = {
    "core": set(),
    "index": {"core"},
    **dict.fromkeys(SERVICES, LIBRARIES),
    "cli": (set(SOURCES) - {"cli", "devtools"}),
    "devtools": set(SOURCES) - {"devtools"},
}


def package_imports(folder: Path) -> dict[str, set[str]]:
    """palimpsest.<package> → the files of ``folder`` that import it (at any depth, lazily too)."""
    found: dict[str, set[str]] = {}
    for path in folder.rglob("*.py"):
        for name in _imports(path):
            parts = name.split(".")
            if parts[0] == "palimpsest" and len(parts) > 1 and parts[1] in SOURCES:
                found.setdefault(parts[1], set()).add(str(path.relative_to(ROOT)))
    return found


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of ``graph`` (a path that returns to its start), or None when it has none."""
    state: dict[str, str] = {}

    def visit(node: str, path: list[str]) -> list[str] | None:
        state[node] = "open"
        for nxt in sorted(graph.get(node, set())):
            if state.get(nxt) == "open":
                return [*path[path.index(nxt) :], nxt]
            if nxt not in state and (cycle := visit(nxt, [*path, nxt])) is not None:
                return cycle
        state[node] = "done"
        return None

    for start in sorted(graph):
        if start not in state and (cycle := visit(start, [start])) is not None:
            return cycle
    return None


def test_the_packages_are_found() -> None:
    assert {"core", "index", "cli", "devtools", "ingest", "reviewer", "analyzer"} <= set(SOURCES)
    assert (SOURCES["index"] / "context" / "assemble.py").is_file()
    assert set(ALLOWED) == set(SOURCES)


def forbidden(package: str, imported: Iterable[str]) -> set[str]:
    """The packages among ``imported`` that ``package`` may not import."""
    return {name for name in imported if name != package and name not in ALLOWED[package]}


def test_imports_point_inward() -> None:
    """A service imports only the libraries (ingest's MCP server runs the review context from
    palimpsest.index.context, not from the reviewer); the index only the core."""
    offenders = {
        f"{package} imports palimpsest.{name}": sorted(files)
        for package, folder in SOURCES.items()
        for name, files in package_imports(folder).items()
        if name in forbidden(package, [name])
    }
    assert offenders == {}


def test_the_layering_rule_refuses_what_it_exists_to_refuse() -> None:
    assert forbidden("ingest", ["core", "index", "ingest", "reviewer", "analyzer"]) == {
        "reviewer",
        "analyzer",
    }
    assert forbidden("index", ["core", "reviewer", "cli"]) == {"reviewer", "cli"}
    assert forbidden("cli", ["reviewer", "devtools"]) == {"devtools"}
    assert forbidden("devtools", ["cli", "reviewer"]) == set()


def test_no_two_packages_import_each_other_in_a_cycle() -> None:
    graph = {package: set(package_imports(folder)) - {package} for package, folder in SOURCES.items()}
    assert find_cycle(graph) is None, f"import cycle: {' → '.join(find_cycle(graph) or [])}"


def test_a_cycle_is_found() -> None:
    assert find_cycle({"cli": {"devtools"}, "devtools": {"cli", "core"}, "core": set()}) in (
        ["cli", "devtools", "cli"],
        ["devtools", "cli", "devtools"],
    )
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": set()}) is None


def _distribution(package: str) -> str:
    return "palimpsest" if package == "cli" else f"palimpsest-{package.replace('_', '-')}"


@pytest.mark.parametrize("package", sorted(SOURCES))
def test_each_package_declares_the_first_party_packages_it_imports(package: str) -> None:
    folder = SOURCES[package]
    pyproject = ROOT / "pyproject.toml" if package == "cli" else folder.parents[2] / "pyproject.toml"
    declared = {
        d.split(";")[0].split("[")[0].strip()
        for d in tomllib.loads(pyproject.read_text())["project"]["dependencies"]
    }
    undeclared = sorted(
        _distribution(imported)
        for imported in package_imports(folder)
        if imported != package and _distribution(imported) not in declared
    )
    assert undeclared == [], f"{pyproject.relative_to(ROOT)} does not declare {undeclared}"


def test_the_measurement_commands_come_through_the_entry_point() -> None:
    from palimpsest.cli.main import cli

    assert {"bench", "chaos"} <= set(cli.commands)  # type: ignore[attr-defined]
