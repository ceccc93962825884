"""The context block a model reads: code first, then documentation under an explicit banner.

Each chunk is headed ``// path (last modified YYYY-MM-DD)``; a chunk of unknown age gets no
annotation at all (never a guessed date). Docs follow the code under :data:`DOC_BANNER`, and a
doc that is stale carries the relative phrase (``— 14 months older than typical code in this
repo``), and a doc the documentation check judged carries its state (drift, verified, generated
reference, unverified and old: the same states the report and the review context use). The order and the banner are what make
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


# what a doc's state (the documentation check's, palimpsest.index.docstates) adds to its header
STATE_NOTES = {
    "drift": "drift: the documentation check proved a claim of it false",
    "verified": "verified: its claims hold at this commit",
    "reference": "generated reference, never stale",
    "unverified_old": "unverified and old",
}


def header(chunk: AnalysisChunk) -> str:
    """``// path (last modified 2026-05-28)``, with the relative phrase for a stale doc and the
    doc's state when the documentation check judged it."""
    date = day(chunk.last_modified_at)
    notes = [f"last modified {date}"] if date is not None else []
    if chunk.kind == "doc" and chunk.stale and chunk.age and date is not None:
        notes[0] += f" — {chunk.age}"
    if chunk.kind == "doc" and chunk.state in STATE_NOTES:
        notes.append(STATE_NOTES[chunk.state])
    return f"// {chunk.path} ({'; '.join(notes)})" if notes else f"// {chunk.path}"


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
