"""Python imports: relative imports, and absolute ones anchored at a source root.

``from ..x import y`` is resolved against the importing file's package. An absolute import
``a.b.c`` is looked for as a path ending in ``a/b/c.py`` or ``a/b/c/__init__.py`` whose root —
the directory above ``a`` — is a *source root*: a directory that is not itself a regular
package (no ``__init__.py``). That is how the interpreter finds it on ``sys.path``, and it is
what keeps ``import json`` from resolving to ``src/flask/json/__init__.py``. Namespace packages
(no ``__init__.py`` anywhere, like ``palimpsest`` here) resolve because their root is not a
package either. ``from a.b import c`` tries the submodule ``a/b/c`` first, then ``a/b``; an
import of a name inside a module resolves to the module (the longest existing prefix).
"""

from __future__ import annotations

from palimpsest.index.graph.facts import FactRow
from palimpsest.index.graph.imports.base import Outcome, ResolveContext, external, resolved, unresolved
from palimpsest.index.graph.tree import Tree, dirname, nearest, normalize

__all__ = ["resolve_python"]

_SUFFIXES = (".py", ".pyi")


def _module_files(tree: Tree, base: str) -> list[str]:
    """The file(s) of module path ``base`` (no extension): ``base.py`` or ``base/__init__.py``."""
    found = [base + suffix for suffix in _SUFFIXES if base + suffix in tree]
    if found:
        return found[:1]
    return [f"{base}/__init__{suffix}" for suffix in _SUFFIXES if f"{base}/__init__{suffix}" in tree][:1]


def _is_source_root(tree: Tree, directory: str) -> bool:
    prefix = f"{directory}/" if directory else ""
    return f"{prefix}__init__.py" not in tree and f"{prefix}__init__.pyi" not in tree


def _anchored(tree: Tree, dotted: list[str]) -> list[str]:
    """Files for module ``dotted`` under any source root."""
    key = "/".join(dotted)
    found: list[str] = []
    for stem_key, init in ((key, False), (f"{key}/__init__", True)):
        for path in tree.by_stem_suffix(stem_key):
            if not path.endswith(_SUFFIXES):
                continue
            depth = len(dotted) + (1 if init else 0)
            root = "/".join(path.split("/")[:-depth])
            if _is_source_root(tree, root):
                found.append(path)
        if found:
            return found
    return found


def _relative(importer: str, spec: str, imported: str | None, tree: Tree) -> Outcome:
    dots = len(spec) - len(spec.lstrip("."))
    base: str | None = dirname(importer)
    for _ in range(dots - 1):
        if not base:
            return unresolved()
        base = dirname(base)
    rest = spec[dots:].replace(".", "/")
    module = normalize(f"{base}/{rest}" if base and rest else (rest or base or ""))
    if module is None:
        return unresolved()
    if imported and imported != "*":
        submodule = _module_files(tree, f"{module}/{imported}" if module else imported)
        if submodule:
            return resolved(submodule)
    if not module:
        return resolved([path for path in ("__init__.py", "__init__.pyi") if path in tree][:1])
    return resolved(_module_files(tree, module))


def resolve_python(importer: str, fact: FactRow, context: ResolveContext) -> Outcome:
    spec = fact.name.strip()
    if not spec:
        return unresolved()
    tree = context.tree
    if spec.startswith("."):
        return _relative(importer, spec, fact.target, tree)
    dotted = [part for part in spec.split(".") if part]
    imported = fact.target if fact.target and fact.target != "*" else None
    attempts = ([[*dotted, imported]] if imported else []) + [dotted[:n] for n in range(len(dotted), 0, -1)]
    for attempt in attempts:
        found = _anchored(tree, attempt)
        if found:
            return resolved(nearest(found, importer))
    return external(dotted[0])
