"""CPU work of a build, run in worker processes: screen, parse and tokenise a batch of blobs.

Everything here is a pure function of its arguments so it can run in a process pool; results are
plain tuples ready to be written with ``COPY``. Chunks go in PostgreSQL's binary ``COPY`` format,
each with its lexical vector in tsvector's binary form (``lexical_document``: what
``to_tsvector('simple', code_tokens(content))`` gives, built here in the workers, which run side
by side, instead of by PostgreSQL's text-search parser in the one writing backend); where only that
parser can tell (a non-ASCII token) a chunk carries its tokens instead and PostgreSQL runs
``to_tsvector`` while moving the staged rows.
"""

from __future__ import annotations

import struct
from typing import NamedTuple

from palimpsest.chunker.parsing import ANALYSIS_VERSION, Screened, analyze_file, detect_language, screen
from palimpsest.index.ranking import file_prior
from palimpsest.index.records import encode_facts, encode_symbols
from palimpsest.index.tokens import lexical_document


class BlobResult(NamedTuple):
    sha: str
    language: str | None
    size: int
    skip_reason: str | None
    parse_errors: int
    # (ordinal, kind, name, start_line, end_line, content)
    chunks: list[tuple[int, str, str | None, int, int, str]]
    symbol_count: int
    symbols: str | None  # the blob row's records (palimpsest.index.records)
    facts: str | None


def analyze_blob(path: str, sha: str, data: bytes, max_bytes: int) -> BlobResult:
    """Screen and analyse one blob as seen at ``path``; never raises for bad content."""
    language = detect_language(path)
    verdict = screen(path, data, max_bytes)
    if not isinstance(verdict, Screened):
        return BlobResult(sha, language, len(data), str(verdict.reason), 0, [], 0, None, None)
    try:
        analysis = analyze_file(path, verdict.text, language)
    except Exception as exc:  # a grammar bug must cost one file, not the build
        return BlobResult(
            sha, language, len(data), f"parse_failed:{exc.__class__.__name__}", 0, [], 0, None, None
        )
    chunks = [(i, c.kind, c.name, c.start_line, c.end_line, c.content) for i, c in enumerate(analysis.chunks)]
    return BlobResult(
        sha,
        analysis.language,
        len(data),
        None,
        analysis.parse_errors,
        chunks,
        len(analysis.symbols),
        encode_symbols(analysis.symbols),
        encode_facts(analysis.facts),
    )


class BlobSummary(NamedTuple):
    """One blob's row for ``code_blobs`` and the snapshot's totals."""

    sha: str
    language: str | None
    size: int
    skip_reason: str | None
    parse_errors: int
    chunk_count: int
    symbol_count: int


class BatchResult(NamedTuple):
    """A batch as the writer needs it: blob summaries and ready-made COPY text per table.

    Encoding the rows here, in the worker processes, keeps the writer's event loop free: it only
    streams bytes into PostgreSQL (per-row encoding in the writer was the build's bottleneck).
    """

    blobs: list[BlobSummary]
    # blob_sha, language, size, analysis_version, skip_reason, parse_errors, chunk_count,
    # symbol_count, symbols, facts (the last two in palimpsest.index.records' format)
    blob_rows: bytes
    # blob_sha, ordinal, kind, name, start_line, end_line, content, prior, tokens, vector: a whole
    # binary COPY stream (CHUNK_COLUMNS), or nothing
    chunks: bytes


def copy_escape(text: str) -> str:
    """``text`` as a field of PostgreSQL's COPY text format: backslash escapes, NUL dropped.

    A few ``in`` scans and ``replace`` calls (memchr speed) instead of ``str.translate``, which
    looks every character up in its table and was the workers' largest single cost after parsing.
    """
    if "\\" in text:
        text = text.replace("\\", "\\\\")
    if "\n" in text:
        text = text.replace("\n", "\\n")
    if "\t" in text:
        text = text.replace("\t", "\\t")
    if "\r" in text:
        text = text.replace("\r", "\\r")
    if "\x00" in text:
        text = text.replace("\x00", "")
    return text


def copy_field(value: str | None) -> str:
    """One nullable text field in COPY text format (``\\N`` for NULL)."""
    return "\\N" if value is None else copy_escape(value)


def copy_lines(lines: list[str]) -> bytes:
    return ("\n".join(lines) + "\n").encode("utf-8", "replace") if lines else b""


def blob_copy_line(b: BlobSummary, symbols: str | None = None, facts: str | None = None) -> str:
    """The blob's staged row (``BatchResult.blob_rows``' columns) in COPY text format."""
    return (
        f"{b.sha}\t{copy_field(b.language)}\t{b.size}\t{ANALYSIS_VERSION}\t{copy_field(b.skip_reason)}"
        f"\t{b.parse_errors}\t{b.chunk_count}\t{b.symbol_count}\t{copy_field(symbols)}\t{copy_field(facts)}"
    )


CHUNK_FIELDS = "blob_sha, ordinal, kind, name, start_line, end_line, content, prior"
"""The columns of ``code_chunks`` a staged chunk carries as they are."""
CHUNK_COLUMNS = f"{CHUNK_FIELDS}, tokens, vector"
"""The staged chunk's columns, in the order ``BatchResult.chunks`` holds them."""

# PostgreSQL's binary COPY format: a signature, flags and header extension (both 0), then per row
# its field count (int16) and each field as its length (int32; -1 for NULL) and bytes in the
# type's binary form, then a trailer. Text is its UTF-8 bytes; int4 four big-endian bytes; float4
# its four IEEE 754 bytes, big-endian.
# Reading it costs the writing backend about a third less than COPY text: no escapes to scan in
# content, and tsvector's binary form instead of its text parser.
_SIGNATURE = b"PGCOPY\n\xff\r\n\x00" + bytes(8)
_TRAILER = b"\xff\xff"
_NULL = b"\xff\xff\xff\xff"
_CHUNK_FIELDS = struct.pack(">h", CHUNK_COLUMNS.count(",") + 1)
_INT32 = struct.Struct(">i").pack
_INT4_FIELD = struct.Struct(">ii").pack  # length 4, value
_LINES = struct.Struct(">iiii").pack  # start_line and end_line fields
_FLOAT4_FIELD = struct.Struct(">if").pack  # length 4, value


def _text(value: str | None) -> bytes:
    """One nullable text field in binary COPY format. PostgreSQL text cannot hold NUL: screen()
    rejects NUL-bearing blobs, and this replaces any that got through rather than lose the batch."""
    if value is None:
        return _NULL
    if "\x00" in value:
        value = value.replace("\x00", "\ufffd")
    data = value.encode("utf-8", "replace")
    return _INT32(len(data)) + data


def _lexical(content: str) -> bytes:
    """A chunk's last two staged fields: its vector (tokens NULL), or its tokens for ``to_tsvector``."""
    document = lexical_document(content)
    if isinstance(document, str):
        return _text(document) + _NULL
    return _NULL + _INT32(len(document)) + document


def chunk_rows(
    sha: str, chunks: list[tuple[int, str, str | None, int, int, str]], prior: float = 1.0
) -> list[bytes]:
    """One blob's chunk rows (``BlobResult.chunks``) in binary COPY format, without the stream's
    signature and trailer (:func:`chunk_copy` adds them); ``prior`` is the search prior of the
    blob's file (:func:`palimpsest.index.ranking.file_prior`), the same for all its chunks."""
    head = _CHUNK_FIELDS + _text(sha)
    weight = _FLOAT4_FIELD(4, prior)
    return [
        head
        + _INT4_FIELD(4, i)
        + _text(kind)
        + _text(name)
        + _LINES(4, start, 4, end)
        + _text(content)
        + weight
        + _lexical(content)
        for i, kind, name, start, end, content in chunks
    ]


def chunk_copy(rows: list[bytes]) -> bytes:
    """A whole binary COPY stream of ``rows`` (from :func:`chunk_rows`); nothing for no rows."""
    return b"".join([_SIGNATURE, *rows, _TRAILER]) if rows else b""


def analyze_batch(items: list[tuple[str, str, bytes]], max_bytes: int) -> BatchResult:
    # Blob rows are formatted with f-strings (a generic per-field encoder was a quarter of the
    # workers' time); text fields are escaped, SHAs (hex) and integers need no escaping.
    blobs: list[BlobSummary] = []
    blob_rows: list[str] = []
    chunks: list[bytes] = []
    for path, sha, data in items:
        b = analyze_blob(path, sha, data, max_bytes)
        summary = BlobSummary(
            b.sha, b.language, b.size, b.skip_reason, b.parse_errors, len(b.chunks), b.symbol_count
        )
        blobs.append(summary)
        blob_rows.append(blob_copy_line(summary, b.symbols, b.facts))
        # the search prior of the path the blob is analysed at: a blob at several paths keeps the
        # first one's (migration 0056)
        chunks.extend(chunk_rows(sha, b.chunks, file_prior(path)))
    return BatchResult(blobs, copy_lines(blob_rows), chunk_copy(chunks))


def warm_up() -> int:
    """Load grammars in a fresh worker before real work arrives."""
    analyze_file("warm.py", "def f():\n    return 1\n", "python")
    analyze_file("warm.ts", "export function f(): number { return 1 }\n", "typescript")
    return ANALYSIS_VERSION
