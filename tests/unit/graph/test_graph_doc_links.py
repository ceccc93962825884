"""A doc's link makes a mention edge to the file its site resolves it to (codefacts.sites)."""

from __future__ import annotations

from palimpsest.index.graph import EdgeKind, Graph
from tests.unit.graph.support import graph_of


def mentioned(graph: Graph, doc: str) -> set[str]:
    node = graph.path_node(doc)
    assert node is not None
    return {
        graph.paths[graph.node_owner[e.target]]
        for e in graph.edges(node)
        if e.kind == EdgeKind.MENTIONS and not e.backward
    }


def test_links_point_where_the_site_serves_them() -> None:
    graph, _ = graph_of(
        {
            "mkdocs.yml": "site_name: Shop\ndocs_dir: handbook\n",
            "handbook/index.md": "# Shop\n\nRun [the script](/scripts/run.py) or [this](../tools/run.py).\n",
            "handbook/scripts/run.py": "def run():\n    return 1\n",
            "scripts/run.py": "def start():\n    return 2\n",
            "tools/run.py": "def tool():\n    return 3\n",
            "README.md": "# Shop\n\nSee [the runner](/scripts/run.py).\n",
        }
    )
    # MkDocs: root-relative from docs_dir; relative from the page's source file
    assert mentioned(graph, "handbook/index.md") == {"handbook/scripts/run.py", "tools/run.py"}
    # GitHub: the README's root-relative link is the repository's root
    assert mentioned(graph, "README.md") == {"scripts/run.py"}
