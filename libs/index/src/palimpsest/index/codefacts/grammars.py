"""Parsers and compiled queries, built once and reused for every file.

Languages and queries are immutable once built and are shared process-wide; a ``Parser``
carries parse state, so each thread gets its own (built once per thread, never per file).
Grammars come from tree-sitter-language-pack 0.13.0, which bundles them: nothing downloads.
tree-sitter is the ``treesitter`` extra of palimpsest-index: import this module only where it is
installed (the chunker, analyzer and reviewer images); :func:`available` asks without importing it.
"""

from __future__ import annotations

import threading
from functools import cache
from typing import TYPE_CHECKING, cast

from tree_sitter import Language, Parser, Query, QueryError
from tree_sitter_language_pack import get_language

if TYPE_CHECKING:
    from tree_sitter_language_pack import SupportedLanguage

__all__ = ["GrammarUnavailableError", "error_query", "language", "parser", "query"]


class GrammarUnavailableError(Exception):
    """A grammar or query could not be loaded from the bundled language pack."""


_ERRORS = "(ERROR) @error (MISSING) @missing"
_local = threading.local()


@cache
def language(grammar: str) -> Language:
    """The bundled grammar called ``grammar``."""
    try:
        return get_language(cast("SupportedLanguage", grammar))
    except (LookupError, ValueError, OSError) as exc:
        raise GrammarUnavailableError(f"grammar {grammar!r} is not in the language pack") from exc


@cache
def query(grammar: str, source: str) -> Query:
    """``source`` compiled against ``grammar``."""
    try:
        return Query(language(grammar), source)
    except QueryError as exc:
        raise GrammarUnavailableError(f"query for {grammar!r} does not compile: {exc}") from exc


def error_query(grammar: str) -> Query:
    """A query capturing ERROR and MISSING nodes."""
    return query(grammar, _ERRORS)


def parser(grammar: str) -> Parser:
    """This thread's parser for ``grammar``."""
    parsers: dict[str, Parser] | None = getattr(_local, "parsers", None)
    if parsers is None:
        parsers = {}
        _local.parsers = parsers
    found = parsers.get(grammar)
    if found is None:
        found = Parser(language(grammar))
        parsers[grammar] = found
    return found
