"""Tags-style tree-sitter queries, one set per parsed language, written for this project.

Capture names carry the meaning; the analysis in ``parsing.code`` knows nothing about any
grammar beyond what a ``LanguageSpec`` says:

* ``@definition.<kind>`` a definition that is a symbol and a chunk, with its ``@name``
  (and for Go methods a ``@receiver`` naming the parent type);
* ``@declaration.<kind>`` a symbol only (prototypes, forward declarations);
* ``@container.<kind>`` a chunk only, named after the type it extends (Rust ``impl``,
  Swift ``extension``), which becomes the parent of the definitions inside;
* ``@reference.call`` / ``@reference.type`` a name used at a call site or as a type;
  ``@reference.member`` the name of a member call (``x.m()``: ``m``), a call site too;
* ``@import.<kind>`` a module specifier (``@imported`` the name taken from it), where
  ``<kind>`` is ``statement`` when the capture is the whole statement and must be cleaned;
* ``@dynamic.<what>`` a dispatch site that cannot be resolved statically (``@dynamic.call``:
  the callee's own text names it);
* ``@binding.<kind>`` (in ``LanguageSpec.bindings`` only) a name bound by an assignment, an
  attribute set on the object, a constant, a field or an object key;
* captures starting with ``_`` only feed predicates.

When one node matches several definition patterns the earliest pattern wins, so specific
patterns come first.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from palimpsest.index.codefacts.queries import (
    c_family,
    go,
    javascript,
    jvm,
    python,
    rust,
    scripting,
    swift,
)

__all__ = ["SPECS", "LanguageSpec", "spec_for"]


@dataclass(frozen=True, slots=True)
class LanguageSpec:
    """How to read one grammar: its query, and which nodes belong to a definition's chunk."""

    grammar: str
    query: str
    wrappers: frozenset[str] = field(default_factory=frozenset)
    """Parent node types that belong to the definition inside them (``export``, decorators)."""
    line_comments: tuple[str, ...] = ("//",)
    """Prefixes of whole-line comments (and attributes) directly above a definition that
    belong to its chunk; ``/* ... */`` blocks count too where ``//`` is a comment."""
    bindings: str = ""
    """``@binding.<kind>`` patterns (assignments, attributes, constants, fields, keys): read for
    the code-facts definitions of a blob, never for the chunker's symbols and chunks."""


SPECS: dict[str, LanguageSpec] = {
    "python": LanguageSpec("python", python.QUERY, python.WRAPPERS, ("#",), python.BINDINGS),
    "typescript": LanguageSpec(
        "typescript", javascript.TYPESCRIPT, javascript.WRAPPERS, bindings=javascript.TYPESCRIPT_BINDINGS
    ),
    "tsx": LanguageSpec("tsx", javascript.TSX, javascript.WRAPPERS, bindings=javascript.TYPESCRIPT_BINDINGS),
    "javascript": LanguageSpec(
        "javascript", javascript.JAVASCRIPT, javascript.WRAPPERS, bindings=javascript.JAVASCRIPT_BINDINGS
    ),
    "go": LanguageSpec("go", go.QUERY, go.WRAPPERS, bindings=go.BINDINGS),
    "rust": LanguageSpec("rust", rust.QUERY, line_comments=("//", "#["), bindings=rust.BINDINGS),
    "java": LanguageSpec("java", jvm.JAVA, bindings=jvm.JAVA_BINDINGS),
    "kotlin": LanguageSpec("kotlin", jvm.KOTLIN),
    "scala": LanguageSpec("scala", jvm.SCALA),
    "c": LanguageSpec("c", c_family.C, c_family.C_WRAPPERS),
    "cpp": LanguageSpec("cpp", c_family.CPP, c_family.CPP_WRAPPERS),
    "csharp": LanguageSpec("csharp", c_family.CSHARP),
    "ruby": LanguageSpec("ruby", scripting.RUBY, line_comments=("#",)),
    "php": LanguageSpec("php", scripting.PHP, line_comments=("//", "#")),
    "swift": LanguageSpec("swift", swift.QUERY),
}


def spec_for(language: str | None) -> LanguageSpec | None:
    """The spec of a parsed language, or ``None`` for languages that are only windowed."""
    return SPECS.get(language) if language is not None else None
