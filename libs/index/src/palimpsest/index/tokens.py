"""Code-aware lexical tokens for PostgreSQL full-text search.

Chunks are indexed with ``to_tsvector('simple', code_tokens(content))`` and queries are built
from ``query_terms(q)``: the same rules on both sides, so ``getUserName``, ``get_user_name``
and ``get-user-name`` all meet in the lexeme ``getusername`` and in the parts ``get``, ``user``,
``name``. Every token is a run of lower-case letters and digits only, so PostgreSQL's default
parser keeps it as one lexeme instead of re-splitting it at ``_``, ``.``, ``/`` or ``-``.

A compound such as ``src/billing/invoice_line.py`` or ``crate::net::Client`` yields the whole
compound joined, each segment joined, and each segment's words (snake_case, kebab-case,
camelCase, PascalCase, ACRONYMCase and letter/digit boundaries)::

    srcbillinginvoicelinepy src billing invoiceline invoice line py

The output is bounded by construction so one chunk never reaches PostgreSQL's tsvector limits
(1 MB, 16 383 positions, 2 KB per lexeme): tokens over ``MAX_TOKEN_BYTES`` are dropped and the
document stops at ``MAX_TOKENS`` tokens or ``MAX_DOCUMENT_BYTES`` bytes, whichever comes first.
"""

from __future__ import annotations

import re
import struct
from bisect import bisect_right
from collections.abc import Callable
from dataclasses import dataclass
from itertools import accumulate
from types import ModuleType
from typing import TypeVar, cast

__all__ = [
    "MAX_DOCUMENT_BYTES",
    "MAX_TOKENS",
    "MAX_TOKEN_BYTES",
    "NATIVE",
    "QueryTerm",
    "code_tokens",
    "code_vector",
    "lexical_document",
    "lexical_vector",
    "query_terms",
    "query_tokens",
]

MAX_TOKENS = 12_000
"""Tokens per document; below PostgreSQL's 16 383 positions with room for its own re-parsing."""
MAX_TOKEN_BYTES = 2_046
"""Longest token kept (UTF-8 bytes); PostgreSQL refuses lexemes of 2 KB and more."""
MAX_DOCUMENT_BYTES = 512 * 1024
"""Bytes of tokens per document; with per-lexeme overhead the tsvector stays well under 1 MB."""

_MIN_TOKEN_CHARS = 2
_MAX_POSITIONS = 255  # positions to_tsvector keeps per lexeme (PostgreSQL's MAXNUMPOS - 1)
_MAX_POSITION = 16_383  # the highest position (MAXENTRYPOS - 1); later tokens all share it
# a token the parser may cut: digits, e, a digit (``5e5e5`` is the number 5e5, then the word e5)
_EXPONENT = re.compile(r"[0-9]+e[0-9]")
_DIGIT_E_DIGIT = re.compile(r"[0-9]e[0-9]")  # a quick look for any such token first
# A compound of n characters yields at most 3n characters of tokens (the whole, the segments,
# the words), each token at least two characters: at most 1.5 tokens and 32 UTF-8 bytes per
# input character (lower-casing can lengthen a few letters). Texts this short cannot reach either limit, so they skip the counting.
_ALWAYS_WITHIN_LIMITS = min(MAX_TOKENS * 2 // 3, MAX_DOCUMENT_BYTES // 32)

# A compound: identifier runs joined by path, module or kebab separators. Possessive: a run is
# never given back (what follows it is a separator or nothing), which spares the engine ~10 %.
_COMPOUND = re.compile(r"[\w$]++(?:(?:::|[./\\-])[\w$]++)*+")
_SEGMENT_SEPARATORS = re.compile(r"::|[./\\-]")
_WORD_SEPARATORS = re.compile(r"[_$]+")
_ASCII_WORDS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
_ASCII_ALNUM = re.compile(r"[A-Za-z0-9]+")
_PLAIN_WORD = re.compile(f"[a-z]{{{_MIN_TOKEN_CHARS},}}")


def _words(part: str) -> list[str]:
    """Split one underscore-free identifier part at case and digit boundaries."""
    if _ASCII_ALNUM.fullmatch(part):
        return _ASCII_WORDS.findall(part)
    return [part]  # non-ASCII letters: kept whole rather than guessed at


def _segment_tokens(segment: str) -> tuple[str, list[str]]:
    """The joined form of one segment and its words (already lower-cased)."""
    # ASCII in one pass: _ASCII_WORDS never matches ``_`` or ``$`` nor runs across one
    words = _ASCII_WORDS.findall(segment) if segment.isascii() else _part_words(segment)
    return "".join(words).lower(), [w.lower() for w in words]


def _part_words(segment: str) -> list[str]:
    """A segment's words, part by part between ``_`` and ``$`` (what any segment needs)."""
    return [w for p in _WORD_SEPARATORS.split(segment) if p for w in _words(p)]


def _python_expand(compound: str) -> tuple[str, int, int]:
    """Tokens for one compound as ``(space-joined tokens, token count, UTF-8 bytes + spaces)``
    (``_expand``: in C for an ASCII compound where the C forms are built)."""
    if _PLAIN_WORD.fullmatch(compound):  # the common case: a keyword or a lower-case name
        return (compound, 1, len(compound) + 1) if len(compound) <= MAX_TOKEN_BYTES else ("", 0, 0)
    segments = [s for s in _SEGMENT_SEPARATORS.split(compound) if s]
    out: list[str] = []
    joined_segments: list[str] = []
    for segment in segments:
        joined, words = _segment_tokens(segment)
        if not joined:
            continue
        joined_segments.append(joined)
        out.append(joined)
        if len(words) > 1:
            out.extend(words)
    if len(joined_segments) > 1:
        out.insert(0, "".join(joined_segments))
    kept = [t for t in out if len(t) >= _MIN_TOKEN_CHARS and _fits(t)]
    text = " ".join(kept)
    return text, len(kept), len(text.encode()) + 1


def _fits(token: str) -> bool:
    if len(token) * 4 <= MAX_TOKEN_BYTES:
        return True
    return len(token.encode()) <= MAX_TOKEN_BYTES


class _Expansions:
    """Compound -> tokens, token count and bytes, kept across calls (identifiers repeat).

    Lookups happen through ``map`` in C; only compounds never seen before are expanded in
    Python. A full cache is replaced, never cleared in place, so a concurrent caller keeps
    using the dictionaries it already holds.
    """

    LIMIT = 200_000

    def __init__(self) -> None:
        self.tokens: dict[str, str] = {}
        self.counts: dict[str, int] = {}
        self.sizes: dict[str, int] = {}

    def add(self, compounds: set[str]) -> None:
        for compound in compounds:
            text, count, size = _expand(compound)
            self.tokens[compound], self.counts[compound], self.sizes[compound] = text, count, size


_expansions = _Expansions()


def _learn(compounds: list[str]) -> _Expansions:
    """The cache, holding every compound in ``compounds``."""
    global _expansions
    known = _expansions
    if len(known.tokens) > _Expansions.LIMIT:
        known = _expansions = _Expansions()
    known.add(set(compounds).difference(known.tokens))
    return known


def code_tokens(text: str) -> str:
    """The lexical document for ``to_tsvector('simple', ...)``: bounded, lower-case tokens."""
    compounds = _compounds(text)
    if not compounds:
        return ""
    known = _learn(compounds)
    if len(text) > _ALWAYS_WITHIN_LIMITS:
        keep = min(
            bisect_right(list(accumulate(map(known.counts.__getitem__, compounds))), MAX_TOKENS),
            bisect_right(list(accumulate(map(known.sizes.__getitem__, compounds))), MAX_DOCUMENT_BYTES),
        )
        compounds = compounds[:keep]
    return " ".join(filter(None, map(known.tokens.__getitem__, compounds)))


def query_tokens(q: str) -> list[str]:
    """The distinct tokens of a search query, in first-seen order (same rules as documents)."""
    return list(dict.fromkeys(code_tokens(q).split()))


@dataclass(frozen=True, slots=True)
class QueryTerm:
    """One compound of a query: every token a document holds for it (whole form first), and the
    words that spell it (``getUserName``: ``get``, ``user``, ``name``; a plain word: itself).

    Words too short to be tokens are left out (``parseJSON2Yaml``: ``parse``, ``json``, ``yaml``);
    where that leaves a single word of several (``getX``: ``get``), ``words`` is empty, since
    that word alone would not spell the compound: only its whole form stands for it.
    """

    tokens: tuple[str, ...]
    words: tuple[str, ...]


def _query_term(compound: str) -> QueryTerm | None:
    tokens = tuple(dict.fromkeys(_expand(compound)[0].split()))
    if not tokens:
        return None
    words = [w for segment in _SEGMENT_SEPARATORS.split(compound) for w in _segment_tokens(segment)[1]]
    kept = [w for w in words if len(w) >= _MIN_TOKEN_CHARS and _fits(w)]
    if len(kept) < len(words) and len(kept) < 2:  # getX: ``get`` alone would not spell it
        return QueryTerm(tokens, ())
    return QueryTerm(tokens, tuple(dict.fromkeys(kept)))


def query_terms(q: str) -> list[QueryTerm]:
    """The distinct compounds of a search query as terms, in first-seen order."""
    terms = (_query_term(c) for c in dict.fromkeys(_COMPOUND.findall(q)))
    return list(dict.fromkeys(t for t in terms if t is not None))


def python_lexical_vector(tokens: str) -> bytes | None:
    """``to_tsvector('simple', tokens)`` in tsvector's binary wire format, for ``code_tokens`` output.

    The chunker sends it in a binary ``COPY`` (PostgreSQL's ``tsvectorrecv`` reads it), so the one
    writing backend neither runs the text-search parser nor parses tsvector text. Each token of
    plain ASCII is a run of lower-case letters and digits, one lexeme to the parser unless it
    reads as a number in scientific notation. The format: the lexeme count (int32), then each
    distinct token once, in the order tsvector keeps its lexemes (bytewise), NUL-terminated, with
    its position count (uint16) and positions (uint16 each, ascending, weight D). None where that
    could differ from ``to_tsvector`` -- a token of another character or one that starts like
    such a number (only PostgreSQL's parser can say how it splits those), a lexeme past the 255
    positions ``to_tsvector`` keeps, or more tokens than positions (``MAX_TOKENS`` rules that out).
    """
    if not tokens.isascii():
        return None
    words = tokens.encode("ascii").split()
    if len(words) > _MAX_POSITION:
        return None
    if _DIGIT_E_DIGIT.search(tokens) and any(map(_EXPONENT.match, tokens.split())):
        return None
    positions: dict[bytes, list[bytes]] = {}
    for word, position in zip(words, _POSITIONS, strict=False):
        positions.setdefault(word, []).append(position)
    if len(words) > _MAX_POSITIONS and max(map(len, positions.values())) > _MAX_POSITIONS:
        return None
    # Python orders bytes as tsvector orders lexemes (bytewise, a prefix first)
    entries = [word + _NUL + _COUNTS[len(at)] + b"".join(at) for word, at in sorted(positions.items())]
    return _INT32(len(entries)) + b"".join(entries)


_INT32 = struct.Struct(">i").pack
_NUL = b"\0"
_POSITIONS = tuple(struct.pack(">H", n) for n in range(1, _MAX_POSITION + 1))  # weight D: top bits 0
_COUNTS = tuple(struct.pack(">H", n) for n in range(_MAX_POSITIONS + 1))


_LEXICAL_VERSION = 3  # what _lexical.c's VERSION must be


def _usable(module: ModuleType | None) -> ModuleType | None:
    """``module`` where it was built from this version of ``_lexical.c``; None for a module built
    from another (a checkout updated without rebuilding it), whose functions may differ."""
    return module if getattr(module, "VERSION", None) == _LEXICAL_VERSION else None


try:  # the C forms, where the package was built with them (hatch_build.py)
    from palimpsest.index import _lexical
except ImportError:  # a build without a C compiler
    _lexical = None  # type: ignore[assignment]
_lexical = _usable(_lexical)  # type: ignore[assignment]
NATIVE = _lexical is not None
"""Whether :func:`lexical_vector`, :func:`code_vector` and the compound scan and expansion of
:func:`code_tokens` have their C forms."""

_In = TypeVar("_In")
_Out = TypeVar("_Out")


def _c_first(name: str, python_form: Callable[[_In], _Out]) -> Callable[[_In], _Out]:
    """``python_form``, or where the C forms are built ``_lexical.<name>`` -- which gives the same
    result, or NotImplemented where only the Python form can say (then that one answers)."""
    if _lexical is None:
        return python_form
    c_form: Callable[[_In], object] = getattr(_lexical, name)

    def either(arg: _In) -> _Out:
        found = c_form(arg)
        return python_form(arg) if found is NotImplemented else cast("_Out", found)

    return either


_compounds: Callable[[str], list[str]] = _c_first("compounds", _COMPOUND.findall)
"""``_COMPOUND.findall(text)``; in C for ASCII text."""
_expand = _c_first("expand", _python_expand)
lexical_vector = _c_first("lexical_vector", python_lexical_vector)
"""``to_tsvector('simple', tokens)`` in tsvector's binary wire format, for ``code_tokens`` output;
None where only PostgreSQL's parser can say (:func:`python_lexical_vector` has the rules).

The C form writes the same bytes about six times faster; it leaves the text to the Python form only
where the two could split it differently (a control character ``str.split`` treats as whitespace
and ``bytes.split`` does not)."""


def lexical_document(text: str) -> bytes | str:
    """What a chunk stores for its lexical column, each part made once: its vector,
    ``lexical_vector(code_tokens(text))``, or where that is None (only PostgreSQL's parser can say)
    ``code_tokens(text)`` for ``to_tsvector``. The C form of the vector (ASCII text) writes the tokens
    into one buffer and reads the vector off it, never making them Python strings."""
    vector = _lexical.code_vector(text) if _lexical is not None else NotImplemented
    if vector is NotImplemented:  # the Python form: the tokens it needs are the ones to keep
        tokens = code_tokens(text)
        vector = lexical_vector(tokens)
        return tokens if vector is None else vector
    return code_tokens(text) if vector is None else vector


def code_vector(text: str) -> bytes | None:
    """``lexical_vector(code_tokens(text))``: a chunk's lexical vector straight from its text."""
    document = lexical_document(text)
    return document if isinstance(document, bytes) else None
