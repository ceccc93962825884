"""Reading one snapshot's paths, symbols, facts and config texts from the code index.

Symbols and facts are stored per blob; a snapshot maps paths to blobs, and two paths with the
same content share one blob's rows. Three set-oriented queries (hash-join friendly, no per-file
round trips) read everything the graph needs. Config files (``tsconfig.json``, ``go.mod``, ...) are reassembled from their chunks: they
are windowed text, and windows overlap, so each line is taken once, by its number.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any
from uuid import UUID

from psycopg.rows import tuple_row

from palimpsest.core.db import Conn
from palimpsest.index.graph.facts import FactRow, FileFacts, SnapshotFacts, SymbolRow, is_config_file

__all__ = ["load_snapshot_facts"]

_SYMBOLS = (
    "SELECT s.blob_sha, s.name, s.kind, s.start_line, s.end_line, s.parent FROM code_symbols s"
    " WHERE s.repository_id = %(repo)s AND s.blob_sha IN ("
    "   SELECT f.blob_sha FROM code_index_files f WHERE f.snapshot_id = %(snap)s)"
    " ORDER BY s.blob_sha, s.ordinal"
)
_FACTS = (
    "SELECT c.blob_sha, c.kind, c.name, c.line, c.target, c.detail FROM code_facts c"
    " WHERE c.repository_id = %(repo)s AND c.blob_sha IN ("
    "   SELECT f.blob_sha FROM code_index_files f WHERE f.snapshot_id = %(snap)s)"
    " ORDER BY c.blob_sha, c.ordinal"
)


async def _rows(conn: Conn, sql: str, params: dict[str, Any]) -> list[tuple[Any, ...]]:
    async with conn.cursor(row_factory=tuple_row) as cur:
        await cur.execute(sql, params)
        return await cur.fetchall()


def _reassemble(chunks: list[tuple[int, str]]) -> str:
    lines: dict[int, str] = {}
    for start, content in chunks:
        for offset, line in enumerate(content.split("\n")):
            lines.setdefault(start + offset, line)
    return "\n".join(lines[n] for n in sorted(lines))


async def load_snapshot_facts(conn: Conn, repository_id: UUID, snapshot_id: UUID) -> SnapshotFacts:
    """Everything :func:`~palimpsest.index.graph.build.build_graph` needs, in the caller's tenant."""
    params = {"repo": repository_id, "snap": snapshot_id}
    files = await _rows(
        conn,
        "SELECT path, blob_sha, language, kind, skip_reason FROM code_index_files WHERE snapshot_id = %(snap)s",
        params,
    )
    symbols: dict[str, list[SymbolRow]] = defaultdict(list)
    for sha, *rest in await _rows(conn, _SYMBOLS, params):
        symbols[sha].append(SymbolRow(*rest))
    facts: dict[str, list[FactRow]] = defaultdict(list)
    for sha, *rest in await _rows(conn, _FACTS, params):
        facts[sha].append(FactRow(*rest))
    config_blobs = {sha: path for path, sha, *_ in files if is_config_file(path)}
    texts: dict[str, str] = {}
    if config_blobs:
        chunks: dict[str, list[tuple[int, str]]] = defaultdict(list)
        for sha, start, content in await _rows(
            conn,
            "SELECT blob_sha, start_line, content FROM code_chunks WHERE repository_id = %(repo)s"
            " AND blob_sha = ANY(%(shas)s) ORDER BY blob_sha, ordinal",
            {**params, "shas": list(config_blobs)},
        ):
            chunks[sha].append((start, content))
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
