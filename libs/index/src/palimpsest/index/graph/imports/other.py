"""Imports of the remaining parsed languages, resolved by path suffix within the tree.

* Java, Kotlin, Scala: ``com.acme.util.Helper`` is a file ending in ``com/acme/util/Helper``
  (any source root); a static or nested import falls back to the enclosing class's file; a
  wildcard ``com.acme.util.*`` names the package directory's files.
* C#: ``using Acme.Billing;`` names a namespace, matched to a directory ending in
  ``Acme/Billing`` (or ``Billing``) when there is one.
* C and C++: ``#include "x.h"`` relative to the including file, then by path suffix (nearest
  wins); a header found nowhere is a system or third-party header.
* Ruby: ``require_relative`` against the file; ``require "a/b"`` by suffix (``lib/a/b.rb``).
* PHP: ``include``/``require`` like C; ``use App\\Models\\User`` by namespace suffix (PSR-4
  roots such as ``src/`` or ``app/`` replace the vendor prefix).
* Swift: ``import Module`` names ``Sources/Module`` (or another directory of that name).
"""

from __future__ import annotations

import posixpath
import re

from palimpsest.index.graph.facts import FactRow
from palimpsest.index.graph.imports.base import Outcome, ResolveContext, external, resolved, unresolved
from palimpsest.index.graph.tree import Tree, dirname, nearest, normalize, stem_of

__all__ = [
    "resolve_c",
    "resolve_csharp",
    "resolve_jvm",
    "resolve_php",
    "resolve_ruby",
    "resolve_swift",
]

_JVM_SUFFIXES = (".java", ".kt", ".kts", ".scala", ".sc")
_JVM_ROOTS = frozenset({"java", "javax", "kotlin", "scala", "android", "jdk", "sun"})
_BRACES = re.compile(r"\{([^}]*)\}")


def _with_suffix(tree: Tree, stem: str, suffixes: tuple[str, ...], importer: str) -> list[str]:
    found = [path for path in tree.by_stem_suffix(stem) if path.endswith(suffixes)]
    return nearest(found, importer)


def _dir_files(tree: Tree, directory_suffix: str, suffixes: tuple[str, ...], importer: str) -> list[str]:
    directories = nearest(tree.dirs_by_suffix(directory_suffix), importer)
    return [p for d in directories for p in tree.by_dir.get(d, []) if p.endswith(suffixes)]


def _jvm_specs(spec: str) -> list[str]:
    """Scala's ``a.b.{C, D => E}`` expands to ``a.b.C`` and ``a.b.D``."""
    spec = spec.replace("_root_.", "")
    group = _BRACES.search(spec)
    if group is None:
        return [spec.split(" as ", 1)[0].strip()]
    head = spec[: group.start()].rstrip(".")
    names = [item.split("=>", 1)[0].strip() for item in group.group(1).split(",")]
    return [f"{head}.{name}" for name in names if name and name != "_"]


def resolve_jvm(importer: str, fact: FactRow, context: ResolveContext) -> Outcome:
    tree = context.tree
    targets: list[str] = []
    first = ""
    for spec in _jvm_specs(fact.name.strip().rstrip(";")):
        parts = [p for p in spec.split(".") if p]
        if not parts:
            continue
        first = first or parts[0]
        if parts[-1] in {"*", "_"}:
            targets += _dir_files(tree, "/".join(parts[:-1]), _JVM_SUFFIXES, importer)
            continue
        for length in range(len(parts), 1, -1):
            found = _with_suffix(tree, "/".join(parts[:length]), _JVM_SUFFIXES, importer)
            if found:
                targets += found
                break
    if targets:
        return resolved(targets)
    if not first or first in _JVM_ROOTS:
        return external(first or "?")
    return external(".".join(fact.name.split(".")[:2]))


def resolve_csharp(importer: str, fact: FactRow, context: ResolveContext) -> Outcome:
    spec = fact.name.strip().rstrip(";").split("=", 1)[-1].strip()
    parts = [p for p in spec.split(".") if p]
    if not parts:
        return unresolved()
    for start in range(len(parts) - 1):
        files = _dir_files(context.tree, "/".join(parts[start:]), (".cs",), importer)
        if files:
            return resolved(files)
    return external(parts[0])


def resolve_c(importer: str, fact: FactRow, context: ResolveContext) -> Outcome:
    tree = context.tree
    spec = fact.name.strip().strip('<>"')
    if not spec:
        return unresolved()
    local = normalize(posixpath.join(dirname(importer), spec))
    if local is not None and local in tree:
        return resolved([local])
    candidates = [p for p in tree.by_stem_suffix(stem_of(spec)) if p == spec or p.endswith("/" + spec)]
    if candidates:
        return resolved(nearest(candidates, importer))
    return external(spec)


def resolve_ruby(importer: str, fact: FactRow, context: ResolveContext) -> Outcome:
    tree = context.tree
    spec = fact.name.strip()
    if not spec:
        return unresolved()
    if fact.detail == "require_relative" or spec.startswith("."):
        base = normalize(posixpath.join(dirname(importer), spec))
        found = tree.first_existing((base, f"{base}.rb")) if base is not None else None
        return resolved([found]) if found else unresolved()
    stem = spec.removesuffix(".rb")
    found_paths = [p for p in tree.by_stem_suffix(stem) if p.endswith(".rb")]
    if found_paths:
        return resolved(nearest(found_paths, importer))
    return external(stem.split("/", 1)[0])


def resolve_php(importer: str, fact: FactRow, context: ResolveContext) -> Outcome:
    tree = context.tree
    spec = fact.name.strip().rstrip(";")
    if fact.detail in {"include", "require"}:
        return resolve_c(importer, FactRow("import", spec), context) if spec else unresolved()
    spec = re.sub(r"^(?:function|const)\s+", "", spec)
    spec = spec.split(" as ", 1)[0].split("{", 1)[0].strip("\\ ")
    parts = [p for p in spec.split("\\") if p]
    if not parts:
        return unresolved()
    for start in range(len(parts)):
        if len(parts) - start < min(2, len(parts)):
            break
        found = _with_suffix(tree, "/".join(parts[start:]), (".php",), importer)
        if found:
            return resolved(found)
    return external(parts[0])


def resolve_swift(importer: str, fact: FactRow, context: ResolveContext) -> Outcome:
    module = fact.name.strip()
    if not module:
        return unresolved()
    files = _dir_files(context.tree, f"Sources/{module}", (".swift",), importer) or _dir_files(
        context.tree, module, (".swift",), importer
    )
    return resolved(files) if files else external(module)
