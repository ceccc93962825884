"""The negative control: what this snapshot's graph cannot see, recorded while it is resolved.

An agent told "reflection-based registrations are invisible to this graph" goes and greps; an
agent told nothing concludes the code does not exist. So the report ships with the index:

* files without a parser (indexed as plain windows: no definitions, no edges), by extension;
* files not indexed at all, by the chunker's skip reason;
* dynamic dispatch sites (``getattr``, reflection, computed calls) found but not resolvable;
* imports that look internal (relative, an alias, a known package root) but name no file;
  external imports are only counted per package;
* ambiguous names: a reference that more than one file defines (each gets 1/N of it), and
  names so common that no edge was made for them at all;
* ``Governs:`` targets and ``Supersedes:`` ids that match nothing in the tree;
* how references found their definers: through what the file imports, through the barrels it
  imports (re-exports followed), as the only definer, in the same directory, or by bare name
  alone (the last resort, counted per language) — with the barrels and the workspace packages
  (JS/TS ``package.json`` names) the resolution knew.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, NamedTuple

__all__ = [
    "AmbiguousName",
    "DynamicSite",
    "GraphReport",
    "UnmatchedHeader",
    "UnresolvedImport",
]

TEXT_ROWS = 20
ROUTES = ("import", "barrel", "unique", "directory", "name", "not_imported")
"""How a reference found its definers, most certain first (see :mod:`palimpsest.index.graph.build`)."""
ROUTE_TITLES = {
    "import": "through imports",
    "barrel": "through re-export barrels",
    "unique": "only definer",
    "directory": "same directory",
    "name": "bare name",
    "not_imported": "left unresolved (a plain name its module language would need imported)",
}


class DynamicSite(NamedTuple):
    path: str
    line: int
    what: str  # getattr, reflection, subscript_call, ...
    enclosing: str | None
    snippet: str | None


class UnresolvedImport(NamedTuple):
    path: str
    line: int
    specifier: str
    language: str | None


class UnmatchedHeader(NamedTuple):
    path: str  # the document
    line: int
    target: str


@dataclass(slots=True)
class AmbiguousName:
    name: str
    definers: list[str]  # paths, sorted
    references: int = 0  # references and calls that had to be split (or were dropped)
    dropped: bool = False  # more definers than the cap: no edge was made

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "definers": len(self.definers),
            "paths": self.definers[:10],
            "references": self.references,
            "dropped": self.dropped,
        }


@dataclass(slots=True)
class GraphReport:
    """Everything the graph of one snapshot could not resolve, with counts."""

    files: int = 0
    nodes: int = 0
    edges: dict[str, int] = field(default_factory=dict)
    no_parser: Counter[str] = field(default_factory=Counter)
    not_indexed: Counter[str] = field(default_factory=Counter)
    dynamic: list[DynamicSite] = field(default_factory=list)
    unresolved_imports: list[UnresolvedImport] = field(default_factory=list)
    external_imports: Counter[str] = field(default_factory=Counter)
    resolved_imports: int = 0
    ambiguous: dict[str, AmbiguousName] = field(default_factory=dict)
    governs_unmatched: list[UnmatchedHeader] = field(default_factory=list)
    supersedes_unmatched: list[UnmatchedHeader] = field(default_factory=list)
    barrels: int = 0  # files whose imports re-export (TS/JS export-from, Python __init__, Rust pub use)
    workspace_packages: int = 0  # JS/TS package.json names an import may name
    routes: Counter[str] = field(default_factory=Counter)  # references by how their definers were found
    member_routes: Counter[str] = field(default_factory=Counter)  # the member calls (x.m()) among them
    bare_name_by_language: Counter[str] = field(default_factory=Counter)

    def ambiguous_sorted(self) -> list[AmbiguousName]:
        return sorted(self.ambiguous.values(), key=lambda a: (-a.references, -len(a.definers), a.name))

    def as_dict(self) -> dict[str, Any]:
        dynamic_counts = Counter(site.what for site in self.dynamic)
        return {
            "files": self.files,
            "nodes": self.nodes,
            "edges": self.edges,
            "no_parser": dict(self.no_parser.most_common()),
            "not_indexed": dict(self.not_indexed.most_common()),
            "dynamic_sites": {
                "count": len(self.dynamic),
                "by_kind": dict(dynamic_counts.most_common()),
                "sites": [site._asdict() for site in self.dynamic],
            },
            "imports": {
                "resolved": self.resolved_imports,
                "unresolved": [item._asdict() for item in self.unresolved_imports],
                "external_packages": dict(self.external_imports.most_common()),
            },
            "resolution": {
                "barrels": self.barrels,
                "workspace_packages": self.workspace_packages,
                "routes": {route: self.routes.get(route, 0) for route in ROUTES},
                "member_call_routes": {route: self.member_routes.get(route, 0) for route in ROUTES},
                "bare_name_by_language": dict(self.bare_name_by_language.most_common()),
            },
            "ambiguous_names": [a.as_dict() for a in self.ambiguous_sorted()],
            "governs_unmatched": [item._asdict() for item in self.governs_unmatched],
            "supersedes_unmatched": [item._asdict() for item in self.supersedes_unmatched],
        }

    def text(self) -> str:
        lines = [
            f"graph      {self.files} files, {self.nodes} nodes, "
            + ", ".join(f"{kind} {count}" for kind, count in self.edges.items()),
            "",
            _counts("files without a parser (no definitions, no edges), by extension", self.no_parser),
            _counts("files not indexed, by reason", self.not_indexed),
        ]
        dynamic_counts = Counter(site.what for site in self.dynamic)
        lines.append(_counts("dynamic dispatch sites the graph cannot follow", dynamic_counts))
        lines += _rows([f"  {s.path}:{s.line}  {s.what}  {s.snippet or ''}".rstrip() for s in self.dynamic])
        lines.append(f"imports that resolve to no file in the tree: {len(self.unresolved_imports)}")
        lines += _rows([f"  {u.path}:{u.line}  {u.specifier}" for u in self.unresolved_imports])
        lines.append(
            f"external imports (no node, by design): {sum(self.external_imports.values())} in "
            f"{len(self.external_imports)} packages"
        )
        lines.append(
            f"barrels (files that re-export) {self.barrels}, workspace packages mapped "
            f"{self.workspace_packages}"
        )
        lines.append(
            "references by route: "
            + ", ".join(f"{ROUTE_TITLES[route]} {self.routes.get(route, 0)}" for route in ROUTES)
        )
        lines.append(
            "member calls (x.m()) by route: "
            + ", ".join(f"{ROUTE_TITLES[route]} {self.member_routes.get(route, 0)}" for route in ROUTES)
        )
        lines.append(
            _counts("references that fell back to a bare name, by language", self.bare_name_by_language)
        )
        ambiguous = self.ambiguous_sorted()
        lines.append(f"ambiguous names (each definer gets 1/N of a reference): {len(ambiguous)}")
        lines += _rows(
            [
                f"  {a.name}  {len(a.definers)} definers, {a.references} references"
                + ("  (too common: no edges)" if a.dropped else "")
                for a in ambiguous
            ]
        )
        lines.append(f"Governs: targets that match nothing: {len(self.governs_unmatched)}")
        lines += _rows([f"  {g.path}:{g.line}  Governs: {g.target}" for g in self.governs_unmatched])
        lines.append(f"Supersedes: ids that match no document: {len(self.supersedes_unmatched)}")
        lines += _rows([f"  {g.path}:{g.line}  Supersedes: {g.target}" for g in self.supersedes_unmatched])
        return "\n".join(lines)


def _counts(title: str, counts: Counter[str]) -> str:
    if not counts:
        return f"{title}: none"
    return f"{title}: " + ", ".join(f"{key} {value}" for key, value in counts.most_common())


def _rows(rows: list[str]) -> list[str]:
    if len(rows) <= TEXT_ROWS:
        return rows
    return [*rows[:TEXT_ROWS], f"  … and {len(rows) - TEXT_ROWS} more (--json lists all)"]
