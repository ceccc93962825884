"""Go imports: a package path under a ``go.mod`` module path is that directory of the tree.

Each ``go.mod`` in the snapshot declares a module path for its directory; an import path that
starts with one (longest match) names a directory, and the import edge goes to that package's
non-test ``.go`` files (split between them). A ``replace`` directive whose target is a local
directory (``replace example.com/lib => ../lib``, in a line or a block) maps that module path to
the directory of the tree it names. ``vendor/<path>`` is looked at too. Other import paths are
the standard library or third-party modules.
"""

from __future__ import annotations

import posixpath
import re

from palimpsest.index.graph.facts import FactRow
from palimpsest.index.graph.imports.base import Outcome, ResolveContext, external, resolved, unresolved
from palimpsest.index.graph.tree import Tree, dirname

__all__ = ["GoResolver", "module_path"]

_MODULE = re.compile(r"^\s*module\s+\"?([^\s\"/][^\s\"]*)\"?\s*(?://.*)?$", re.MULTILINE)
_REPLACE_BLOCK = re.compile(r"^\s*replace\s*\((.*?)^\s*\)", re.MULTILINE | re.DOTALL)
_REPLACE_LINE = re.compile(r"^\s*replace\s+(\S.*)$", re.MULTILINE)
_REPLACEMENT = re.compile(r"^\s*(\S+)(?:\s+\S+)?\s*=>\s*(\.{1,2}/\S*|\.{1,2})\s*(?://.*)?$")


def local_replacements(go_mod: str) -> list[tuple[str, str]]:
    """(module path, local directory relative to the ``go.mod``) of each local ``replace``."""
    lines = [line for block in _REPLACE_BLOCK.findall(go_mod) for line in block.splitlines()]
    lines += [line for line in _REPLACE_LINE.findall(go_mod) if not line.lstrip().startswith("(")]
    found = []
    for line in lines:
        match = _REPLACEMENT.match(line)
        if match:
            found.append((match.group(1), match.group(2)))
    return found


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
                for replaced, local in local_replacements(text):
                    target = posixpath.normpath(posixpath.join(dirname(path), local))
                    if not target.startswith(".."):
                        modules.append((replaced, "" if target == "." else target))
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
