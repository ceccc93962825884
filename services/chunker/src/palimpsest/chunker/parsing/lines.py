"""Line arithmetic shared by code and documentation chunking.

Lines are split on ``\\n`` only, exactly as tree-sitter counts rows, so a chunk's content is
``"\\n".join`` of its lines and equals that slice of the file byte for byte (a ``\\r`` before
the newline stays in the content). Windows are 60 lines with 10 lines of overlap (ADR-0017);
no chunk's content exceeds ``MAX_CHUNK_BYTES`` -- an enormous single line is cut into pieces
that all carry that line's number.
"""

from __future__ import annotations

import re

from palimpsest.chunker.parsing.model import Chunk

__all__ = [
    "MAX_CHUNK_BYTES",
    "WINDOW_LINES",
    "WINDOW_OVERLAP",
    "fitted_chunks",
    "split_lines",
    "window_chunks",
    "window_spans",
]

WINDOW_LINES = 60
WINDOW_OVERLAP = 10
MAX_CHUNK_BYTES = 64 * 1024
_TRIVIAL_LINE = re.compile(r"\s*(?:end)?[\s{}()\[\];,.]*")
_UTF8 = "utf-8"
_LONE = "surrogatepass"  # a str with lone surrogates is measured, never rejected
_UTF8_CONTINUATION = 0b1100_0000
_UTF8_CONTINUATION_TAG = 0b1000_0000


def split_lines(text: str) -> list[str]:
    """The file's lines without their ``\\n`` (a final newline does not start another line)."""
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return lines


def window_spans(
    start: int, end: int, size: int = WINDOW_LINES, overlap: int = WINDOW_OVERLAP
) -> list[tuple[int, int]]:
    """``(first, last)`` line pairs of windows of ``size`` lines stepping ``size - overlap``."""
    spans: list[tuple[int, int]] = []
    step = size - overlap
    first = start
    while first <= end:
        last = min(first + size - 1, end)
        spans.append((first, last))
        if last == end:
            break
        first += step
    return spans


def window_chunks(lines: list[str], start: int, end: int, kind: str, name: str | None) -> list[Chunk]:
    """Windows over lines ``start..end``; windows of only blanks and closing brackets or ``end``
    are left out."""
    chunks: list[Chunk] = []
    for first, last in window_spans(start, end):
        if not all(_TRIVIAL_LINE.fullmatch(line) for line in lines[first - 1 : last]):
            chunks.extend(fitted_chunks(lines, first, last, kind, name))
    return chunks


def fitted_chunks(lines: list[str], start: int, end: int, kind: str, name: str | None) -> list[Chunk]:
    """One chunk for lines ``start..end``, or several when the text exceeds the byte cap."""
    content = "\n".join(lines[start - 1 : end])
    if len(content) * 4 <= MAX_CHUNK_BYTES or len(content.encode(_UTF8, _LONE)) <= MAX_CHUNK_BYTES:
        return [Chunk(kind, name, start, end, content)]
    return _packed(lines, start, end, kind, name)


def _packed(lines: list[str], start: int, end: int, kind: str, name: str | None) -> list[Chunk]:
    """Greedily pack whole lines under the cap; cut any line that alone exceeds it."""
    chunks: list[Chunk] = []
    first, size = start, 0
    for number in range(start, end + 1):
        line_bytes = len(lines[number - 1].encode(_UTF8, _LONE)) + 1
        if size and size + line_bytes > MAX_CHUNK_BYTES:
            chunks.append(Chunk(kind, name, first, number - 1, "\n".join(lines[first - 1 : number - 1])))
            first, size = number, 0
        if line_bytes > MAX_CHUNK_BYTES:
            chunks.extend(Chunk(kind, name, number, number, piece) for piece in _cut(lines[number - 1]))
            first, size = number + 1, 0
            continue
        size += line_bytes
    if first <= end:
        chunks.append(Chunk(kind, name, first, end, "\n".join(lines[first - 1 : end])))
    return chunks


def _cut(line: str) -> list[str]:
    """Pieces of one line, each at most ``MAX_CHUNK_BYTES`` UTF-8 bytes, cut between characters."""
    data = line.encode(_UTF8, _LONE)
    pieces: list[str] = []
    begin = 0
    while begin < len(data):
        stop = min(begin + MAX_CHUNK_BYTES, len(data))
        while stop < len(data) and data[stop] & _UTF8_CONTINUATION == _UTF8_CONTINUATION_TAG:
            stop -= 1
        pieces.append(data[begin:stop].decode(_UTF8, _LONE))
        begin = stop
    return pieces
