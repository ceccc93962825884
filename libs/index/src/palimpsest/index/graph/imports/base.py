"""The shape every language's import resolver shares: an outcome and a context.

An import either *resolves* to one or more files of the tree, is *external* (the standard
library or a third-party package: the graph has no node for it, by design), or is
*unresolved*: it looks like it names this repository's code (a relative path, a known package
root, the module path of a ``go.mod``) and yet no file matches. Unresolved imports go to the
negative-control report; external ones are only counted per package.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, NamedTuple

from palimpsest.index.graph.tree import Tree

__all__ = ["Outcome", "ResolveContext", "external", "resolved", "unresolved"]

Status = Literal["resolved", "unresolved", "external"]


class Outcome(NamedTuple):
    status: Status
    targets: tuple[str, ...] = ()
    package: str | None = None  # the external package, for the report's counts


def resolved(targets: list[str] | tuple[str, ...]) -> Outcome:
    unique = tuple(dict.fromkeys(targets))
    return Outcome("resolved", unique) if unique else Outcome("unresolved")


def unresolved() -> Outcome:
    return Outcome("unresolved")


def external(package: str) -> Outcome:
    return Outcome("external", (), package)


@dataclass(slots=True)
class ResolveContext:
    """The tree plus whatever per-language configuration the resolvers parsed once."""

    tree: Tree
    texts: dict[str, str] = field(default_factory=dict)
