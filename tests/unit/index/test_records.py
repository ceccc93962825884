"""The text format of a blob's symbols and facts (``code_blobs.symbols`` / ``.facts``)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

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


_TEXT = st.none() | st.text(alphabet=st.sampled_from("ab\t\n\r ü_"), max_size=6)


def _field(value: str | None) -> str:
    """The format's rule for one text field, field by field: NULL and '' empty, separators spaces."""
    return (value or "").replace("\t", " ").replace("\n", " ").replace("\r", " ")


@given(st.lists(st.tuples(_TEXT, _TEXT, st.integers(0, 9), _TEXT, _TEXT), max_size=6))
def test_facts_are_written_field_by_field_whatever_the_fields_hold(
    facts: list[tuple[str | None, str | None, int, str | None, str | None]],
) -> None:
    """The encoder writes records whole and checks the framing once: a separator in any field of
    any record must still come out as the field-by-field rule writes it."""
    expected = "\n".join(
        f"{_field(kind)}\t{_field(name)}\t{line}\t{_field(target)}\t{_field(detail)}"
        for kind, name, line, target, detail in facts
    )
    assert encode_facts(facts) == (expected or None)  # type: ignore[arg-type]
    symbols = [(name, kind, line, line + 1, parent) for kind, name, line, parent, _ in facts]
    expected = "\n".join(
        f"{_field(name)}\t{_field(kind)}\t{start}\t{end}\t{_field(parent)}"
        for name, kind, start, end, parent in symbols
    )
    assert encode_symbols(symbols) == (expected or None)  # type: ignore[arg-type]
