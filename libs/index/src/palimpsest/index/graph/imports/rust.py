"""Rust imports: ``mod`` declarations and ``use`` paths through the crate's module tree.

A file's module path follows from its place under the crate's ``src/`` (the directory of the
nearest ``Cargo.toml``): ``src/lib.rs`` is the root, ``src/net/mod.rs`` and ``src/net.rs`` are
``net``. ``use crate::…``, ``self::…``, ``super::…``, a workspace crate's name, or a module
visible from here start the path; the longest prefix that is a module file wins, and brace
groups (``use crate::net::{client, server}``) resolve each item that is a module itself.
Anything else (``std``, third-party crates) is external.
"""

from __future__ import annotations

import posixpath
import re
import tomllib

from palimpsest.index.graph.facts import FactRow
from palimpsest.index.graph.imports.base import Outcome, ResolveContext, external, resolved, unresolved
from palimpsest.index.graph.tree import dirname

__all__ = ["RustResolver"]

_ROOT_FILES = ("lib.rs", "main.rs")
_ALIAS = re.compile(r"\s+as\s+[A-Za-z_]\w*")


def _crate_name(cargo: str) -> str | None:
    try:
        data = tomllib.loads(cargo)
    except tomllib.TOMLDecodeError:
        return None
    package = data.get("package")
    name = package.get("name") if isinstance(package, dict) else None
    lib = data.get("lib")
    if isinstance(lib, dict) and isinstance(lib.get("name"), str):
        name = lib["name"]
    return name.replace("-", "_") if isinstance(name, str) else None


def expand_use(spec: str) -> list[list[str]]:
    """Every path of a use tree: ``a::{b, c::{d, e as f}}`` -> ``[a, b]``, ``[a, c, d]``, ``[a, c, e]``."""
    text = "".join(_ALIAS.sub("", spec).split()).rstrip(";")
    return [path for path in _expand(text) if path]


def _expand(text: str) -> list[list[str]]:
    brace = text.find("{")
    if brace < 0:
        return [[part for part in text.split("::") if part and part not in {"*", "self"}]]
    head = [part for part in text[:brace].split("::") if part]
    inner = text[brace + 1 : text.rfind("}")]
    out: list[list[str]] = []
    for item in _top_level_items(inner):
        out += [head + tail for tail in _expand(item)]
    return out or [head]


def _top_level_items(text: str) -> list[str]:
    items: list[str] = []
    depth = 0
    current: list[str] = []
    for char in text:
        if char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
        if char == "," and depth == 0:
            items.append("".join(current))
            current = []
        else:
            current.append(char)
    items.append("".join(current))
    return [item for item in items if item]


class RustResolver:
    def __init__(self, context: ResolveContext) -> None:
        self._tree = context.tree
        self._crates: dict[str, str] = {}  # crate directory -> its src directory
        self._by_name: dict[str, str] = {}  # crate name -> src directory
        for path, text in context.texts.items():
            if posixpath.basename(path).lower() != "cargo.toml":
                continue
            crate = dirname(path)
            src = f"{crate}/src" if crate else "src"
            self._crates[crate] = src
            name = _crate_name(text)
            if name:
                self._by_name[name] = src

    def _src_of(self, path: str) -> str:
        """The crate root directory of ``path``: the nearest one holding ``lib.rs``/``main.rs``,
        else the crate's ``src``, else (integration tests, examples) the crate's subdirectory
        holding the file."""
        directory = dirname(path)
        probe = directory
        while True:
            if any(posixpath.join(probe, name) in self._tree for name in _ROOT_FILES):
                return probe
            if probe in self._crates:
                src = self._crates[probe]
                if path.startswith(src + "/"):
                    return src
                rest = path[len(probe) + 1 :] if probe else path
                return posixpath.join(probe, rest.split("/", 1)[0]) if "/" in rest else directory
            if not probe:
                break
            probe = dirname(probe)
        return directory

    def _module_of(self, path: str, src: str) -> list[str]:
        rel = path[len(src) + 1 :] if src and path.startswith(src + "/") else path
        parts = rel.removesuffix(".rs").split("/")
        if len(parts) == 1 and parts[0] in {"lib", "main"}:
            return []
        return parts[:-1] if parts[-1] == "mod" else parts

    def _file_of(self, src: str, module: list[str]) -> str | None:
        if not module:
            roots = [*_ROOT_FILES, f"{posixpath.basename(src)}.rs", "mod.rs"]
            return self._tree.first_existing(posixpath.join(src, name) for name in roots)
        base = posixpath.join(src, *module)
        return self._tree.first_existing((f"{base}.rs", f"{base}/mod.rs"))

    def resolve(self, importer: str, fact: FactRow) -> Outcome:
        spec = fact.name.strip().rstrip(";")
        if not spec:
            return unresolved()
        if fact.detail == "mod":
            return self._mod(importer, spec)
        if fact.detail == "extern_crate":
            src = self._by_name.get(spec.replace("-", "_"))
            found = self._file_of(src, []) if src is not None else None
            return resolved([found]) if found else external(spec)
        return self._use(importer, spec)

    def _mod(self, importer: str, name: str) -> Outcome:
        directory = dirname(importer)
        file_name = posixpath.basename(importer)
        nested = posixpath.join(directory, file_name.removesuffix(".rs"), name)
        beside = posixpath.join(directory, name)
        order = [beside] if file_name in {"mod.rs", *_ROOT_FILES} else [nested, beside]  # crate roots: beside
        found = self._tree.first_existing(c for base in order for c in (f"{base}.rs", f"{base}/mod.rs"))
        return resolved([found]) if found else unresolved()

    def _use(self, importer: str, spec: str) -> Outcome:
        paths = expand_use(spec.lstrip(":"))
        if not paths:
            return unresolved()
        src = self._src_of(importer)
        here = self._module_of(importer, src)
        targets: list[str] = []
        externals: list[str] = []
        missing = False
        for segments in paths:
            found = self._path(src, here, segments)
            if isinstance(found, str):
                targets.append(found)
            elif found is None:
                missing = True
            else:
                externals.append(found[0])
        if targets:
            return resolved(targets)
        if missing or not externals:
            return unresolved()
        return external(externals[0])

    def _path(self, src: str, here: list[str], segments: list[str]) -> str | tuple[str] | None:
        """The module file a use path names, ``(crate,)`` for an external crate, else None."""
        head = segments[0]
        if head == "crate":
            base, rest = [], segments[1:]
        elif head in {"self", "super"}:
            base, rest = list(here), list(segments)
            while rest and rest[0] in {"self", "super"}:
                if rest.pop(0) == "super":
                    if not base:  # `super` inside an inline module of this file
                        return self._file_of(src, here)
                    base.pop()
        elif head in self._by_name:
            src, base, rest = self._by_name[head], [], segments[1:]
        elif self._file_of(src, [*here, head]) is not None:
            base, rest = list(here), segments
        elif self._file_of(src, [head]) is not None:
            base, rest = [], segments
        else:
            return (head,)
        path = [*base, *rest]
        for length in range(len(path), len(base) - 1, -1):
            file = self._file_of(src, path[:length])
            if file:
                return file
        return None
