"""What kind of page a document is, by its text: the shared classifier's answer for the questions
a path cannot settle (:mod:`.classify` reads paths only).

Two kinds of page make no claim about the code that age could make stale:

* a **generated-reference** page (:func:`generated_reference`) is made only of directives that a
  doc generator fills from the code (``.. automodule:: pkg``, ``.. autoprogram:: pkg:parser``,
  ``.. click:: pkg:cli``, ``::: pkg.mod``) with their options, headings, labels and index
  entries: nothing on it is written by hand;
* a **pointer** page (:func:`is_pointer_page`) only points elsewhere: a ``CONTRIBUTING.md`` saying
  "see the guide at …", a governance page linking to the organisation's, a page that includes
  another file. A few lines of prose, at least one link or include, and no code.

The documentation check asks both before it calls a page old by age alone (``stale_doc``).
"""

from __future__ import annotations

import re

__all__ = ["MAX_POINTER_LINES", "generated_reference", "is_pointer_page"]

# the directives a doc generator fills from the code: Sphinx autodoc and autoprogram, sphinx-click,
# sphinx-argparse, mkdocstrings
_GENERATOR_DIRECTIVE = re.compile(
    r"^\s*\.\.\s+(?:py:|js:)?(?:auto\w+|click|argparse|typer)::|^\s*:::\s+\S+\s*$"
)
# what a generated-reference page is made of besides them: headings, title underlines, labels,
# index entries, see-also lines of cross-references only, module declarations and the directives' indented options; any other line is
# prose a person wrote
_REFERENCE_LINE = re.compile(
    r"^\s*$|^\s*#{1,6}\s|^\s*([=\-~^\"'`*+#])\1{2,}\s*$|^\s*\.\.\s+(?:py:|js:)?(?:current)?(?:auto\w+|module)::"
    r"|^\s*\.\.\s+(?:index|program|highlight)::|^\s*\.\.\s+seealso::(?:[\s,.]|\band\b|:ref:`[^`]+`)+$|^\s*\.\.\s+_[^:]+:\s*$|^\(\S+\)=\s*$"
    r"|^\s*:::\s+\S+\s*$|^[ \t]+\S"
)
_TITLE = re.compile(r"^\s*[\w`:.~-][^\n]*$")
_UNDERLINE = re.compile(r"^\s*([=\-~^\"'`*+#])\1{2,}\s*$")


def generated_reference(text: str) -> bool:
    """A page made only of generated-reference directives (``.. automodule:: pkg``,
    ``.. autoprogram:: pkg:parser``, ``::: pkg.mod``) with their options, headings, labels and
    index entries: generated from the code, nothing on it can go stale."""
    lines = text.splitlines()
    directives = 0
    for number, line in enumerate(lines):
        if _GENERATOR_DIRECTIVE.match(line):
            directives += 1
        elif not _REFERENCE_LINE.match(line) and not _title(lines, number):
            return False
    return directives > 0


def _title(lines: list[str], number: int) -> bool:
    """An RST title: a line underlined (and perhaps overlined) by the next line."""
    following = lines[number + 1] if number + 1 < len(lines) else ""
    return bool(_TITLE.match(lines[number])) and bool(_UNDERLINE.match(following))


# a pointer page's lines that are not prose: blank, a heading or its underline, a comment, an
# include and its options, a label or a link definition
_POINTER_LINE = re.compile(
    r"^\s*(?:$|#{1,6}\s|([=\-~^\"'`*+#])\1{2,}\s*$|<!--.*-->\s*$|\.\.\s+(?:include|mdinclude)::"
    r"|\.\.\s+_[^:]+:\s*\S*$|\[[^\]]+\]:\s*\S+|`{3,}\s*\{include\}|`{3,}\s*$|:start-after:|:end-before:"
    r"|:relative-docs:|:relative-images:)"
)
_POINTER_LINK = re.compile(r"https?://|\]\(|`[^`]+<[^>]+>`_|\.\.\s+(?:include|mdinclude)::|\{include\}")
_INLINE_CODE = re.compile(r"``[^`]+``|(?<![`\w])`[^`\s<][^`<]*`(?![`_])")
_FENCE = re.compile(r"^\s*(`{3,}|~{3,})\s*(\S*)")
_CODE_DIRECTIVE = re.compile(r"^\s*\.\.\s+(?:code-block|code|sourcecode|doctest)::|.*[^:]::\s*$")
MAX_POINTER_LINES = 6
"""The most lines of prose a pointer page has (a sentence or two, wrapped)."""


def is_pointer_page(text: str) -> bool:
    """A page that only points elsewhere: at most :data:`MAX_POINTER_LINES` lines of prose, at
    least one link or include, and no code (no inline code, no code block; an include block is
    no code). It makes no claim about the code, so age alone says nothing of it."""
    lines = text.splitlines()
    inside = False
    for line in lines:
        fence = _FENCE.match(line)
        if fence:
            if not inside and "{include}" not in fence.group(2):
                return False  # a code block
            inside = not inside
        elif _CODE_DIRECTIVE.match(line):
            return False
    prose = [line for line in lines if not _POINTER_LINE.match(line)]
    if len(prose) > MAX_POINTER_LINES or not _POINTER_LINK.search(text):
        return False
    return not any(_INLINE_CODE.search(line) for line in prose)
