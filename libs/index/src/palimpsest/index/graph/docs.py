"""Doc-to-code and doc-to-doc edges: ``Governs:`` by path segment, ``Supersedes:`` by doc id.

``Governs: src/bill`` covers ``src/bill`` itself and everything under ``src/bill/`` — never
``src/billing_old/``: the match is by whole path segments, not by string prefix (a trailing
slash was already removed by the chunker and changes nothing). A target with ``*``, ``?`` or
``[`` is a glob over whole paths. ``Supersedes: 0004`` names a document by id: a doc whose file
name is the id, starts with it (``0004-title.md``), or starts with a word and then it
(``adr-0004-title.md``); a value with a ``/`` is a repository path.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable
from pathlib import PurePosixPath

from palimpsest.index.graph.tree import Tree

__all__ = ["governed_paths", "superseded_docs"]

_GLOB = re.compile(r"[*?\[]")
_WORDS = re.compile(r"[-_ .]+")


def governed_paths(tree: Tree, target: str) -> list[str]:
    """Every path of the tree that ``Governs: target`` covers (segment-wise), sorted."""
    target = target.strip().removeprefix("./").strip("/")
    if not target:
        return []
    if _GLOB.search(target):
        return sorted(
            p for p in tree.files if fnmatch.fnmatchcase(p, target) or fnmatch.fnmatchcase(p, f"{target}/*")
        )
    if target in tree.files:
        return [target]
    if target not in tree.dirs:
        return []
    prefix = target + "/"
    return sorted(p for p in tree.files if p.startswith(prefix))


def _id_words(text: str) -> list[str]:
    return [w for w in _WORDS.split(text.lower()) if w]


def superseded_docs(docs: Iterable[str], ident: str) -> list[str]:
    """The documents ``Supersedes: ident`` names."""
    ident = ident.strip().removeprefix("./")
    docs = list(docs)
    if "/" in ident:
        return [d for d in docs if d == ident or d.removesuffix(PurePosixPath(d).suffix) == ident]
    wanted = _id_words(ident)
    if not wanted:
        return []
    found: list[str] = []
    for doc in docs:
        words = _id_words(PurePosixPath(doc).stem)
        if words[: len(wanted)] == wanted or (
            len(words) > len(wanted) and words[0].isalpha() and words[1 : len(wanted) + 1] == wanted
        ):
            found.append(doc)
    return sorted(found)
