"""Whole-file behaviour: long definitions, namespaces, syntax errors, odd input, size caps."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from palimpsest.chunker.parsing import (
    MAX_CHUNK_BYTES,
    PARSED_LANGUAGES,
    FileAnalysis,
    analyze_file,
)
from palimpsest.chunker.parsing.lines import split_lines


def _spans(analysis: FileAnalysis) -> list[tuple[str, str | None, int, int]]:
    return [(c.kind, c.name, c.start_line, c.end_line) for c in analysis.chunks]


def test_empty_text_yields_nothing() -> None:
    assert analyze_file("src/a.py", "", "python") == FileAnalysis("python", [], [], [], 0)


def test_a_long_function_is_windowed_under_its_own_name() -> None:
    body = "".join(f"    total += {n}\n" for n in range(248))
    text = f"import os\n\n\ndef tally():\n    total = 0\n{body}    return total\n"
    analysis = analyze_file("src/tally.py", text, "python")
    assert _spans(analysis) == [
        ("window", None, 1, 3),
        ("function", "tally", 4, 63),
        ("function", "tally", 54, 113),
        ("function", "tally", 104, 163),
        ("function", "tally", 154, 213),
        ("function", "tally", 204, 254),
    ]
    assert [(s.name, s.start_line, s.end_line) for s in analysis.symbols] == [("tally", 4, 254)]


def test_a_long_class_is_split_into_its_methods_and_windows_for_the_rest() -> None:
    methods = "".join(
        f"    def method_{n}(self):\n" + "".join(f"        x = {k}\n" for k in range(20)) + "\n"
        for n in range(10)
    )
    text = 'class Big:\n    """Big."""\n\n    size = 1\n\n' + methods
    analysis = analyze_file("src/big.py", text, "python")
    spans = _spans(analysis)
    assert spans[0] == ("class", "Big", 1, 5)
    assert spans[1:] == [("method", f"method_{n}", 6 + 22 * n, 26 + 22 * n) for n in range(10)]


def test_namespaces_are_always_split_into_their_members() -> None:
    text = "namespace App {\n  export function a() {}\n  export function b() {}\n}\n"
    analysis = analyze_file("src/app.ts", text, "typescript")
    assert _spans(analysis) == [
        ("module", "App", 1, 1),
        ("function", "a", 2, 2),
        ("function", "b", 3, 3),
    ]
    assert [(s.name, s.parent) for s in analysis.symbols] == [
        ("App", None),
        ("a", "App"),
        ("b", "App"),
    ]


def test_a_file_with_syntax_errors_still_yields_its_definitions() -> None:
    text = (
        "def good():\n    return 1\n\n\ndef broken(:\n    pass\n\n\n"
        "class Fine:\n    def ok(self):\n        return helper()\n\n\nx = (1,\n"
    )
    analysis = analyze_file("src/broken.py", text, "python")
    assert analysis.parse_errors >= 1
    names = {s.name for s in analysis.symbols}
    assert {"good", "Fine", "ok"} <= names
    covered = {n for c in analysis.chunks for n in range(c.start_line, c.end_line + 1)}
    assert {1, 5, 9, 11, 14} <= covered


def test_a_clean_file_has_no_parse_errors() -> None:
    assert analyze_file("src/ok.go", "package ok\n\nfunc A() {}\n", "go").parse_errors == 0


def test_a_language_without_a_grammar_is_windowed() -> None:
    text = "".join(f"local x{n} = {n}\n" for n in range(70))
    analysis = analyze_file("game/main.lua", text, "lua")
    assert _spans(analysis) == [("window", None, 1, 60), ("window", None, 51, 70)]


def test_unknown_language_is_windowed() -> None:
    analysis = analyze_file("bin/tool", "#!/bin/sh\necho hi\n", None)
    assert _spans(analysis) == [("window", None, 1, 2)]


def test_two_definitions_on_one_line_do_not_overlap() -> None:
    analysis = analyze_file("src/a.js", "function a(){} function b(){}\n", "javascript")
    assert _spans(analysis) == [("function", "a", 1, 1)]
    assert [s.name for s in analysis.symbols] == ["a", "b"]


def test_an_enormous_line_inside_a_definition_is_cut() -> None:
    text = "const DATA = [\n" + "1," * 60_000 + "\n];\nfunction f() { return DATA; }\n"
    analysis = analyze_file("src/data.ts", text, "typescript")
    assert all(len(c.content.encode()) <= MAX_CHUNK_BYTES for c in analysis.chunks)
    assert ("function", "f", 4, 4) in _spans(analysis)


def test_lone_surrogates_do_not_raise() -> None:
    analysis = analyze_file("src/a.py", "x = '\ud800'\ndef f():\n    pass\n", "python")
    assert [s.name for s in analysis.symbols] == ["f"]


_source = st.text(
    alphabet=st.sampled_from([*"abcXYZ_09 (){}[]<>;:.,=+-*/'\"`#@$\\\n\t", "\u00e9", "\u4e2d"]),
    max_size=400,
)


@settings(
    max_examples=15,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(text=_source, language=st.sampled_from(sorted(PARSED_LANGUAGES)))
def test_any_text_in_any_language_yields_exact_chunks_without_raising(text: str, language: str) -> None:
    analysis = analyze_file("fuzz", text, language)
    lines = split_lines(text)
    for chunk in analysis.chunks:
        assert 1 <= chunk.start_line <= chunk.end_line <= len(lines)
        assert chunk.content == "\n".join(lines[chunk.start_line - 1 : chunk.end_line])
    for symbol in analysis.symbols:
        assert 1 <= symbol.start_line <= symbol.end_line <= max(len(lines), 1)
    assert analysis.parse_errors >= 0
