"""Import resolution per language, on planted trees read by the chunker's parser."""

from __future__ import annotations

import json

import pytest

from palimpsest.index.graph.model import EdgeKind, Graph
from tests.unit.graph.support import graph_of


def imports_of(graph: Graph, path: str) -> set[str]:
    node = graph.path_node(path)
    assert node is not None, path
    return {
        graph.paths[graph.node_owner[edge.target]]
        for edge in graph.edges(node)
        if edge.kind == EdgeKind.IMPORTS and not edge.backward
    }


def test_python_relative_absolute_and_source_roots() -> None:
    graph, report = graph_of(
        {
            "src/shop/__init__.py": "",
            "src/shop/cart.py": (
                "import json\nimport shop.util\nfrom . import prices\nfrom .tax import rate\n"
                "from ..vendored import thing\nfrom shop.json import dumps\n"
            ),
            "src/shop/prices.py": "P = 1\n",
            "src/shop/tax/__init__.py": "def rate():\n    return 1\n",
            "src/shop/util.py": "U = 1\n",
            "src/shop/json/__init__.py": "def dumps():\n    return ''\n",
            "libs/core/src/palimpsest/core/db.py": "def open_pool():\n    return 1\n",
            "libs/core/src/palimpsest/core/__init__.py": "",
            "services/app/main.py": "from palimpsest.core.db import open_pool\nimport requests\n",
        }
    )
    assert imports_of(graph, "src/shop/cart.py") == {
        "src/shop/util.py",
        "src/shop/prices.py",
        "src/shop/tax/__init__.py",
        "src/shop/json/__init__.py",
    }
    # `import json` is the standard library, not src/shop/json (whose root is a package)
    assert report.external_imports["json"] == 1
    # a namespace package (no __init__.py at palimpsest/) still resolves
    assert imports_of(graph, "services/app/main.py") == {"libs/core/src/palimpsest/core/db.py"}
    assert report.external_imports["requests"] == 1
    assert [(u.path, u.specifier) for u in report.unresolved_imports] == [("src/shop/cart.py", "..vendored")]


def test_typescript_relative_index_compiled_js_and_tsconfig_paths() -> None:
    tsconfig = {
        "extends": "./tsconfig.base.json",
        "compilerOptions": {"paths": {"@/*": ["src/*"], "@ui": ["packages/ui/src/index.ts"]}},
    }
    graph, report = graph_of(
        {
            "tsconfig.base.json": '{\n  // comments and trailing commas are tsconfig dialect\n  "compilerOptions": {"baseUrl": ".",},\n}\n',
            "tsconfig.json": json.dumps(tsconfig),
            "src/app.ts": (
                "import { a } from './lib/a.js';\nimport b from './lib';\nimport c from '@/lib/c';\n"
                "import ui from '@ui';\nimport d from 'src/lib/d';\nimport react from 'react';\n"
                "import x from '@/missing';\nimport fs from 'node:fs';\n"
            ),
            "src/lib/a.ts": "export const a = 1;\n",
            "src/lib/index.ts": "export default 2;\n",
            "src/lib/c.tsx": "export default 3;\n",
            "src/lib/d.ts": "export default 4;\n",
            "packages/ui/src/index.ts": "export default 5;\n",
        }
    )
    assert imports_of(graph, "src/app.ts") == {
        "src/lib/a.ts",
        "src/lib/index.ts",
        "src/lib/c.tsx",
        "packages/ui/src/index.ts",
        "src/lib/d.ts",
    }
    assert [u.specifier for u in report.unresolved_imports] == ["@/missing"]
    assert report.external_imports["react"] == 1
    assert report.external_imports["node:fs"] == 1


def test_javascript_workspace_packages() -> None:
    graph, report = graph_of(
        {
            "packages/core/package.json": json.dumps({"name": "@acme/core", "main": "lib/main.js"}),
            "packages/core/lib/main.js": "module.exports = {};\n",
            "packages/core/lib/extra.js": "module.exports = {};\n",
            "apps/web/index.js": (
                "const core = require('@acme/core');\nconst extra = require('@acme/core/lib/extra');\n"
                "const left = require('left-pad');\n"
            ),
        }
    )
    assert imports_of(graph, "apps/web/index.js") == {
        "packages/core/lib/main.js",
        "packages/core/lib/extra.js",
    }
    assert report.external_imports["left-pad"] == 1


def test_go_module_paths_name_package_directories() -> None:
    graph, report = graph_of(
        {
            "go.mod": "module example.com/shop\n\ngo 1.22\n",
            "cmd/shop/main.go": (
                'package main\n\nimport (\n\t"fmt"\n\t"example.com/shop/internal/cart"\n'
                '\t"example.com/shop/internal/none"\n\t"github.com/spf13/cobra"\n)\n\n'
                "func main() { fmt.Println(cart.Total()) }\n"
            ),
            "internal/cart/cart.go": "package cart\n\nfunc Total() int { return 1 }\n",
            "internal/cart/tax.go": "package cart\n\nfunc tax() int { return 2 }\n",
            "internal/cart/cart_test.go": "package cart\n\nfunc TestTotal() {}\n",
        }
    )
    assert imports_of(graph, "cmd/shop/main.go") == {"internal/cart/cart.go", "internal/cart/tax.go"}
    assert [u.specifier for u in report.unresolved_imports] == ["example.com/shop/internal/none"]
    assert report.external_imports["fmt"] == 1
    assert report.external_imports["github.com/spf13/cobra"] == 1


def test_rust_mod_use_crate_super_and_workspace_crates() -> None:
    graph, report = graph_of(
        {
            "Cargo.toml": '[package]\nname = "app"\n',
            "src/main.rs": "mod net;\nmod util;\nuse crate::net::{client, Server};\nuse helpers::fmt;\nfn main() {}\n",
            "src/net/mod.rs": "pub mod client;\npub struct Server;\n",
            "src/net/client.rs": "use super::Server;\nuse std::io;\npub fn get() {}\n",
            "src/util.rs": "pub fn u() {}\n",
            "crates/helpers/Cargo.toml": '[package]\nname = "helpers"\n',
            "crates/helpers/src/lib.rs": "pub mod fmt;\n",
            "crates/helpers/src/fmt.rs": "pub fn f() {}\n",
        }
    )
    assert imports_of(graph, "src/main.rs") == {
        "src/net/mod.rs",
        "src/util.rs",
        "src/net/client.rs",
        "crates/helpers/src/fmt.rs",
    }
    assert imports_of(graph, "src/net/client.rs") == {"src/net/mod.rs"}
    assert report.external_imports["std"] == 1
    assert report.unresolved_imports == []


def test_jvm_c_ruby_php_by_path_suffix() -> None:
    graph, report = graph_of(
        {
            "src/main/java/com/acme/App.java": (
                "package com.acme;\nimport com.acme.util.Helper;\nimport static com.acme.util.Consts.MAX;\n"
                "import java.util.List;\nclass App {}\n"
            ),
            "src/main/java/com/acme/util/Helper.java": "package com.acme.util;\npublic class Helper {}\n",
            "src/main/java/com/acme/util/Consts.java": "package com.acme.util;\npublic class Consts {}\n",
            "native/src/main.c": '#include "util.h"\n#include <stdio.h>\n#include "proj/api.h"\nint main(){return 0;}\n',
            "native/src/util.h": "int util(void);\n",
            "native/include/proj/api.h": "int api(void);\n",
            "lib/shop.rb": "require_relative 'shop/cart'\nrequire 'json'\nclass Shop; end\n",
            "lib/shop/cart.rb": "class Cart; end\n",
            "app/Http/Controller.php": "<?php\nuse App\\Models\\User;\nrequire 'helpers.php';\n",
            "app/Http/helpers.php": "<?php\nfunction h() {}\n",
            "src/Models/User.php": "<?php\nclass User {}\n",
        }
    )
    assert imports_of(graph, "src/main/java/com/acme/App.java") == {
        "src/main/java/com/acme/util/Helper.java",
        "src/main/java/com/acme/util/Consts.java",
    }
    assert imports_of(graph, "native/src/main.c") == {"native/src/util.h", "native/include/proj/api.h"}
    assert imports_of(graph, "lib/shop.rb") == {"lib/shop/cart.rb"}
    assert imports_of(graph, "app/Http/Controller.php") == {"src/Models/User.php", "app/Http/helpers.php"}
    assert report.external_imports["java"] == 1
    assert report.external_imports["stdio.h"] == 1
    assert report.external_imports["json"] == 1


_EXPORTS_PACKAGE = {
    "name": "@acme/kit",
    "main": "./dist/index.cjs",
    "exports": {
        "./package.json": "./package.json",
        ".": {
            "@acme/source": "./src/index.ts",
            "import": {"types": "./dist/index.d.mts", "default": "./dist/index.mjs"},
        },
        "./adapters/*": {"import": "./dist/adapters/*.mjs", "require": "./dist/adapters/*.cjs"},
        "./adapters/internal/*": None,
        "./http": {"types": "./lib/esm/http/index.d.ts", "default": "./lib/esm/http/index.js"},
        "./legacy": ["./dist/legacy.js"],
    },
}


@pytest.mark.parametrize(
    ("specifier", "expected"),
    [
        ("@acme/kit", "packages/kit/src/index.ts"),  # a custom (source) condition first
        ("@acme/kit/adapters/express", "packages/kit/src/adapters/express.ts"),  # pattern, dist -> src
        ("@acme/kit/http", "packages/kit/src/http/index.ts"),  # nested build folders, index
        ("@acme/kit/legacy", "packages/kit/src/legacy.ts"),  # an array of targets
        ("@acme/kit/util/deep", "packages/kit/src/util/deep.ts"),  # not in the map: the subpath convention
        ("@acme/bare", "packages/bare/src/main.ts"),  # exports as one string, built file mapped back
        ("@acme/conds", "packages/conds/src/index.ts"),  # exports as conditions only
    ],
)
def test_a_workspace_package_resolves_through_its_exports_map(specifier: str, expected: str) -> None:
    graph, report = graph_of(
        {
            "packages/kit/package.json": json.dumps(_EXPORTS_PACKAGE),
            "packages/kit/src/index.ts": "export const a = 1\n",
            "packages/kit/src/adapters/express.ts": "export const e = 1\n",
            "packages/kit/src/http/index.ts": "export const h = 1\n",
            "packages/kit/src/legacy.ts": "export const l = 1\n",
            "packages/kit/src/util/deep.ts": "export const d = 1\n",
            "packages/bare/package.json": json.dumps({"name": "@acme/bare", "exports": "./dist/main.js"}),
            "packages/bare/src/main.ts": "export const m = 1\n",
            "packages/conds/package.json": json.dumps(
                {
                    "name": "@acme/conds",
                    "exports": {"types": "./build/index.d.ts", "default": "./build/index.js"},
                }
            ),
            "packages/conds/src/index.ts": "export const c = 1\n",
            "app/main.ts": f'import {{ x }} from "{specifier}"\n',
        }
    )
    assert imports_of(graph, "app/main.ts") == {expected}
    assert report.workspace_packages == 3


def test_go_local_replace_directives_map_module_paths_to_directories() -> None:
    graph, report = graph_of(
        {
            "app/go.mod": (
                "module example.com/app\n\ngo 1.22\n\nrequire example.com/lib v1.0.0\n\n"
                "replace example.com/lib => ../lib\n\n"
                "replace (\n\texample.com/util v1.2.0 => ../shared/util // local\n"
                "\texample.com/remote => example.com/fork v1.0.0\n)\n"
            ),
            "app/main.go": (
                'package main\n\nimport (\n\t"example.com/lib/store"\n\t"example.com/util"\n'
                '\t"example.com/remote"\n)\n\nfunc main() { store.Open(); util.Do(); remote.X() }\n'
            ),
            "lib/store/store.go": "package store\n\nfunc Open() {}\n",
            "shared/util/util.go": "package util\n\nfunc Do() {}\n",
        }
    )
    assert imports_of(graph, "app/main.go") == {"lib/store/store.go", "shared/util/util.go"}
    # a replacement by another module path is not a directory of this tree
    assert report.external_imports["example.com/remote"] == 1
