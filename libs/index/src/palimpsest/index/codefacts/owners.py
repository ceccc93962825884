"""Whose name a doc's example uses: the modules the example's own code ties a name to.

A doc's code block says where its names come from. :func:`name_owners` reads that evidence for
one name, as the code carries it, and returns the modules it points to (:class:`Owner`):

* the block imports the name from a module (``from wsgiref.simple_server import make_server``,
  ``import { pino } from 'pino'``, ``use tokio::spawn``);
* the block writes it qualified by an imported module or a standard-library one
  (``http.StatusOK`` with ``"net/http"`` imported, ``os.environ``), or in a dotted string naming
  an import path (``context='mypackage.resources.Blog'``);
* it is a field or an option given to something of a module: a composite literal of a foreign
  type (``&http.Server{ReadTimeout: …}``), a keyword or an object passed to a module's call
  (``pino({ translateTime: … })``), or a key inside an object literal that names a module as a
  value (``transport: { target: 'pino-pretty', options: { translateTime: … } }``);
* it is reached on an object the block handed a module to (``config.include(pyramid_handlers)``
  then ``config.add_handler(…)``: the plugin adds the method).

Whether a module is this repository's, the standard library's (:func:`.dependencies.standard_module`)
or a declared dependency's (:class:`.dependencies.Dependencies`) is the caller's question; a
string value is an owner only when the caller knows it for a module (``known``); the others are
modules by their syntax.

A mention in prose has the owners of the name's uses in the doc's code blocks that bind the bare
name (not those qualified by a module: ``context.WithValue`` in the example does not make a prose
``WithValue`` the standard library's), when every such use has one. The same function says whether those uses are only quoted keys the example reads
(``settings.get('do_timing')``): :func:`quoted_only`.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from palimpsest.index.codefacts.markdown import read_markdown
from palimpsest.index.languages import fence_language

__all__ = ["CodeBlock", "Owner", "block_defines", "code_blocks", "name_owners", "quoted_only"]


@dataclass(frozen=True, slots=True)
class CodeBlock:
    """One code block of a doc: its language (None when unknown), its first line (1-based) and text."""

    language: str | None
    first: int
    text: str


@dataclass(frozen=True, slots=True)
class Owner:
    """A module a doc's code ties a name to, in ``language``, and how (``import``, ``qualified``,
    ``string``, ``field``, ``option``, ``value``, ``plugin``; ``package``: a Go package name a
    snippet uses without its import, whose path is unknown)."""

    module: str
    language: str | None
    how: str


_RST_CODE = re.compile(
    r"^(?P<indent>[ \t]*)\.\.[ \t]+(?:code-block|code|sourcecode|testcode|doctest)::[ \t]*(?P<tag>[\w+#.-]*)"
)
_RST_LITERAL = re.compile(r"^(?P<indent>[ \t]*)(?!\.\.)\S.*::[ \t]*$|^(?P<bare>[ \t]*)::[ \t]*$")
_RST_DIRECTIVE = re.compile(r"^[ \t]*\.\.[ \t]+[\w:-]+::")


def code_blocks(text: str, path: str = "") -> list[CodeBlock]:
    """The code blocks of a doc. Markdown and MyST: the fenced and indented blocks of its parsed
    reading (:mod:`palimpsest.index.codefacts.markdown`, the same reading the chunker takes
    mentions from). reStructuredText (a doc at ``path`` ending in ``.rst``, ``.txt`` or ``.rest``):
    ``code-block`` directives and ``::`` literal blocks (Sphinx highlights those as Python by
    default)."""
    return list(_code_blocks(text, path))


@functools.lru_cache(maxsize=32)
def _code_blocks(text: str, path: str) -> tuple[CodeBlock, ...]:
    """:func:`code_blocks`, read once per doc rather than once per mention and rule."""
    if not path.endswith((".rst", ".txt", ".rest")):
        return tuple(_markdown_blocks(text))
    lines = text.split("\n")
    out: list[CodeBlock] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        directive = _RST_CODE.match(line)
        literal = None if directive is not None or _RST_DIRECTIVE.match(line) else _RST_LITERAL.match(line)
        opened = directive or literal
        if opened is not None:
            indent = len(opened.group("indent") or (literal.group("bare") if literal else "") or "")
            tag = directive.group("tag") if directive else ""
            language = fence_language(tag) if tag else "python"
            j = i + 1
            while j < len(lines) and re.match(r"^[ \t]+:[\w-]+:", lines[j]):  # the directive's options
                j += 1
            start = j
            while j < len(lines) and (
                not lines[j].strip() or len(lines[j]) - len(lines[j].lstrip()) > indent
            ):
                j += 1
            while j > start and not lines[j - 1].strip():
                j -= 1
            if j > start:
                out.append(CodeBlock(language, start + 1, "\n".join(lines[start:j])))
            i = max(j, i + 1)
            continue
        i += 1
    return tuple(out)


def _markdown_blocks(text: str) -> list[CodeBlock]:
    """Runs of consecutive code lines of the parsed reading, each with its fence's language (None
    for an indented block or a fence without an info string)."""
    lines = text.split("\n")
    code = read_markdown(lines).code_lines
    out: list[CodeBlock] = []
    run: list[int] = []
    for number in sorted(code):
        if run and (number != run[-1] + 1 or code[number] != code[run[0]]):
            out.append(_block(lines, run, code[run[0]]))
            run = []
        run.append(number)
    if run:
        out.append(_block(lines, run, code[run[0]]))
    return out


def _block(lines: list[str], run: list[int], tag: str | None) -> CodeBlock:
    return CodeBlock(fence_language(tag) if tag else None, run[0], "\n".join(lines[run[0] - 1 : run[-1]]))


def name_owners(
    text: str,
    name: str,
    line: int,
    path: str = "",
    known: Callable[[str], bool] = lambda _: False,
    written: str = "",
) -> list[Owner]:
    """The modules the doc ``text``'s code ties ``name`` to, for its mention on ``line``: that
    line's uses when it is in a code block, else every use in the doc's code blocks (empty when
    any use has no owner, or there is none; a use qualified by its module, ``context.WithValue``,
    gives a prose ``WithValue`` no owner and takes none away, unless the mention, as ``written``,
    names the same qualifier: ``context.WithValue``); ``path`` is the doc's (:func:`code_blocks`). ``known``
    says whether a string value names a module (a declared or standard one): only then does an
    object literal holding it make the module the owner of its keys."""
    blocks = _code_blocks(text, path)
    here = next((b for b in blocks if b.first <= line < b.first + b.text.count("\n") + 1), None)
    if here is not None:
        found = list(_owners(here, name, line - here.first, known))
        return found if found and None not in found else []  # type: ignore[return-value]
    out: list[Owner] = []
    used = False
    qualifier = _root(written[: len(written) - len(name)]) if written.endswith(name) else ""
    for block in blocks:
        for owner, root in _owners_and_qualifiers(block, name, None, known):
            if owner is not None and owner.how in _QUALIFIED and root != qualifier:
                continue  # ``context.WithValue`` names its package; the bare word does not
            used = True
            if owner is None:
                return []
            out.append(owner)
    return out if used else []


_QUALIFIED = frozenset({"qualified", "string"})
"""The ways a use writes the name after its module (``context.WithValue``, ``os.environ``,
``'mypackage.resources.Blog'``): they say whose that written path is, not whose a bare mention of
the last word in prose is; the uses that bind the bare word (its import, a field or option given
to a module's thing, a method a plugin adds) do."""


def quoted_only(text: str, name: str, path: str = "") -> bool:
    """Whether the doc's code blocks use ``name`` and only as a whole quoted string: a key the
    example itself reads or writes (``settings.get('do_timing')``), the example's own data."""
    word = re.compile(rf"(?<![\w$]){re.escape(name)}(?![\w$])")
    quoted = re.compile(rf"""(['"]){re.escape(name)}\1""")
    uses = 0
    for block in _code_blocks(text, path):
        for found in word.finditer(block.text):
            uses += 1
            start = found.start() - 1
            if start < 0 or not quoted.match(block.text, start):
                return False
    return uses > 0


def block_defines(text: str, name: str, path: str = "") -> bool:
    """Whether a code block of the doc defines ``name`` at its top level (``class Blog(object):``,
    ``def show():``, ``func Handler()``, ``type Config struct``), read block by block: another
    block importing the same name (``from resources import Blog``) does not undo it."""
    keyword = re.compile(
        rf"^(?P<indent>[ \t]*)(?:export[ \t]+)?(?:async[ \t]+)?"
        rf"(?:class|def|func|function|fn|struct|type|interface|trait|enum)[ \t]+{re.escape(name)}(?![\w$])",
        re.M,
    )
    for block in _code_blocks(text, path):
        lines = [line for line in block.text.split("\n") if line.strip()]
        top = min((len(line) - len(line.lstrip()) for line in lines), default=0)
        if any(len(m.group("indent")) == top for m in keyword.finditer(block.text)):
            return True
    return False


# ----------------------------------------------------------------------------- one block

_PY_IMPORT = re.compile(r"^[ \t>.]*import[ \t]+([\w.]+)(?:[ \t]+as[ \t]+(\w+))?[ \t]*$", re.M)
_PY_FROM = re.compile(r"^[ \t>.]*from[ \t]+([\w.]+)[ \t]+import[ \t]+\(?([\w, \t\n]+?)\)?[ \t]*$", re.M)
_JS_IMPORT = re.compile(r"""\bimport\s+([^'";]+?)\s+from\s+['"]([^'"]+)['"]""")
_JS_REQUIRE = re.compile(
    r"""\b(?:const|let|var)\s+(\{[^}]*\}|[\w$]+)\s*=\s*require\(\s*['"]([^'"]+)['"]\s*\)"""
)
_GO_IMPORT = re.compile(r"""^[ \t]*(?:import[ \t]+)?(?:([\w.]+)[ \t]+)?"([\w./~-]+)"[ \t]*$""", re.M)
_RUST_USE = re.compile(r"^[ \t]*(?:pub[ \t]+)?use[ \t]+([\w:]+?)(?:::\{([^}]*)\})?[ \t]*;", re.M)
_JAVA_IMPORT = re.compile(r"^[ \t]*import[ \t]+(?:static[ \t]+)?([\w.]+)\.(\w+|\*)[ \t]*;", re.M)
_DOTTED_STRING = re.compile(r"""(['"])([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+)(?:[:.][A-Za-z_]\w*)*\1""")
_MODULE_VALUE = re.compile(r"""(?<![\w$])[\w$]+\s*:\s*['"]([@\w][\w@./-]*)['"]""")
_OPENERS = {"(": ")", "{": "}", "[": "]"}


def _imports(block: CodeBlock) -> dict[str, str]:
    """What the block's names stand for: alias → module (``http`` → ``net/http``, ``Y`` → ``a.b``)."""
    code = block.text
    out = _python_imports(code) | _javascript_imports(code)
    if block.language in (None, "go") and "import" in code:
        for m in _GO_IMPORT.finditer(_go_import_lines(code)):
            out[m.group(1) or m.group(2).rsplit("/", 1)[-1]] = m.group(2)
    for m in _RUST_USE.finditer(code):
        path, group = m.group(1), m.group(2)
        if group:
            out.update((word, path) for word in re.findall(r"\w+", group))
        else:
            out[path.rsplit("::", 1)[-1]] = path.rsplit("::", 1)[0] if "::" in path else path
    out.update((m.group(2), m.group(1)) for m in _JAVA_IMPORT.finditer(code))
    return out


def _python_imports(code: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for m in _PY_IMPORT.finditer(code):
        module, alias = m.group(1), m.group(2)
        out[alias or module.split(".")[0]] = module if alias else module.split(".")[0]
    for m in _PY_FROM.finditer(code):
        for part in m.group(2).split(","):
            words = part.split()
            if words:
                out[words[-1]] = m.group(1)
    return out


def _javascript_imports(code: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for m in _JS_IMPORT.finditer(code):
        for word in re.findall(r"[\w$]+", m.group(1).replace(" as ", " ")):
            if word not in ("type", "as"):
                out[word] = m.group(2)
    for m in _JS_REQUIRE.finditer(code):
        out.update((word, m.group(2)) for word in re.findall(r"[\w$]+", m.group(1)))
    return out


def _go_import_lines(code: str) -> str:
    """The lines of a Go block's ``import`` statements (a parenthesised block's too)."""
    out: list[str] = []
    inside = False
    for line in code.split("\n"):
        stripped = line.strip()
        if inside:
            if stripped.startswith(")"):
                inside = False
            else:
                out.append(stripped)
        elif re.match(r"^import\s*\($", stripped):
            inside = True
        elif stripped.startswith("import "):
            out.append(stripped)
    return "\n".join(out)


def _root(qualifier: str) -> str:
    """The first segment of a written qualifier (``net.http.`` → ``net``; a dotted string's quote
    dropped: ``'mypackage.resources.`` → ``mypackage``)."""
    return re.split(r"\.|::|#", qualifier.lstrip("'\"`~"), maxsplit=1)[0]


def _owners(
    block: CodeBlock, name: str, at: int | None, known: Callable[[str], bool]
) -> Iterator[Owner | None]:
    """An owner (or None: no evidence) for each use of ``name`` in ``block`` (on line ``at``,
    0-based within the block, or anywhere)."""
    for owner, _ in _owners_and_qualifiers(block, name, at, known):
        yield owner


def _owners_and_qualifiers(
    block: CodeBlock, name: str, at: int | None, known: Callable[[str], bool]
) -> Iterator[tuple[Owner | None, str]]:
    """:func:`_owners`, each with the root of the qualifier the use is written after (``context``
    for ``context.WithValue``, ``mypackage`` inside ``'mypackage.resources.Blog'``; empty if none)."""
    imports = _imports(block)
    language = block.language
    code = block.text
    starts = [0]
    for line in code.split("\n"):
        starts.append(starts[-1] + len(line) + 1)
    word = re.compile(rf"(?<![\w$]){re.escape(name)}(?![\w$])")
    for found in word.finditer(code):
        line_no = next(i for i in range(len(starts) - 1) if starts[i] <= found.start() < starts[i + 1])
        if at is not None and line_no != at:
            continue
        owner = _owner(code, found.start(), found.end(), name, imports, language, known)
        root = (
            owner.module
            if owner is not None and owner.how == "string"
            else _root(_qualifier(code, found.start()))
        )
        yield owner, root


def _owner(
    code: str,
    start: int,
    end: int,
    name: str,
    imports: dict[str, str],
    language: str | None,
    known: Callable[[str], bool],
) -> Owner | None:
    # imported by name
    if name in imports and not _qualifier(code, start):
        return Owner(imports[name], language, "import")
    # inside a dotted string naming an import path
    for m in _DOTTED_STRING.finditer(code):
        if m.start() < start < m.end():
            return Owner(m.group(2).split(".")[0], language, "string")
    # qualified by a module (or by an object a module was handed to)
    qualifier = _qualifier(code, start)
    if qualifier:
        root = re.split(r"\.|::", qualifier)[0]
        if root in imports:
            return Owner(imports[root], language, "qualified")
        plugin = _plugin(code[:start], root, imports)
        if plugin is not None:
            return Owner(plugin, language, "plugin")
        if language and root in _standard_roots(language) and not _bound(code, root):
            return Owner(root, language, "qualified")
        return None
    # a field, keyword or option: what holds it says whose it is
    rest = code[end : end + 3]
    if re.match(r"\s*:(?!:)", rest) or re.match(r"\s*=(?!=)", rest):
        return _container_owner(code, start, imports, language, known)
    return None


def _standard_roots(language: str) -> frozenset[str]:
    from palimpsest.index.codefacts.dependencies import standard_roots

    return standard_roots(language)


def _bound(code: str, name: str) -> bool:
    """Whether the block makes ``name`` itself (assigns it, loops over it, takes it as a parameter):
    a variable called like a standard module (``queue = Queue()``) is the example's object."""
    n = re.escape(name)
    pattern = rf"(?<![\w$.]){n}\s*(?::[^=\n]*)?=(?!=)|\b(?:for|as|let|const|var)\s+{n}\b|[(,]\s*{n}\s*[,:)=]"
    return re.search(pattern, code) is not None


def _qualifier(code: str, start: int) -> str:
    """The dotted (or ``::``) chain written right before the name at ``start`` (``net.http.``)."""
    m = re.search(r"((?:[\w$]+(?:\.|::))+)$", code[max(0, start - 200) : start])
    return m.group(1) if m else ""


def _plugin(code: str, receiver: str, imports: dict[str, str]) -> str | None:
    """The module the block (``code``: up to the name) hands to ``receiver`` before it names it
    (``config.include(pyramid_handlers)``, ``app.register(require('x'))``): it may add names to it."""
    for m in re.finditer(rf"(?<![\w$.]){re.escape(receiver)}\.[\w$]+\(\s*([^)]*)\)", code):
        argument = m.group(1).strip()
        required = re.match(r"""require\(\s*['"]([^'"]+)['"]""", argument)
        if required:
            return required.group(1)
        first = re.split(r"[\s,.(]", argument, maxsplit=1)[0]
        if first in imports and first == argument.split(",")[0].strip():
            return imports[first]
    return None


def _container_owner(
    code: str, start: int, imports: dict[str, str], language: str | None, known: Callable[[str], bool]
) -> Owner | None:
    """Walk out of the brackets holding the field or option at ``start``: an object literal that
    names a module as a value, a composite literal of a module's type, or a module's call."""
    for opener_at in _enclosing(code, start):
        opener = code[opener_at]
        if opener == "{":
            body = code[opener_at : _closing(code, opener_at)]
            for value in _MODULE_VALUE.finditer(_top_level(body)):
                if known(value.group(1)):
                    return Owner(value.group(1), language, "value")
        before = code[max(0, opener_at - 200) : opener_at].rstrip()
        callee = re.search(r"""((?:[\w$]+(?:\.|::))*[\w$]+|require\(\s*['"][^'"]+['"]\s*\))$""", before)
        if callee is None:
            continue  # an object inside an array, an argument list, an assignment: go on out
        text = callee.group(1)
        required = re.match(r"""require\(\s*['"]([^'"]+)['"]""", text)
        if required:
            return Owner(required.group(1), language, "option")
        root = re.split(r"\.|::", text)[0]
        if root in imports:
            return Owner(imports[root], language, "field" if opener == "{" else "option")
        if language == "go" and opener == "{" and "." in text and root[:1].islower():
            # Go's syntax: the type of a composite literal ``http.Server{…}`` is qualified by a
            # package, imported or not in a snippet
            return Owner(root, language, "package")
        if "." in text or "::" in text or opener == "(":
            if language and root in _standard_roots(language) and not _bound(code, root):
                return Owner(root, language, "field" if opener == "{" else "option")
            return None  # a call or a type of something else: its option, not a module's
    return None


def _enclosing(code: str, start: int) -> Iterator[int]:
    """The offsets of the brackets enclosing ``start``, innermost first (strings skipped roughly)."""
    depth: list[int] = []
    quote: str | None = None
    for i in range(start - 1, -1, -1):
        c = code[i]
        if quote:
            if c == quote and (i == 0 or code[i - 1] != "\\"):
                quote = None
            continue
        if c in "'\"`":
            quote = c
        elif c in ")}]":
            depth.append(i)
        elif c in _OPENERS:
            if depth:
                depth.pop()
            else:
                yield i


def _closing(code: str, opener_at: int) -> int:
    """The offset just past the bracket closing the one at ``opener_at`` (the end if unclosed)."""
    level = 0
    for i in range(opener_at, len(code)):
        if code[i] in _OPENERS:
            level += 1
        elif code[i] in ")}]":
            level -= 1
            if level == 0:
                return i + 1
    return len(code)


def _top_level(body: str) -> str:
    """An object literal's text without its nested brackets' contents: its own keys and values."""
    out: list[str] = []
    level = 0
    for c in body:
        if c in _OPENERS:
            level += 1
            if level == 1:
                out.append(c)
        elif c in ")}]":
            level -= 1
        elif level <= 1:
            out.append(c)
    return "".join(out)
