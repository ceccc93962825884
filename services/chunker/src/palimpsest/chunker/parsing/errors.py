"""Exception types of the parsing core.

Bad source never raises (it yields windows and a parse-error count); these are raised only for
programming or installation errors, such as a grammar missing from the installed language pack.
"""

from __future__ import annotations

from palimpsest.index.codefacts.grammars import GrammarUnavailableError

__all__ = ["GrammarUnavailableError", "ParsingError"]


class ParsingError(Exception):
    """Base class of the parsing core's own errors (a missing grammar is the code-facts
    library's :class:`GrammarUnavailableError`)."""
