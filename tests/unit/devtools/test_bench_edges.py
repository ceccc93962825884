"""``bench edges``: the independent import reader, and the precision it reports on a planted repo."""

from __future__ import annotations

from pathlib import Path

import pytest

from palimpsest.devtools.bench.edges import ImportReader, run_bench_edges
from tests.support.gitrepo import commit, init_repo

TREE = {
    # TS: a barrel chain and a workspace package
    "packages/kit/package.json": '{"name": "@acme/kit"}',
    "packages/kit/src/index.ts": 'export * from "./external"\n',
    "packages/kit/src/external.ts": 'export { union as either } from "./schemas"\n',
    "packages/kit/src/schemas.ts": "export function union() {}\n",
    "packages/kit/src/unrelated.ts": "export function union() {}\n",
    "app/main.ts": 'import * as z from "@acme/kit"\nconst x = require("./local")\n',
    "app/local.ts": "export const l = 1\n",
    # Python: a package re-exporting from its __init__.py
    "pkg/__init__.py": "from .core import *\n",
    "pkg/core.py": "def build():\n    return 1\n",
    "pkg/other.py": "import os\n",
    "use.py": "import pkg\n",
    # Go: a package and its module path
    "go.mod": "module example.com/m\n",
    "store/store.go": "package store\n",
    "store/cache.go": "package store\n",
    "cmd/main.go": 'package main\n\nimport (\n\t"fmt"\n\t"example.com/m/store"\n)\n',
    # Rust: pub use in lib.rs
    "Cargo.toml": '[package]\nname = "demo"\n',
    "src/lib.rs": "mod de;\npub use crate::de::from_str;\n",
    "src/de.rs": "pub fn from_str() {}\n",
    "src/app.rs": "use crate::from_str;\n",
}


@pytest.mark.parametrize(
    ("source", "reachable", "not_reachable"),
    [
        ("app/main.ts", {"packages/kit/src/schemas.ts", "app/local.ts"}, {"packages/kit/src/unrelated.ts"}),
        ("use.py", {"pkg/__init__.py", "pkg/core.py"}, {"pkg/other.py"}),
        ("cmd/main.go", {"store/store.go", "store/cache.go"}, set()),
        ("store/store.go", {"store/cache.go"}, {"cmd/main.go"}),
        ("src/app.rs", {"src/lib.rs", "src/de.rs"}, set()),
    ],
)
def test_the_reader_follows_imports_and_re_exports(
    source: str, reachable: set[str], not_reachable: set[str]
) -> None:
    found = ImportReader(TREE).reachable(source)
    assert reachable <= found
    assert not (not_reachable & found)


def test_a_private_use_or_a_plain_module_import_passes_nothing_on() -> None:
    reader = ImportReader(
        {
            "src/lib.rs": "mod de;\nuse crate::de::from_str;\n",
            "src/de.rs": "pub fn from_str() {}\n",
            "src/app.rs": "use crate::from_str;\n",
            "pkg/__init__.py": "",
            "pkg/mod.py": "from .impl import thing\n",
            "pkg/impl.py": "def thing():\n    return 1\n",
            "use.py": "from pkg import mod\n",
        }
    )
    assert "src/de.rs" not in reader.reachable("src/app.rs")
    assert "pkg/impl.py" not in reader.reachable("use.py")


def test_the_bench_reports_precision_on_a_planted_repository(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo")
    files = {
        **TREE,
        "app/main.ts": 'import * as z from "@acme/kit"\nexport function go() { z.union() }\n',
        "use.py": "import pkg\n\n\ndef go():\n    pkg.build()\n",
        "src/app.rs": "use crate::from_str;\nfn go() { from_str(); }\n",
    }
    sha = commit(repo, "2024-05-01", files)
    result = run_bench_edges(repo, "HEAD", sample=50, seed=1)
    assert result["commit"] == sha
    assert result["sampled"] == result["edges"] >= 3
    assert result["precision"] == 1.0
    assert result["barrels"] >= 3


def test_star_imports_on_consecutive_lines_are_each_read() -> None:
    reader = ImportReader(
        {
            "pkg/__init__.py": "from ._a import *\nfrom ._b import *\nfrom ._c import (\n    x,\n    y,\n)\n",
            "pkg/_a.py": "",
            "pkg/_b.py": "",
            "pkg/_c.py": "",
            "use.py": "import pkg\n",
        }
    )
    assert {"pkg/_a.py", "pkg/_b.py", "pkg/_c.py"} <= reader.reachable("use.py")
