"""Graphs of planted trees, made by the chunker's own parsing core (no database).

``snapshot`` runs every file through :func:`palimpsest.chunker.work.analyze_blob` — the function
the chunker's workers run — so the facts a test resolves are exactly the facts the chunker
stores for that text.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping

from palimpsest.chunker.parsing import is_doc
from palimpsest.chunker.work import analyze_blob
from palimpsest.index.graph import (
    FactRow,
    FileFacts,
    Graph,
    GraphReport,
    Ranked,
    RankOptions,
    Signals,
    SnapshotFacts,
    SymbolRow,
    build_graph,
    rank,
    resolve_seeds,
)
from palimpsest.index.graph.facts import is_config_file
from palimpsest.index.records import decode_facts, decode_symbols

MAX_BYTES = 256 * 1024


def snapshot(files: Mapping[str, str | bytes]) -> SnapshotFacts:
    out: list[FileFacts] = []
    texts: dict[str, str] = {}
    for path, content in sorted(files.items()):
        data = content.encode() if isinstance(content, str) else content
        sha = hashlib.sha1(data).hexdigest()
        blob = analyze_blob(path, sha, data, MAX_BYTES)
        out.append(
            FileFacts(
                path=path,
                language=blob.language,
                kind="doc" if is_doc(path) else "code",
                skip_reason=blob.skip_reason,
                symbols=[SymbolRow(*r) for r in decode_symbols(blob.symbols)],  # as the loader reads them
                facts=[FactRow(*r) for r in decode_facts(blob.facts)],
            )
        )
        if is_config_file(path) and blob.skip_reason is None:
            texts[path] = data.decode()
    return SnapshotFacts(out, texts)


def graph_of(files: Mapping[str, str | bytes]) -> tuple[Graph, GraphReport]:
    return build_graph(snapshot(files))


def ranked(
    graph: Graph,
    seeds: Iterable[str],
    *,
    hops: int | None = 1,
    signals: Signals | None = None,
    use_graph: bool = True,
) -> list[Ranked]:
    return rank(
        graph,
        resolve_seeds(graph, list(seeds)),
        options=RankOptions(hops=hops),
        signals=signals,
        use_graph=use_graph,
    )


def paths(results: Iterable[Ranked]) -> list[str]:
    return [r.path for r in results]
