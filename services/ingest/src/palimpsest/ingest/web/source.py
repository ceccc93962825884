"""Source text for the pages: a file at the snapshot highlighted by Pygments, and search hits
with line numbers and the query's terms marked.

Everything is escaped: Pygments escapes the text it formats, and the hit lines are escaped here
piece by piece around each ``<mark>``, so hostile text in code or docs stays text. Highlighting
is by CSS class only (the page's CSP allows the stylesheet, no inline style and no script); the
classes' colours are appended to the served stylesheet (:data:`SOURCE_CSS`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from markupsafe import Markup, escape
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexer import Lexer
from pygments.lexers import TextLexer, get_lexer_for_filename
from pygments.util import ClassNotFound

from palimpsest.index.tokens import query_terms

__all__ = ["SOURCE_CSS", "HitLine", "Source", "cached_source_view", "hit_lines", "source_view"]

MAX_SOURCE_LINES = 5000  # past these, the page shows the first ones and says so
HIGHLIGHT_LINES = 1000  # longer files are numbered but not coloured: lexing costs ~0.1-0.3 ms a line
CACHED = 64  # rendered files kept per process (a blob's text never changes)
MAX_SOURCE_CHARS = 512 * 1024
MAX_LINE_CHARS = 2000  # a minified line is cut (the provider link shows it whole)

_FORMATTER = HtmlFormatter(cssclass="source", linenos="inline", lineanchors="L", wrapcode=True)
# the token colours only, scoped to the source block (Pygments' own pre/td rules would restyle every table)
SOURCE_CSS = "\n".join(
    rule for rule in _FORMATTER.get_style_defs(".source").splitlines() if rule.startswith(".source ")
).encode()


@dataclass(frozen=True, slots=True)
class Source:
    html: Markup
    lines: int  # lines shown
    total: int  # lines in the file
    language: str
    highlighted: bool  # coloured by a language's lexer (not plain text, not too long)


def _lexer(path: str, text: str) -> Lexer:
    try:
        return get_lexer_for_filename(path, text[:4096], stripnl=False, ensurenl=False)
    except ClassNotFound:
        return TextLexer(stripnl=False, ensurenl=False)


def source_view(path: str, text: str) -> Source:
    """The file's first lines (at most ``MAX_SOURCE_LINES`` and ``MAX_SOURCE_CHARS``), numbered,
    highlighted for the language its name says (plain text when none, or past ``HIGHLIGHT_LINES``)."""
    lines = text.split("\n")
    if len(lines) > 1 and lines[-1] == "":  # the file's final newline ends its last line
        lines.pop()
    total = len(lines)
    kept: list[str] = []
    size = 0
    for line in lines[:MAX_SOURCE_LINES]:
        size += len(line) + 1
        if size > MAX_SOURCE_CHARS and kept:
            break
        kept.append(line if len(line) <= MAX_LINE_CHARS else line[:MAX_LINE_CHARS] + " …")
    shown = "\n".join(kept)
    lexer = _lexer(path, shown)
    coloured = len(kept) <= HIGHLIGHT_LINES and not isinstance(lexer, TextLexer)
    html = highlight(shown, lexer if coloured else TextLexer(stripnl=False, ensurenl=False), _FORMATTER)
    return Source(Markup(html), len(kept), total, lexer.name, coloured)  # noqa: S704 - Pygments escapes the text


@lru_cache(maxsize=CACHED)
def cached_source_view(path: str, blob_sha: str, text: str) -> Source:
    """:func:`source_view`, kept per (path, blob): the file page renders a blob's text once."""
    return source_view(path, text)


@dataclass(frozen=True, slots=True)
class HitLine:
    number: int
    html: Markup


def _terms_pattern(query: str) -> re.Pattern[str] | None:
    """The query's words (each term's whole form and the words that spell it), longest first."""
    words = {w for term in query_terms(query) for w in (*term.tokens, *term.words) if w}
    if not words:
        return None
    ordered = sorted(words, key=lambda w: (-len(w), w))
    return re.compile("|".join(re.escape(w) for w in ordered), re.IGNORECASE)


def _marked(line: str, pattern: re.Pattern[str] | None) -> Markup:
    if pattern is None:
        return escape(line)
    out, at = [], 0
    for found in pattern.finditer(line):
        out.append(str(escape(line[at : found.start()])))
        out.append(f"<mark>{escape(found.group(0))}</mark>")
        at = found.end()
    out.append(str(escape(line[at:])))
    return Markup("".join(out))  # noqa: S704 - every piece is escaped above


def hit_lines(content: str, start_line: int, query: str, limit: int = 1200) -> list[HitLine]:
    """A hit's text (its first ``limit`` characters) as numbered lines with the query's words marked."""
    pattern = _terms_pattern(query)
    text = content[:limit]
    return [
        HitLine(start_line + offset, _marked(line, pattern)) for offset, line in enumerate(text.split("\n"))
    ]
