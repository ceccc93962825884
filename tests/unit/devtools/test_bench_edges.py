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


RUST = {
    "Cargo.toml": '[package]\nname = "demo"\n',
    "src/lib.rs": (
        "#[macro_use]\nmod macros;\npub mod builder;\nmod io;\npub mod value;\n"
        "pub use crate::value::{to_value, Value as Json};\n"
    ),
    "src/macros.rs": "#[macro_export]\nmacro_rules! json { () => {} }\n",
    "src/builder/mod.rs": "mod command;\nmod arg;\npub use command::Command;\n",
    "src/builder/command.rs": "pub struct Command;\n",
    "src/builder/arg.rs": "use crate::builder::{Command, self};\npub struct Arg;\n",
    "src/io/mod.rs": '#[cfg(not(feature = "std"))]\n#[path = "core.rs"]\nmod imp;\npub use self::imp::Write;\n',
    "src/io/core.rs": "pub trait Write {}\n",
    "src/value/mod.rs": "mod de;\npub fn to_value() {}\npub struct Value;\n",
    "src/value/de.rs": "fn go() { crate::builder::Command; super::to_value(); }\n",
    "src/ser.rs": "use crate::io;\nfn go<W: io::Write>() { json!() }\n",
    "tests/test.rs": "#[macro_use]\nmod support;\nuse demo::json;\nfn t() { json!() }\n",
    "tests/support/mod.rs": "macro_rules! check { () => {} }\n",
    "tests/lexical.rs": '#[path = "../src/value/mod.rs"]\nmod value;\n#[path = "lexical/num.rs"]\nmod num;\n',
    "tests/lexical/num.rs": "use crate::value::de;\n",
}


@pytest.mark.parametrize(
    ("source", "reachable", "not_reachable"),
    [
        # a "uniform" path through a module the barrel declares
        ("src/builder/arg.rs", {"src/builder/mod.rs", "src/builder/command.rs"}, {"src/io/core.rs"}),
        # paths written inline, and `super::` to the declaring module
        ("src/value/de.rs", {"src/builder/command.rs", "src/value/mod.rs"}, {"src/macros.rs"}),
        # a module brought in by `use`, then named inline; #[path] after another attribute;
        # the crate's own macro by name
        ("src/ser.rs", {"src/io/mod.rs", "src/io/core.rs", "src/macros.rs"}, {"src/value/de.rs"}),
        # another crate's #[macro_export] macro: at that crate's root
        # (and a test crate's root declares its modules beside itself)
        (
            "tests/test.rs",
            {"src/lib.rs", "src/macros.rs", "tests/support/mod.rs"},
            {"src/builder/command.rs"},
        ),
        # a test crate whose #[path] module is a folder of the library: `crate::` is that crate
        ("tests/lexical/num.rs", {"src/value/de.rs"}, {"src/io/core.rs", "src/value/mod.rs"}),
    ],
)
def test_the_reader_follows_rust_modules_as_the_compiler_declares_them(
    source: str, reachable: set[str], not_reachable: set[str]
) -> None:
    found = ImportReader(RUST).reachable(source)
    assert reachable <= found, reachable - found
    assert not (not_reachable & found), not_reachable & found


def test_the_reader_follows_tsconfig_paths_with_comments_and_extends() -> None:
    reader = ImportReader(
        {
            "tsconfig.base.json": '{ // shared\n "compilerOptions": {"paths": {"~/*": ["./src/*"],},}, }\n',
            "app/tsconfig.json": '{"extends": "../tsconfig.base.json", "include": ["**/*.ts"]}\n',
            "src/util.ts": "export const u = 1\n",
            "app/main.ts": 'import { u } from "~/util"\n',
        }
    )
    assert reader.reachable("app/main.ts") == {"src/util.ts"}
