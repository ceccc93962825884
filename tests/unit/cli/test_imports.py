"""Every module of the CLI and of the measurement code imports on its own, in a fresh interpreter.

An import cycle (a command module importing back from ``palimpsest.cli.main``, which imports the
command modules) only shows when the module is the first one imported, so each module gets its
own interpreter. The modules are found on disk, so a new one is checked without being listed.
"""

from __future__ import annotations

import ast
import subprocess
import sys
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
