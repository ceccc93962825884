"""The chunker's parsing core: pure, I/O-free functions from a blob to what gets indexed.

``screen`` decides whether a blob is indexed (and decodes it), ``detect_language`` names its
language, ``analyze_file`` turns its text into chunks, symbols and per-file graph facts.
"""

from __future__ import annotations

from palimpsest.chunker.parsing.chunks import ANALYSIS_VERSION, analyze_file
from palimpsest.chunker.parsing.errors import GrammarUnavailableError, ParsingError
from palimpsest.chunker.parsing.lines import MAX_CHUNK_BYTES, WINDOW_LINES, WINDOW_OVERLAP
from palimpsest.chunker.parsing.model import Chunk, Fact, FileAnalysis, Symbol
from palimpsest.chunker.parsing.screen import Screened, Skip, SkipReason, screen
from palimpsest.index.languages import (
    DOC_LANGUAGES,
    PARSED_LANGUAGES,
    TEXT_LANGUAGES,
    detect_language,
    is_doc,
)

__all__ = [
    "ANALYSIS_VERSION",
    "DOC_LANGUAGES",
    "MAX_CHUNK_BYTES",
    "PARSED_LANGUAGES",
    "TEXT_LANGUAGES",
    "WINDOW_LINES",
    "WINDOW_OVERLAP",
    "Chunk",
    "Fact",
    "FileAnalysis",
    "GrammarUnavailableError",
    "ParsingError",
    "Screened",
    "Skip",
    "SkipReason",
    "Symbol",
    "analyze_file",
    "detect_language",
    "is_doc",
    "screen",
]
