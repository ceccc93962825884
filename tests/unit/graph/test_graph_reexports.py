"""Re-exports per language: a name imported from a barrel reaches the module that defines it.

Each case plants a tree read by the chunker's own parser, in which the referenced name is also
defined by decoys a bare-name match would pick (a superseded major version, a test helper, a
benchmark, an unrelated module): the reference must land on the definer its imports reach.
"""

from __future__ import annotations

import pytest

from palimpsest.index.graph.model import EdgeKind, Graph
from palimpsest.index.graph.report import GraphReport
from tests.unit.graph.support import graph_of


def uses_of(graph: Graph, path: str) -> dict[str, float]:
    """Files whose symbols ``path`` references or calls (from the file or its own symbols)."""
    node = graph.path_node(path)
    assert node is not None, path
    owner = graph.node_owner[node]
    found: dict[str, float] = {}
    for source in graph.path_nodes[owner]:
        for edge in graph.edges(source):
            if edge.backward or edge.kind not in (EdgeKind.REFERENCES, EdgeKind.CALLS):
                continue
            target = graph.paths[graph.node_owner[edge.target]]
            if target != path:
                found[target] = found.get(target, 0.0) + edge.weight
    return found


def imports_of(graph: Graph, path: str) -> set[str]:
    node = graph.path_node(path)
    assert node is not None, path
    return {
        graph.paths[graph.node_owner[edge.target]]
        for edge in graph.edges(node)
        if edge.kind == EdgeKind.IMPORTS and not edge.backward
    }


_TS_DECOYS = {
    "src/v3/types.ts": "export function union() { return 3 }\nexport function refine() { return 3 }\n",
    "src/v4/stub.ts": "export const V = 4\n",
    "src/helpers/union.test.ts": "export function union() { return 0 }\n",
    "bench/union.ts": "export function union() { return 0 }\n",
}

# name, files, the referencing file, the files its references must reach (and nothing else), route
CASES: list[tuple[str, dict[str, str], str, set[str], str]] = [
    (
        "ts: export * chain, namespace import, member call",
        {
            **_TS_DECOYS,
            "src/index.ts": 'export * from "./classic/external"\n',
            "src/classic/external.ts": 'export * from "./schemas"\nexport * as core from "../core/index"\n',
            "src/classic/schemas.ts": "export function union() { return 1 }\nexport function refine() {}\n",
            "src/core/index.ts": "export function parse() {}\n",
            "app/use.ts": 'import * as z from "../src/index"\nexport function go() { z.union(); z.refine() }\n',
        },
        "app/use.ts",
        {"src/classic/schemas.ts"},
        "barrel",
    ),
    (
        "ts: export { a as b } from, a cycle of barrels",
        {
            **_TS_DECOYS,
            "src/a.ts": 'export * from "./b"\nexport { union as either } from "./impl"\n',
            "src/b.ts": 'export * from "./a"\n',
            "src/impl.ts": "export function union() { return 1 }\n",
            "app/use.ts": 'import { union } from "../src/b"\nexport function go() { union() }\n',
        },
        "app/use.ts",
        {"src/impl.ts"},
        "barrel",
    ),
    (
        "python: from .core import * in __init__.py with __all__, module attribute call",
        {
            "pkg/__init__.py": 'from .core import *\nfrom ._api import request\n__all__ = ["request", "build"]\n',
            "pkg/core.py": "def build():\n    return 1\n",
            "pkg/_api.py": "def request():\n    return 1\n",
            "other/build.py": "def build():\n    return 2\n",
            "other/more.py": "def build():\n    return 3\n",
            "examples/request.py": "def request():\n    return 0\n",
            "tools/x.py": "def request():\n    return 0\n",
            "app/main.py": "import pkg\n\ndef go():\n    pkg.build()\n    pkg.request()\n",
        },
        "app/main.py",
        {"pkg/core.py", "pkg/_api.py"},
        "barrel",
    ),
    (
        "python: packages re-exporting each other (a cycle)",
        {
            "a/__init__.py": "from b import *\n",
            "b/__init__.py": "from a import *\nfrom b.impl import walk\n",
            "b/impl.py": "def walk():\n    return 1\n",
            "c/walk.py": "def walk():\n    return 2\n",
            "d/walk.py": "def walk():\n    return 3\n",
            "app.py": "import a\n\ndef go():\n    a.walk()\n",
        },
        "app.py",
        {"b/impl.py"},
        "barrel",
    ),
    (
        "rust: pub use in lib.rs",
        {
            "Cargo.toml": '[package]\nname = "serde_like"\n',
            "src/lib.rs": "mod de;\npub use crate::de::from_str;\n",
            "src/de.rs": "pub fn from_str() {}\n",
            "src/other.rs": "pub fn from_str() {}\n",
            "src/more.rs": "pub fn from_str() {}\n",
            "src/app.rs": "use crate::from_str;\nfn go() { from_str(); }\n",
        },
        "src/app.rs",
        {"src/de.rs"},
        "barrel",
    ),
]


@pytest.mark.parametrize(("name", "files", "source", "expected", "route"), CASES, ids=[c[0] for c in CASES])
def test_a_name_imported_from_a_barrel_reaches_its_definer(
    name: str, files: dict[str, str], source: str, expected: set[str], route: str
) -> None:
    graph, report = graph_of(files)
    assert set(uses_of(graph, source)) == expected
    assert report.routes[route] >= 1
    assert report.barrels >= 1


def test_the_barrel_hop_stays_in_the_graph() -> None:
    graph, _ = graph_of(CASES[0][1])
    assert imports_of(graph, "app/use.ts") == {"src/index.ts"}
    assert imports_of(graph, "src/index.ts") == {"src/classic/external.ts"}
    assert imports_of(graph, "src/classic/external.ts") == {"src/classic/schemas.ts", "src/core/index.ts"}


def test_a_plain_use_is_no_barrel() -> None:
    # a Rust `use` (not `pub`) and a Python import outside __init__.py pass nothing on
    _graph, report = graph_of(
        {
            "Cargo.toml": '[package]\nname = "x"\n',
            "src/lib.rs": "mod de;\nuse crate::de::from_str;\n",
            "src/de.rs": "pub fn from_str() {}\n",
            "pkg/__init__.py": "",
            "pkg/mod.py": "from .impl import thing\n",
            "pkg/impl.py": "def thing():\n    return 1\n",
        }
    )
    assert report.barrels == 0


def _fallback(files: dict[str, str], source: str) -> tuple[dict[str, float], GraphReport]:
    graph, report = graph_of(files)
    return uses_of(graph, source), report


def test_by_bare_name_product_code_never_reaches_tests_examples_benchmarks_or_a_superseded_version() -> None:
    used, report = _fallback(
        {
            "src/v3/types.ts": "export class A { merge() { return 3 } }\n",
            "src/v4/types.ts": "export class B { merge() { return 4 } }\n",
            "src/util/merge.test.ts": "export class C { merge() { return 0 } }\n",
            "bench/merge.ts": "export class D { merge() { return 0 } }\n",
            "examples/merge.ts": "export class E { merge() { return 0 } }\n",
            "lib/merge.ts": "export class F { merge() { return 1 } }\n",
            "app/use.ts": "export function go(x: any) { x.merge() }\n",
        },
        "app/use.ts",
    )
    # the member call and its reference each split 1/2 between the two product definers
    assert used == {"src/v4/types.ts": 1.0, "lib/merge.ts": 1.0}
    assert report.routes["name"] == 2  # the call and the reference
    assert report.bare_name_by_language["typescript"] == 2


def test_a_plain_name_of_a_module_language_crosses_files_only_through_an_import() -> None:
    files = {
        "lib/merge.ts": "export function merge() { return 1 }\n",
        "app/use.ts": "export function go() { merge() }\n",
        "app/imports.ts": 'import { merge } from "../lib/merge"\nexport function go() { merge() }\n',
        "pkg/core.py": "def build():\n    return 1\n",
        "pkg/use.py": "def go():\n    return build()\n",
    }
    used, report = _fallback(files, "app/use.ts")
    assert used == {}  # a global it would need to be: no file of the tree is one
    assert report.routes["not_imported"] == 4  # a call and its reference in each language
    assert set(_fallback(files, "app/imports.ts")[0]) == {"lib/merge.ts"}
    assert _fallback(files, "pkg/use.py")[0] == {}
    assert "left unresolved (a plain name its module language would need imported) 4" in report.text()


def test_a_file_reaches_a_set_aside_definer_by_importing_it() -> None:
    used, report = _fallback(
        {
            "src/v3/types.ts": "export function merge() { return 3 }\n",
            "src/v4/types.ts": "export function merge() { return 4 }\n",
            "app/use.ts": 'import { merge } from "../src/v3/types"\nexport function go() { merge() }\n',
        },
        "app/use.ts",
    )
    assert set(used) == {"src/v3/types.ts"}
    assert report.routes["import"] == 2


def test_tests_and_set_aside_code_reach_their_own_kind_by_name() -> None:
    # Java: a class's names reach the package's other files without an import
    files = {
        "bench/Helpers.java": "class Helpers { static int timeIt() { return 0; } }\n",
        "bench/other/Run.java": "class Run { void go() { timeIt(); } }\n",
        "tests/Helpers.java": "class Fixtures { static int fixture() { return 0; } }\n",
        "tests/unit/ATest.java": "class ATest { void go() { fixture(); timeIt(); } }\n",
    }
    assert set(_fallback(files, "bench/other/Run.java")[0]) == {"bench/Helpers.java"}
    assert set(_fallback(files, "tests/unit/ATest.java")[0]) == {"tests/Helpers.java"}


def test_in_a_module_language_set_aside_code_is_reached_only_by_import() -> None:
    files = {
        "bench/helpers.ts": "export class T { timeIt() { return 0 } }\n",
        "bench/other/run.ts": "export function go(t: any) { t.timeIt() }\n",
        "tests/helpers.ts": "export class F { fixture() { return 0 } }\n",
        "tests/unit/a.test.ts": 'import { F } from "../helpers"\nexport function go(f: F) { f.fixture() }\n',
    }
    assert _fallback(files, "bench/other/run.ts")[0] == {}
    assert set(_fallback(files, "tests/unit/a.test.ts")[0]) == {"tests/helpers.ts"}


def test_a_major_version_folder_answers_its_own_files_by_name() -> None:
    files = {
        "src/v3/types.ts": "export class A { merge() { return 3 } }\n",
        "src/v3/use.ts": "export function go(x: any) { x.merge(); x.timeIt() }\n",
        "src/v3/tests/a.test.ts": "export function go(x: any) { x.helper() }\n",
        "src/v4/types.ts": "export class B { merge() { return 4 } }\n",
        "src/v4/tests/helpers.ts": "export class H { helper() { return 0 } }\n",
        "src/v4/use.ts": "export function go(x: any) { x.merge() }\n",
        "bench/helpers.ts": "export class T { timeIt() { return 0 } }\n",
        "lib/use.ts": "export function go(x: any) { x.merge() }\n",
    }
    # the old version's code reaches the old definition, never the new one nor a benchmark
    assert set(_fallback(files, "src/v3/use.ts")[0]) == {"src/v3/types.ts"}
    # a test of the old version does not reach the new version's test helpers by name
    assert _fallback(files, "src/v3/tests/a.test.ts")[0] == {}
    # the new version answers its own files and files outside every version folder
    assert set(_fallback(files, "src/v4/use.ts")[0]) == {"src/v4/types.ts"}
    assert set(_fallback(files, "lib/use.ts")[0]) == {"src/v4/types.ts"}


def test_member_calls_are_counted_by_route() -> None:
    _, report = graph_of(CASES[0][1])  # z.union(), z.refine() through the barrels
    assert report.member_routes["barrel"] == 4  # two names, each a reference and a call
    assert sum(report.member_routes.values()) == 4
    text = report.text()
    assert "member calls (x.m()) by route: through imports 0, through re-export barrels 4" in text
    assert "references that fell back to a bare name, by language: none" in text


def test_by_bare_name_a_js_file_reaches_only_its_own_package() -> None:
    files = {
        "package.json": '{"name": "root"}',
        "packages/a/package.json": '{"name": "@x/a"}',
        "packages/a/src/local.ts": "export class L { shared() { return 1 } }\n",
        "packages/a/src/use.ts": "export function go(x: any) { x.shared(); x.other() }\n",
        "packages/b/package.json": '{"name": "@x/b"}',
        "packages/b/src/other.ts": "export class O { other() { return 2 }\n shared() { return 2 } }\n",
        "packages/b/src/use.ts": 'import { other } from "@x/a"\nexport function go() { other() }\n',
        "scripts/tool.ts": "export class T { other() { return 3 } }\n",
    }
    # its own package's definer, never another package's or the root's
    assert set(_fallback(files, "packages/a/src/use.ts")[0]) == {"packages/a/src/local.ts"}


def test_by_bare_name_a_go_file_reaches_only_its_own_package() -> None:
    files = {
        "go.mod": "module example.com/m\n",
        "mux.go": "package m\n\nfunc (mx *Mux) ServeHTTP() {}\n",
        "tree.go": "package m\n\nfunc (n *node) findRoute() {}\n",
        "use.go": "package m\n\nfunc serve(mx *Mux) { mx.ServeHTTP(); n.findRoute() }\n",
        "middleware/value.go": "package middleware\n\nfunc WithValue(next Handler) { next.ServeHTTP() }\n",
        "middleware/route.go": "package middleware\n\nfunc use(n thing) { n.findRoute() }\n",
    }
    # a method of the same name in another package is not what a value's method call means:
    # that package's names come only through an import
    assert _fallback(files, "middleware/value.go")[0] == {}
    assert _fallback(files, "middleware/route.go")[0] == {}
    assert set(_fallback(files, "use.go")[0]) == {"mux.go", "tree.go"}


def test_by_bare_name_a_rust_file_reaches_only_its_own_crate() -> None:
    files = {
        "Cargo.toml": '[workspace]\nmembers = ["core", "derive"]\n',
        "core/Cargo.toml": '[package]\nname = "core_x"\n',
        "core/src/lib.rs": "pub mod map;\n",
        "core/src/map.rs": "pub struct Map;\nimpl Map { pub fn insert_entry(&self) {} }\n",
        "core/src/user.rs": "fn go(m: &Thing) { m.insert_entry() }\n",
        "derive/Cargo.toml": '[package]\nname = "derive_x"\n',
        "derive/src/lib.rs": "fn go(m: &Other) { m.insert_entry() }\n",
    }
    assert set(_fallback(files, "core/src/user.rs")[0]) == {"core/src/map.rs"}
    assert _fallback(files, "derive/src/lib.rs")[0] == {}
