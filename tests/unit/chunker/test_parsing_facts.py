"""Per-file graph facts: imports as written, calls inside definitions, references, dynamic sites."""

from __future__ import annotations

import pytest

from palimpsest.chunker.parsing import Fact, analyze_file, detect_language


def _facts(path: str, source: str, kind: str) -> list[Fact]:
    analysis = analyze_file(path, source, detect_language(path))
    return [f for f in analysis.facts if f.kind == kind]


def _imports(path: str, source: str) -> set[tuple[str, str | None, str | None]]:
    return {(f.name, f.detail, f.target) for f in _facts(path, source, "import")}


IMPORTS = [
    (
        "app/service.py",
        "import os\nimport a.b.c as abc\nfrom . import sibling\n"
        "from ..pkg.mod import thing as t, other\nfrom x import *\n",
        {
            ("os", "import", None),
            ("a.b.c", "import", None),
            (".", "from", "sibling"),
            ("..pkg.mod", "from", "thing"),
            ("..pkg.mod", "from", "other"),
            ("x", "from", "*"),
        },
    ),
    (
        "web/src/app.ts",
        'import { a } from "./foo";\nimport * as path from "node:path";\n'
        "import def from '../x/y';\nexport { q } from \"./q\";\n"
        'import "./polyfill";\nimport fs = require("fs");\n'
        'const lazy = () => import("./lazy");\nconst r = require("lodash");\n',
        {
            ("./foo", "import", None),
            ("node:path", "import", None),
            ("../x/y", "import", None),
            ("./q", "reexport", None),
            ("./polyfill", "import", None),
            ("fs", "require", None),
            ("./lazy", "dynamic_import", None),
            ("lodash", "require", None),
        },
    ),
    (
        "web/src/App.tsx",
        'import React from "react";\nimport { Row } from "./Row";\n',
        {("react", "import", None), ("./Row", "import", None)},
    ),
    (
        "server/index.js",
        'const express = require("express");\nimport { x } from "./x.js";\n',
        {("express", "require", None), ("./x.js", "import", None)},
    ),
    (
        "cmd/main.go",
        'package main\n\nimport (\n\t"fmt"\n\tstr "strings"\n\t"github.com/a/b/c"\n)\nimport "os"\n',
        {
            ("fmt", "import", None),
            ("strings", "import", None),
            ("github.com/a/b/c", "import", None),
            ("os", "import", None),
        },
    ),
    (
        "src/lib.rs",
        "use std::collections::HashMap;\nuse crate::x::{a, b as c};\nuse super::*;\n"
        "extern crate serde;\nmod utils;\nmod inline { }\n",
        {
            ("std::collections::HashMap", "use", None),
            ("crate::x::{a, b as c}", "use", None),
            ("super::*", "use", None),
            ("serde", "extern_crate", None),
            ("utils", "mod", None),
        },
    ),
    (
        "src/A.java",
        "package com.acme;\n\nimport java.util.List;\nimport static org.junit.Assert.assertEquals;\n"
        "import java.io.*;\n\nclass A {}\n",
        {
            ("java.util.List", "import", None),
            ("org.junit.Assert.assertEquals", "static_import", None),
            ("java.io.*", "import", None),
        },
    ),
    (
        "src/A.kt",
        "package com.acme\n\nimport kotlinx.coroutines.launch\nimport java.util.List as JList\n",
        {("kotlinx.coroutines.launch", "import", None), ("java.util.List", "import", None)},
    ),
    (
        "src/A.scala",
        "package com.acme\n\nimport scala.collection.mutable.{Map, Set}\nimport java.util.List\n",
        {
            ("scala.collection.mutable.{Map, Set}", "import", None),
            ("java.util.List", "import", None),
        },
    ),
    (
        "src/queue.c",
        '#include <stdio.h>\n#include "local/util.h"\n',
        {("stdio.h", "include", None), ("local/util.h", "include", None)},
    ),
    (
        "src/engine.cpp",
        '#include <vector>\n#include "app/core.hpp"\nusing namespace std;\n',
        {("vector", "include", None), ("app/core.hpp", "include", None), ("std", "import", None)},
    ),
    (
        "src/Service.cs",
        "using System;\nusing System.Collections.Generic;\nusing Alias = Foo.Bar;\n",
        {
            ("System", "import", None),
            ("System.Collections.Generic", "import", None),
            ("Foo.Bar", "import", None),
        },
    ),
    (
        "lib/invoice.rb",
        'require "json"\nrequire_relative "../lib/util"\nload \'tasks.rb\'\n',
        {
            ("json", "require", None),
            ("../lib/util", "require_relative", None),
            ("tasks.rb", "load", None),
        },
    ),
    (
        "app/index.php",
        "<?php\nuse App\\Models\\User;\nrequire_once __DIR__ . '/vendor/autoload.php';\n"
        "include 'config.php';\n",
        {
            ("App\\Models\\User", "import", None),
            ("/vendor/autoload.php", "require", None),
            ("config.php", "include", None),
        },
    ),
    (
        "Sources/App.swift",
        "import Foundation\nimport struct Darwin.stat\n",
        {("Foundation", "import", None), ("Darwin.stat", "import", None)},
    ),
]


@pytest.mark.parametrize(
    ("path", "source", "expected"), IMPORTS, ids=[p.rsplit("/", 1)[-1] for p, _, _ in IMPORTS]
)
def test_imports_are_recorded_as_written(
    path: str, source: str, expected: set[tuple[str, str | None, str | None]]
) -> None:
    assert _imports(path, source) == expected


def test_import_lines() -> None:
    facts = _facts("app/x.py", "'''doc'''\n\nimport os\n\n\ndef f():\n    import json\n", "import")
    assert [(f.name, f.line) for f in facts] == [("os", 3), ("json", 7)]


PYTHON = """\
import os


class Invoice:
    def total(self, table):
        subtotal = sum_lines(self.lines)
        return table.apply(subtotal)


def sum_lines(lines):
    return sum(line.amount for line in lines)


def report(invoice: Invoice) -> Summary:
    print(invoice.total(TAX))
    helper = make_helper()
    return helper.render()


configure(os.environ)
"""


def test_calls_carry_the_enclosing_definition_and_lie_in_its_span() -> None:
    analysis = analyze_file("billing.py", PYTHON, "python")
    calls = {(f.name, f.target, f.line) for f in analysis.facts if f.kind == "call"}
    assert calls == {
        ("sum_lines", "total", 6),
        ("apply", "total", 7),
        ("sum", "sum_lines", 11),
        ("print", "report", 15),
        ("total", "report", 15),
        ("make_helper", "report", 16),
        ("render", "report", 17),
    }
    spans = {s.name: (s.start_line, s.end_line) for s in analysis.symbols}
    for name, caller, line in calls:
        assert caller is not None
        first, last = spans[caller]
        assert first <= line <= last, name


def test_top_level_calls_are_references_but_not_calls() -> None:
    facts = analyze_file("billing.py", PYTHON, "python").facts
    assert Fact("reference", "configure", 20, None, "call") in facts
    assert not any(f.kind == "call" and f.name == "configure" for f in facts)


def test_references_are_names_not_defined_in_the_file() -> None:
    facts = analyze_file("billing.py", PYTHON, "python").facts
    references = {f.name: f.detail for f in facts if f.kind == "reference"}
    assert references == {
        "apply": "member",  # a member call: x.apply()
        "sum": "call",
        "Summary": "type",
        "print": "call",
        "make_helper": "call",
        "render": "member",
        "configure": "call",
    }
    members = {f.name for f in facts if f.kind == "call" and f.detail == "member"}
    assert members == {"apply", "render", "total"}  # invoice.total(TAX) too


def test_typescript_type_references_and_calls_into_methods() -> None:
    source = (
        "export class Service implements Billable {\n"
        "  issue(id: InvoiceId): Promise<Receipt> {\n"
        "    return this.repo.find(id).then(render);\n"
        "  }\n"
        "}\n"
    )
    facts = analyze_file("svc.ts", source, "typescript").facts
    references = {f.name for f in facts if f.kind == "reference"}
    assert {"Billable", "InvoiceId", "Promise", "Receipt", "find", "then"} <= references
    assert "Service" not in references
    calls = {(f.name, f.target) for f in facts if f.kind == "call"}
    assert calls == {("find", "issue"), ("then", "issue")}


def test_go_method_calls_are_attributed_to_the_method() -> None:
    source = (
        "package store\n\n"
        "func (s *Store) Get(id string) (*Item, error) {\n"
        '\treturn s.load(id), fmt.Errorf("x")\n'
        "}\n"
    )
    facts = analyze_file("store.go", source, "go").facts
    assert {(f.name, f.target) for f in facts if f.kind == "call"} == {
        ("load", "Get"),
        ("Errorf", "Get"),
    }


DYNAMIC = [
    ("a.py", "def f(o, n):\n    return getattr(o, n)()\n", {("getattr", "f")}),
    ("a.py", "def f(h, n):\n    return h[n](1)\n", {("subscript_call", "f")}),
    ("a.py", "mod = importlib.import_module(name)\n", {("import_module", None)}),
    ("a.ts", "function f(o: any, k: string) { return o[k](); }\n", {("subscript_call", "f")}),
    ("a.js", "function f(x) { return eval(x); }\n", {("eval", "f")}),
    ("a.js", "const m = (n) => require(n);\n", {("dynamic_require", "m")}),
    ("a.rb", "class A\n  def f(n)\n    send(n)\n  end\nend\n", {("send", "f")}),
    (
        "A.java",
        "class A { void f() throws Exception { Class.forName(n).newInstance(); } }\n",
        {("forName", "f"), ("newInstance", "f")},
    ),
    (
        "a.go",
        "package a\n\nfunc F(v any) { reflect.ValueOf(v) }\n",
        {("reflection", "F")},
    ),
    (
        "a.php",
        "<?php\nclass A { function f() { $this->$m(); call_user_func('x'); } }\n",
        {("variable_method", "f"), ("call_user_func", "f")},
    ),
    ("a.c", "int f(struct ops *o) { return o->run(1) + (*fp)(2); }\n", {("function_pointer", "f")}),
]


@pytest.mark.parametrize(("path", "source", "expected"), DYNAMIC)
def test_dynamic_dispatch_sites(path: str, source: str, expected: set[tuple[str, str | None]]) -> None:
    facts = _facts(path, source, "dynamic")
    assert {(f.name, f.target) for f in facts} == expected
    assert all(f.detail for f in facts)


def test_static_code_has_no_dynamic_sites() -> None:
    assert _facts("billing.py", PYTHON, "dynamic") == []


def test_facts_are_in_line_order_and_deterministic() -> None:
    first = analyze_file("billing.py", PYTHON, "python").facts
    assert first == analyze_file("billing.py", PYTHON, "python").facts
    assert [f.line for f in first] == sorted(f.line for f in first)
