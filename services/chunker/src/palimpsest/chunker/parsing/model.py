"""The values the parsing core hands to the chunker: chunks, symbols and graph facts of one file.

Chunks, symbols and facts are named tuples: immutable records with no behaviour, cheap to build
by the tens of thousands per megabyte, and rows that ``COPY`` can write as they are. Everything
here is content addressed by the blob it came from.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from palimpsest.index.codefacts.tags import CLASS_LIKE_KINDS

__all__ = [
    "CLASS_LIKE_KINDS",
    "FACT_KINDS",
    "SECTION",
    "WINDOW",
    "Chunk",
    "Fact",
    "FileAnalysis",
    "Symbol",
]

WINDOW = "window"
"""Chunk kind of a line window over text that no definition covers."""
SECTION = "section"
"""Chunk kind of a documentation section (or a window inside a long one)."""


FACT_KINDS = frozenset(
    {"reference", "call", "import", "dynamic", "governs", "supersedes", "mention", "label"}
)


class Chunk(NamedTuple):
    """A span of whole lines (1-based, inclusive) and exactly the text of those lines.

    ``kind`` is a definition kind (``function``, ``method``, ``class``, ``interface``,
    ``struct``, ``trait``, ``enum``, ``type``, ``module``, ``impl``, ...), ``window`` for text
    outside definitions, or ``section`` for documentation. A definition too long for one chunk
    is split into windows that keep its kind and name.
    """

    kind: str
    name: str | None
    start_line: int
    end_line: int
    content: str


class Symbol(NamedTuple):
    """A definition: its bare name, kind, line span and the name of the definition around it."""

    name: str
    kind: str
    start_line: int
    end_line: int
    parent: str | None = None


class Fact(NamedTuple):
    """One per-file graph fact; edges are resolved per snapshot from these.

    By ``kind``:

    * ``reference`` -- ``name`` is used at a call site or as a type and is not defined in this
      file (a local definition shadows every other); ``detail`` is ``call``, ``member`` (the
      name of a member call ``x.m()``) or ``type``.
    * ``call`` -- ``name`` is the callee, ``target`` the innermost enclosing definition;
      ``detail`` is ``member`` for a member call (``x.m()``), else empty.
    * ``import`` -- ``name`` is the module specifier as written (``./foo``, ``..pkg.mod``,
      ``github.com/a/b``, ``crate::x::{a, b}``, ``java.util.List``); ``target`` is the
      imported name of a Python ``from`` import; ``detail`` the import kind (``import``,
      ``from``, ``reexport``, ``require``, ``dynamic_import``, ``use``, ``pub_use`` (a Rust ``use``
      that re-exports), ``mod``, ``include``,
      ``static_import``, ...).
    * ``dynamic`` -- a dispatch site no static reading resolves: ``name`` says what
      (``getattr``, ``subscript_call``, ``reflection``, ``function_pointer``, ...),
      ``target`` is the enclosing definition, ``detail`` the first line of the site.
    * ``governs`` -- ``name`` is a repository path (``./`` and a trailing ``/`` removed).
    * ``supersedes`` -- ``name`` is a document id such as ``0004`` or ``ADR-0011``.
    * ``mention`` -- ``name`` is an identifier, path or label a document names; ``target`` is
      ``identifier``, ``path`` or ``label`` (a ``:ref:`` cross-reference, lower case), ``detail``
      where it was found (``code`` for inline code, ``fence`` for a fenced block, ``link`` for a
      link target, relative to the document, ``ref`` for a cross-reference role).
    * ``label`` -- ``name`` is a label the document defines for ``:ref:`` (``.. _name:`` in
      reStructuredText, ``(name)=`` in MyST), lower case as Sphinx normalises it.
    """

    kind: str
    name: str
    line: int
    target: str | None = None
    detail: str | None = None


@dataclass(frozen=True, slots=True)
class FileAnalysis:
    """Everything the parsing core extracts from one file."""

    language: str | None
    chunks: list[Chunk]
    symbols: list[Symbol]
    facts: list[Fact]
    parse_errors: int = 0
