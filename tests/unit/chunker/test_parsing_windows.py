"""60/10 windows, exact chunk content, and the byte cap on enormous lines."""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from palimpsest.chunker.parsing import MAX_CHUNK_BYTES, analyze_file
from palimpsest.chunker.parsing.lines import split_lines, window_chunks, window_spans


def test_window_spans_are_60_lines_stepping_50() -> None:
    assert window_spans(1, 60) == [(1, 60)]
    assert window_spans(1, 61) == [(1, 60), (51, 61)]
    assert window_spans(1, 110) == [(1, 60), (51, 110)]
    assert window_spans(1, 111) == [(1, 60), (51, 110), (101, 111)]
    assert window_spans(7, 7) == [(7, 7)]
    assert window_spans(5, 4) == []


def test_windows_of_a_file_without_grammar() -> None:
    text = "".join(f"key_{n}: value {n}\n" for n in range(1, 131))
    analysis = analyze_file("deploy/values.yaml", text, "yaml")
    spans = [(c.start_line, c.end_line) for c in analysis.chunks]
    assert spans == [(1, 60), (51, 110), (101, 130)]
    assert {c.kind for c in analysis.chunks} == {"window"}
    assert analysis.chunks[1].content.split("\n")[0] == "key_51: value 51"
    assert analysis.symbols == []
    assert analysis.facts == []


def test_split_lines_counts_like_tree_sitter() -> None:
    assert split_lines("a\nb\n") == ["a", "b"]
    assert split_lines("a\nb") == ["a", "b"]
    assert split_lines("a\r\nb\r\n") == ["a\r", "b\r"]
    assert split_lines("a\x0cb\u2028c\n") == ["a\x0cb\u2028c"]
    assert split_lines("\n\n") == ["", ""]


def test_windows_of_only_blanks_and_closers_are_left_out() -> None:
    lines = ["x = 1", *[""] * 70, "}", "end", "  );", *[""] * 70]
    chunks = window_chunks(lines, 1, len(lines), "window", None)
    assert [(c.start_line, c.end_line) for c in chunks] == [(1, 60)]


def test_chunk_content_keeps_carriage_returns() -> None:
    text = "def a():\r\n    return 1\r\n"
    analysis = analyze_file("src/a.py", text, "python")
    assert [c.content for c in analysis.chunks] == ["def a():\r\n    return 1\r"]


def test_an_enormous_line_is_cut_under_the_cap() -> None:
    huge = "é" * (MAX_CHUNK_BYTES // 2 * 3)  # 3 pieces' worth of two-byte characters
    text = f"first line\n{huge}\nlast line\n"
    analysis = analyze_file("data/notes.csv", text, "csv")
    assert all(len(c.content.encode()) <= MAX_CHUNK_BYTES for c in analysis.chunks)
    pieces = [c for c in analysis.chunks if c.start_line == c.end_line == 2]
    assert len(pieces) == 3
    assert "".join(p.content for p in pieces) == huge
    assert analysis.chunks[0].content == "first line"
    assert analysis.chunks[-1].content == "last line"


def test_a_window_of_long_lines_is_split_into_whole_lines_under_the_cap() -> None:
    lines = [f"{n:04d}" + "x" * 5000 for n in range(60)]
    analysis = analyze_file("db/wide.sql", "\n".join(lines), "sql")
    assert len(analysis.chunks) > 1
    for chunk in analysis.chunks:
        assert len(chunk.content.encode()) <= MAX_CHUNK_BYTES
        assert chunk.content == "\n".join(lines[chunk.start_line - 1 : chunk.end_line])
    assert analysis.chunks[0].start_line == 1
    assert analysis.chunks[-1].end_line == 60


_line = st.text(alphabet=st.sampled_from("ab }\t{é;"), max_size=12)


@settings(max_examples=60, deadline=None, derandomize=True, database=None)
@given(lines=st.lists(_line, min_size=1, max_size=400))
def test_windows_cover_every_line_with_words_and_quote_it_exactly(lines: list[str]) -> None:
    text = "\n".join(lines) + "\n"
    analysis = analyze_file("notes.cfg", text, "ini")
    source = split_lines(text)
    covered: set[int] = set()
    for chunk in analysis.chunks:
        assert chunk.content == "\n".join(source[chunk.start_line - 1 : chunk.end_line])
        assert chunk.end_line - chunk.start_line < 60
        covered.update(range(chunk.start_line, chunk.end_line + 1))
    for number, line in enumerate(source, start=1):
        if any(ch.isalpha() for ch in line):
            assert number in covered


@settings(max_examples=40, deadline=None, derandomize=True, database=None)
@given(start=st.integers(1, 500), length=st.integers(0, 500))
def test_window_spans_overlap_by_ten_and_reach_the_end(start: int, length: int) -> None:
    end = start + length - 1
    spans = window_spans(start, end)
    if length == 0:
        assert spans == []
        return
    assert spans[0][0] == start
    assert spans[-1][1] == end
    for (first, last), (next_first, _) in itertools.pairwise(spans):
        assert last - first + 1 == 60
        assert last - next_first + 1 == 10
