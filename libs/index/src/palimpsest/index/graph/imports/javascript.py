"""JavaScript and TypeScript imports: relative paths, tsconfig aliases, workspace packages.

Resolution follows what bundlers and ``tsc`` do, within the snapshot:

* ``./x`` and ``../x`` against the importing file: the path itself, then with each known
  extension, then ``x/index.*``; a ``.js`` specifier also finds the ``.ts`` file it compiles
  from (TypeScript's ESM convention);
* otherwise the nearest ``tsconfig.json``/``jsconfig.json`` above the importer (following
  ``extends`` inside the repository): ``compilerOptions.paths`` patterns (``@/*`` -> ``src/*``),
  then ``baseUrl``;
* otherwise a workspace package: a ``package.json`` in the tree whose ``name`` the specifier
  starts with (npm, pnpm and yarn workspaces are all such folders). Its ``exports`` map first
  (the subpath exactly, else the longest ``*`` pattern; conditions in the order a source-first
  build reads them: custom conditions such as ``@acme/source``, ``source``, ``development``,
  then ``import``, ``module``, ``default``, ``require``, ``node``, ``browser``, ``types``),
  then ``source``/``module``/``main``/``types``, then ``<dir>/<subpath>``, ``<dir>/src/<subpath>``,
  ``src/index.*``/``index.*``. A built target (``./dist/index.mjs``, ``./lib/x.d.cts``) that is
  not in the tree maps back to its source by convention: the extension goes, a leading build
  folder (``dist``, ``build``, ``lib``, ``esm``, ``cjs``, ``out``, ``types``) becomes ``src``;
* anything else is an external package (``react``, ``@scope/pkg``, ``node:fs``).
"""

from __future__ import annotations

import json
import posixpath
import re
from dataclasses import dataclass, field
from typing import Any

from palimpsest.index.graph.facts import FactRow
from palimpsest.index.graph.imports.base import Outcome, ResolveContext, external, resolved, unresolved
from palimpsest.index.graph.tree import Tree, dirname, normalize

__all__ = ["JavaScriptResolver", "parse_jsonc"]

_EXTENSIONS = (
    ".ts",
    ".tsx",
    ".d.ts",
    ".js",
    ".jsx",
    ".mjs",
    ".cjs",
    ".mts",
    ".cts",
    ".json",
    ".vue",
    ".svelte",
)
_COMPILED = {".js": (".ts", ".tsx"), ".jsx": (".tsx",), ".mjs": (".mts",), ".cjs": (".cts",)}
_ENTRY_FIELDS = ("source", "module", "main", "types", "typings")
_BUILT_SUFFIXES = (".d.ts", ".d.mts", ".d.cts", ".mjs", ".cjs", ".js", ".jsx", ".ts", ".mts", ".cts", ".tsx")
_BUILD_DIRS = frozenset({"dist", "build", "lib", "esm", "cjs", "out", "types", "es", "module", "umd"})
_LATE_CONDITIONS = ("import", "module", "default", "require", "node", "browser", "types")
"""Standard ``exports`` conditions, in the order resolution tries them; any other condition
(``@acme/source``, ``source``, ``development``) names source and is tried first."""
_CONFIG_NAMES = ("tsconfig.json", "jsconfig.json")
_MAX_EXTENDS = 8
_JSONC_TOKENS = re.compile(r'"(?:\\.|[^"\\])*"|//[^\n]*|/\*.*?\*/|,(?=\s*[}\]])', re.DOTALL)


def parse_jsonc(text: str) -> Any:
    """JSON with comments and trailing commas (tsconfig's dialect); ``None`` when unreadable."""

    def keep(match: re.Match[str]) -> str:
        token = match.group(0)
        return token if token.startswith('"') else ""

    try:
        return json.loads(_JSONC_TOKENS.sub(keep, text))
    except ValueError:
        return None


def file_for(tree: Tree, base: str) -> str | None:
    """The file a module path names: itself, with an extension, compiled-from, or its index."""
    if base in tree:
        return base
    for extension in _EXTENSIONS:
        if base + extension in tree:
            return base + extension
    for compiled, sources in _COMPILED.items():
        if base.endswith(compiled):
            stem = base[: -len(compiled)]
            for source in sources:
                if stem + source in tree:
                    return stem + source
    prefix = f"{base}/index" if base else "index"
    for extension in _EXTENSIONS:
        if prefix + extension in tree:
            return prefix + extension
    return None


@dataclass(slots=True)
class _Config:
    base_url: str | None = None  # repository-relative directory
    paths: list[tuple[str, list[str], str]] = field(default_factory=list)  # pattern, targets, base dir


@dataclass(slots=True)
class _Package:
    name: str
    directory: str
    entries: list[str]
    exports: dict[str, Any] | None = None  # subpath ("." or "./x" or "./x/*") -> target


class JavaScriptResolver:
    """Resolves one snapshot's JS/TS import specifiers (configuration parsed once)."""

    def __init__(self, context: ResolveContext) -> None:
        self._tree = context.tree
        self._texts = context.texts
        self._configs: dict[str, _Config | None] = {}
        self._nearest: dict[str, _Config | None] = {}
        self.packages = self._workspace_packages()

    # ------------------------------------------------------------------ configuration

    def _workspace_packages(self) -> list[_Package]:
        packages: list[_Package] = []
        for path, text in self._texts.items():
            if posixpath.basename(path) != "package.json":
                continue
            data = parse_jsonc(text)
            if not isinstance(data, dict) or not isinstance(data.get("name"), str):
                continue
            entries = [data[key] for key in _ENTRY_FIELDS if isinstance(data.get(key), str)]
            packages.append(
                _Package(data["name"], dirname(path), entries, _exports_table(data.get("exports")))
            )
        packages.sort(key=lambda p: -len(p.name))
        return packages

    def _config(self, path: str, depth: int = 0) -> _Config | None:
        if path in self._configs:
            return self._configs[path]
        self._configs[path] = None  # guards against extends cycles
        data = parse_jsonc(self._texts.get(path, ""))
        if not isinstance(data, dict):
            return None
        config = _Config()
        parent = data.get("extends")
        if isinstance(parent, str) and parent.startswith(".") and depth < _MAX_EXTENDS:
            target = normalize(posixpath.join(dirname(path), parent))
            if target is not None:
                target = target if target.endswith(".json") else f"{target}.json"
                inherited = self._config(target, depth + 1)
                if inherited is not None:
                    config = _Config(inherited.base_url, list(inherited.paths))
        options = data.get("compilerOptions")
        if isinstance(options, dict):
            here = dirname(path)
            if isinstance(options.get("baseUrl"), str):
                config.base_url = normalize(posixpath.join(here, options["baseUrl"]))
            if isinstance(options.get("paths"), dict):
                base = config.base_url if config.base_url is not None else here
                config.paths = sorted(
                    (
                        (pattern, [t for t in targets if isinstance(t, str)], base)
                        for pattern, targets in options["paths"].items()
                        if isinstance(targets, list)
                    ),
                    key=lambda entry: -len(entry[0].partition("*")[0]),  # longest prefix wins
                )
        self._configs[path] = config
        return config

    def _config_for(self, directory: str) -> _Config | None:
        if directory in self._nearest:
            return self._nearest[directory]
        found: _Config | None = None
        for name in _CONFIG_NAMES:
            candidate = f"{directory}/{name}" if directory else name
            if candidate in self._texts:
                found = self._config(candidate)
                break
        else:
            found = self._config_for(dirname(directory)) if directory else None
        self._nearest[directory] = found
        return found

    # ------------------------------------------------------------------ resolution

    def resolve(self, importer: str, fact: FactRow) -> Outcome:
        spec = fact.name.strip().split("?", 1)[0]
        if not spec:
            return unresolved()
        if spec.startswith((".", "/")):
            base = normalize(posixpath.join(dirname(importer), spec) if spec.startswith(".") else spec[1:])
            found = file_for(self._tree, base) if base is not None else None
            return resolved([found]) if found else unresolved()
        if spec.startswith("node:"):
            return external(spec)
        aliased = self._aliased(importer, spec)
        if aliased is not None:
            return aliased
        package = self._workspace(spec)
        if package is not None:
            return package
        return external(_package_name(spec))

    def _aliased(self, importer: str, spec: str) -> Outcome | None:
        config = self._config_for(dirname(importer))
        if config is None:
            return None
        for pattern, targets, base in config.paths:
            captured = _match_pattern(pattern, spec)
            if captured is None:
                continue
            for target in targets:
                candidate = normalize(posixpath.join(base, target.replace("*", captured, 1)))
                found = file_for(self._tree, candidate) if candidate is not None else None
                if found:
                    return resolved([found])
            return unresolved()  # an alias of this repository that names no file
        if config.base_url is not None:
            candidate = normalize(posixpath.join(config.base_url, spec))
            found = file_for(self._tree, candidate) if candidate is not None else None
            if found:
                return resolved([found])
        return None

    def _workspace(self, spec: str) -> Outcome | None:
        for package in self.packages:
            if spec != package.name and not spec.startswith(package.name + "/"):
                continue
            rest = spec[len(package.name) + 1 :]
            if package.exports is not None:
                found = self._exported(package, f"./{rest}" if rest else ".")
                if found:
                    return resolved([found])
            if rest:
                for base in (f"{package.directory}/{rest}", f"{package.directory}/src/{rest}"):
                    found = file_for(self._tree, normalize(base) or "")
                    if found:
                        return resolved([found])
                return unresolved()
            for entry in [*package.entries, "src/index", "index"]:
                found = self._source_of(package.directory, entry)
                if found:
                    return resolved([found])
            return unresolved()
        return None

    def _exported(self, package: _Package, subpath: str) -> str | None:
        """The file an ``exports`` map gives ``subpath`` of ``package`` (mapped back to source)."""
        assert package.exports is not None
        value = package.exports.get(subpath)
        captured: str | None = None
        if value is None:
            best = -1
            for key, target in package.exports.items():
                found = _match_pattern(key, subpath) if "*" in key else None
                if found is not None and len(key.partition("*")[0]) > best:
                    best, value, captured = len(key.partition("*")[0]), target, found
        for leaf in _leaves(value):
            target = leaf.replace("*", captured) if captured is not None else leaf
            found = self._source_of(package.directory, target)
            if found:
                return found
        return None

    def _source_of(self, directory: str, target: str) -> str | None:
        """The file ``target`` (relative to a package) names, or the source it is built from."""
        candidate = normalize(posixpath.join(directory, target))
        if candidate is None:
            return None
        found = file_for(self._tree, candidate)
        if found:
            return found
        stem = next((candidate[: -len(s)] for s in _BUILT_SUFFIXES if candidate.endswith(s)), candidate)
        inner = stem[len(directory) + 1 :] if directory else stem
        parts = inner.split("/")
        if len(parts) > 1 and parts[0] in _BUILD_DIRS:
            rest = parts[2:] if len(parts) > 2 and parts[1] in _BUILD_DIRS else parts[1:]
            for base in ("src", ""):
                mapped = normalize(posixpath.join(directory, base, *rest))
                found = file_for(self._tree, mapped) if mapped else None
                if found:
                    return found
        return file_for(self._tree, stem) if stem != candidate else None


def _exports_table(exports: Any) -> dict[str, Any] | None:
    """A package's ``exports`` as subpath -> target (a bare target or conditions mean ``"."``)."""
    if isinstance(exports, (str, list)):
        return {".": exports}
    if not isinstance(exports, dict) or not exports:
        return None
    if any(isinstance(key, str) and key.startswith(".") for key in exports):
        return {key: value for key, value in exports.items() if isinstance(key, str) and key.startswith(".")}
    return {".": exports}


def _leaves(value: Any, depth: int = 0) -> list[str]:
    """The targets of an ``exports`` value, source-naming conditions first."""
    if isinstance(value, str):
        return [value]
    if depth > 6:
        return []
    if isinstance(value, list):
        return [leaf for item in value for leaf in _leaves(item, depth + 1)]
    if not isinstance(value, dict):
        return []  # null: the subpath is not exported
    late = {key: i for i, key in enumerate(_LATE_CONDITIONS)}
    keys = sorted(value, key=lambda key: late.get(key, -1))  # stable: custom conditions keep their order
    return [leaf for key in keys for leaf in _leaves(value[key], depth + 1)]


def _match_pattern(pattern: str, spec: str) -> str | None:
    """What ``*`` captures when ``spec`` matches a tsconfig ``paths`` pattern (``""`` if exact)."""
    if "*" not in pattern:
        return "" if pattern == spec else None
    prefix, _, suffix = pattern.partition("*")
    if spec.startswith(prefix) and spec.endswith(suffix) and len(spec) >= len(prefix) + len(suffix):
        return spec[len(prefix) : len(spec) - len(suffix)]
    return None


def _package_name(spec: str) -> str:
    parts = spec.split("/")
    return "/".join(parts[:2]) if spec.startswith("@") and len(parts) > 1 else parts[0]
