"""The selection rule (``choose``) on synthetic chunk metadata: every branch, no database."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime

from palimpsest.analyzer.packages import Packages, primary_packages
from palimpsest.analyzer.selection import Plan, choose, choose_with_reasons
from palimpsest.analyzer.snapshot import ChunkRef
from palimpsest.index.staleness import file_kind


def refs(path: str, count: int, date: str | None) -> list[ChunkRef]:
    when = datetime.fromisoformat(date).replace(tzinfo=UTC) if date else None
    return [
        ChunkRef(path, f"sha-{path}", i, i * 10 + 1, i * 10 + 9, "window", None, file_kind(path), when)
        for i in range(count)
    ]


def paths(chosen: list[ChunkRef]) -> list[str]:
    return [r.path for r in chosen]


def test_limit_zero_and_empty() -> None:
    assert choose(refs("a.py", 3, "2024-01-01"), 0) == []
    assert choose([], 80) == []


def test_tiny_input_is_returned_whole_code_first() -> None:
    chunks = refs("README.md", 5, "2020-01-01") + refs("src/a.py", 6, "2024-01-01")
    chosen = choose(chunks, 11)
    assert Counter(paths(chosen)) == {"README.md": 5, "src/a.py": 6}
    assert [r.kind for r in chosen] == ["code"] * 6 + ["doc"] * 5


def test_doc_cap_is_twenty_percent_and_seeds_lead() -> None:
    chunks = (
        refs("docs/new.md", 3, "2025-01-01")
        + refs("README.rst", 2, "2019-01-01")
        + refs("README.md", 2, "2019-01-01")
        + [r for i in range(10) for r in refs(f"src/m{i}.py", 2, f"2024-0{1 + i % 9}-01")]
    )
    chosen = choose(chunks, 10)
    docs = [r.path for r in chosen if r.kind == "doc"]
    assert docs == ["README.md", "README.md"]  # budget 2: README.md first, then nothing else fits


def test_manifests_are_seeded_in_order_and_count_as_code() -> None:
    chunks = refs("package.json", 1, None) + refs("go.mod", 1, None) + refs("pyproject.toml", 1, None)
    chunks += [r for i in range(20) for r in refs(f"src/f{i}.py", 1, "2024-01-01")]
    chosen = choose(chunks, 5)
    assert paths(chosen)[:3] == ["package.json", "pyproject.toml", "go.mod"]
    assert all(r.kind == "code" for r in chosen)


def test_round_robin_orders_directories_by_their_newest_file() -> None:
    chunks = (
        refs("old/a.py", 3, "2020-01-01") + refs("new/b.py", 3, "2024-01-01") + refs("undated/c.py", 3, None)
    )
    chunks += refs("root.py", 3, "2022-01-01")
    chunks += refs("pad/x.py", 0, None)
    chosen = choose(chunks, 11)  # a file's chunks are taken together (up to the per-file cap)
    assert paths(chosen) == ["new/b.py"] * 3 + ["root.py"] * 3 + ["old/a.py"] * 3 + ["undated/c.py"] * 2


def test_per_file_cap_and_newest_file_first_within_a_directory() -> None:
    chunks = (
        refs("src/big.py", 9, "2023-01-01")
        + refs("src/newer.py", 2, "2024-01-01")
        + refs("src/nodate.py", 2, None)
    )
    chunks += refs("other/pad.py", 20, "2021-01-01")
    chosen = [r for r in choose(chunks, 20) if r.path.startswith("src/")]
    assert paths(chosen) == ["src/newer.py"] * 2 + ["src/big.py"] * 3 + ["src/nodate.py"] * 2
    assert [r.ordinal for r in chosen if r.path == "src/big.py"] == [0, 1, 2]


def test_spare_doc_budget_spills_to_code_but_docs_never_exceed_the_cap() -> None:
    code_only = [r for i in range(30) for r in refs(f"d{i}/f.py", 1, "2024-01-01")]
    assert Counter(r.kind for r in choose(code_only, 20)) == {"code": 20}
    docs_heavy = refs("src/one.py", 2, "2024-01-01") + [
        r for i in range(40) for r in refs(f"docs/{i}.md", 1, "2024-01-01")
    ]
    assert Counter(r.kind for r in choose(docs_heavy, 20)) == {"doc": 4, "code": 2}


# ----------------------------------------------------------------------------- the plan


def _plan(rank: dict[str, float], roots: list[str], languages: dict[str, str | None]) -> Plan:
    return Plan(Packages(roots, dict.fromkeys(roots, "pyproject.toml")), languages, rank)


def test_primary_package_first_entry_points_then_centre_and_recent_activity() -> None:
    files = {
        "src/app/__init__.py": "2023-01-01",
        "src/app/core.py": "2022-01-01",
        "src/app/util.py": "2021-01-01",
        "src/app/fresh.py": "2024-06-01",
        "src/app/tests/test_core.py": "2024-07-01",  # a test: not primary source
        ".github/workflows/ci.yml": "2024-08-01",
        "docs/_static/icon.svg": "2024-08-01",
        "scripts/release.py": "2024-08-01",
    }
    chunks = [r for path, when in files.items() for r in refs(path, 2, when)]
    languages: dict[str, str | None] = {p: "python" for p in files if p.endswith(".py")}
    languages |= {".github/workflows/ci.yml": "yaml", "docs/_static/icon.svg": None}
    plan = _plan(
        {"src/app/core.py": 0.5, "src/app/util.py": 0.3, "src/app/fresh.py": 0.01}, ["src/app"], languages
    )
    chosen = choose_with_reasons(chunks, 11, plan)
    order = list(dict.fromkeys((r.path, why.split(" (")[0]) for r, why in chosen))
    assert order == [
        ("src/app/__init__.py", "entry point of src/app"),
        ("src/app/core.py", "central in src/app"),
        ("src/app/util.py", "central in src/app"),
        ("src/app/fresh.py", "central in src/app"),
        ("scripts/release.py", "other code, newest first across folders"),
        ("src/app/tests/test_core.py", "other code, newest first across folders"),
    ]
    assert plan.owner("src/app/tests/test_core.py") is None and plan.owner("src/app/core.py") == "src/app"


def test_recent_files_are_interleaved_with_central_ones() -> None:
    names = [f"pkg/m{i}.py" for i in range(6)]
    chunks = [r for i, p in enumerate(names) for r in refs(p, 1, f"202{i}-01-01")]
    chunks += refs("other/x.py", 40, "2020-01-01")
    plan = _plan(
        {p: 1.0 / (i + 1) for i, p in enumerate(names)},
        ["pkg"],
        dict.fromkeys([*names, "other/x.py"], "python"),
    )
    reasons = [why.split(" (")[0] for _, why in choose_with_reasons(chunks, 10, plan)][:5]
    assert reasons == ["central in pkg"] * 3 + ["recently changed in pkg", "central in pkg"]


def test_manifests_declare_the_primary_packages() -> None:
    files = [
        ("src/flask/app.py", "python"),
        ("src/flask/__init__.py", "python"),
        ("examples/tutorial/flaskr/db.py", "python"),
        ("tests/test_app.py", "python"),
    ]
    found = primary_packages({"pyproject.toml": '[project]\nname = "Flask"\n'}, files)
    assert found.roots == ["src/flask"] and found.declared_by == {"src/flask": "pyproject.toml"}


def test_workspaces_go_modules_cargo_and_the_largest_tree() -> None:
    js = [("packages/vite/src/node/index.ts", "typescript"), ("packages/create-vite/index.js", "javascript"),
          ("playground/a/main.ts", "typescript")]  # fmt: skip
    pnpm = primary_packages({"pnpm-workspace.yaml": "packages:\n  - 'packages/*'\n  - playground/**\n"}, js)
    assert pnpm.roots == ["packages/create-vite", "packages/vite/src"]
    go = primary_packages({"go.mod": "module github.com/x/y\n"}, [("gin.go", "go"), ("render/json.go", "go")])
    assert go.roots == [""] and go.owner("render/json.go", "go") == "" and go.owner("x_test.go", "go") is None
    cargo = primary_packages(
        {"Cargo.toml": '[package]\nname = "rg"\n[workspace]\nmembers = ["crates/*"]\n'},
        [("src/main.rs", "rust"), ("crates/core/src/lib.rs", "rust"), ("crates/cli/src/lib.rs", "rust")],
    )
    assert cargo.roots == ["src", "crates/cli/src", "crates/core/src"]
    shipped = primary_packages(
        {"package.json": '{"name": "express", "files": ["LICENSE", "index.js", "lib/"]}'},
        [("index.js", "javascript"), ("lib/express.js", "javascript"), ("examples/a/index.js", "javascript")],
    )
    assert shipped.roots == ["index.js", "lib"] and shipped.owner("index.js", "javascript") == "index.js"
    assert shipped.owner("examples/a/index.js", "javascript") is None
    largest = primary_packages({}, [("lib/a/x.rb", "ruby"), ("lib/a/y.rb", "ruby"), ("tools/z.rb", "ruby")])
    assert largest.roots == ["lib/a"] and largest.declared_by == {"lib/a": "largest code tree"}
