"""Definitions, symbols and graph facts of one source file, read with tree-sitter.

One parse and one query pass per file (both in C); the Python side only walks the matches.
Chunks follow ADR-0017: each outermost definition is a chunk (with its decorators, ``export``
and the doc comment right above it); text outside definitions becomes 60/10 windows; a
definition longer than ``MAX_DEFINITION_LINES`` -- and every namespace/module -- is split into
its member definitions, and whatever is left of it becomes windows under its name and kind.
Source with syntax errors still yields whatever tree-sitter recovered; nothing here raises
for bad source.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Iterable
from dataclasses import dataclass, field
from operator import attrgetter
from typing import TYPE_CHECKING

from tree_sitter import Node, QueryCursor

from palimpsest.chunker.parsing import grammars
from palimpsest.chunker.parsing.lines import fitted_chunks, window_chunks
from palimpsest.chunker.parsing.model import CLASS_LIKE_KINDS, WINDOW, Chunk, Fact, Symbol

if TYPE_CHECKING:
    from palimpsest.chunker.parsing.queries import LanguageSpec

__all__ = ["MAX_DEFINITION_LINES", "CodeAnalysis", "analyze_code"]

MAX_DEFINITION_LINES = 200
_MIN_REFERENCE_CHARS = 2
_SNIPPET_CHARS = 80
_MAX_NAME_CHARS = 200
_GENERIC_ARGUMENTS = re.compile(r"<[^<>]*>")
_NAME_SEPARATORS = re.compile(r"::|\\|\.|->")
_IMPORT_KEYWORDS = re.compile(
    r"^(?:(?:import|using|use|static|global|package|namespace|typealias|struct|class|enum"
    r"|protocol|let|var|func|function|const)\s+)+"
)
_STATIC = re.compile(r"\bstatic\b")
_USING_ALIAS = re.compile(r"^[A-Za-z_]\w*\s*=\s*")
_QUOTES = "\"'`<>"

_FACT_ORDER = attrgetter("line", "kind", "name")
_DEFINING_ROLES = frozenset({"definition", "declaration", "container"})
_CHUNK_ROLES = frozenset({"definition", "container"})
_NAMING_ROLES = frozenset({"name", "receiver", "imported", "import"})
_CALL_LABELS = frozenset({"call", "member"})


@dataclass(frozen=True, slots=True)
class CodeAnalysis:
    """What one parse of a source file yields."""

    chunks: list[Chunk]
    symbols: list[Symbol]
    facts: list[Fact]
    parse_errors: int


@dataclass(slots=True)
class _Definition:
    role: str
    kind: str
    name: str
    start_byte: int
    end_byte: int
    symbol_start: int
    symbol_end: int
    receiver: str | None
    node: Node
    parent: _Definition | None = None
    children: list[_Definition] = field(default_factory=list)


@dataclass(slots=True)
class _Match:
    """The captures of one query match that describe a definition."""

    pattern: int
    role: str
    kind: str
    node: Node
    name: Node | None = None
    receiver: Node | None = None


@dataclass(slots=True)
class _Collected:
    definitions: dict[tuple[int, int], _Match] = field(default_factory=dict)
    references: dict[bytes, tuple[Node, str]] = field(default_factory=dict)
    calls: list[tuple[bytes, int, Node, str]] = field(default_factory=list)  # name, offset, node, label
    imports: list[tuple[str, Node, Node | None]] = field(default_factory=list)
    dynamic: list[tuple[str, Node]] = field(default_factory=list)


_roles: dict[str, tuple[str, str]] = {}


def _role(capture: str) -> tuple[str, str]:
    found = _roles.get(capture)
    if found is None:
        role, _, label = capture.partition(".")
        found = _roles[capture] = (role, label)
    return found


def analyze_code(text: str, lines: list[str], spec: LanguageSpec) -> CodeAnalysis:
    """Chunks, symbols and facts of ``text`` (already split into ``lines``) in ``spec``'s language."""
    tree = grammars.parser(spec.grammar).parse(text.encode("utf-8", "surrogatepass"))
    root = tree.root_node
    errors = _count_errors(root, spec.grammar) if root.has_error else 0
    matches = QueryCursor(grammars.query(spec.grammar, spec.query)).matches(root)
    collected = _collect(matches)
    definitions = _definitions(collected.definitions.values(), len(lines))
    locator = _Locator(definitions)
    return CodeAnalysis(
        chunks=_chunks(definitions, lines, spec),
        symbols=_symbols(definitions),
        facts=_facts(collected, definitions, locator),
        parse_errors=errors,
    )


def _count_errors(root: Node, grammar: str) -> int:
    captures = QueryCursor(grammars.error_query(grammar)).captures(root)
    return sum(len(nodes) for nodes in captures.values())


# ----------------------------------------------------------------------------- matches


def _collect(matches: list[tuple[int, dict[str, list[Node]]]]) -> _Collected:
    """Sort the matches into definitions, references, calls, imports and dynamic sites.

    This loop runs once per match -- tens of thousands per megabyte -- so it stays flat.
    """
    collected = _Collected()
    references = collected.references
    calls = collected.calls
    roles = _roles
    for pattern, captures in matches:
        definition: _Match | None = None
        names: dict[str, Node] | None = None
        for capture, nodes in captures.items():
            role, label = roles.get(capture) or _role(capture)
            if role == "reference":
                node = nodes[0]
                name = node.text or b""
                if label in _CALL_LABELS:
                    calls.append((name, node.start_byte, node, label))
                if name not in references:
                    references[name] = (node, label)
            elif role in _DEFINING_ROLES:
                definition = _Match(pattern, role, label, nodes[0])
            elif role == "dynamic":
                collected.dynamic.append((label, nodes[0]))
            elif role in _NAMING_ROLES:
                if names is None:
                    names = {}
                names[capture] = nodes[0]
        if definition is not None:
            _add_definition(collected, definition, names or {})
        elif names is not None:
            _add_import(collected, names)
    return collected


def _add_definition(collected: _Collected, found: _Match, names: dict[str, Node]) -> None:
    found.name = names.get("name")
    found.receiver = names.get("receiver")
    if found.name is None:
        return
    key = (found.node.start_byte, found.node.end_byte)
    known = collected.definitions.get(key)
    if known is None or found.pattern < known.pattern:
        collected.definitions[key] = found


def _add_import(collected: _Collected, names: dict[str, Node]) -> None:
    for capture, node in names.items():
        role, label = _role(capture)
        if role == "import":
            collected.imports.append((label, node, names.get("imported")))


# ------------------------------------------------------------------------- definitions


def _definitions(matches: Iterable[_Match], line_count: int) -> list[_Definition]:
    """Definitions in document order, each linked to the definition around it."""
    found: list[_Definition] = []
    for match in matches:
        definition = _definition(match, line_count)
        if definition is not None:
            found.append(definition)
    found.sort(key=lambda d: (d.start_byte, -d.end_byte))
    return _nest(found)


def _definition(match: _Match, line_count: int) -> _Definition | None:
    segments = _name_segments(_text(match.name))
    name = _joined_name(segments, match.kind)
    if not name:
        return None
    node = match.node
    kind = match.kind
    receiver = _clean_name(_text(match.receiver), "") if match.receiver is not None else None
    if kind == "function" and receiver is None:
        qualifiers = segments[:-1]
        if qualifiers:  # `void Engine::run() {...}` is a method of Engine
            kind, receiver = "method", qualifiers[-1]
    return _Definition(
        role=match.role,
        kind=kind,
        name=name,
        start_byte=node.start_byte,
        end_byte=node.end_byte,
        symbol_start=node.start_point.row + 1,
        symbol_end=min(_end_line(node), line_count),
        receiver=receiver or None,
        node=node,
    )


def _chunk_span(definition: _Definition, spec: LanguageSpec, lines: list[str]) -> tuple[int, int]:
    """First and last line of a definition's chunk: wrappers and doc comments included.

    Computed only for definitions that become chunks: walking to parents and siblings is
    the expensive part of a tree-sitter node.
    """
    top = definition.node
    parent = top.parent
    while parent is not None and parent.type in spec.wrappers:
        top, parent = parent, parent.parent
    start = _leading_start(lines, top.start_point.row + 1, spec.line_comments)
    return start, max(_end_line(top), definition.symbol_end)


def _leading_start(lines: list[str], start: int, line_comments: tuple[str, ...]) -> int:
    """The first line of the comment lines (and attributes) directly above line ``start``."""
    blocks = "//" in line_comments
    above = start - 1
    while above >= 1:
        text = lines[above - 1].strip()
        if blocks and text.endswith("*/"):
            opening = above
            while opening >= 1 and "/*" not in lines[opening - 1]:
                opening -= 1
            if opening < 1 or not lines[opening - 1].lstrip().startswith("/*"):
                break  # the block opens after code: a trailing comment, not a doc comment
            start = above = opening
        elif text.startswith(line_comments):
            start = above
        else:
            break
        above -= 1
    return start


def _end_line(node: Node) -> int:
    """The 1-based last line of ``node`` (a node ending at column 0 ends on the line before)."""
    end = node.end_point
    if end.column == 0 and end.row > node.start_point.row:
        return end.row
    return end.row + 1


def _nest(ordered: list[_Definition]) -> list[_Definition]:
    """Link each definition to the innermost one around it; drop same-name echoes."""
    stack: list[_Definition] = []
    kept: list[_Definition] = []
    for definition in ordered:
        while stack and stack[-1].end_byte <= definition.start_byte:
            stack.pop()
        parent = stack[-1] if stack else None
        if parent is not None and parent.end_byte < definition.end_byte:
            parent = None  # overlapping, not nested (recovered from a syntax error)
        if parent is not None and (parent.name, parent.kind) == (definition.name, definition.kind):
            continue  # `typedef struct Node {...} Node;` is one definition
        if parent is not None:
            definition.parent = parent
            parent.children.append(definition)
            if definition.kind == "function" and parent.kind in CLASS_LIKE_KINDS:
                definition.kind = "method"
        stack.append(definition)
        kept.append(definition)
    return kept


def _clean_name(raw: str, kind: str) -> str:
    """A bare definition name: no generics, qualifiers, quotes or whitespace."""
    return _joined_name(_name_segments(raw), kind)


def _joined_name(segments: list[str], kind: str) -> str:
    if kind == "module":
        return ".".join(segments)[:_MAX_NAME_CHARS]
    return segments[-1][:_MAX_NAME_CHARS] if segments else ""


def _name_segments(raw: str) -> list[str]:
    """``Box<T>::get`` -> ``["Box", "get"]``; quotes, brackets and whitespace removed."""
    if raw.isidentifier():  # most names: nothing to remove, nothing to split
        return [raw]
    name = "".join(raw.split())
    for _ in range(8):
        stripped = _GENERIC_ARGUMENTS.sub("", name)
        if stripped == name:
            break
        name = stripped
    name = name.strip(_QUOTES + "[]()")
    return [segment for segment in _NAME_SEPARATORS.split(name) if segment]


def _text(node: Node | None) -> str:
    if node is None or node.text is None:
        return ""
    return node.text.decode("utf-8", "replace")


# ------------------------------------------------------------------------------ chunks


@dataclass(frozen=True, slots=True)
class _Emitter:
    """Emits the chunks of one file."""

    lines: list[str]
    spec: LanguageSpec
    out: list[Chunk] = field(default_factory=list)

    def region(
        self, definitions: list[_Definition], first: int, last: int, kind: str, name: str | None
    ) -> None:
        """Chunks for lines ``first..last``: the definitions, and windows between them."""
        cursor = first
        for definition in definitions:
            chunk_start, chunk_end = _chunk_span(definition, self.spec, self.lines)
            start = max(chunk_start, cursor)
            end = min(chunk_end, last)
            if end < start:
                continue  # shares its lines with the definition before it
            if start > cursor:
                self.out.extend(window_chunks(self.lines, cursor, start - 1, kind, name))
            self.definition(definition, start, end)
            cursor = end + 1
        if cursor <= last:
            self.out.extend(window_chunks(self.lines, cursor, last, kind, name))

    def definition(self, definition: _Definition, start: int, end: int) -> None:
        too_long = end - start + 1 > MAX_DEFINITION_LINES
        children = _chunk_children(definition) if too_long or definition.kind == "module" else []
        if children:
            self.region(children, start, end, definition.kind, definition.name)
        elif too_long:
            self.out.extend(window_chunks(self.lines, start, end, definition.kind, definition.name))
        else:
            self.out.extend(fitted_chunks(self.lines, start, end, definition.kind, definition.name))


def _chunks(definitions: list[_Definition], lines: list[str], spec: LanguageSpec) -> list[Chunk]:
    emitter = _Emitter(lines, spec)
    outermost = [d for d in definitions if d.parent is None and d.role in _CHUNK_ROLES]
    emitter.region(outermost, 1, len(lines), WINDOW, None)
    return emitter.out


def _chunk_children(definition: _Definition) -> list[_Definition]:
    """Chunkable definitions directly inside ``definition`` (through symbol-only ones)."""
    found: list[_Definition] = []
    for child in definition.children:
        if child.role in _CHUNK_ROLES:
            found.append(child)
        else:
            found.extend(_chunk_children(child))
    return found


# ----------------------------------------------------------------------------- symbols


def _symbols(definitions: list[_Definition]) -> list[Symbol]:
    symbols = [
        Symbol(
            name=d.name,
            kind=d.kind,
            start_line=d.symbol_start,
            end_line=max(d.symbol_end, d.symbol_start),
            parent=d.receiver or (d.parent.name if d.parent is not None else None),
        )
        for d in definitions
        if d.role != "container"
    ]
    symbols.sort(key=lambda s: (s.start_line, s.end_line, s.name))
    return symbols


# ------------------------------------------------------------------------------- facts


class _Locator:
    """Finds the innermost definition around a byte offset."""

    def __init__(self, definitions: list[_Definition]) -> None:
        self._definitions = definitions
        self._starts = [d.start_byte for d in definitions]

    def enclosing(self, offset: int) -> _Definition | None:
        index = bisect_right(self._starts, offset) - 1
        found = self._definitions[index] if index >= 0 else None
        while found is not None and found.end_byte <= offset:
            found = found.parent
        return found


def _facts(collected: _Collected, definitions: list[_Definition], locator: _Locator) -> list[Fact]:
    facts = [
        *_reference_facts(collected, definitions),
        *_call_facts(collected, locator),
        *_import_facts(collected),
        *_dynamic_facts(collected, locator),
    ]
    facts.sort(key=_FACT_ORDER)
    return facts


def _reference_facts(collected: _Collected, definitions: list[_Definition]) -> list[Fact]:
    defined = {d.name for d in definitions}
    facts: list[Fact] = []
    for raw, (node, detail) in collected.references.items():
        name = raw.decode("utf-8", "replace")
        if len(name) >= _MIN_REFERENCE_CHARS and name not in defined:
            facts.append(Fact("reference", name, node.start_point.row + 1, None, detail))
    return facts


def _call_facts(collected: _Collected, locator: _Locator) -> list[Fact]:
    seen: dict[tuple[bytes, str], tuple[Node, str]] = {}
    for raw, offset, node, label in collected.calls:
        caller = locator.enclosing(offset)
        if caller is not None:
            seen.setdefault((raw, caller.name), (node, label))
    return [
        Fact(
            "call",
            raw.decode("utf-8", "replace"),
            node.start_point.row + 1,
            target=caller,
            detail="member" if label == "member" else None,
        )
        for (raw, caller), (node, label) in seen.items()
    ]


_GENERAL_IMPORT = {"pub_use": "use"}
"""An import kind that is a narrower reading of another (a Rust ``pub use`` is a ``use`` that
re-exports): when both patterns match one statement, only the narrower fact is kept."""


def _import_facts(collected: _Collected) -> list[Fact]:
    facts: dict[tuple[str, int, str | None, str], Fact] = {}
    for label, node, imported in collected.imports:
        specifier = _specifier(_text(node), statement=label == "statement")
        if not specifier:
            continue
        kind = label
        if label == "statement":
            kind = "static_import" if _STATIC.search(_text(node)) else "import"
        name = " ".join(_text(imported).split()) or None
        fact = Fact("import", specifier, node.start_point.row + 1, target=name, detail=kind)
        facts.setdefault((specifier, fact.line, name, kind), fact)
    for specifier, line, name, kind in list(facts):
        general = _GENERAL_IMPORT.get(kind)
        if general is not None:  # the specific reading of a statement replaces the general one
            facts.pop((specifier, line, name, general), None)
    return list(facts.values())


def _specifier(raw: str, *, statement: bool) -> str:
    """A module specifier as written: whitespace collapsed, quotes and statement keywords gone."""
    text = " ".join(raw.split())
    if statement:
        text = _IMPORT_KEYWORDS.sub("", text.rstrip(";").strip())
        text = _USING_ALIAS.sub("", text)
    return text.strip(_QUOTES + " ;")


def _call_site(callee: Node) -> Node:
    """The call expression around a callee name (a few levels up at most)."""
    node = callee
    for _ in range(3):
        if node.parent is None:
            break
        node = node.parent
        if "call" in node.type or "invocation" in node.type:
            return node
    return callee.parent or callee


def _dynamic_facts(collected: _Collected, locator: _Locator) -> list[Fact]:
    facts: list[Fact] = []
    for label, node in collected.dynamic:
        site = _call_site(node) if label == "call" else node
        snippet = _text(site).split("\n", 1)[0].strip()[:_SNIPPET_CHARS]
        caller = locator.enclosing(node.start_byte)
        facts.append(
            Fact(
                "dynamic",
                _text(node) if label == "call" else label,
                node.start_point.row + 1,
                target=caller.name if caller is not None else None,
                detail=snippet,
            )
        )
    return facts
