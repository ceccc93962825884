"""Reading one snapshot's paths, symbols, facts and config texts from the code index.

Symbols and facts are stored per blob, in the blob's row; a snapshot maps paths to blobs, and two
paths with the same content share one blob's records. Three set-oriented queries (hash-join
friendly, no per-file round trips) read everything the graph needs. Config files
(``tsconfig.json``, ``go.mod``, ...) are reassembled from their chunks: they are windowed text,
and windows overlap, so each line is taken once, by its number.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from uuid import UUID

from palimpsest.core.db import Conn
from palimpsest.index import snapshots
from palimpsest.index.graph.facts import FactRow, FileFacts, SnapshotFacts, SymbolRow, is_config_file
from palimpsest.index.graph.gcpause import gc_paused
from palimpsest.index.records import decode_facts, decode_symbols
from palimpsest.index.snapshots import ChunkTuple, FileTuple, RecordTuple

__all__ = ["load_snapshot_facts"]


def _reassemble(chunks: list[tuple[int, str]]) -> str:
    lines: dict[int, str] = {}
    for start, content in chunks:
        for offset, line in enumerate(content.split("\n")):
            lines.setdefault(start + offset, line)
    return "\n".join(lines[n] for n in sorted(lines))


async def load_snapshot_facts(conn: Conn, repository_id: UUID, snapshot_id: UUID) -> SnapshotFacts:
    """Everything :func:`~palimpsest.index.graph.build.build_graph` needs, in the caller's tenant.

    The rows are read on the event loop; decoding them (about a second of CPU for 50 000 files)
    runs in a thread, so the process's other work is not stalled meanwhile: a reviewer storing
    a new snapshot's graph held up every search and handler of its process for that long."""
    files = await snapshots.file_tuples(conn, snapshot_id)
    records = await snapshots.record_tuples(conn, repository_id, snapshot_id)
    config_blobs = {sha: path for path, sha, *_ in files if is_config_file(path)}
    chunks: list[ChunkTuple] = []
    if config_blobs:
        chunks = await snapshots.chunk_tuples(conn, repository_id, list(config_blobs))
    return await asyncio.to_thread(_assemble, files, records, chunks)


@gc_paused
def _assemble(
    files: list[FileTuple], records: list[RecordTuple], chunk_rows: list[ChunkTuple]
) -> SnapshotFacts:
    symbols: dict[str, list[SymbolRow]] = {}
    facts: dict[str, list[FactRow]] = {}
    for sha, symbol_text, fact_text in records:
        symbols[sha] = [SymbolRow(*r) for r in decode_symbols(symbol_text)]
        facts[sha] = [FactRow(*r) for r in decode_facts(fact_text)]
    chunks: dict[str, list[tuple[int, str]]] = defaultdict(list)
    for sha, start, content in chunk_rows:
        chunks[sha].append((start, content))
    texts: dict[str, str] = {}
    for path, sha, *_ in files:
        if sha in chunks and is_config_file(path):
            texts[path] = _reassemble(chunks[sha])
    return SnapshotFacts(
        files=[
            FileFacts(
                path=path,
                language=language,
                kind="doc" if kind == "doc" else "code",
                skip_reason=skip_reason,
                symbols=symbols.get(sha, ()),
                facts=facts.get(sha, ()),
            )
            for path, sha, language, kind, skip_reason in files
        ],
        texts=texts,
    )
