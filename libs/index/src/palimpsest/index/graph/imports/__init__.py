"""Import resolution per language: an import fact of a file -> files of the same snapshot.

:class:`ImportResolver` picks the resolver by the importing file's language and parses each
language's configuration (``tsconfig.json``, ``go.mod``, ``Cargo.toml``, ``package.json``) once
per snapshot, on first use.
"""

from __future__ import annotations

from collections.abc import Callable

from palimpsest.index.graph.facts import FactRow
from palimpsest.index.graph.imports.base import Outcome, ResolveContext, external, resolved, unresolved
from palimpsest.index.graph.imports.go import GoResolver
from palimpsest.index.graph.imports.javascript import JavaScriptResolver
from palimpsest.index.graph.imports.other import (
    resolve_c,
    resolve_csharp,
    resolve_jvm,
    resolve_php,
    resolve_ruby,
    resolve_swift,
)
from palimpsest.index.graph.imports.python import resolve_python
from palimpsest.index.graph.imports.rust import RustResolver
from palimpsest.index.graph.tree import dirname

__all__ = ["ImportResolver", "Outcome", "ResolveContext", "external", "resolved", "unresolved"]

_Function = Callable[[str, FactRow, ResolveContext], Outcome]
_FUNCTIONS: dict[str, _Function] = {
    "python": resolve_python,
    "java": resolve_jvm,
    "kotlin": resolve_jvm,
    "scala": resolve_jvm,
    "csharp": resolve_csharp,
    "c": resolve_c,
    "cpp": resolve_c,
    "ruby": resolve_ruby,
    "php": resolve_php,
    "swift": resolve_swift,
}
_JAVASCRIPT = frozenset({"javascript", "typescript", "tsx"})


class ImportResolver:
    """Resolves import facts of every language of one snapshot."""

    def __init__(self, context: ResolveContext) -> None:
        self._context = context
        self._memo: dict[tuple[str, str | None, str, str | None, str | None], Outcome] = {}
        self._javascript: JavaScriptResolver | None = None
        self._go: GoResolver | None = None
        self._rust: RustResolver | None = None

    def workspace_packages(self) -> int:
        """JS/TS workspace packages (``package.json`` with a ``name``) imports may name."""
        return len(self._javascript.packages) if self._javascript is not None else 0

    def resolve(self, importer: str, language: str | None, fact: FactRow) -> Outcome:
        """The outcome for ``fact`` of ``importer``; memoised per directory (per file for Rust,
        whose module path depends on the file), since many files import the same modules."""
        where = importer if language == "rust" else dirname(importer)
        key = (where, language, fact.name, fact.target, fact.detail)
        found = self._memo.get(key)
        if found is None:
            found = self._memo[key] = self._resolve(importer, language, fact)
        return found

    def _resolve(self, importer: str, language: str | None, fact: FactRow) -> Outcome:
        if language in _JAVASCRIPT:
            if self._javascript is None:
                self._javascript = JavaScriptResolver(self._context)
            return self._javascript.resolve(importer, fact)
        if language == "go":
            if self._go is None:
                self._go = GoResolver(self._context)
            return self._go.resolve(importer, fact)
        if language == "rust":
            if self._rust is None:
                self._rust = RustResolver(self._context)
            return self._rust.resolve(importer, fact)
        function = _FUNCTIONS.get(language or "")
        if function is None:
            return unresolved()
        return function(importer, fact, self._context)
