"""Go imports: a package path under a ``go.mod`` module path is that directory of the tree.

Each ``go.mod`` in the snapshot declares a module path for its directory; an import path that
starts with one (longest match) names a directory, and the import edge goes to that package's
non-test ``.go`` files (split between them). ``vendor/<path>`` is looked at too. Other import
paths are the standard library or third-party modules.
"""

from __future__ import annotations

import posixpath
import re

from palimpsest.index.graph.facts import FactRow
from palimpsest.index.graph.imports.base import Outcome, ResolveContext, external, resolved, unresolved
from palimpsest.index.graph.tree import Tree, dirname

__all__ = ["GoResolver", "module_path"]

_MODULE = re.compile(r"^\s*module\s+\"?([^\s\"/][^\s\"]*)\"?\s*(?://.*)?$", re.MULTILINE)


def module_path(go_mod: str) -> str | None:
    found = _MODULE.search(go_mod)
    return found.group(1) if found else None


def package_files(tree: Tree, directory: str) -> list[str]:
    return [
        path
        for path in tree.by_dir.get(directory, [])
        if path.endswith(".go") and not path.endswith("_test.go")
    ]


class GoResolver:
    def __init__(self, context: ResolveContext) -> None:
        self._tree = context.tree
        modules: list[tuple[str, str]] = []
        for path, text in context.texts.items():
            if posixpath.basename(path) == "go.mod":
                name = module_path(text)
                if name:
                    modules.append((name, dirname(path)))
        modules.sort(key=lambda m: -len(m[0]))
        self._modules = modules

    def resolve(self, importer: str, fact: FactRow) -> Outcome:
        spec = fact.name.strip().strip('"`')
        if not spec:
            return unresolved()
        for module, directory in self._modules:
            if spec == module or spec.startswith(module + "/"):
                rest = spec[len(module) + 1 :]
                target = posixpath.join(directory, rest) if rest else directory
                return resolved(package_files(self._tree, target.strip("/")))
        vendored = package_files(self._tree, f"vendor/{spec}")
        if vendored:
            return resolved(vendored)
        if spec.startswith("."):  # relative imports (GOPATH era)
            target = posixpath.normpath(posixpath.join(dirname(importer), spec))
            return resolved(package_files(self._tree, target))
        parts = spec.split("/")
        return external("/".join(parts[:3]) if "." in parts[0] else parts[0])
