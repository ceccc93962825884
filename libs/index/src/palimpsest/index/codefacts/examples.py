"""What a document's own examples define: one answer for the analysis's doc check and the review's
left-behind check, so a name a doc's example declares is never read as a claim about the code.

A fenced example in a language with a grammar (``go``, ``tsx``, ``python`` …) is read by
:func:`~palimpsest.index.codefacts.definitions.definitions`, as the repository's own code is: a Go
example's struct fields and a TypeScript example's interface members are the example's own, but
the keys of its object literals are not (``axios({ withCredentials: true })`` passes the API's
option). The rest of the doc -- fences in other languages, reStructuredText and indented code
blocks -- is read by the keyword regex, and a Rust ``let mut`` binding counts too. A signature
listed with an empty body (``func UseCompressor(name) CallOption {}``, ``def f(x): ...``) lists the
repository's API: it defines nothing of the doc's own.
"""

from __future__ import annotations

import functools
import re

from palimpsest.index.codefacts.definitions import defined_names, definitions
from palimpsest.index.languages import PARSED_LANGUAGES, example_path, fence_language

__all__ = ["STUB", "example_defines", "example_names"]

STUB = re.compile(
    r"^[ \t]*(?:[\w$]+[ \t]+)*?(?:func|def|fn|function|fun)\b[^\n]*?(?:\{\s*(?:\.\.\.\s*)?\}|:\s*(?:\.\.\.|pass)|;)[ \t]*$",
    re.MULTILINE,
)
"""A signature listed with an empty body: the doc lists the repository's API."""
_FENCED = re.compile(
    r"^[ \t>]*(?P<mark>```+|~~~+)[ \t]*(?P<tag>[\w+#.-]*)[^\n]*\n(?P<code>.*?)^[ \t>]*(?P=mark)", re.M | re.S
)


@functools.lru_cache(maxsize=16)
def example_names(text: str) -> tuple[frozenset[str], bytes]:
    """The names the doc's fenced examples in a parsed language define, and the rest of its text
    (for the keyword regex); asked once per doc, not per mention."""
    names: set[str] = set()
    rest: list[str] = []
    at = 0
    text = STUB.sub("", text)
    for fenced in _FENCED.finditer(text):
        language = fence_language(fenced.group("tag"))
        path = example_path(language) if language in PARSED_LANGUAGES else None
        if path is not None:
            found = definitions(path, fenced.group("code").encode()).items
            names |= {d.name for d in found if d.kind != "key"}
            rest.append(text[at : fenced.start()])
            at = fenced.end()
    rest.append(text[at:])
    return frozenset(names), "".join(rest).encode()


def example_defines(text: str, name: str) -> bool:
    """Whether the doc ``text``'s own examples define ``name`` (see the module text)."""
    parsed, rest = example_names(text)
    return (
        name in parsed
        or name in defined_names(rest, {name})
        or re.search(rf"\blet\s+mut\s+{re.escape(name)}\b", text) is not None
    )
