"""Tags of one source file: its definitions, references, calls, imports and dynamic sites.

One parse and one query pass per file (both in C); the Python side only walks the matches. The
chunker builds its chunks, symbols and graph facts from these tags, and :mod:`.definitions`
answers "what does this blob define?" from the same ones, for head and old blobs alike.
Importing this module needs tree-sitter (the ``treesitter`` extra).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from tree_sitter import Node, QueryCursor, Tree

from palimpsest.index.codefacts import grammars

if TYPE_CHECKING:
    from palimpsest.index.codefacts.queries import LanguageSpec

__all__ = [
    "CLASS_LIKE_KINDS",
    "Collected",
    "Tag",
    "Tagged",
    "clean_name",
    "end_line",
    "node_text",
    "read_tags",
]

CLASS_LIKE_KINDS = frozenset({"class", "interface", "struct", "trait", "enum", "impl", "extension", "object"})
"""Definition kinds whose member functions are methods."""

_MAX_NAME_CHARS = 200
_GENERIC_ARGUMENTS = re.compile(r"<[^<>]*>")
_NAME_SEPARATORS = re.compile(r"::|\\|\.|->")
_QUOTES = "\"'`<>"
# ``binding`` captures (assignments, attributes, constants, keys) come only from a spec's
# ``bindings`` patterns, compiled when :func:`read_tags` is asked for them
_DEFINING_ROLES = frozenset({"definition", "declaration", "container", "binding"})
_NAMING_ROLES = frozenset({"name", "receiver", "imported", "import"})
_CALL_LABELS = frozenset({"call", "member"})


@dataclass(frozen=True, slots=True)
class Tagged:
    """One parse: the tree (kept alive for the nodes), the sorted matches, the nested definitions."""

    tree: Tree
    collected: Collected
    definitions: list[Tag]

    @property
    def root(self) -> Node:
        return self.tree.root_node


def read_tags(source: bytes, spec: LanguageSpec, line_count: int, *, bindings: bool = False) -> Tagged:
    """Parse ``source`` (``line_count`` lines) in ``spec``'s language and read its tags; with
    ``bindings`` also the spec's assignment, attribute, constant and key patterns."""
    tree = grammars.parser(spec.grammar).parse(source)
    text = spec.query + spec.bindings if bindings else spec.query
    matches = QueryCursor(grammars.query(spec.grammar, text)).matches(tree.root_node)
    collected = collect(matches)
    return Tagged(tree, collected, tags_of(collected.definitions.values(), line_count))


@dataclass(slots=True)
class Tag:
    role: str
    kind: str
    name: str
    start_byte: int
    end_byte: int
    symbol_start: int
    symbol_end: int
    receiver: str | None
    node: Node
    parent: Tag | None = None
    children: list[Tag] = field(default_factory=list)


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
class Collected:
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


def collect(matches: list[tuple[int, dict[str, list[Node]]]]) -> Collected:
    """Sort the matches into definitions, references, calls, imports and dynamic sites.

    This loop runs once per match -- tens of thousands per megabyte -- so it stays flat.
    """
    collected = Collected()
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


def _add_definition(collected: Collected, found: _Match, names: dict[str, Node]) -> None:
    found.name = names.get("name")
    found.receiver = names.get("receiver")
    if found.name is None:
        return
    key = (found.node.start_byte, found.node.end_byte)
    known = collected.definitions.get(key)
    if known is None or found.pattern < known.pattern:
        collected.definitions[key] = found


def _add_import(collected: Collected, names: dict[str, Node]) -> None:
    for capture, node in names.items():
        role, label = _role(capture)
        if role == "import":
            collected.imports.append((label, node, names.get("imported")))


def tags_of(matches: Iterable[_Match], line_count: int) -> list[Tag]:
    """Definitions in document order, each linked to the definition around it."""
    found: list[Tag] = []
    for match in matches:
        definition = _definition(match, line_count)
        if definition is not None:
            found.append(definition)
    found.sort(key=lambda d: (d.start_byte, -d.end_byte))
    return _nest(found)


def _definition(match: _Match, line_count: int) -> Tag | None:
    segments = _name_segments(node_text(match.name))
    name = _joined_name(segments, match.kind)
    if not name:
        return None
    node = match.node
    kind = match.kind
    receiver = clean_name(node_text(match.receiver), "") if match.receiver is not None else None
    if kind == "function" and receiver is None:
        qualifiers = segments[:-1]
        if qualifiers:  # `void Engine::run() {...}` is a method of Engine
            kind, receiver = "method", qualifiers[-1]
    return Tag(
        role=match.role,
        kind=kind,
        name=name,
        start_byte=node.start_byte,
        end_byte=node.end_byte,
        symbol_start=node.start_point.row + 1,
        symbol_end=min(end_line(node), line_count),
        receiver=receiver or None,
        node=node,
    )


def end_line(node: Node) -> int:
    """The 1-based last line of ``node`` (a node ending at column 0 ends on the line before)."""
    end = node.end_point
    if end.column == 0 and end.row > node.start_point.row:
        return end.row
    return end.row + 1


def _nest(ordered: list[Tag]) -> list[Tag]:
    """Link each definition to the innermost one around it; drop same-name echoes."""
    stack: list[Tag] = []
    kept: list[Tag] = []
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


def clean_name(raw: str, kind: str) -> str:
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


def node_text(node: Node | None) -> str:
    if node is None or node.text is None:
        return ""
    return node.text.decode("utf-8", "replace")
