"""What a blob defines: one answer for the chunker's head blobs and the analyzer's old blobs.

``definitions(path, content)`` reads the blob with the chunker's tree-sitter tags
(:mod:`.tags`, the same queries and the same parse) plus the language's ``bindings`` patterns:
assignments, attributes set on the object, module constants, fields and object keys are
definitions too, each of its own kind and marked ``binding``; so are the environment variables
a Python settings class reads (:mod:`.settings`: a pydantic-settings field under its class's
``env_prefix``), of kind ``setting``. A language without a grammar, or
an image without tree-sitter (the ``treesitter`` extra of palimpsest-index), falls back to a
keyword regex; ``Definitions.method`` says which answered, so callers can count the fallbacks.

Definitions are a pure function of the blob's bytes and language, so callers may cache them by
blob id (:class:`DefinitionsCache`).
"""

from __future__ import annotations

import re
import sys
import threading
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache, lru_cache
from typing import TYPE_CHECKING, Literal, Protocol

from palimpsest.index.codefacts.settings import MARKERS, env_names, read_settings
from palimpsest.index.languages import detect_language

if TYPE_CHECKING:
    from palimpsest.index.codefacts.queries import LanguageSpec

__all__ = [
    "MAX_BLOB_SIZE",
    "Definition",
    "Definitions",
    "DefinitionsCache",
    "LruDefinitionsCache",
    "defined_names",
    "definitions",
    "tree_sitter_available",
]

MAX_BLOB_SIZE = 1024 * 1024  # a larger blob is data or generated code, not a definition site
Method = Literal["tree_sitter", "regex", "skipped"]
_FUNCTION_KINDS = frozenset({"function", "method"})


@dataclass(frozen=True, slots=True)
class Definition:
    """One name a blob defines."""

    name: str
    kind: str  # function, method, class, struct, type, …; bindings: assignment, attribute, constant, field, key, variant, setting (an environment variable a settings class reads)
    line: int  # 1-based; 0 when the regex fallback found it
    nested: bool  # inside another (non-binding) definition: a method, or a function's local function
    binding: bool  # bound by an assignment, attribute, constant, field or key, not declared
    parent: str | None = None  # the enclosing definition's name (a method's type, a field's struct)


@dataclass(frozen=True, slots=True)
class Definitions:
    """The definitions of one blob, how they were read, and the setting-like keys it quotes."""

    method: Method
    items: tuple[Definition, ...] = ()
    keys_read: frozenset[str] = frozenset()
    """Quoted setting-like names (``settings["consumer_key"]``): read, not defined."""

    def names(self) -> frozenset[str]:
        return frozenset(d.name for d in self.items)

    def members(self) -> frozenset[str]:
        """Names defined only as nested functions (methods): reached through an object."""
        nested = {d.name for d in self.items if d.nested and d.kind in _FUNCTION_KINDS}
        return frozenset(
            nested - {d.name for d in self.items if not d.nested or d.kind not in _FUNCTION_KINDS}
        )


def definitions(path: str, content: bytes) -> Definitions:
    """What ``content`` (the blob at ``path``) defines; never raises for bad source."""
    if len(content) > MAX_BLOB_SIZE or b"\0" in content[:8000]:
        return Definitions("skipped")
    keys = _keys_read(content)
    language = detect_language(path)
    settings = _settings(content) if language == "python" else ()
    if language is not None and tree_sitter_available():
        from palimpsest.index.codefacts.queries import spec_for

        spec = spec_for(language)
        if spec is not None:
            return Definitions("tree_sitter", _tree_sitter(content, spec) + settings, keys)
    return Definitions("regex", _regex(content) + settings, keys)


def _settings(content: bytes) -> tuple[Definition, ...]:
    """The environment variables the blob's settings classes read (:mod:`.settings`:
    ``PALIMPSEST_HOME`` for the field ``home`` under ``env_prefix="PALIMPSEST_"``), as far as the
    blob alone says: a class whose base or prefix lives in another file is resolved only where
    the files are read together."""
    if MARKERS.search(content) is None:
        return ()
    found = env_names([read_settings(content)])
    return tuple(Definition(sys.intern(e.name), "setting", e.line, True, True, e.cls) for e in found)


@cache
def tree_sitter_available() -> bool:
    """Whether tree-sitter and the language pack are installed (the ``treesitter`` extra)."""
    try:
        import tree_sitter  # noqa: F401
        import tree_sitter_language_pack  # noqa: F401
    except ImportError:
        return False
    return True


def defined_names(content: bytes, names: set[str], path: str | None = None) -> set[str]:
    """Which of ``names`` ``content`` defines. With ``path`` the blob's :func:`definitions`;
    without (a code example inside a document, language unknown) the keyword regex."""
    if path is not None:
        return set(definitions(path, content).names() & names)
    if not names or len(content) > MAX_BLOB_SIZE or b"\0" in content[:8000]:
        return set()
    found = {d.name for d in _regex(content, _alternatives(names))}
    return found & names


# ------------------------------------------------------------------------------ tree-sitter


def _tree_sitter(content: bytes, spec: LanguageSpec) -> tuple[Definition, ...]:
    from palimpsest.index.codefacts.tags import read_tags

    tagged = read_tags(content, spec, content.count(b"\n") + 1, bindings=True)
    found: list[Definition] = []
    bound: set[str] = set()
    for tag in tagged.definitions:
        if tag.role == "container":
            continue
        binding = tag.role == "binding"
        parent = tag.parent
        while parent is not None and parent.role == "binding":
            parent = parent.parent
        # interned: the versions of one file in a cache share their names
        found.append(
            Definition(
                sys.intern(tag.name),
                tag.kind,
                tag.symbol_start,
                parent is not None,
                binding,
                None if tag.parent is None else sys.intern(tag.parent.name),
            )
        )
        if binding:
            bound.add(tag.name)
    if bound:
        # ``const express = require('express')``: another package's name, bound here
        imported = _imported(content) & bound
        if imported:
            found = [d for d in found if not (d.binding and d.name in imported)]
    return tuple(found)


# ------------------------------------------------------------------------------ regex fallback

# what defines a name, in the languages a repository is usually written in
_DEF_KEYWORDS = (
    rb"def|defp|defmacro|defmodule|class|func|function|fn|fun|struct|enum|interface|trait|type|typedef"
    rb"|module|macro|object|record|const|let|var|val|static|sub|proc|namespace|union|alias|mod|package"
)
_MODIFIERS = (
    rb"(?:(?:export|public|private|protected|internal|static|async|override|final|virtual|abstract"
    rb"|pub(?:\([\w:]+\))?|inline|readonly|default|unsafe|extern|open|data|sealed|suspend)\s+)*"
)
_NOT_A_TYPE = frozenset(
    {b"return", b"new", b"await", b"throw", b"else", b"yield", b"case", b"not", b"and", b"or", b"in", b"is"}
)
_IDENTIFIER = rb"[A-Za-z_$][\w$]*"
_KEY_LIKE = re.compile(rb"""(["'`])((?=[A-Za-z0-9_]{8,}\1)[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+)\1""")
_FUNCTION_KEYWORD = re.compile(rb"\b(?:def|func|fn|function|fun|sub)\s")
_VARIABLE = re.compile(rb"\b(?:let|var|val|const|my|local)\s")
_KEYWORD_KINDS = {
    b"def": "function",
    b"func": "function",
    b"function": "function",
    b"fn": "function",
    b"fun": "function",
    b"sub": "function",
    b"proc": "function",
    b"defp": "function",
    b"class": "class",
    b"struct": "struct",
    b"enum": "enum",
    b"interface": "interface",
    b"trait": "trait",
    b"type": "type",
    b"typedef": "type",
    b"const": "constant",
}


def _alternatives(names: Iterable[str]) -> bytes:
    return b"|".join(re.escape(n.encode()) for n in sorted(names, key=len, reverse=True))


@lru_cache(maxsize=256)
def _pattern(alternatives: bytes) -> re.Pattern[bytes]:
    def name(group: bytes) -> bytes:
        return rb"(?P<" + group + rb">" + alternatives + rb")(?![\w$])"

    return re.compile(
        rb"(?:\b(?P<word>" + _DEF_KEYWORDS + rb")\s+(?:\([^)\n]*\)\s*)?(?:[\w$]+\.)*[*&]?" + name(b"keyword") + rb")"
        # an assignment, not a parameter of a multi-line signature (``name: bool = True,``)
        rb"|(?:^[ \t]*" + _MODIFIERS + rb"(?:[\w$]+\.)?" + name(b"assigned")
        + rb"(?:\s+|\s*:[^=\n]+)=(?!=)(?![^\n]*,[ \t]*$))"
        # a declared field (``    list_of_ints: list[int]``)
        + rb"|(?:^[ \t]+" + name(b"field") + rb"[ \t]*:[ \t]*[A-Za-z_][\w\[\]., |]*[ \t]*$)"
        rb"|(?:^[ \t]*" + _MODIFIERS + rb"(?P<type>[\w<>\[\],.*&?:]+\s+)?[*&]?" + name(b"method")
        + rb"\s*(?:<[^>\n]*>)?\([^;\n]*\)\s*(?:[:\-]>?[^{;\n]*)?(?:throws [\w., ]+)?\{\s*$)",
        re.MULTILINE,
    )  # fmt: skip


def _regex(content: bytes, alternatives: bytes = _IDENTIFIER) -> tuple[Definition, ...]:
    """Definitions by keyword and line shape (any name, or only ``alternatives``)."""
    pattern = _pattern(alternatives)
    found: dict[tuple[bytes, str, bool], None] = {}
    for match in pattern.finditer(content):
        kind = match.group("type")
        if kind is not None and kind.strip() in _NOT_A_TYPE:
            continue
        if _local(content, match):
            continue
        if match.group("keyword"):
            name, what = match["keyword"], _KEYWORD_KINDS.get(match["word"], "definition")
        elif match.group("assigned"):
            name, what = match["assigned"], "assignment"
        elif match.group("method"):
            name, what = match["method"], "method"
        else:
            name, what = match["field"], "field"
        found[(name, what, _method(content, match))] = None
    if not found:
        return ()
    imported = _imported(content)
    return tuple(
        Definition(name.decode("utf-8", "replace"), what, 0, nested, what in ("assignment", "field"))
        for name, what, nested in found
        if name.decode("utf-8", "replace") not in imported
    )


def _method(content: bytes, match: re.Match[bytes]) -> bool:
    """A ``def``/``func``/``fn``/``function`` indented under something: a method (or a nested
    function), which an example can only reach through an object."""
    if not match.group("keyword"):
        return False
    line = _before(content, match, "keyword")
    return line[:1] in (b" ", b"\t") and _FUNCTION_KEYWORD.search(line) is not None


def _before(content: bytes, match: re.Match[bytes], group: str) -> bytes:
    """What the matched definition's line holds before the name (indentation, keywords)."""
    return content[content.rfind(b"\n", 0, match.start()) + 1 : match.start(group)]


def _local(content: bytes, match: re.Match[bytes]) -> bool:
    """A variable of a function body (``let socket = …`` eight columns in), not a definition a doc
    can name: a variable declaration or plain assignment indented past one level, unless it sets
    an attribute of the object (``self.timeout = …`` in ``__init__``)."""
    group = "assigned" if match.group("assigned") else "keyword" if match.group("keyword") else None
    if group is None:
        return False
    prefix = _before(content, match, group)
    margin = prefix[: len(prefix) - len(prefix.lstrip(b" \t"))]
    indent = len(margin) + 3 * margin.count(b"\t")  # a tab is four columns
    if indent <= 4:
        return False
    if group == "keyword":
        return _VARIABLE.search(prefix) is not None
    return not prefix.rstrip().endswith((b"self.", b"this.", b"cls.", b"@"))


# names a statement imports: ``import a, b``, ``from m import (a, b)``, ``import {a} from 'm'``,
# ``const {a} = require('m')``; the group holds the imported names
_IMPORT_FORMS = (  # (a word the statement needs: a cheap test first, the pattern)
    (b"import", re.compile(rb"^[ \t]*(?:from[ \t]+[\w.]+[ \t]+)?import[ \t]+([^\n(]*)$", re.MULTILINE)),
    (b"import", re.compile(rb"^[ \t]*from[ \t]+[\w.]+[ \t]+import[ \t]*\(([^)]*)\)", re.MULTILINE)),
    (
        b"from",
        re.compile(
            rb"\bimport[ \t]+(?:type[ \t]+)?((?:[\w$]+[ \t]*,?[ \t]*)?(?:\{[^}]*\}|\*[ \t]+as[ \t]+[\w$]+)?)"
            rb"[ \t]*from[ \t]*['\"]"
        ),
    ),
    (b"require(", re.compile(rb"\b(?:const|let|var)[ \t]+([\w$]+|\{[^}]*\})[ \t]*=[ \t]*require\(")),
)
_TOKEN = re.compile(_IDENTIFIER)


def _imported(content: bytes) -> set[str]:
    """Names ``content`` imports (``OpenSSL = None`` after ``import OpenSSL`` is a fallback for a
    missing package, not a definition: where the repository really defines it, that file says so)."""
    found: set[str] = set()
    for word, form in _IMPORT_FORMS:
        if word not in content:
            continue
        for match in form.finditer(content):
            found.update(t.decode("utf-8", "replace") for t in _TOKEN.findall(match.group(1)))
    return found


def _keys_read(content: bytes) -> frozenset[str]:
    """Setting-like names the blob quotes (``os.environ.get("ETCDCTL_ENDPOINT")``): with an
    underscore and eight or more characters; a quoted plain word is data."""
    return frozenset(m.group(2).decode("ascii") for m in _KEY_LIKE.finditer(content))


# ------------------------------------------------------------------------------ the cache


class DefinitionsCache(Protocol):
    """Definitions by blob id (a blob's definitions never change)."""

    def get(self, blob: str) -> Definitions | None: ...

    def put(self, blob: str, found: Definitions) -> None: ...


class LruDefinitionsCache:
    """A process-wide cache bounded by the number of definitions it holds (least recently used
    blobs go first). Thread-safe; blob ids are content hashes, so entries never go stale."""

    def __init__(self, max_definitions: int) -> None:
        self.max_definitions = max_definitions
        self._entries: OrderedDict[str, Definitions] = OrderedDict()
        self._size = 0
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def get(self, blob: str) -> Definitions | None:
        with self._lock:
            found = self._entries.get(blob)
            if found is None:
                self.misses += 1
                return None
            self._entries.move_to_end(blob)
            self.hits += 1
            return found

    def put(self, blob: str, found: Definitions) -> None:
        weight = _weight(found)
        if weight > self.max_definitions:
            return
        with self._lock:
            old = self._entries.pop(blob, None)
            if old is not None:
                self._size -= _weight(old)
            self._entries[blob] = found
            self._size += weight
            while self._size > self.max_definitions:
                _, dropped = self._entries.popitem(last=False)
                self._size -= _weight(dropped)

    def __len__(self) -> int:
        return len(self._entries)


def _weight(found: Definitions) -> int:
    return 1 + len(found.items) + len(found.keys_read)
