"""The negative-control report: what the graph cannot see, counted and listed."""

from __future__ import annotations

from palimpsest.chunker.parsing import PARSED_LANGUAGES
from palimpsest.index.codefacts import is_test
from palimpsest.index.graph import GRAPH_LANGUAGES
from tests.unit.graph.support import graph_of


def test_graph_languages_are_the_chunkers_parsed_languages() -> None:
    assert frozenset(PARSED_LANGUAGES) == GRAPH_LANGUAGES


def test_report_lists_every_blind_spot() -> None:
    graph, report = graph_of(
        {
            "config/app.yaml": "a: 1\n",
            "config/db.yaml": "b: 2\n",
            "Dockerfile": "FROM scratch\n",
            "scripts/run.sh": "echo hi\n",
            "assets/logo.png": b"\x89PNG\r\n\x1a\n" + bytes(range(200)),
            "src/plugins.py": (
                "import importlib\nfrom .missing import thing\n\n\n"
                "def load(name):\n    return getattr(importlib.import_module(name), 'plugin')\n"
            ),
            "src/a/run.py": "def start():\n    return 1\n",
            "src/b/run.py": "def start():\n    return 2\n",
            "src/main.py": "def main(runner):\n    return runner.start()\n",
            "docs/old.md": "# Old\n\nGoverns: src/removed\nSupersedes: 0042\n",
        }
    )
    assert dict(report.no_parser) == {".yaml": 2, "Dockerfile": 1, ".sh": 1}
    assert dict(report.not_indexed) == {"binary": 1}
    assert sorted((s.path, s.what) for s in report.dynamic) == [
        ("src/plugins.py", "getattr"),
        ("src/plugins.py", "import_module"),
    ]
    assert [(u.path, u.line, u.specifier) for u in report.unresolved_imports] == [
        ("src/plugins.py", 2, ".missing")
    ]
    assert report.external_imports["importlib"] == 1
    start = report.ambiguous["start"]
    assert (start.definers, start.references, start.dropped) == (["src/a/run.py", "src/b/run.py"], 2, False)
    assert [(g.path, g.target) for g in report.governs_unmatched] == [("docs/old.md", "src/removed")]
    assert [(g.path, g.target) for g in report.supersedes_unmatched] == [("docs/old.md", "0042")]
    out = report.as_dict()
    assert out["imports"]["unresolved"] == [
        {"path": "src/plugins.py", "line": 2, "specifier": ".missing", "language": "python"}
    ]
    assert out["dynamic_sites"]["by_kind"] == {"getattr": 1, "import_module": 1}
    assert out["ambiguous_names"][0]["name"] == "start"
    text = report.text()
    for expected in (
        "files without a parser (no definitions, no edges), by extension: .yaml 2",
        "src/plugins.py:6  getattr",
        "src/plugins.py:2  .missing",
        "start  2 definers, 2 references",
        "docs/old.md:3  Governs: src/removed",
        "docs/old.md:4  Supersedes: 0042",
    ):
        assert expected in text, expected
    # the ambiguous reference is split: each definer's `start` gets half of it
    main = graph.path_node("src/main.py")
    assert main is not None
    shares = sorted(round(e.weight, 3) for e in graph.edges(main) if e.kind.name == "REFERENCES")
    assert shares == [0.5, 0.5]


def test_too_common_names_make_no_edges_and_are_reported() -> None:
    files = {f"pkg{n}/mod.py": "def get():\n    return 1\n" for n in range(30)}
    files["app.py"] = "def main(store):\n    return store.get()\n"
    graph, report = graph_of(files)
    assert report.ambiguous["get"].dropped
    app = graph.path_node("app.py")
    assert app is not None
    assert [e for e in graph.edges(app) if e.kind.name in {"REFERENCES", "CALLS"}] == []


def test_definitions_nested_in_functions_and_in_tests_do_not_answer_code() -> None:
    graph, report = graph_of(
        {
            "src/app.py": "def handle(api):\n    return api.error()\n",
            "src/errors.py": "def error():\n    return 500\n",
            "src/views.py": "def view():\n    def error():\n        return 1\n    return error()\n",
            "tests/test_app.py": "def test_x():\n    def error():\n        return 2\n    assert error()\n\n\ndef error():\n    return 3\n",
        }
    )
    app = graph.path_node("src/app.py")
    assert app is not None
    targets = {
        graph.node_id(e.target) for e in graph.edges(app) if not e.backward and e.kind.name != "DEFINES"
    }
    assert targets == {"sym:src/errors.py:error"}
    assert "error" not in report.ambiguous


def test_supersedes_links_documents_by_id() -> None:
    graph, report = graph_of(
        {
            "docs/adr/0007-new-store.md": "# ADR 7\n\nSupersedes: 0004\n",
            "docs/adr/0004-old-store.md": "# ADR 4\n",
            "docs/adr/adr-0011-queue.md": "# ADR 11\n\nSupersedes: ADR-0009, 0004\n",
        }
    )
    assert report.supersedes_unmatched[0].target == "ADR-0009"
    node = graph.path_node("docs/adr/0007-new-store.md")
    assert node is not None
    assert [
        graph.paths[graph.node_owner[e.target]] for e in graph.edges(node) if e.kind.name == "SUPERSEDES"
    ] == ["docs/adr/0004-old-store.md"]


def test_test_paths_follow_the_common_conventions() -> None:
    for path in (
        "tests/x.py",
        "src/test_cart.py",
        "cart_test.go",
        "web/cart.test.ts",
        "a/__tests__/b.js",
        "src/CartTest.java",
    ):
        assert is_test(path), path
    for path in ("src/cart.py", "src/contest.py", "src/attestation.go", "docs/testing.md"):
        assert not is_test(path), path
