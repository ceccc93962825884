"""The stored form of a resolved graph: what is loaded is what was resolved, or nothing."""

from __future__ import annotations

import asyncio
import zlib
from collections.abc import Awaitable, Callable
from uuid import uuid4

import pytest

from palimpsest.index.graph import Graph, GraphCache, GraphReport, SnapshotFacts, resolve_seeds
from palimpsest.index.graph.persisted import RESOLVER, decode_graph, encode_graph
from tests.unit.graph.support import graph_of, ranked, snapshot

FILES = {
    "src/plugins.py": (
        "import importlib\nfrom .missing import thing\n\n\n"
        "def load(name):\n    return getattr(importlib.import_module(name), 'plugin')\n"
    ),
    "src/a/run.py": "def start():\n    return 1\n",
    "src/b/run.py": "def start():\n    return 2\n",
    "src/main.py": "from src.a.run import start\n\n\ndef main():\n    return start()\n",
    "src/other.py": "def other(runner):\n    return runner.start()\n",
    "src/ünïcode/naïve.py": "from src.main import main\n\n\ndef café():\n    return main()\n",
    "web/app.ts": "import { util } from './lib/util';\nexport const app = util;\n",
    "web/lib/util.ts": "export const util = 1;\n",
    "docs/old.md": "# Old\n\nGoverns: src/removed\nSupersedes: 0042\n\nSee `start` in src/main.py.\n",
    "docs/new.md": "# New\n\nGoverns: src/a\n",
    "config/app.yaml": "a: 1\n",
}


def test_a_loaded_graph_equals_the_resolved_one_and_ranks_alike() -> None:
    graph, report = graph_of(FILES)
    loaded, loaded_report = decode_graph(encode_graph(graph, report))
    assert loaded == graph
    assert loaded_report == report
    assert loaded_report.as_dict() == report.as_dict() and loaded_report.text() == report.text()
    assert graph.edge_count > 5 and report.ambiguous and report.dynamic and report.governs_unmatched
    seeds = ["src/a/run.py"]
    assert ranked(loaded, seeds) == ranked(graph, seeds)
    assert resolve_seeds(loaded, ["start"]).matched == resolve_seeds(graph, ["start"]).matched


@pytest.mark.parametrize("files", [{}, {"README": "hello\n"}, {"a.py": "def f():\n    return 1\n"}])
def test_the_smallest_graphs_round_trip(files: dict[str, str]) -> None:
    graph, report = graph_of(files)
    assert decode_graph(encode_graph(graph, report)) == (graph, report)


@pytest.mark.parametrize(
    "damage",
    [
        lambda p: b"NOTGRAPH" + p[8:],
        lambda p: p[:-10],
        lambda p: p[:8] + zlib.compress(zlib.decompress(p[8:])[:-3]),
        lambda p: p[:8] + zlib.compress(zlib.decompress(p[8:]) + b"xx"),
        lambda p: p[:8] + zlib.compress(b"\x02\x00\x00\x00" + zlib.decompress(p[8:])[4:]),
    ],
    ids=["magic", "truncated", "short-arrays", "trailing", "format"],
)
def test_a_damaged_or_foreign_payload_is_refused(damage: Callable[[bytes], bytes]) -> None:
    payload = encode_graph(*graph_of(FILES))
    with pytest.raises(ValueError):
        decode_graph(damage(payload))


def test_the_resolver_digest_names_the_resolving_code() -> None:
    assert len(RESOLVER) == 32 and int(RESOLVER, 16) >= 0


class _Store:
    """A GraphStore in memory: what a second process would find in the index."""

    def __init__(self) -> None:
        self.payload: bytes | None = None
        self.reads = 0

    async def read(self) -> tuple[Graph, GraphReport] | None:
        self.reads += 1
        return None if self.payload is None else decode_graph(self.payload)

    async def write(self, graph: Graph, report: GraphReport) -> None:
        self.payload = encode_graph(graph, report)


async def test_a_cache_resolves_once_stores_it_and_another_cache_loads_it() -> None:
    facts = snapshot(FILES)
    loads: list[int] = []

    def loader() -> Callable[[], Awaitable[SnapshotFacts]]:
        async def load() -> SnapshotFacts:
            loads.append(1)
            await asyncio.sleep(0)
            return facts

        return load

    store, sid = _Store(), uuid4()
    first = GraphCache()
    a, b = await asyncio.gather(first.get(sid, loader(), store), first.get(sid, loader(), store))
    assert a is b and (first.builds, first.loads, len(loads)) == (1, 0, 1)
    assert store.payload is not None and store.reads == 1
    second = GraphCache()  # another replica: reads the stored graph, never the facts
    graph, report = await second.get(sid, loader(), store)
    assert (second.builds, second.loads, len(loads)) == (0, 1, 1)
    assert (graph, report) == a
