"""Documentation files: section chunks and the facts that tie documents to code.

Markdown and reStructuredText are cut at their headings (fenced code and front matter are not
headings); a section longer than one window becomes 60/10 windows that keep the heading as
their name. Plain text has no headings and is windowed whole.

Facts:

* ``governs`` / ``supersedes`` -- ``Governs: <path>`` and ``Supersedes: <id>`` lines in the
  first ``HEADER_LINES`` lines (the same window every reader of them uses; plain, bold, list
  and field-list spellings are accepted);
* ``mention`` -- what a document names as code: inline code spans, code-like identifiers in
  fenced blocks, relative link targets, Sphinx roles, paths written in plain prose. ``target``
  says ``identifier`` or ``path`` and ``detail`` where it was found: ``code``, ``fence:<language>``
  (``fence`` when the block names no known language), ``link``, ``docref`` (a Sphinx ``:doc:``
  reference, written without its extension), ``role`` (``:func:``, ``:class:``, …) or ``prose``
  (a path with a file extension or a trailing slash, outside code and links); ``label`` for a
  ``:ref:``/``{ref}`` cross-reference (``detail`` ``ref``), which the check resolves against the
  labels the docs define. Sphinx roles that name neither code nor a label (``:term:``,
  ``:envvar:``, …) are not mentions, and neither is anything
  on a line that says it is history (removed, renamed, deprecated, formerly …) or inside a
  ``versionchanged``/``deprecated``/``versionremoved`` directive. The analyzer's mechanical
  documentation check compares them with the index and git history.
* ``label`` -- a label the doc defines for ``:ref:`` (``.. _name:``, MyST ``(name)=``).

Markdown, MyST and plain text are read from their syntax tree (:mod:`.markdown`): links, images,
inline code (with its MyST role: ``{py:meth}`x```), fences and MyST directives are taken from the
nodes that carry them, so a footnote, a ``(label)=`` target, a link written inside a code span and
an HTML comment are never links. reStructuredText is read line by line; its comments (``.. text``
that is no directive, footnote, target or substitution) are read for nothing.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from palimpsest.chunker.parsing.lines import window_chunks
from palimpsest.chunker.parsing.model import SECTION, Chunk, Fact
from palimpsest.index.codefacts.markdown import MarkdownReading, read_markdown
from palimpsest.index.languages import KNOWN_EXTENSIONS, fence_language

__all__ = ["HEADER_LINES", "MAX_MENTIONS", "analyze_doc", "header_facts", "section_starts"]

HEADER_LINES = 60
"""``Governs:`` and ``Supersedes:`` count only within a document's first 60 lines."""
MAX_MENTIONS = 2_000

_RST_ADORNMENT = re.compile(r"^([=\-`:'\"~^_*+#<>.!$%&(),/;?@\[\\\]{|}])\1{2,}\s*$")

_HEADER_FACT = re.compile(
    r"^\s*(?:[-*+>|]\s*)*(?:\*\*|__|\*|_)?(governs|supersedes)(?:\*\*|__|\*|_)?\s*:"
    r"(?:\*\*|__|\*|_)?\s*(.+?)\s*$"
    r"|^\s*:(governs|supersedes):\s*(.+?)\s*$",
    re.IGNORECASE,
)
_VALUE_TRIM = "`'\"[](){}*_<>.,;: "

_INLINE_CODE = re.compile(r"(`+)([^`\n]+?)\1(?!`)")
_DOCTEST = re.compile(r"^\s*(?:>>>|\.\.\.)(?: |$)")
_RST_CODE_DIRECTIVE = re.compile(
    r"^\s*\.\.\s+(code-block|code|sourcecode|testcode|testsetup|testoutput|doctest|ipython)::\s*([\w+#.-]*)"
)
_RST_TAGGED = frozenset({"code-block", "code", "sourcecode"})  # the others hold Python
_RST_ANY_DIRECTIVE = re.compile(r"^\s*\.\.\s+[\w:-]+::")
_QUALIFIED = re.compile(r"^([A-Za-z_$][\w$]*(?:(?:\.|::|#|->)[A-Za-z_$][\w$]*)*)(\(.*\))?;?$")
# a signature listed in inline code: ``def .stream_bytes()``, ``async def aclose()``, ``func (c *Client) Do()``
_SIGNATURE = re.compile(
    r"^(?:async\s+)?(?:def|func|fn|function|fun|class|interface|struct|type)\s+(?:\([^)]*\)\s*)?"
    r"\.?([A-Za-z_$][\w$]*(?:(?:\.|::)[A-Za-z_$][\w$]*)*)\s*(?:[(<\[:{]|$)"
)
_CALLEE = re.compile(r"^([A-Za-z_$][\w$]*(?:(?:\.|::|->)[A-Za-z_$][\w$]*)*)\(")
_SLASHED_PATH = re.compile(r"^(?:\.{1,2}/|/)?[\w@.+~-]+(?:/[\w@.+~-]*)+$")
_FILE_NAME = re.compile(r"^[\w@+~-][\w@.+~-]*\.([A-Za-z]\w{0,9})$")
_IDENTIFIER = re.compile(r"[A-Za-z_$][\w$]*")
_COMPOUND_NAME = re.compile(r"[a-z0-9][A-Z]|[A-Za-z0-9]_[A-Za-z0-9]")
_CAPITALISED = re.compile(r"^[A-Z][a-z]")
_RST_LINK = re.compile(r"`[^`<]*<([^>`]+)>`__?")
_RST_DIRECTIVE = re.compile(r"^\s*\.\.\s+(?:include|literalinclude|image|figure)::\s*(\S+)")
_STRING = re.compile(r"\"(?:[^\"\\\n]|\\.)*\"|'(?:[^'\\\n]|\\.)*'|`[^`\n]*`")
_COMMENT = re.compile(r"(?:^|\s)(?:#|//|--|;;).*$")
_SEPARATOR = re.compile(r"\.|::|#|->")
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
_PROSE_FENCES = frozenset({"text", "txt", "console", "output", "log", "diff", "plain"})
_ROLE = re.compile(r"((?::[\w+-]+)+):$")
_IDENTIFIER_ROLES = frozenset(
    {
        "func", "meth", "class", "mod", "attr", "data", "exc", "obj", "const", "type", "member", "var",
        "macro", "struct", "enum", "enumerator", "function", "method", "property", "decorator",
        "union", "interface", "field",
    }
)  # fmt: skip
_LABEL_ROLES = frozenset({"ref", "numref"})
_ROLE_TARGET = re.compile(r"<([^<>]+)>\s*$")
# a line that tells history ("`foo` was removed in 2.0") names the old thing on purpose; the words
# are read in the prose of the line only (:func:`_tells_history`), as whole words
_HISTORICAL = re.compile(
    r"\b(?:removed|renamed|deprecated|deprecation|no longer|formerly|previously|used to be|was replaced"
    r"|were replaced|superseded|obsolete|legacy|dropped|moved to|instead of|backwards? compat\w*"
    r"|replace with|replaced by|old name|new name|any ?more|no more)(?![\w/$-])",
    re.IGNORECASE,
)
# what a line cites rather than says: inline code, link and image targets, autolinks, URLs
_CITED = re.compile(r"(`+)[^`]+?\1|\]\([^)\s]*(?:\s+\"[^\"]*\")?\)|<[^<>\s]+>|\b[a-z][\w+.-]*://\S+", re.I)
_RST_TABLE_BORDER = re.compile(r"^\s*=+(?:\s+=+)+\s*$")
# ``.. versionchanged 0.10::`` (the version misplaced) is still read as the directive it means
_VERSION_DIRECTIVE = re.compile(
    r"^(\s*)\.\.\s+(?:versionchanged|versionremoved|deprecated|versionadded)\b[^:\n]*::"
)
# API reference directives name code: Sphinx autodoc and domain directives, mkdocstrings
_API_DIRECTIVE = re.compile(
    r"^\s*\.\.\s+(?:py:|js:)?(?:auto)?(?:function|class|method|attribute|exception|data|module|decorator"
    r"|classmethod|staticmethod|property)::\s+~?([A-Za-z_$][\w$.]*)"
    r"|^\s*:::\s+([A-Za-z_$][\w$.]*)\s*$"
)
_API_KINDS = frozenset(
    {"function", "class", "method", "attribute", "exception", "data", "module", "decorator", "classmethod",
     "staticmethod", "property"}
)  # fmt: skip
_CURRENT_MODULE = re.compile(r"^\s*\.\.\s+(?:py:)?(?:current)?module::\s+([A-Za-z_][\w.]*)\s*$")
_PROSE_PATH = re.compile(r"(?<![\w/.:@~$-])((?:\.{1,2}/)?[\w@+-][\w@.+-]*(?:/[\w@.+-]+)+/?)(?![\w/])")
_NOT_SYMBOLS = frozenset(
    {
        "True", "False", "None", "Null", "Exception", "Error", "Object", "String", "Number",
        "Boolean", "Array", "Promise", "Map", "Set", "List", "Dict", "Optional", "Any", "Self",
        "This", "Math", "JSON", "Date", "Note", "Warning", "Example", "Usage", "TODO", "FIXME",
    }
)  # fmt: skip


def analyze_doc(lines: list[str], language: str | None) -> tuple[list[Chunk], list[Fact]]:
    """Section chunks and doc facts of a markdown, rst or text document."""
    if language == "rst":
        starts = _rst_headings(lines)
        mentions = _rst_mentions(lines, starts)
    else:  # Markdown, MyST, and plain text read as CommonMark (which leaves plain prose as it is)
        reading = read_markdown(lines)
        starts = reading.headings if language == "markdown" else []
        if language != "markdown":  # plain text has no indented code blocks: its indents are layout
            reading.code_lines = {n: tag for n, tag in reading.code_lines.items() if tag is not None}
        mentions = _markdown_mentions(lines, reading, starts)
    chunks = _section_chunks(lines, starts)
    facts = header_facts(lines) + mentions
    facts.sort(key=lambda f: (f.line, f.kind, f.name))
    return chunks, facts


# ----------------------------------------------------------------------------- sections


def section_starts(lines: list[str], language: str | None) -> list[tuple[int, str]]:
    """``(first line, heading)`` of every section, in order."""
    if language == "markdown":
        return read_markdown(lines).headings
    if language == "rst":
        return _rst_headings(lines)
    return []


def _section_chunks(lines: list[str], starts: list[tuple[int, str]]) -> list[Chunk]:
    chunks: list[Chunk] = []
    bounds: list[tuple[int, str | None]] = [(1, None), *starts]
    if len(bounds) > 1 and bounds[1][0] == 1:
        bounds.pop(0)
    for index, (first, title) in enumerate(bounds):
        last = bounds[index + 1][0] - 1 if index + 1 < len(bounds) else len(lines)
        if first <= last:
            chunks.extend(window_chunks(lines, first, last, SECTION, title))
    return chunks


def _rst_headings(lines: list[str]) -> list[tuple[int, str]]:
    headings: list[tuple[int, str]] = []
    index = 0
    while index + 1 < len(lines):
        line, below = lines[index], lines[index + 1]
        above = _RST_ADORNMENT.match(line)
        if above and index + 2 < len(lines) and _is_rst_title(below, lines[index + 2]):
            headings.append((index + 1, below.strip()))
            index += 3
        elif not above and _is_rst_title(line, below):
            headings.append((index + 1, line.strip()))
            index += 2
        else:
            index += 1
    return headings


def _is_rst_title(title: str, underline: str) -> bool:
    text = title.rstrip()
    return (
        bool(text)
        and not title[0].isspace()
        and not _RST_ADORNMENT.match(title)
        and bool(_RST_ADORNMENT.match(underline))
        and len(underline.rstrip()) >= len(text)
    )


# -------------------------------------------------------------------------------- facts


def header_facts(lines: list[str]) -> list[Fact]:
    """``governs`` and ``supersedes`` facts from the first ``HEADER_LINES`` lines."""
    facts: list[Fact] = []
    for number, line in enumerate(lines[:HEADER_LINES], start=1):
        found = _HEADER_FACT.match(line)
        if found is None:
            continue
        keyword = (found.group(1) or found.group(3)).lower()
        value = found.group(2) or found.group(4)
        if keyword == "governs":
            facts.extend(Fact("governs", path, number) for path in _governed_paths(value))
        else:
            facts.extend(Fact("supersedes", ident, number) for ident in _superseded_ids(value))
    return facts


def _governed_paths(value: str) -> list[str]:
    """Paths as written, with ``./`` and a trailing ``/`` removed (they change nothing)."""
    paths: list[str] = []
    for part in re.split(r"[,\s]+", value):
        path = part.strip(_VALUE_TRIM.replace(".", "")).rstrip(".,;")
        path = path.removeprefix("./").rstrip("/")
        if path and not _SCHEME.match(path):
            paths.append(path)
    return paths


def _superseded_ids(value: str) -> list[str]:
    """The first word of each comma-separated item: ``0004``, ``ADR-0011``, a doc path."""
    ids: list[str] = []
    for part in value.split(","):
        words = part.split()
        ident = words[0].strip(_VALUE_TRIM) if words else ""
        if ident:
            ids.append(ident)
    return ids


@dataclass(slots=True)
class _Mentions:
    seen: dict[tuple[str, str], Fact] = field(default_factory=dict)
    module: str | None = None  # the Sphinx ``currentmodule`` names in roles are relative to
    declared: dict[str, str] = field(default_factory=dict)  # name → module of its API directive
    labels: dict[str, Fact] = field(default_factory=dict)  # the ``:ref:`` labels the doc defines

    def label(self, name: str, line: int) -> None:
        """A label the doc defines (``.. _name:``, ``(name)=``), as Sphinx normalises it."""
        normal = " ".join(name.lower().split())
        if normal and len(self.labels) < MAX_MENTIONS:
            self.labels.setdefault(normal, Fact("label", normal, line))

    def label_all(self, lines: dict[int, str]) -> None:
        for number, name in lines.items():
            self.label(name, number)

    def facts(self) -> list[Fact]:
        return [*self.seen.values(), *self.labels.values()]

    def add(self, name: str, line: int, category: str, source: str) -> None:
        if len(self.seen) < MAX_MENTIONS:
            self.seen.setdefault((name, source), Fact("mention", name, line, category, source))

    def add_api(self, name: str, line: int, *, declares: bool = False) -> None:
        """A role or directive target, qualified by the module it belongs to when it is relative:
        the module the doc declared it under (``.. class:: X`` after ``.. module:: M``), else
        the current module."""
        bare = name.lstrip(".")
        if declares and self.module and "." not in bare:
            self.declared.setdefault(bare, self.module)
        if name.startswith(".") or "." not in name:
            module = self.declared.get(bare.split(".", 1)[0], self.module)
            if module:
                bare = f"{module}.{bare}"
        self.add(bare, line, "identifier", "role")


def _rst_mentions(lines: list[str], starts: list[tuple[int, str]]) -> list[Fact]:
    found = _Mentions()
    history = _historical_sections(starts, len(lines), lambda _number, title: _tells_history(title))
    directive: int | None = None  # indentation of an open version directive
    tables = _Tables()
    literal: _Literal | None = None  # an open literal or code block, or a comment
    for number, line in enumerate(lines, start=1):
        if literal is not None and literal.holds(line):
            if literal.source and line.strip():
                _fenced_mentions(found, line, number, literal.source)
            continue
        literal = _Literal.opened_by(line)
        if label := _rst_label(line):
            found.label(label, number)
        if _is_rst_comment(line):  # a comment and its indented body are read for nothing
            literal = _Literal(len(line) - len(line.lstrip()), None)
            continue
        if _DOCTEST.match(line):  # a doctest block: Python after the prompt
            _fenced_mentions(found, _DOCTEST.sub("", line), number, "fence:python")
            continue
        directive = _directive(line, directive)
        # a link or image is followed wherever it stands: a target that is not in the tree is a
        # broken link, in a history section as anywhere else
        _rst_link_mentions(found, line, number)
        if tables.historical(line) or directive is not None or _tells_history(line) or number in history:
            continue
        if module := _CURRENT_MODULE.match(line):
            found.module = module.group(1)
            continue
        if api := _API_DIRECTIVE.match(line):
            found.add_api(api.group(1) or api.group(2), number, declares=True)
            continue
        if program := _autoprogram_target(line):
            found.add_api(program, number)
            continue
        _inline_mentions(found, line, number)
        if not any(p.match(line) for p in (_HEADER_FACT, _RST_DIRECTIVE)):
            _prose_mentions(found, _INLINE_CODE.sub(" ", _RST_LINK.sub(" ", line)), number)
    return found.facts()


def _markdown_mentions(
    lines: list[str], reading: MarkdownReading, starts: list[tuple[int, str]]
) -> list[Fact]:
    """Mentions from the nodes of the parsed reading that carry them (:mod:`.markdown`): links and
    images, inline code (with its MyST role), fenced code, MyST directives, and paths in prose."""
    found = _Mentions()
    found.label_all(reading.label_lines)
    prose = reading.prose
    history = _historical_sections(starts, len(lines), lambda number, _title: _prose_history(prose[number]))
    for number, line in enumerate(lines, start=1):
        if directive := reading.directives.get(number):  # a MyST directive's opening fence
            _directive_mention(found, *directive, number)
        if number in reading.skipped:
            continue
        if number in reading.code_lines:
            source = _fence_language(reading.code_lines[number] or "")
            if source is not None:
                _fenced_mentions(found, line, number, source)
            continue
        for target in reading.links.get(number, ()):
            _add_link(found, target, number)
        said = prose.get(number, "")
        if (
            _prose_history(prose.get(reading.table_rows.get(number, 0), ""))
            or number in reading.history
            or _prose_history(said)
            or number in history
        ):
            continue
        if api := _API_DIRECTIVE.match(line):  # mkdocstrings ``::: pkg.module``
            found.add_api(api.group(1) or api.group(2), number, declares=True)
            continue
        for span in reading.code_spans.get(number, ()):
            if span.role is not None:
                _role_mention(found, span.role, span.code, number)
            else:
                _code_mention(found, span.code, number)
        if not _HEADER_FACT.match(line):
            _prose_mentions(found, said, number)
    return found.facts()


def _directive_mention(found: _Mentions, name: str, argument: str, number: int) -> None:
    """A MyST directive naming code: ``{module}``/``{currentmodule}`` set the module later roles
    are relative to; ``{autoclass}``, ``{py:function}`` & co. name the object they document."""
    kind = name.removeprefix("py:").removeprefix("js:")
    target = argument.split("(", 1)[0].strip().lstrip("~")
    if not target:
        return
    if kind in ("module", "currentmodule"):
        found.module = target
    elif kind == "autoprogram" and (program := _autoprogram_target(f".. autoprogram:: {argument}")):
        found.add_api(program, number)
    elif kind.removeprefix("auto") in _API_KINDS and _QUALIFIED.match(target):
        found.add_api(target, number, declares=True)


def _autoprogram_target(line: str) -> str | None:
    """The object an ``autoprogram`` directive documents (``.. autoprogram:: pkg.cli:parser``,
    ``pkg.cli:make_parser()``), as a dotted name: ``pkg.cli.parser``."""
    stripped = line.strip()
    if not stripped.startswith(".. autoprogram::"):
        return None
    module, _, attribute = stripped.removeprefix(".. autoprogram::").strip().partition(":")
    dotted = f"{module}.{attribute.removesuffix('()')}" if attribute else module
    return dotted if _QUALIFIED.match(dotted) and "." in dotted else None


def _tells_history(line: str) -> bool:
    """Whether the prose of an RST ``line`` tells history: the words are looked for outside code
    spans, link targets and paths (a README line citing ``legacy/old.py`` says nothing about history)."""
    return _prose_history(_CITED.sub(" ", line))


def _prose_history(prose: str) -> bool:
    """Whether prose (code and link targets already blanked) tells history, paths aside."""
    return bool(_HISTORICAL.search(_PROSE_PATH.sub(" ", prose)))


def _historical_sections(
    starts: list[tuple[int, str]], total: int, tells: Callable[[int, str], bool]
) -> set[int]:
    """Lines of sections whose heading tells history ("Deprecated", "Removed in 3.0",
    "Aliases (pending deprecation)"): what they name is gone on purpose."""
    out: set[int] = set()
    for index, (first, title) in enumerate(starts):
        if tells(first, title):
            last = starts[index + 1][0] - 1 if index + 1 < len(starts) else total
            out.update(range(first, last + 1))
    return out


def _rst_label(line: str) -> str | None:
    """The name an RST internal target defines (``.. _routing:``, ``.. _`with colon`:``), which
    ``:ref:`` can name; an anonymous target (``.. __:``) or an external one (``.. _pypi: URL``) defines none."""
    stripped = line.strip()
    if not stripped.startswith(".. _") or not stripped.endswith(":") or stripped.startswith(".. __"):
        return None
    name = stripped[4:-1].strip()
    if name.startswith("`") and name.endswith("`"):
        name = name[1:-1]
    return name or None


def _is_rst_comment(line: str) -> bool:
    """``.. anything`` that is no directive (``::``), footnote or citation (``[``), hyperlink
    target (``_``) or substitution definition (``|``): docutils reads it as a comment."""
    stripped = line.strip()
    if stripped == "..":
        return True
    if not stripped.startswith(".. "):
        return False
    rest = stripped[3:].lstrip()
    return "::" not in rest and not rest.startswith(("[", "_", "|"))


@dataclass(slots=True)
class _Tables:
    """Whether a line is a row of an RST simple table whose header tells history ("Setting name
    Replace with", "Old name  New name"): its rows name the old things on purpose. (A Markdown
    table's header is the parsed reading's, :attr:`.MarkdownReading.table_rows`.)"""

    rst_borders: int = 0  # borders seen in the current RST simple table (3 closes it)
    history: bool = False

    def historical(self, line: str) -> bool:
        if _RST_TABLE_BORDER.match(line):
            self.rst_borders = (self.rst_borders + 1) % 3
            if self.rst_borders == 1:
                self.history = False
            return self.history
        if self.rst_borders:
            if self.rst_borders == 1 and _tells_history(line):
                self.history = True  # a header row
            return self.history
        self.history = False
        return False


def _fence_language(tag: str) -> str | None:
    """``fence:<language>`` for a fence in a known language, ``fence`` for other code, ``output`` for
    a console, log or trace block, None for a diff (it names the old things on purpose)."""
    lowered = tag.lower()
    if lowered in _PROSE_FENCES:
        return None if lowered == "diff" else "output"
    known = fence_language(lowered)
    return f"fence:{known}" if known else "fence"


def _directive(line: str, open_indent: int | None) -> int | None:
    """The indentation of the version directive a line is inside, or None."""
    started = _VERSION_DIRECTIVE.match(line)
    if started:
        return len(started.group(1))
    if open_indent is None or not line.strip():
        return open_indent
    indent = len(line) - len(line.lstrip())
    return open_indent if indent > open_indent else None


def _inline_mentions(found: _Mentions, line: str, number: int) -> None:
    """Interpreted text and inline literals of an RST line."""
    if "`" not in line:
        return
    for span in _INLINE_CODE.finditer(line):
        code = span.group(2).strip()
        role = _ROLE.search(line[: span.start()])
        if role is not None:
            _role_mention(found, role.group(1), code, number)
        elif span.group(1) == "`" and not _is_path(code):
            _default_role_mention(found, line, span, number)
        else:
            _code_mention(found, code, number)


def _code_mention(found: _Mentions, code: str, number: int) -> None:
    """What inline code names: a path, a listed signature, a qualified or compound name, a call."""
    if _is_path(code):
        found.add(code.removeprefix("./").rstrip("/"), number, "path", "code")
    elif signature := _SIGNATURE.match(code):  # a listed definition names the API, whatever its shape
        found.add(signature.group(1), number, "identifier", "code")
    elif qualified := _QUALIFIED.match(code):
        name = qualified.group(1)
        if qualified.group(2) or _is_compound_name(name) or _is_type_name(name) or _SEPARATOR.search(name):
            found.add(name, number, "identifier", "code")
    elif callee := _CALLEE.match(code):
        found.add(callee.group(1), number, "identifier", "code")


def _default_role_mention(found: _Mentions, line: str, span: re.Match[str], number: int) -> None:
    """RST interpreted text without a role (`` `.IOLoop.spawn_callback` ``): Sphinx projects set
    the default role to an object reference (``default_role = "py:obj"``), so a name that reads
    as code is one; `` `text`_ `` is a hyperlink reference, and a plain word says nothing."""
    if line[span.end() : span.end() + 1] == "_":
        return
    value = span.group(2).strip().lstrip("~!").removesuffix("()")
    bare = value.lstrip(".")
    if _QUALIFIED.match(bare) and (_SEPARATOR.search(bare) or _is_compound_name(bare) or _is_type_name(bare)):
        found.add_api(value, number)


@dataclass(frozen=True, slots=True)
class _Literal:
    """An RST block of code: after a paragraph ending in ``::`` (Sphinx highlights it with the
    project's language, Python unless configured: ``fence:literal``), or a code directive with its
    language (``.. code-block:: go``; doctest and testcode blocks are Python). It holds the blank
    and the more indented lines after its marker."""

    indent: int
    source: str | None  # the mention source of its lines; None: output, not code

    @classmethod
    def opened_by(cls, line: str) -> _Literal | None:
        indent = len(line) - len(line.lstrip())
        if code := _RST_CODE_DIRECTIVE.match(line):
            kind, tag = code.group(1), code.group(2)
            if kind == "testoutput":
                return cls(indent, None)
            return cls(indent, _fence_language(tag) if kind in _RST_TAGGED else "fence:python")
        if line.rstrip().endswith("::") and not _RST_ANY_DIRECTIVE.match(line):
            return cls(indent, "fence:literal")
        return None

    def holds(self, line: str) -> bool:
        return not line.strip() or len(line) - len(line.lstrip()) > self.indent


def _role_mention(found: _Mentions, roles: str, text: str, number: int) -> None:
    """A Sphinx role: ``:doc:`` names a document, ``:func:`` & co. code; the rest name neither."""
    role = roles.rsplit(":", 1)[-1]
    target = _ROLE_TARGET.search(text)
    value = (target.group(1) if target else text).strip().lstrip("~!").removesuffix("()")
    if not value:
        return
    if role in _LABEL_ROLES:  # a label of the docs (or of another project, through intersphinx)
        found.add(" ".join(value.lower().split()), number, "label", "ref")
    elif role == "doc":
        found.add(value.rstrip("/"), number, "path", "docref")
    elif role == "file":
        if _is_path(value):
            found.add(value.removeprefix("./").rstrip("/"), number, "path", "code")
    elif role in _IDENTIFIER_ROLES and _QUALIFIED.match(value.lstrip(".")):
        found.add_api(value, number)


def _prose_mentions(found: _Mentions, prose: str, number: int) -> None:
    """Paths in plain prose (code and link targets already blanked; a link's text is prose:
    ``[lib/defaults.js](https://…)`` names a path): a slash and a known file extension, or a
    trailing slash."""
    if "/" not in prose:
        return
    if "://" in prose:
        prose = " ".join(word for word in prose.split(" ") if "://" not in word)
    for match in _PROSE_PATH.finditer(prose):
        path = match.group(1).rstrip(".")
        last = path.rstrip("/").rsplit("/", 1)[-1]
        extension = last.rsplit(".", 1)[-1].lower() if "." in last else ""
        if (path.endswith("/") and path.count("/") >= 2) or f".{extension}" in KNOWN_EXTENSIONS:
            found.add(path.removeprefix("./").rstrip("/"), number, "path", "prose")


def _fenced_mentions(found: _Mentions, line: str, number: int, source: str) -> None:
    """Compound identifiers of a code line, not of its string literals and comments (a printed
    trace or a comment names other programs' things as often as this repository's)."""
    if source == "output":
        _output_mentions(found, line, number)
        return
    code = _COMMENT.sub("", _STRING.sub('""', line))
    for match in _IDENTIFIER.finditer(code):
        name = match.group()
        if _is_compound_name(name) and not _keyword_argument(code, match.start(), match.end()):
            found.add(name, number, "identifier", source)


def _output_mentions(found: _Mentions, line: str, number: int) -> None:
    """Compound identifiers in a console, log or trace block (``TRACE … pkg._pool - acquire_connection
    origin=…``), source ``output``: the check keeps them only on a line that also names a module of
    the repository, as a log record or a traceback frame of its own code does."""
    if re.match(r"^\s*(?:[$%#]|\w*>)(?:\s|$)", line):
        return  # a command typed at a prompt (``$ RUN_MODE=x app``): commands and flags, not definitions
    code = _STRING.sub('""', line)
    for match in _IDENTIFIER.finditer(code):
        name = match.group()
        if _is_compound_name(name) and code[match.start() - 1 : match.start()] not in ("$", "-", "/"):
            found.add(name, number, "identifier", "output")


def _keyword_argument(code: str, start: int, end: int) -> bool:
    """``f(x, allow_redirects=False)``: the keyword belongs to the callee, whatever it is; also
    one argument per line of a call spread over lines (``    HTTP_ACCEPT_CHARSET='utf-8',``)."""
    if code[end : end + 1] != "=" or code[end + 1 : end + 2] == "=":
        return False
    before = code[:start].rstrip()
    return before.endswith(("(", ",")) or (not before and code.rstrip().endswith((",", ")")))


def _rst_link_mentions(found: _Mentions, line: str, number: int) -> None:
    """Embedded URIs (`` `text <target>`_ ``) and the files ``include``/``image`` directives name."""
    for link in _RST_LINK.finditer(line):
        if not link.group(1).endswith("_"):  # ``<pypi_>``: a reference to a named target, not a path
            _add_link(found, link.group(1), number)
    if directive := _RST_DIRECTIVE.match(line):
        _add_link(found, directive.group(1), number)


def _add_link(found: _Mentions, target: str, number: int) -> None:
    path = target.split("#", 1)[0].split("?", 1)[0].removeprefix("./")
    if path and not _SCHEME.match(path) and not path.startswith("//"):
        found.add(path.rstrip("/") or path, number, "path", "link")
    elif documented := _go_reference(target):
        found.add(documented, number, "identifier", "role")


_GO_REFERENCE_HOSTS = frozenset({"pkg.go.dev", "godoc.org", "www.godoc.org"})


def _go_reference(target: str) -> str | None:
    """The object a link to a Go package's reference page names, as its package writes it
    (``https://pkg.go.dev/github.com/go-chi/chi/middleware#WithValue`` → ``middleware.WithValue``,
    ``…/chi/v5#Mux.Use`` → ``chi.Mux.Use``): a cross-reference like a role, checked against the
    repository's code (a package the tree does not have is someone else's). A standard-library
    page (``pkg.go.dev/net/http#Server``, no domain in its path) or a link to no object names nothing
    of the repository's."""
    url = urlsplit(target.strip())
    if url.scheme not in ("http", "https") or url.hostname not in _GO_REFERENCE_HOSTS:
        return None
    segments = [s for s in url.path.split("/") if s]
    if segments[:1] == ["pkg"]:  # godoc.org/pkg/… is the standard library's
        return None
    segments = [s.split("@", 1)[0] for s in segments]  # pkg.go.dev/x/y@v1.2.0
    if not segments or "." not in segments[0] or not url.fragment:
        return None
    while len(segments) > 1 and segments[-1][:1] == "v" and segments[-1][1:].isdigit():  # …/chi/v5
        segments.pop()
    package = segments[-1].replace("-", "_").replace(".", "_")
    parts = url.fragment.split(".")
    if not all(p.isidentifier() for p in parts) or not package.isidentifier():
        return None  # #section-anchor, #pkg-overview
    return ".".join([package, *parts])


def _is_path(code: str) -> bool:
    """``src/x/``, ``./run.sh`` or a file name with a known extension (not ``pkg.module``)."""
    if _SLASHED_PATH.match(code):
        return not _SCHEME.match(code)
    file_name = _FILE_NAME.match(code)
    return file_name is not None and f".{file_name.group(1).lower()}" in KNOWN_EXTENSIONS


def _is_compound_name(name: str) -> bool:
    """snake_case or camelCase: an identifier, not a word (fenced code has prose in comments)."""
    return len(name) >= 3 and name not in _NOT_SYMBOLS and _COMPOUND_NAME.search(name) is not None


def _is_type_name(name: str) -> bool:
    """A PascalCase name, which inside inline code is a type rather than a word."""
    return len(name) >= 3 and name not in _NOT_SYMBOLS and _CAPITALISED.match(name) is not None
