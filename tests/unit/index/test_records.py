"""The text format of a blob's symbols and facts (``code_blobs.symbols`` / ``.facts``)."""

from __future__ import annotations

from palimpsest.index.records import decode_facts, decode_symbols, encode_facts, encode_symbols


def test_symbols_round_trip_in_order() -> None:
    symbols = [
        ("InvoicePrinter", "class", 9, 11, None),
        ("render", "method", 10, 11, "InvoicePrinter"),
        ("größe", "function", 1, 1, None),
        ("operator<<", "function", 3, 4, "ns\\weird"),
    ]
    text = encode_symbols(symbols)
    assert text is not None and text.count("\n") == 3
    assert decode_symbols(text) == symbols


def test_facts_round_trip_with_nulls() -> None:
    facts = [
        ("import", "./ledger", 1, "balanceOf", "named"),
        ("reference", "Ledger", 5, None, "type"),
        ("governs", "src/billing", 3, None, None),
    ]
    assert decode_facts(encode_facts(facts)) == facts


def test_no_records_is_null_not_an_empty_text() -> None:
    """SQL's string_to_table('') yields one empty line, so an empty list must store NULL."""
    assert encode_symbols([]) is None
    assert encode_facts([]) is None
    assert decode_symbols(None) == []
    assert decode_facts(None) == []


def test_separators_inside_a_field_become_spaces_and_empty_reads_as_null() -> None:
    text = encode_symbols([("a\tb", "cl\nass", 1, 2, "")])
    assert decode_symbols(text) == [("a b", "cl ass", 1, 2, None)]
    facts = encode_facts([("mention", "x\r\ny", 4, "", "code")])
    assert decode_facts(facts) == [("mention", "x  y", 4, None, "code")]
