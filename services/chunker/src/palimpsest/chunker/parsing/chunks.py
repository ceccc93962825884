"""``analyze_file``: the one entry point from a file's text to its chunks, symbols and facts.

It picks the reader by language -- tree-sitter definitions for parsed languages, sections for
documentation, plain 60/10 windows for everything else -- and is pure: no I/O, no clock, the
same text always gives the same analysis.
"""

from __future__ import annotations

from palimpsest.chunker.parsing.code import analyze_code
from palimpsest.chunker.parsing.docs import analyze_doc
from palimpsest.chunker.parsing.lines import split_lines, window_chunks
from palimpsest.chunker.parsing.model import WINDOW, FileAnalysis
from palimpsest.index.codefacts.queries import spec_for
from palimpsest.index.languages import DOC_LANGUAGES, is_doc

__all__ = ["ANALYSIS_VERSION", "analyze_file"]

ANALYSIS_VERSION = 8
"""Bumped whenever the same text would be chunked differently, so stored blobs get re-chunked
(7: chunks carry their file's search prior, migration 0056; 8: a link to a Go package's reference
page is a mention of the object it names)."""


def analyze_file(path: str, text: str, language: str | None) -> FileAnalysis:
    """Chunks, symbols, graph facts and the parse-error count of one file's text."""
    lines = split_lines(text)
    if not lines:
        return FileAnalysis(language, [], [], [], 0)
    if language in DOC_LANGUAGES or (language is None and is_doc(path)):
        chunks, facts = analyze_doc(lines, language)
        return FileAnalysis(language, chunks, [], facts, 0)
    spec = spec_for(language)
    if spec is None:
        return FileAnalysis(language, window_chunks(lines, 1, len(lines), WINDOW, None), [], [], 0)
    code = analyze_code(text, lines, spec)
    return FileAnalysis(language, code.chunks, code.symbols, code.facts, code.parse_errors)
