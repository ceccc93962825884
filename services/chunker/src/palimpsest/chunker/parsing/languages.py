"""Which language a path is: the table is the index library's (:mod:`palimpsest.index.languages`),
shared with the code-facts definitions; the chunker's parsing core names it here."""

from __future__ import annotations

from palimpsest.index.languages import (
    DOC_EXTENSIONS,
    DOC_LANGUAGES,
    KNOWN_EXTENSIONS,
    LANGUAGE_NAMES,
    PARSED_LANGUAGES,
    TEXT_LANGUAGES,
    detect_language,
    file_name,
    file_suffix,
    is_doc,
)

__all__ = [
    "DOC_EXTENSIONS",
    "DOC_LANGUAGES",
    "KNOWN_EXTENSIONS",
    "LANGUAGE_NAMES",
    "PARSED_LANGUAGES",
    "TEXT_LANGUAGES",
    "detect_language",
    "file_name",
    "file_suffix",
    "is_doc",
]
