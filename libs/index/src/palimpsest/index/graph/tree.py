"""The snapshot's file tree as import resolution needs it: exact paths, directories, suffixes.

Most languages name a module by a path *suffix* whose root is not known in advance (Java
packages under ``src/main/java``, Python packages under ``src/`` or a namespace directory, C
headers under ``include/``). :meth:`Tree.by_stem_suffix` answers "which files end with
``com/acme/util/Helper``" in one dictionary lookup, and :func:`nearest` picks, among several
candidates, the ones closest to the importing file (the longest shared directory prefix).
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable, Sequence

__all__ = ["Tree", "dirname", "nearest", "normalize", "stem_of"]


def dirname(path: str) -> str:
    """``posixpath.dirname`` for repository-relative paths (no leading or doubled slashes)."""
    return path.rpartition("/")[0]


def stem_of(path: str) -> str:
    """The path without its last extension: ``a/b/c.py`` -> ``a/b/c``, ``a/b.d.ts`` -> ``a/b.d``."""
    name = path.rpartition("/")[2]  # string ops: pathlib cost ~0.7 s per 50 000 files
    dot = name.rfind(".")
    if dot <= 0:
        return path
    return path[: len(path) - len(name) + dot]


def normalize(path: str) -> str | None:
    """A repository-relative path with ``.``/``..`` folded; ``None`` when it leaves the tree."""
    if not path:
        return ""
    folded = posixpath.normpath(path)
    if folded == ".":
        return ""
    if folded.startswith(("../", "/")) or folded == "..":
        return None
    return folded


def _shared_prefix(a: str, b: str) -> int:
    """How many leading directory segments ``a`` and ``b`` share."""
    count = 0
    for left, right in zip(a.split("/")[:-1], b.split("/")[:-1], strict=False):
        if left != right:
            break
        count += 1
    return count


def nearest(candidates: Sequence[str], importer: str) -> list[str]:
    """The candidates sharing the most leading directories with ``importer`` (ties all kept)."""
    if len(candidates) <= 1:
        return list(candidates)
    scored = [(_shared_prefix(candidate, importer), candidate) for candidate in candidates]
    best = max(score for score, _ in scored)
    return sorted(candidate for score, candidate in scored if score == best)


class Tree:
    """Paths of one snapshot, indexed by directory and by extension-less suffix."""

    def __init__(self, paths: Iterable[str]) -> None:
        self.files: frozenset[str] = frozenset(paths)
        self.by_dir: dict[str, list[str]] = {}
        self._stems: dict[str, list[str]] = {}
        self._dir_suffixes: dict[str, list[str]] = {}
        for path in sorted(self.files):
            self.by_dir.setdefault(dirname(path), []).append(path)
            segments = stem_of(path).split("/")
            for start in range(len(segments)):
                self._stems.setdefault("/".join(segments[start:]), []).append(path)
        for directory in self.by_dir:
            segments = directory.split("/") if directory else []
            for start in range(len(segments)):
                self._dir_suffixes.setdefault("/".join(segments[start:]), []).append(directory)
        self.dirs: frozenset[str] = frozenset(self._all_dirs())

    def _all_dirs(self) -> set[str]:
        found: set[str] = set()
        for start in self.by_dir:
            directory = start
            while directory and directory not in found:
                found.add(directory)
                directory = dirname(directory)
        return found

    def __contains__(self, path: object) -> bool:
        return path in self.files

    def by_stem_suffix(self, suffix: str) -> list[str]:
        """Files whose extension-less path ends with ``suffix`` at a segment boundary."""
        return self._stems.get(suffix, [])

    def dirs_by_suffix(self, suffix: str) -> list[str]:
        """Directories (that hold files directly) whose path ends with ``suffix``."""
        return self._dir_suffixes.get(suffix, [])

    def first_existing(self, candidates: Iterable[str]) -> str | None:
        for candidate in candidates:
            if candidate in self.files:
                return candidate
        return None
