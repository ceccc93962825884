"""What the analysis reads first: the repository's primary source packages and their centre.

*Primary source packages* are the code a repository exists to ship, as its manifests declare it:

* Python (``pyproject.toml``, ``setup.cfg``, ``setup.py``): the project's name and declared
  packages, as a directory at the root or under ``src/`` (``Flask`` → ``src/flask``);
* JavaScript/TypeScript (``package.json``, ``pnpm-workspace.yaml``): the workspace packages of a
  monorepo (``packages/*`` → ``packages/vite``, …), else the folder of ``main``/``module``/``bin``,
  else ``src/`` or ``lib/``;
* Go (``go.mod``): the module's packages — every folder of non-test ``.go`` files;
* Rust (``Cargo.toml``): the workspace members and the root crate's ``src/``;
* Java/Kotlin/Scala (``pom.xml``, ``build.gradle*``, ``build.sbt``): ``src/main`` trees;
* otherwise (and when a declaration matches nothing) the largest code tree: the top-level folder
  (or ``src/<x>``) with the most source files.

Inside them, tests, examples, docs, benchmarks, fixtures and generated or vendored trees are not
primary source (:func:`palimpsest.index.codefacts.is_primary_source`); neither are files that are not written in a programming language (config,
data, assets).

The *centre* is the index's own graph: a global PageRank over the file-level graph of the
snapshot (imports, references and calls point at what they use; the rank flows to what many
files depend on), computed here by power iteration over the stored CSR graph
(:mod:`palimpsest.index.graph.model`).
"""

from __future__ import annotations

import fnmatch
import json
import posixpath
import re
import tomllib
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from palimpsest.index.codefacts import is_primary_source
from palimpsest.index.graph.model import Graph

__all__ = [
    "MANIFEST_NAMES",
    "Packages",
    "entry_point",
    "file_pagerank",
    "is_source",
    "primary_packages",
]

MANIFEST_NAMES = frozenset(
    {
        "pyproject.toml", "setup.cfg", "setup.py", "package.json", "pnpm-workspace.yaml", "go.mod",
        "Cargo.toml", "pom.xml", "build.gradle", "build.gradle.kts", "build.sbt",
    }
)  # fmt: skip
# languages that are data, configuration, markup or assets, not programs
_NOT_PROGRAMS = frozenset(
    {
        "json", "yaml", "toml", "xml", "html", "css", "scss", "sass", "less", "markdown", "rst", "text",
        "ini", "dotenv", "csv", "tsv", "properties", "gitignore", "gitattributes", "template", "jinja",
        "asciidoc", "latex", "svg", "makefile", "dockerfile", "procfile", "just", "batch", "powershell",
        "cmake", "nix", "hcl", "terraform", "graphql", "proto", "sql", "vim",
    }
)  # fmt: skip
_ENTRY_NAMES = frozenset(
    {
        "__init__.py", "__main__.py", "main.py", "app.py", "cli.py", "main.go", "lib.rs", "main.rs",
        "mod.rs", "index.ts", "index.js", "index.mjs", "index.tsx", "main.ts", "main.js", "cli.ts",
        "cli.js", "Main.java", "Application.java", "main.c", "main.cpp", "main.swift",
    }
)  # fmt: skip


@dataclass(slots=True)
class Packages:
    """The primary source package roots ("" is the repository root) and how they were found."""

    roots: list[str] = field(default_factory=list)
    declared_by: dict[str, str] = field(default_factory=dict)  # root → manifest or "largest code tree"

    def owner(self, path: str, language: str | None) -> str | None:
        """The primary package ``path`` belongs to as source, or None."""
        if not is_source(path, language):
            return None
        for root in sorted(self.roots, key=len, reverse=True):
            if path == root:  # a declared file (package.json "files": ["index.js", "lib/"])
                return root
            if root == "" or path.startswith(root + "/"):
                rest = path[len(root) + 1 :] if root else path
                return None if _outside_source(rest) else root
        return None


def is_source(path: str, language: str | None) -> bool:
    """A file written in a programming language (not config, data, markup or an asset)."""
    return language is not None and language not in _NOT_PROGRAMS


def _outside_source(relative: str) -> bool:
    """Not primary source by the shared classifier (tests, examples, docs' code, scripts, benchmarks,
    generated or vendored trees), nor a type declaration file (``*.d.ts``: no implementation)."""
    return not is_primary_source(relative) or relative.endswith(".d.ts")


def entry_point(path: str) -> bool:
    return path.rsplit("/", 1)[-1] in _ENTRY_NAMES


# ----------------------------------------------------------------------------- manifests


def primary_packages(manifests: Mapping[str, str], files: Iterable[tuple[str, str | None]]) -> Packages:
    """The primary packages from the manifests' text (path → content) and the snapshot's files."""
    source = [p for p, lang in files if is_source(p, lang)]
    dirs = _source_dirs(source)
    found = Packages()
    for path, text in sorted(manifests.items(), key=lambda item: (item[0].count("/"), item[0])):
        for root in _declared(path, text, dirs, source):
            if root not in found.roots and _has_source(root, source):
                found.roots.append(root)
                found.declared_by[root] = path
    if not found.roots:
        largest = _largest_tree(source)
        if largest is not None:
            found.roots.append(largest)
            found.declared_by[largest] = "largest code tree"
    return found


def _source_dirs(source: list[str]) -> set[str]:
    dirs: set[str] = set()
    for path in source:
        parts = path.split("/")
        for i in range(1, len(parts)):
            dirs.add("/".join(parts[:i]))
    return dirs


def _has_source(root: str, source: list[str]) -> bool:
    if root in source:
        return True
    prefix = root + "/" if root else ""
    return any(p.startswith(prefix) and not _outside_source(p[len(prefix) :]) for p in source)


def _declared(path: str, text: str, dirs: set[str], source: list[str]) -> list[str]:
    base = posixpath.dirname(path)
    name = posixpath.basename(path)
    readers = {
        "pyproject.toml": _python_toml,
        "setup.cfg": _python_text,
        "setup.py": _python_text,
        "package.json": lambda _t, _b, _d: _package_json(_t, _b, _d, source),
        "pnpm-workspace.yaml": _pnpm_workspace,
        "go.mod": lambda _t, _b, _d: _go_packages(_b, source),
        "Cargo.toml": _cargo,
    }
    reader = readers.get(name)
    if reader is not None:
        return reader(text, base, dirs)
    return [d for d in (_join(base, "src/main"),) if d in dirs]  # pom.xml, gradle, sbt


def _join(base: str, rel: str) -> str:
    return posixpath.normpath(posixpath.join(base, rel)).strip("./") if rel not in ("", ".") else base


def _python_names(names: Iterable[str], base: str, dirs: set[str]) -> list[str]:
    out: list[str] = []
    for raw in names:
        name = raw.strip().replace("-", "_").replace(".", "/")
        for candidate in (name, name.lower()):
            for where in ("src", "lib", ""):
                root = _join(base, posixpath.join(where, candidate))
                if root in dirs and root not in out:
                    out.append(root)
    return out


def _python_toml(text: str, base: str, dirs: set[str]) -> list[str]:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return _python_text(text, base, dirs)
    names: list[str] = []
    project = data.get("project", {}) or data.get("tool", {}).get("poetry", {})
    if isinstance(project.get("name"), str):
        names.append(project["name"])
    tool = data.get("tool", {})
    wheel = tool.get("hatch", {}).get("build", {}).get("targets", {}).get("wheel", {})
    for declared in (wheel.get("packages"), tool.get("setuptools", {}).get("packages")):
        if isinstance(declared, list):
            names.extend(posixpath.basename(str(p).rstrip("/")) for p in declared if isinstance(p, str))
    for item in tool.get("poetry", {}).get("packages", []) or []:
        if isinstance(item, dict) and isinstance(item.get("include"), str):
            names.append(item["include"])
    return _python_names(names, base, dirs)


def _python_text(text: str, base: str, dirs: set[str]) -> list[str]:
    names = re.findall(r"""\bname\s*[=:]\s*["']?([A-Za-z0-9_.-]+)""", text)
    names += re.findall(r"""packages\s*=\s*\[\s*["']([A-Za-z0-9_.-]+)""", text)
    return _python_names(names[:5], base, dirs)


def _package_json(text: str, base: str, dirs: set[str], source: list[str]) -> list[str]:
    try:
        data = json.loads(text)
    except ValueError:
        return []
    if not isinstance(data, dict):
        return []
    workspaces = data.get("workspaces")
    if isinstance(workspaces, dict):
        workspaces = workspaces.get("packages")
    if isinstance(workspaces, list):
        return _workspace_dirs([str(w) for w in workspaces], base, dirs)
    out = _shipped(data.get("files"), base, dirs, source)
    entries = [data.get(k) for k in ("main", "module", "source", "types")]
    bin_ = data.get("bin")
    entries += list(bin_.values()) if isinstance(bin_, dict) else [bin_]
    for entry in entries:
        if isinstance(entry, str) and "/" in entry.strip("./"):
            folder = _join(base, posixpath.dirname(entry))
            if folder in dirs and folder not in out:
                out.append(folder)
    return out or [d for d in (_join(base, "src"), _join(base, "lib")) if d in dirs][:1]


def _shipped(files: object, base: str, dirs: set[str], source: list[str]) -> list[str]:
    """The source folders and files a package.json ``files`` list ships."""
    if not isinstance(files, list):
        return []
    out: list[str] = []
    for entry in files:
        if not isinstance(entry, str) or any(c in entry for c in "*!"):
            continue
        path = _join(base, entry.rstrip("/"))
        if path and (path in dirs or path in source) and path not in out:
            out.append(path)
    return out


def _pnpm_workspace(text: str, base: str, dirs: set[str]) -> list[str]:
    patterns = re.findall(r"""^\s*-\s*["']?([^"'\s#]+)""", text, re.MULTILINE)
    return _workspace_dirs([p for p in patterns if not p.startswith("!")], base, dirs)


def _workspace_dirs(patterns: list[str], base: str, dirs: set[str]) -> list[str]:
    out: list[str] = []
    for pattern in patterns:
        glob = _join(base, pattern.rstrip("/").removesuffix("/**"))
        for d in sorted(dirs):
            if (
                d.count("/") == glob.count("/")
                and fnmatch.fnmatchcase(d, glob)
                and not _outside_source(d + "/x")
            ):
                src = d + "/src"
                out.append(src if src in dirs else d)
    return out


def _go_packages(base: str, source: list[str]) -> list[str]:
    prefix = base + "/" if base else ""
    folders = {posixpath.dirname(p) for p in source if p.endswith(".go") and p.startswith(prefix)}
    return [base] if folders else []


def _cargo(text: str, base: str, dirs: set[str]) -> list[str]:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return []
    out = [d for d in (_join(base, "src"),) if d in dirs and "package" in data]
    members = data.get("workspace", {}).get("members", [])
    if isinstance(members, list):
        for root in _workspace_dirs([str(m) for m in members], base, dirs):
            if root not in out:
                out.append(root)
    return out


def _largest_tree(source: list[str]) -> str | None:
    counts: Counter[str] = Counter()
    for path in source:
        parts = path.split("/")
        if len(parts) == 1 or _outside_source(path):
            continue
        top = "/".join(parts[:2]) if parts[0] in ("src", "lib", "pkg") and len(parts) > 2 else parts[0]
        counts[top] += 1
    return counts.most_common(1)[0][0] if counts else None


# ----------------------------------------------------------------------------- centrality


def file_pagerank(graph: Graph, *, damping: float = 0.85, iterations: int = 40) -> dict[str, float]:
    """Global PageRank of the files of ``graph`` over their forward edges (what uses what)."""
    n = len(graph.paths)
    if n == 0:
        return {}
    out: list[dict[int, float]] = [defaultdict(float) for _ in range(n)]
    owner = graph.node_owner
    for node in range(graph.node_count):
        source = owner[node]
        for i in range(graph.offsets[node], graph.offsets[node + 1]):
            if graph.codes[i] & 1:  # walked against its arrow: the forward copy counts
                continue
            target = owner[graph.targets[i]]
            if target != source:
                out[source][target] += float(graph.weights[i]) or 1.0
    rank = [1.0 / n] * n
    for _ in range(iterations):
        rank = _step(rank, out, damping)
    return {graph.paths[i]: rank[i] for i in range(n)}


def _step(rank: list[float], out: list[dict[int, float]], damping: float) -> list[float]:
    n = len(rank)
    nxt = [0.0] * n
    dangling = 0.0
    for source, targets in enumerate(out):
        total = sum(targets.values())
        if not total:
            dangling += rank[source]
            continue
        share = damping * rank[source] / total
        for target, weight in targets.items():
            nxt[target] += share * weight
    base = (1.0 - damping) / n + damping * dangling / n
    return [value + base for value in nxt]
