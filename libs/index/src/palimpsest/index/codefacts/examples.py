"""What a document's own examples define: one answer for the analysis's doc check and the review's
left-behind check, so a name a doc's example declares is never read as a claim about the code.

A fenced example in a language with a grammar (``go``, ``tsx``, ``python`` …) is read by
:func:`~palimpsest.index.codefacts.definitions.definitions`, as the repository's own code is: a Go
example's struct fields and a TypeScript example's interface members are the example's own, but
the keys of its object literals are not (``axios({ withCredentials: true })`` passes the API's
option), and the members of a type the repository itself defines are the doc's listing of that
type (``type Router interface { HandleFunc(…) }``), not the example's own. The rest of the doc --
fences in other languages, reStructuredText and indented code blocks -- is read by the keyword
regex, and a Rust ``let mut`` binding counts too. A signature listed with an empty body (``func
UseCompressor(name) CallOption {}``, ``def f(x): ...``) lists the repository's API: it defines
nothing of the doc's own.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Collection

from palimpsest.index.codefacts.definitions import defined_names, definitions
from palimpsest.index.languages import PARSED_LANGUAGES, example_path, fence_language

__all__ = ["example_containers", "example_defines", "example_names"]

_STUB = re.compile(
    r"^[ \t]*(?:[\w$]+[ \t]+)*?(?:func|def|fn|function|fun)\b[^\n]*?(?:\{\s*(?:\.\.\.\s*)?\}|:\s*(?:\.\.\.|pass)|;)[ \t]*$",
    re.MULTILINE,
)
"""A signature listed with an empty body: the doc lists the repository's API."""
_FENCED = re.compile(
    r"^[ \t>]*(?P<mark>```+|~~~+)[ \t]*(?P<tag>[\w+#.-]*)[^\n]*\n(?P<code>.*?)^[ \t>]*(?P=mark)", re.M | re.S
)


@functools.lru_cache(maxsize=16)
def example_names(text: str) -> tuple[dict[str, frozenset[str | None]], bytes]:
    """The names the doc's fenced examples in a parsed language define, each with the names of the
    definitions it sits in (None at the top), and the rest of its text (for the keyword regex);
    asked once per doc, not per mention."""
    names: dict[str, set[str | None]] = {}
    rest: list[str] = []
    at = 0
    text = _STUB.sub("", text)
    for fenced in _FENCED.finditer(text):
        language = fence_language(fenced.group("tag"))
        path = example_path(language) if language in PARSED_LANGUAGES else None
        if path is not None:
            for d in definitions(path, fenced.group("code").encode()).items:
                if d.kind != "key":
                    names.setdefault(d.name, set()).add(d.parent)
            rest.append(text[at : fenced.start()])
            at = fenced.end()
    rest.append(text[at:])
    return {name: frozenset(parents) for name, parents in names.items()}, "".join(rest).encode()


def example_containers(text: str) -> frozenset[str]:
    """The names of the definitions that hold others in the doc's parsed examples (a struct, an
    interface, a class): the ones to ask the repository about for :func:`example_defines`."""
    return frozenset(p for parents in example_names(text)[0].values() for p in parents if p is not None)


def example_defines(text: str, name: str, repository: Collection[str] = frozenset()) -> bool:
    """Whether the doc ``text``'s own examples define ``name`` (see the module text). A member of a
    type the repository defines (``repository``: its definition names) is the doc's listing of
    that type (chi's ``type Router interface { HandleFunc(…) }``), not the example's own."""
    parsed, rest = example_names(text)
    return (
        any(parent is None or parent not in repository for parent in parsed.get(name, ()))
        or name in defined_names(rest, {name})
        or re.search(rf"\blet\s+mut\s+{re.escape(name)}\b", text) is not None
    )
