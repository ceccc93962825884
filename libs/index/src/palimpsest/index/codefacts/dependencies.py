"""What belongs to someone else: the packages a repository's manifests declare, and each
language's standard library. One answer for every caller that must tell this repository's names
from a dependency's (the documentation check first of all).

:func:`is_manifest` says which files declare dependencies; :func:`read_manifest` reads one with
the format's own parser (``tomllib`` for ``pyproject.toml`` and ``Cargo.toml``, ``json`` for
``package.json``, :mod:`packaging.requirements` for ``requirements*.txt``, ``xml.etree`` for
``pom.xml``; ``go.mod``, ``Gemfile``, ``*.gemspec`` and ``build.gradle`` are read line by line,
as their own tools' simplest forms are written); :class:`Dependencies` gathers them, keyed by
the name a program imports them under (:func:`import_names`).

:func:`standard_module` answers for the standard libraries: Python's
:data:`sys.stdlib_module_names`; Node's built-in modules (:data:`NODE_BUILTINS`, taken from
``require('module').builtinModules`` of Node 20, with their ``node:`` forms); Go's rule that an
import path whose first element has no dot is the standard library's; Rust's ``std``, ``core``,
``alloc``, ``proc_macro`` and ``test``; Java's ``java.``, ``javax.`` and ``jdk.``.
"""

from __future__ import annotations

import json
import re
import sys
import tomllib
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from packaging.requirements import InvalidRequirement, Requirement

from palimpsest.core.jsonshape import JsonObject

__all__ = [
    "NODE_BUILTINS",
    "Dependencies",
    "Manifest",
    "import_names",
    "is_manifest",
    "read_manifest",
    "read_manifests",
    "standard_module",
    "standard_roots",
]

NODE_BUILTINS = frozenset(
    [
        "assert", "assert/strict", "async_hooks", "buffer", "child_process", "cluster", "console",
        "constants", "crypto", "dgram", "diagnostics_channel", "dns", "dns/promises", "domain",
        "events", "fs", "fs/promises", "http", "http2", "https", "inspector", "inspector/promises",
        "module", "net", "os", "path", "path/posix", "path/win32", "perf_hooks", "process",
        "punycode", "querystring", "readline", "readline/promises", "repl", "stream",
        "stream/consumers", "stream/promises", "stream/web", "string_decoder", "sys", "timers",
        "timers/promises", "tls", "trace_events", "tty", "url", "util", "util/types", "v8", "vm",
        "wasi", "worker_threads", "zlib",
    ]
)  # fmt: skip
"""Node's built-in modules: ``require('module').builtinModules`` of Node v20.20 (without the
internal ``_``-prefixed ones). Shipped as data: Node is not needed to read a repository."""
_RUST_STD = frozenset({"std", "core", "alloc", "proc_macro", "test"})
_JAVA_STD = ("java.", "javax.", "jdk.")

_REQUIREMENTS = re.compile(
    r"(?:^|/)(?:requirements|constraints)[\w.-]*\.(?:txt|in)$|(?:^|/)requirements/[\w.-]+\.(?:txt|in)$"
)
_MANIFESTS = frozenset(
    {
        "pyproject.toml",
        "package.json",
        "go.mod",
        "Cargo.toml",
        "Gemfile",
        "pom.xml",
        "build.gradle",
        "build.gradle.kts",
    }
)
_GO_REQUIRE = re.compile(r"^\s*(?:require\s+)?([\w.~-]+(?:/[\w.~-]+)+)\s+v\S+", re.M)
_GEM = re.compile(
    r"""^\s*(?:gem|(?:\w+\.)?add_(?:runtime_|development_)?dependency)\s*\(?\s*['"]([\w.-]+)['"]""", re.M
)
_GO_MAJOR = re.compile(r"/v\d+(?=/|$)")
"""A Go module path's major version element (``/v5``): the same module at another major version."""
_GRADLE = re.compile(r"""['"]([\w.-]+):([\w.-]+)(?::[^'"]*)?['"]""")


@dataclass(frozen=True, slots=True)
class Manifest:
    """What one manifest says: the names the repository publishes itself under (``own``:
    ``[project].name``, ``package.json``'s ``name``, ``go.mod``'s ``module``, a crate's or gem's
    name) and the packages it declares (``declared``: runtime, optional, development, peer)."""

    own: frozenset[str] = frozenset()
    declared: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class Dependencies:
    """The packages a repository's manifests declare, by the names a program imports them under
    (``modules``, lower case; :func:`import_names`), and the names the repository itself is
    published under (``own``): a package both names (a workspace's sibling) is the repository's."""

    modules: frozenset[str] = frozenset()
    own: frozenset[str] = frozenset()
    manifests: int = 0

    def declares(self, module: str) -> bool:
        """Whether ``module`` (as an import writes it: ``pino-pretty``, ``yaml``, ``pyramid_tm.x``,
        ``github.com/stretchr/testify/assert``, ``org.slf4j.Logger``) is a declared package's,
        not the repository's own."""
        return not _within(module, self.own) and _within(module, self.modules)

    def owns(self, module: str) -> bool:
        """Whether ``module`` is under a name the repository publishes itself under
        (``github.com/labstack/echo/v5/middleware``, ``fastify``, ``pyramid.config``); a Go path of
        another major version is the same module's (``github.com/labstack/echo/v4`` for ``…/v5``)."""
        return _within(module, self.own) or _within(_GO_MAJOR.sub("", module), self.unversioned)

    @property
    def unversioned(self) -> frozenset[str]:
        return frozenset(_GO_MAJOR.sub("", name) for name in self.own)


def _within(module: str, names: frozenset[str]) -> bool:
    """``module`` is one of ``names`` or inside one (by ``/``, ``.`` or ``::``)."""
    wanted = module.strip().lower()
    if not wanted or not names:
        return False
    if wanted in names:
        return True
    for sep in ("/", ".", "::"):
        parts = wanted.split(sep)
        for i in range(len(parts) - 1, 0, -1):
            if sep.join(parts[:i]) in names:
                return True
    return False


def is_manifest(path: str) -> bool:
    """Whether ``path`` declares dependencies (:func:`read_manifest` reads it)."""
    last = path.rsplit("/", 1)[-1]
    return last in _MANIFESTS or last.endswith(".gemspec") or _REQUIREMENTS.search(path) is not None


def read_manifest(path: str, content: bytes) -> Manifest:
    """What one manifest says; nothing when it does not parse."""
    last = path.rsplit("/", 1)[-1]
    text = content.decode("utf-8", "replace")
    try:
        if last == "pyproject.toml":
            data = tomllib.loads(text)
            names = [
                (data.get("project") or {}).get("name"),
                ((data.get("tool") or {}).get("poetry") or {}).get("name"),
            ]
            return _manifest(names, _pyproject(data))
        if last == "Cargo.toml":
            data = tomllib.loads(text)
            return _manifest([(data.get("package") or {}).get("name")], _cargo(data))
        if last == "package.json":
            data = json.loads(text)
            if not isinstance(data, dict):
                return Manifest()
            return _manifest([data.get("name")], _package_json(data))
        if last == "pom.xml":
            # expat (3.11+) refuses entity expansion bombs and ElementTree fetches no external entity
            root = ET.fromstring(content)  # noqa: S314
            own = [(child.text or "").strip() for child in root if child.tag.rsplit("}", 1)[-1] == "groupId"]
            return _manifest(own, _pom(root))
    except (tomllib.TOMLDecodeError, json.JSONDecodeError, ET.ParseError, ValueError):
        return Manifest()
    if last == "go.mod":
        module = re.search(r"^module\s+(\S+)", text, re.M)
        return _manifest(
            [module.group(1) if module else None],
            (m.group(1) for m in _GO_REQUIRE.finditer(_go_requires(text))),
        )
    if last == "Gemfile" or last.endswith(".gemspec"):
        name = re.search(r"""\.name\s*=\s*['"]([\w.-]+)['"]""", text)
        return _manifest([name.group(1) if name else None], (m.group(1) for m in _GEM.finditer(text)))
    if last.startswith("build.gradle"):
        return _manifest([], (f"{m.group(1)}:{m.group(2)}" for m in _GRADLE.finditer(text)))
    if _REQUIREMENTS.search(path):
        return _manifest([], _requirements(text.splitlines()))
    return Manifest()


def _manifest(own: Iterable[Any], declared: Iterable[str]) -> Manifest:
    return Manifest(frozenset(n for n in own if isinstance(n, str) and n), frozenset(declared))


def read_manifests(files: Mapping[str, bytes]) -> Dependencies:
    """What the manifests ``files`` (path → content) declare, together."""
    read = [read_manifest(path, content) for path, content in files.items() if is_manifest(path)]
    modules = {m for r in read for name in r.declared for m in import_names(name)}
    own = {m for r in read for name in r.own for m in import_names(name)}
    return Dependencies(frozenset(modules), frozenset(own), len(read))


def import_names(package: str) -> set[str]:
    """The names a program imports ``package`` under, lower case: the name itself, and for a
    Python or Rust package with ``-`` or ``.`` in it, the forms with ``_`` and the first dotted
    part (``zope.interface`` → ``zope.interface``, ``zope``); a Maven ``group:artifact`` gives its
    group (``org.slf4j``). An npm name stays as written (``pino-pretty``, ``@fastify/cors``)."""
    name = package.strip().lower()
    if not name:
        return set()
    if ":" in name and not name.startswith("@"):
        group, _, artifact = name.partition(":")
        return {group, artifact}
    out = {name}
    if not name.startswith("@") and "/" not in name:
        out.add(name.replace("-", "_"))
        out.add(name.replace("-", "_").replace(".", "_"))
    return out


def standard_module(module: str, language: str | None = None) -> bool:
    """Whether ``module`` (as an import writes it) is the standard library's, in ``language``
    (``python``, ``javascript``/``typescript``, ``go``, ``rust``, ``java``/``kotlin``/``scala``)
    or, with no language, in any of them where the form is unambiguous."""
    module = module.strip()
    if not module:
        return False
    lang = (language or "").lower()
    if lang in ("python", "py", "pycon", "ipython", "literal"):
        return module.split(".")[0] in sys.stdlib_module_names
    if lang in ("javascript", "js", "typescript", "ts", "tsx", "jsx", "mjs", "cjs", "node"):
        return module.removeprefix("node:") in NODE_BUILTINS or module.split("/")[0] in NODE_BUILTINS
    if lang in ("go", "golang"):
        return "." not in module.split("/")[0]
    if lang in ("rust", "rs"):
        return module.split("::")[0] in _RUST_STD
    if lang in ("java", "kotlin", "kt", "scala", "groovy"):
        return module.startswith(_JAVA_STD)
    return (
        module.split(".")[0] in sys.stdlib_module_names
        or module.startswith("node:")
        or module.split("::")[0] in _RUST_STD
        or module.startswith(_JAVA_STD)
    )


def standard_roots(language: str) -> frozenset[str]:
    """The names a program in ``language`` may write as a qualifier's root without importing
    anything of its own: Python's standard modules (``os.environ`` in a snippet that left the
    import out), Rust's ``std``/``core``/``alloc``, Java's ``java``/``javax``. Go has none here: a Go
    qualifier is a package the file imports (:func:`standard_module` then answers for its path)."""
    lang = language.lower()
    if lang in ("python", "py", "pycon", "literal"):
        return frozenset(sys.stdlib_module_names)
    if lang in ("rust", "rs"):
        return _RUST_STD
    if lang in ("java", "kotlin", "scala", "groovy"):
        return frozenset({"java", "javax", "jdk"})
    return frozenset()


# ----------------------------------------------------------------------------- one format each


def _pyproject(data: JsonObject) -> Iterable[str]:
    project = data.get("project") or {}
    yield from _requirements(project.get("dependencies") or [])
    for group in (project.get("optional-dependencies") or {}).values():
        yield from _requirements(group if isinstance(group, list) else [])
    for group in (data.get("dependency-groups") or {}).values():  # PEP 735
        yield from _requirements([g for g in group if isinstance(g, str)] if isinstance(group, list) else [])
    poetry = (data.get("tool") or {}).get("poetry") or {}
    tables = [poetry.get("dependencies"), poetry.get("dev-dependencies")]
    tables += [g.get("dependencies") for g in (poetry.get("group") or {}).values() if isinstance(g, dict)]
    for table in tables:
        if isinstance(table, dict):
            yield from (name for name in table if name.lower() != "python")


def _requirements(lines: Iterable[Any]) -> Iterable[str]:
    for raw in lines:
        if not isinstance(raw, str):
            continue
        line = raw.split(" #", 1)[0].strip()
        if not line or line.startswith(("#", "-", "git+", "http:", "https:", ".", "/")):
            continue
        try:
            yield Requirement(line).name
        except InvalidRequirement:
            continue


def _package_json(data: JsonObject) -> Iterable[str]:
    for key in ("dependencies", "devDependencies", "peerDependencies", "optionalDependencies"):
        table = data.get(key)
        if isinstance(table, dict):
            yield from (name for name in table if isinstance(name, str))


def _cargo(data: JsonObject) -> Iterable[str]:
    tables: list[Any] = [data, (data.get("workspace") or {})]
    tables += [t for t in (data.get("target") or {}).values() if isinstance(t, dict)]
    for table in tables:
        for key in ("dependencies", "dev-dependencies", "build-dependencies"):
            deps = table.get(key)
            if isinstance(deps, dict):
                for name, spec in deps.items():
                    package = spec.get("package") if isinstance(spec, dict) else None
                    yield name
                    if isinstance(package, str):
                        yield package


def _go_requires(text: str) -> str:
    """The ``require`` lines of a ``go.mod`` (a block's lines, or single ones), comments dropped."""
    out: list[str] = []
    inside = False
    for raw in text.splitlines():
        line = raw.split("//", 1)[0].strip()
        if inside:
            if line.startswith(")"):
                inside = False
            elif line:
                out.append(line)
        elif re.match(r"^require\s*\($", line):
            inside = True
        elif line.startswith("require "):
            out.append(line.removeprefix("require ").strip())
    return "\n".join(out)


def _pom(root: ET.Element) -> Iterable[str]:
    for element in root.iter():
        if element.tag.rsplit("}", 1)[-1] != "dependency":
            continue
        parts = {child.tag.rsplit("}", 1)[-1]: (child.text or "").strip() for child in element}
        if parts.get("groupId") and parts.get("artifactId"):
            yield f"{parts['groupId']}:{parts['artifactId']}"
