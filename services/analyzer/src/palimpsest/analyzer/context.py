"""The context block a model reads: code first, then documentation under an explicit banner.

Each chunk is headed ``// path (last modified YYYY-MM-DD)``; a chunk of unknown age gets no
annotation at all (never a guessed date). Docs follow the code under :data:`DOC_BANNER`, and a
doc that is stale by the shared rule carries the relative phrase
(``— 14 months older than typical code in this repo``). The order and the banner are what make
the model treat prose as a claim to verify rather than a fact.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from palimpsest.analyzer.selection import AnalysisChunk, Selection

DOC_BANNER = "--- Documentation excerpts (prose may be outdated; the code is the source of truth) ---"
MAX_CHUNK_CHARS = 6000
"""A chunk's text is cut beyond this many characters (chunks are at most ~60 lines anyway)."""


def day(when: datetime | None) -> str | None:
    return when.date().isoformat() if when is not None else None


def header(chunk: AnalysisChunk) -> str:
    """``// path (last modified 2026-05-28)``, with the relative phrase for a stale doc."""
    date = day(chunk.last_modified_at)
    if date is None:
        return f"// {chunk.path}"
    if chunk.kind == "doc" and chunk.stale and chunk.age:
        return f"// {chunk.path} (last modified {date} — {chunk.age})"
    return f"// {chunk.path} (last modified {date})"


def _body(chunk: AnalysisChunk, max_chars: int) -> str:
    text = chunk.text.rstrip("\n")
    if len(text) > max_chars:
        text = text[:max_chars].rstrip() + "\n… (truncated)"
    return text


def _blocks(chunks: Sequence[AnalysisChunk], max_chars: int) -> list[str]:
    return [f"{header(c)}\n{_body(c, max_chars)}" for c in chunks]


def format_context(selection: Selection, *, max_chunk_chars: int = MAX_CHUNK_CHARS) -> str:
    """Code chunks, then (when there are any) the documentation block under the banner."""
    parts = _blocks(selection.code, max_chunk_chars)
    docs = selection.docs
    if docs:
        parts.append(DOC_BANNER)
        parts.extend(_blocks(docs, max_chunk_chars))
    return "\n\n".join(parts)
