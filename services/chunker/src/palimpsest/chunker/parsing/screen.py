"""The gate in front of the parser: what is indexed, and why everything else is not.

``screen`` looks at a blob's path and bytes and either accepts it with its decoded text or
names the reason it is skipped, so every skip can be recorded and surfaced (docs/architecture.md,
"Chunker": nothing is dropped silently). It never raises.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from palimpsest.index.codefacts import is_lockfile
from palimpsest.index.languages import file_name, file_suffix

__all__ = [
    "INVALID_UTF8_MAX_FRACTION",
    "MINIFIED_AVG_LINE_CHARS",
    "MINIFIED_LINE_CHARS",
    "Screened",
    "Skip",
    "SkipReason",
    "screen",
]

INVALID_UTF8_MAX_FRACTION = 0.01
"""Above this share of undecodable bytes a file is not text; below it they become U+FFFD."""
MINIFIED_AVG_LINE_CHARS = 500
"""Average line length above which a file is a minified bundle or a data dump."""
MINIFIED_LINE_CHARS = 20_000
"""A single line this long in a script or stylesheet marks a bundle."""
_MINIFIED_MIN_BYTES = 2_048  # a short one-line file is not a bundle
_MAGIC_PROBE = 16
_REPLACEMENT_UTF8 = "\ufffd".encode()


class SkipReason(StrEnum):
    """Why a blob is not indexed; the values are stored and shown to operators."""

    TOO_LARGE = "too_large"
    BINARY = "binary"
    INVALID_UTF8 = "invalid_utf8"
    MINIFIED = "minified"
    EMPTY = "empty"
    GENERATED_LOCKFILE = "generated_lockfile"


@dataclass(frozen=True, slots=True)
class Screened:
    """An accepted file: its text (BOM removed) and how many U+FFFD replaced bad bytes."""

    text: str
    replacements: int = 0


@dataclass(frozen=True, slots=True)
class Skip:
    """A file that is not indexed, with the reason."""

    reason: SkipReason


_BINARY_EXTENSIONS = frozenset(
    {
        # images, audio, video, fonts
        ".png", ".jpg", ".jpeg", ".gif", ".bmp", ".ico", ".icns", ".webp", ".tif", ".tiff",
        ".psd", ".heic", ".avif", ".mp3", ".wav", ".ogg", ".flac", ".aac", ".m4a", ".mp4",
        ".m4v", ".mov", ".avi", ".mkv", ".webm", ".ttf", ".otf", ".woff", ".woff2", ".eot",
        # archives and packages
        ".zip", ".gz", ".tgz", ".bz2", ".xz", ".zst", ".7z", ".rar", ".tar", ".jar", ".war",
        ".ear", ".whl", ".egg", ".deb", ".rpm", ".apk", ".aar", ".nupkg", ".gem", ".dmg", ".iso",
        # compiled code and libraries
        ".exe", ".dll", ".so", ".dylib", ".a", ".lib", ".o", ".obj", ".class", ".pyc", ".pyo",
        ".pyd", ".wasm", ".beam", ".elc", ".node",
        # documents and data
        ".pdf", ".doc", ".docx", ".xls", ".xlsx", ".ppt", ".pptx", ".odt", ".ods", ".sqlite",
        ".sqlite3", ".db", ".parquet", ".avro", ".orc", ".npy", ".npz", ".pkl", ".pickle",
        ".h5", ".hdf5", ".pt", ".pth", ".onnx", ".tflite", ".safetensors", ".bin", ".dat",
        ".keystore", ".jks", ".p12", ".pfx", ".der",
    }
)  # fmt: skip

_MAGIC_PREFIXES = (
    b"\x89PNG",
    b"GIF87a",
    b"GIF89a",
    b"\xff\xd8\xff",
    b"%PDF-",
    b"PK\x03\x04",
    b"PK\x05\x06",
    b"\x1f\x8b",
    b"\xfd7zXZ\x00",
    b"7z\xbc\xaf\x27\x1c",
    b"Rar!\x1a\x07",
    b"\x28\xb5\x2f\xfd",
    b"\x7fELF",
    b"\xca\xfe\xba\xbe",
    b"\xfe\xed\xfa\xce",
    b"\xfe\xed\xfa\xcf",
    b"\xcf\xfa\xed\xfe",
    b"\xce\xfa\xed\xfe",
    b"\x00asm",
    b"SQLite format 3\x00",
)

_BUNDLE_EXTENSIONS = frozenset({".js", ".mjs", ".cjs", ".css", ".map"})
_BOM = "\ufeff"


def screen(path: str, data: bytes, max_bytes: int) -> Screened | Skip:
    """Accept ``data`` as indexable text or name why not (checked cheapest first)."""
    name = file_name(path).lower()
    suffix = file_suffix(name)
    reason = _by_name(name, suffix) or _by_bytes(data, max_bytes)
    if reason is not None:
        return Skip(reason)
    text, replaced = _decode(data)
    if text is None:
        return Skip(SkipReason.INVALID_UTF8)
    if _is_minified(name, suffix, data, text):
        return Skip(SkipReason.MINIFIED)
    return Screened(text=text, replacements=replaced)


def _by_name(name: str, suffix: str) -> SkipReason | None:
    if is_lockfile(name):
        return SkipReason.GENERATED_LOCKFILE
    if suffix in _BINARY_EXTENSIONS:
        return SkipReason.BINARY
    return None


def _by_bytes(data: bytes, max_bytes: int) -> SkipReason | None:
    if len(data) > max_bytes:
        return SkipReason.TOO_LARGE
    if not data.strip():
        return SkipReason.EMPTY
    if b"\x00" in data or data[:_MAGIC_PROBE].startswith(_MAGIC_PREFIXES):
        return SkipReason.BINARY
    return None


def _decode(data: bytes) -> tuple[str | None, int]:
    """UTF-8 text without BOM, or ``None`` when too much of it is not UTF-8."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = data.decode("utf-8", errors="replace")
        replaced = text.count("\ufffd") - data.count(_REPLACEMENT_UTF8)
        if replaced > len(data) * INVALID_UTF8_MAX_FRACTION:
            return None, replaced
    else:
        replaced = 0
    return text.removeprefix(_BOM), replaced


def _is_minified(name: str, suffix: str, data: bytes, text: str) -> bool:
    if ".min." in name:
        return True
    if len(data) < _MINIFIED_MIN_BYTES:
        return False
    lines = text.count("\n") + (0 if text.endswith("\n") else 1)
    if len(text) / lines > MINIFIED_AVG_LINE_CHARS:
        return True
    if suffix not in _BUNDLE_EXTENSIONS or len(data) <= MINIFIED_LINE_CHARS:
        return False
    return max(map(len, data.split(b"\n"))) > MINIFIED_LINE_CHARS
