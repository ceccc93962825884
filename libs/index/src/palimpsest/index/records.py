"""A blob's symbols and graph facts as two text columns of its ``code_blobs`` row.

One row per symbol and per fact cost ~150 bytes each, two thirds of it the row header and the
(tenant, repository, blob) key repeated on every row, plus two indexes over those keys: 71 MB of
a 50 000-file index. Kept as text in the blob's row (migration 0015) they take 12 MB, and the
graph loader reads one row per blob instead of one per symbol.

The format is one line per record, fields separated by a tab, in the order of the old columns;
a NULL field is empty::

    symbols: name \\t kind \\t start_line \\t end_line \\t parent
    facts:   kind \\t name \\t line \\t target \\t detail

A record's text fields never hold a tab, newline or carriage return (each becomes a space) and
never an empty string (stored, it reads back as NULL); names, kinds, paths and module specifiers
have neither. A blob without symbols (or facts) stores NULL, not an empty text. The SQL side —
the views ``code_symbols`` and ``code_facts`` and ``palimpsest_symbol_names`` — reads the same
format (``string_to_table`` and ``split_part``); a test checks both sides agree.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TypeVar, cast

__all__ = [
    "FactRecord",
    "SymbolRecord",
    "decode_facts",
    "decode_symbols",
    "encode_facts",
    "encode_symbols",
]

SymbolRecord = tuple[str, str, int, int, str | None]
"""(name, kind, start_line, end_line, parent)"""
FactRecord = tuple[str, str, int, str | None, str | None]
"""(kind, name, line, target, detail)"""

_UNSAFE = str.maketrans("\t\n\r", "   ")


def _null(value: str) -> str | None:
    return value or None


def encode_symbols(symbols: Iterable[SymbolRecord]) -> str | None:
    return _encode(list(symbols), _symbol_lines)


def encode_facts(facts: Iterable[FactRecord]) -> str | None:
    return _encode(list(facts), _fact_lines)


def _symbol_lines(records: list[SymbolRecord]) -> str:
    return "\n".join(
        [
            f"{name or ''}\t{kind or ''}\t{start}\t{end}\t{parent or ''}"
            for name, kind, start, end, parent in records
        ]
    )


def _fact_lines(records: list[FactRecord]) -> str:
    return "\n".join(
        [
            f"{kind or ''}\t{name or ''}\t{line}\t{target or ''}\t{detail or ''}"
            for kind, name, line, target, detail in records
        ]
    )


_Record = TypeVar("_Record", SymbolRecord, FactRecord)


def _encode(records: list[_Record], lines: Callable[[list[_Record]], str]) -> str | None:
    """``records`` as ``lines`` writes them; where a field holds a tab, newline or carriage return
    (the text then holds more tabs than four a record, more newlines than records less one, or a
    carriage return), written again with each of those a space. Three scans of the whole text
    instead of three per field."""
    text = lines(records)
    if text.count("\t") != 4 * len(records) or text.count("\n") != max(len(records) - 1, 0) or "\r" in text:
        cleaned = [cast("_Record", tuple(_clean(v) for v in r)) for r in records]
        text = lines(cleaned)
    return text or None


def _clean(value: str | int | None) -> str | int | None:
    return value.translate(_UNSAFE) if isinstance(value, str) else value


def decode_symbols(text: str | None) -> list[SymbolRecord]:
    out: list[SymbolRecord] = []
    for line in text.split("\n") if text else ():
        name, kind, start, end, parent = line.split("\t")
        out.append((name, kind, int(start), int(end), _null(parent)))
    return out


def decode_facts(text: str | None) -> list[FactRecord]:
    out: list[FactRecord] = []
    for line in text.split("\n") if text else ():
        kind, name, number, target, detail = line.split("\t")
        out.append((kind, name, int(number), _null(target), _null(detail)))
    return out
