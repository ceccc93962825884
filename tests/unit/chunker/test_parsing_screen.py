"""Every reason a blob is not indexed, and what an accepted blob decodes to."""

from __future__ import annotations

import pytest

from palimpsest.chunker.parsing import Screened, Skip, SkipReason, screen

MAX = 256 * 1024


def _reason(path: str, data: bytes, max_bytes: int = MAX) -> SkipReason | None:
    result = screen(path, data, max_bytes)
    return result.reason if isinstance(result, Skip) else None


def test_plain_source_is_accepted_with_its_text() -> None:
    result = screen("src/app.py", b"def main():\n    return 1\n", MAX)
    assert result == Screened(text="def main():\n    return 1\n", replacements=0)


def test_too_large() -> None:
    assert _reason("src/big.py", b"x = 1\n" * 100, max_bytes=599) is SkipReason.TOO_LARGE
    assert _reason("src/big.py", b"x = 1\n" * 100, max_bytes=600) is None


@pytest.mark.parametrize("data", [b"", b"   \n\n\t \r\n"])
def test_empty(data: bytes) -> None:
    assert _reason("src/empty.py", data) is SkipReason.EMPTY


def test_nul_bytes_are_binary() -> None:
    assert _reason("src/data.py", b"print('a')\x00\x01\x02\n") is SkipReason.BINARY


def test_utf16_text_is_binary_because_of_its_nul_bytes() -> None:
    assert _reason("notes.txt", "hello world\n".encode("utf-16")) is SkipReason.BINARY


@pytest.mark.parametrize(
    ("path", "data"),
    [
        ("assets/logo.png", b"anything at all"),
        ("lib/tool.jar", b"anything at all"),
        ("image.dat", b"\x89PNG\r\n\x1a\n" + b"abc"),
        ("archive", b"\x1f\x8b\x08" + b"compressed"),
        ("program", b"\x7fELF" + b"\x02\x01\x01"),
        ("doc", b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n"),
    ],
)
def test_binary_by_extension_or_magic(path: str, data: bytes) -> None:
    assert _reason(path, data) is SkipReason.BINARY


def test_mostly_invalid_utf8_is_skipped() -> None:
    latin1 = "Größenänderung für Übergröße äöü ÄÖÜ ß\n".encode("latin-1") * 20
    assert _reason("notes.txt", latin1) is SkipReason.INVALID_UTF8


def test_a_few_invalid_bytes_are_replaced() -> None:
    data = b"# caf\xe9 comment\n" + b"x = 1\n" * 200
    result = screen("src/app.py", data, MAX)
    assert isinstance(result, Screened)
    assert result.text.startswith("# caf\ufffd comment\n")
    assert result.replacements == 1


def test_valid_replacement_characters_are_not_counted_as_invalid() -> None:
    result = screen("notes.txt", "a \ufffd b\n".encode(), MAX)
    assert result == Screened(text="a \ufffd b\n", replacements=0)


def test_utf8_bom_is_removed_and_line_numbers_do_not_move() -> None:
    result = screen("src/app.py", b"\xef\xbb\xbfimport os\n", MAX)
    assert result == Screened(text="import os\n")


def test_minified_bundle_by_name() -> None:
    assert _reason("dist/app.min.js", b"var a=1;") is SkipReason.MINIFIED


def test_minified_bundle_by_one_enormous_line() -> None:
    bundle = b"// header\n" + b"var a=function(){return 1};" * 1000 + b"\n" + b"x\n" * 100
    assert _reason("dist/app.js", bundle) is SkipReason.MINIFIED


def test_very_long_average_lines_are_minified() -> None:
    data = (b"a" * 900 + b"\n") * 10
    assert _reason("data/blob.py", data) is SkipReason.MINIFIED


def test_ordinary_long_lines_are_not_minified() -> None:
    data = (b"x = '" + b"a" * 150 + b"'\n") * 100
    assert _reason("src/app.js", data) is None


def test_a_short_one_line_file_is_not_minified() -> None:
    assert _reason("package.json", b'{"name": "' + b"a" * 900 + b'"}') is None


@pytest.mark.parametrize(
    "path", ["package-lock.json", "web/yarn.lock", "Cargo.lock", "go.sum", "poetry.lock"]
)
def test_lockfiles(path: str) -> None:
    assert _reason(path, b'{"lockfileVersion": 3}\n') is SkipReason.GENERATED_LOCKFILE


def test_reasons_have_stable_stored_values() -> None:
    assert {r.value for r in SkipReason} == {
        "too_large",
        "binary",
        "invalid_utf8",
        "minified",
        "empty",
        "generated_lockfile",
    }
