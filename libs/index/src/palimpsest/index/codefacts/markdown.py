"""One parsed reading of a Markdown (CommonMark, GitHub, MyST) document: its syntax tree, read
with tree-sitter's ``markdown`` block grammar, its ``markdown_inline`` grammar over the inline
ranges the block tree names, and its ``html`` grammar over raw HTML.

The reading says, per line, what the document's toolchain would make of it, so the doc parser
takes mentions only from the nodes that carry them:

* ``headings`` -- ATX and setext headings (a ``#`` inside a fence or front matter is none);
* ``links`` -- the destinations of inline links, images, link reference definitions, autolinks
  and the ``src``/``href`` attributes of raw HTML; a ``[text]`` inside a code span, a footnote
  (``[^json]: Until …``, which CommonMark reads as a paragraph), a MyST target ``(label)=`` and
  anything inside an HTML comment (a ``<!-- [[[cog … ]]] -->`` generator block) is none, and a
  link to a label the document defines (``[see](label)`` after ``(label)=``) is a reference,
  not a path;
* ``code_spans`` -- inline code with the MyST role written before it (``{py:meth}`x.y```);
* ``code_lines`` -- the lines of fenced and indented code blocks with the fence's info string
  (``None`` for an indented block);
* ``skipped`` -- lines nothing is read from: front matter, HTML comments, fence delimiters;
* ``table_rows`` -- each row of a pipe table with the line of its header (a header that tells
  history, "Old name | New name", makes its rows no claims);
* ``code_lines`` of a MkDocs admonition, details or tab body (``!!! note`` and an indented block)
  are none: the body is Markdown again, read as such, as is a MyST directive's;
* ``prose`` -- each line with code spans, link destinations, image descriptions, raw HTML and
  autolinks blanked out, the same length as the line (link text stays: it is prose).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from tree_sitter import Node, Range

from palimpsest.index.codefacts.grammars import parser

__all__ = ["CodeSpan", "MarkdownReading", "read_markdown"]


@dataclass(frozen=True, slots=True)
class CodeSpan:
    """Inline code on one line: its columns, its text and the MyST role written before it."""

    start: int
    end: int
    code: str
    role: str | None  # ``py:meth`` for ``{py:meth}`x```, else None


@dataclass(slots=True)
class MarkdownReading:
    headings: list[tuple[int, str]] = field(default_factory=list)
    links: dict[int, list[str]] = field(default_factory=dict)
    code_spans: dict[int, list[CodeSpan]] = field(default_factory=dict)
    code_lines: dict[int, str | None] = field(default_factory=dict)  # line → info string (None: indented)
    skipped: set[int] = field(default_factory=set)
    prose: dict[int, str] = field(default_factory=dict)
    labels: set[str] = field(default_factory=set)  # MyST ``(label)=`` targets
    label_lines: dict[int, str] = field(default_factory=dict)  # line → the MyST target it defines
    directives: dict[int, tuple[str, str]] = field(default_factory=dict)  # line → MyST (name, argument)
    history: set[int] = field(default_factory=set)  # lines inside a versionchanged/deprecated directive
    table_rows: dict[int, int] = field(default_factory=dict)  # a pipe table's row → its header's line

    def merge(self, other: MarkdownReading, offset: int) -> None:
        """``other``, read from lines starting after line ``offset``, into this reading."""
        self.links.update({n + offset: v for n, v in other.links.items()})
        self.code_spans.update({n + offset: v for n, v in other.code_spans.items()})
        self.code_lines.update({n + offset: v for n, v in other.code_lines.items()})
        self.skipped.update(n + offset for n in other.skipped)
        self.prose.update({n + offset: v for n, v in other.prose.items()})
        self.labels.update(other.labels)
        self.label_lines.update({n + offset: v for n, v in other.label_lines.items()})
        self.directives.update({n + offset: v for n, v in other.directives.items()})
        self.history.update(n + offset for n in other.history)
        self.table_rows.update({n + offset: h + offset for n, h in other.table_rows.items()})


_CODE_DIRECTIVES = frozenset({"code-block", "code", "sourcecode", "code-cell"})
_PYTHON_DIRECTIVES = frozenset(
    {"doctest", "testcode", "testsetup", "testcleanup", "ipython", "jupyter-execute"}
)
_OUTPUT_DIRECTIVES = frozenset({"testoutput"})
_FILE_DIRECTIVES = frozenset({"include", "literalinclude", "image", "figure"})
_VERSION_DIRECTIVES = frozenset({"versionchanged", "versionremoved", "deprecated", "versionadded"})
_BLOCK_OPENERS = ("!!!", "???", "===")  # MkDocs admonitions, pymdownx details and tabs
_LINK_NODES = frozenset({"inline_link", "image", "link_reference_definition"})
_HTML_LINK_ATTRIBUTES = frozenset({"src", "href"})


def read_markdown(lines: list[str]) -> MarkdownReading:
    """The reading of a document given as its lines (1-based line numbers throughout)."""
    text = "\n".join(lines) + "\n"
    source = text.encode()
    reading = MarkdownReading()
    blanked = [bytearray(line.encode()) for line in lines]
    tree = parser("markdown").parse(source)
    inline_ranges: list[Range] = []
    for node in _walk(tree.root_node):
        _read_block(node, lines, source, reading, blanked, inline_ranges)
    inline = parser("markdown_inline")
    for one in inline_ranges:  # each paragraph, heading or cell alone: a code span never crosses one
        inline.included_ranges = [one]
        for node in _walk(inline.parse(source).root_node):
            _read_inline(node, lines, reading, blanked)
    for row, line in enumerate(lines):
        stripped = line.strip()
        if len(stripped) > 3 and stripped.startswith("(") and stripped.endswith(")="):
            reading.labels.add(stripped[1:-2])  # a MyST target names the place, not a path
            reading.label_lines[row + 1] = stripped[1:-2]
            reading.skipped.add(row + 1)
    for number, targets in reading.links.items():
        reading.links[number] = [t for t in targets if t.split("#", 1)[0] not in reading.labels]
    outer = {row + 1: raw.decode(errors="replace") for row, raw in enumerate(blanked)}
    reading.prose = outer | reading.prose  # a MyST directive's body, read on its own, says more
    return reading


def _read_block(
    node: Node,
    lines: list[str],
    source: bytes,
    reading: MarkdownReading,
    blanked: list[bytearray],
    inline_ranges: list[Range],
) -> None:
    """What one node of the block tree says; its inline content is read later, all at once."""
    kind = node.type
    if kind in ("inline", "pipe_table_cell"):
        inline_ranges.append(node.range)
    elif kind in ("minus_metadata", "plus_metadata"):
        reading.skipped.update(row + 1 for row in _rows(node))
    elif kind == "atx_heading":
        content = node.child_by_field_name("heading_content") or _child(node, "inline")
        marker = node.children[0].text if node.children else b"#"
        title = _text(content).strip() if content is not None else ""
        reading.headings.append((node.start_point.row + 1, title or (marker or b"#").decode()))
    elif kind == "setext_heading":
        paragraph = _child(node, "paragraph")
        title_row = (paragraph.end_point.row - 1) if paragraph is not None else node.start_point.row
        title_row = max(title_row, node.start_point.row)
        reading.headings.append((title_row + 1, lines[title_row].strip()))
    elif kind == "pipe_table":
        header = node.start_point.row + 1
        reading.table_rows.update({row + 1: header for row in _rows(node)})
    elif kind == "fenced_code_block":
        _read_fence(node, lines, reading)
    elif kind == "indented_code_block":
        _read_indented(node, lines, reading)
    elif kind == "html_block" and _read_html(node, source, reading, blanked):
        # CommonMark leaves Markdown inside an HTML block unrendered, but ``<p>See [x](y.md)</p>`` is
        # still the writer's link to ``y.md``: its links are read, nothing else of it
        inline_ranges.append(node.range)
    elif kind == "link_reference_definition":
        _add_link(reading, node)
        _blank(blanked, node.start_point.row, 0, len(blanked[node.start_point.row]))


def _walk(node: Node) -> Iterator[Node]:
    """Every node under ``node`` (itself first), in document order."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(reversed(current.children))


def _child(node: Node, kind: str) -> Node | None:
    return next((c for c in node.children if c.type == kind), None)


def _text(node: Node | None) -> str:
    return (node.text or b"").decode(errors="replace") if node is not None else ""


def _rows(node: Node) -> range:
    """The rows a block spans (its end point sits at the start of the next line)."""
    last = node.end_point.row if node.end_point.column else node.end_point.row - 1
    return range(node.start_point.row, max(last, node.start_point.row) + 1)


def _read_fence(node: Node, lines: list[str], reading: MarkdownReading) -> None:
    """A fenced block: code in the language its info string names, or a MyST directive
    (```` ```{note} ````), whose body is Markdown again and is read as such."""
    info = _text(_child(node, "info_string")).strip()
    content = _child(node, "code_fence_content")
    body = list(_rows(content)) if content is not None else []
    for row in _rows(node):
        if row not in body:
            reading.skipped.add(row + 1)  # a delimiter, or a fence left open at the end
    name, argument = _myst_directive(info)
    if name in _OUTPUT_DIRECTIVES:
        reading.skipped.update(row + 1 for row in body)  # what a test prints, not code
        return
    if name is None or name in _CODE_DIRECTIVES or name in _PYTHON_DIRECTIVES:
        if name is None:
            tag = (info.split() or [""])[0]
        else:  # Sphinx's doctest and IPython directives hold Python, as in RST
            tag = "python" if name in _PYTHON_DIRECTIVES else argument
        reading.code_lines.update({row + 1: tag for row in body})
        return
    reading.directives[node.start_point.row + 1] = (name, argument)
    if name in _FILE_DIRECTIVES and argument:
        reading.links.setdefault(node.start_point.row + 1, []).append(argument)
    if body:
        inner = read_markdown(lines[body[0] : body[-1] + 1])
        reading.merge(inner, body[0])
        if name in _VERSION_DIRECTIVES:
            reading.history.update(row + 1 for row in body)


def _read_indented(node: Node, lines: list[str], reading: MarkdownReading) -> None:
    """An indented block: code, unless it is the body of a MkDocs admonition, collapsible or tab
    (``!!! note``, ``??? tip``, ``=== "Python"``), which Python-Markdown reads as Markdown again."""
    rows = list(_rows(node))
    above = next(  # the first line above that is neither blank nor indented: what the block belongs to
        (
            lines[r].strip()
            for r in range(rows[0] - 1, -1, -1)
            if lines[r].strip() and lines[r][:1] not in " \t"
        ),
        "",
    )
    if not above.startswith(_BLOCK_OPENERS):
        reading.code_lines.update({row + 1: None for row in rows})
        return
    body = [line[4:] if line.startswith("    ") else line.lstrip() for line in lines[rows[0] : rows[-1] + 1]]
    reading.merge(read_markdown(body), rows[0])


def _myst_directive(info: str) -> tuple[str | None, str]:
    """``({name}, argument)`` of a MyST directive's info string (```` ```{automodule} pkg ````)."""
    if not info.startswith("{") or "}" not in info:
        return None, ""
    name, _, argument = info[1:].partition("}")
    return name.strip(), argument.strip()


def _read_html(node: Node, source: bytes, reading: MarkdownReading, blanked: list[bytearray]) -> bool:
    """Raw HTML: ``src``/``href`` attributes are links; a comment is read for nothing (False)."""
    raw = source[node.start_byte : node.end_byte]
    if raw.lstrip().startswith(b"<!--"):
        reading.skipped.update(row + 1 for row in _rows(node))
        return False
    _html_links(raw, node.start_point.row, reading)
    for row in _rows(node):
        _blank(blanked, row, 0, len(blanked[row]) if row < len(blanked) else 0)
    return True


def _html_links(raw: bytes, first_row: int, reading: MarkdownReading) -> None:
    html = parser("html").parse(raw)
    for node in _walk(html.root_node):
        if node.type != "attribute":
            continue
        name = _child(node, "attribute_name")
        if name is None or _text(name).lower() not in _HTML_LINK_ATTRIBUTES:
            continue
        value = _child(node, "quoted_attribute_value") or _child(node, "attribute_value")
        if value is not None:
            inner = _child(value, "attribute_value") or value
            target = _text(inner).strip().strip("\"'")
            if target:
                reading.links.setdefault(first_row + node.start_point.row + 1, []).append(target)


def _read_inline(node: Node, lines: list[str], reading: MarkdownReading, blanked: list[bytearray]) -> None:
    kind = node.type
    row = node.start_point.row
    if kind in _LINK_NODES:
        _add_link(reading, node)
        destination = _child(node, "link_destination")
        if destination is not None:
            _blank_node(blanked, destination)
        if kind == "image":
            description = _child(node, "image_description")
            if description is not None:
                _blank_node(blanked, description)
    elif kind == "uri_autolink":
        target = _text(node).strip("<>")
        reading.links.setdefault(row + 1, []).append(target)
        _blank_node(blanked, node)
    elif kind == "email_autolink":
        _blank_node(blanked, node)
    elif kind == "html_tag":
        raw = node.text or b""
        if not raw.startswith(b"<!--"):  # a comment inside a paragraph is blanked, nothing more
            _html_links(raw, row, reading)
        _blank_node(blanked, node)
    elif kind == "code_span":
        delimiters = [c for c in node.children if c.type == "code_span_delimiter"]
        start = delimiters[0].end_byte if delimiters else node.start_byte
        end = delimiters[-1].start_byte if len(delimiters) > 1 else node.end_byte
        code = (node.text or b"")[start - node.start_byte : end - node.start_byte].decode(errors="replace")
        line = lines[row] if row < len(lines) else ""
        column = len(line.encode()[: node.start_point.column].decode(errors="replace"))
        role = _myst_role(line[:column])
        span = CodeSpan(column, column + len(_text(node)), " ".join(code.split()), role)
        reading.code_spans.setdefault(row + 1, []).append(span)
        _blank_node(blanked, node)
        if role is not None:
            _blank(blanked, row, node.start_point.column - len(role.encode()) - 2, node.start_point.column)


def _myst_role(before: str) -> str | None:
    """The role of ``{role}`text```: the ``{…}`` right before a code span, when it holds a name."""
    if not before.endswith("}"):
        return None
    opened = before.rfind("{")
    name = before[opened + 1 : -1] if opened >= 0 else ""
    return name if name and all(c.isalnum() or c in ":_-+" for c in name) else None


def _add_link(reading: MarkdownReading, node: Node) -> None:
    destination = _child(node, "link_destination")
    if destination is None:
        return
    target = _text(destination).strip().removeprefix("<").removesuffix(">")
    if target:
        reading.links.setdefault(destination.start_point.row + 1, []).append(target)


def _blank_node(blanked: list[bytearray], node: Node) -> None:
    start, end = node.start_point, node.end_point
    for row in range(start.row, end.row + 1):
        if row >= len(blanked):
            break
        first = start.column if row == start.row else 0
        last = end.column if row == end.row else len(blanked[row])
        _blank(blanked, row, first, last)


def _blank(blanked: list[bytearray], row: int, first: int, last: int) -> None:
    if 0 <= row < len(blanked):
        line = blanked[row]
        for column in range(max(first, 0), min(last, len(line))):
            if line[column] not in (0x0A, 0x0D):
                line[column] = 0x20
