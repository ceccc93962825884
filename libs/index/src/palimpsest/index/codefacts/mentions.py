"""What a doc's mention claims about the repository, one answer for the analysis's doc check and
the review's left-behind check: a bare file name is the reader's own file, and a manual kept for an
older release describes that release, not the code at head."""

from __future__ import annotations

import re
from collections.abc import Iterable

__all__ = ["bare_file_name", "versioned_manual"]


def bare_file_name(written: str, source: str | None) -> bool:
    """A path written with no folder (``setup.py``, ``conf.py``, ``.env``) names a file of the
    reader's own project, not one of this repository's -- unless it is a link or a document
    reference, which resolve from the doc's folder. ``source`` is how the doc wrote the mention
    (``code``, ``fence:python``, ``link``, ``docref``, ``prose`` …)."""
    return "/" not in written.strip().strip("/") and source not in ("link", "docref")


_VERSION = re.compile(r"^(?:v|version[-_]?)?(\d+)((?:[._-](?:\d+|x))*)$", re.I)


def _version_key(segment: str) -> tuple[int, ...] | None:
    """The version a folder is named for (``v1``, ``v2.x``, ``version-1.x``, ``1.4``), or None: a
    bare number (``docs/2/``) is a version only when written with a ``v``, a ``version-`` or a dot."""
    found = _VERSION.match(segment)
    if found is None or segment.isdigit():
        return None
    rest = [int(p) for p in re.split(r"[._-]", found.group(2)) if p.isdigit()]
    return (int(found.group(1)), *rest)


def versioned_manual(doc: str, docs: Iterable[str]) -> tuple[str, str] | None:
    """The manual for an older release ``doc`` belongs to, and the newer one beside it: a folder
    named for a version (``docs/v1/``, ``v2.x/``, ``versioned_docs/version-1.x/``) with a sibling
    folder of docs named for a newer version. A manual kept for an old major release describes
    that release's code on purpose; it is reported once, as a whole, never line by line."""
    parts = doc.split("/")
    for i, segment in enumerate(parts[:-1]):
        mine = _version_key(segment)
        if mine is None:
            continue
        parent = "/".join(parts[:i])
        newer: list[tuple[tuple[int, ...], str]] = []
        for other in docs:
            other_parts = other.split("/")
            if len(other_parts) > i + 1 and "/".join(other_parts[:i]) == parent:
                key = _version_key(other_parts[i])
                if key is not None and key > mine:
                    newer.append((key, "/".join(other_parts[: i + 1])))
        if newer:
            return "/".join(parts[: i + 1]), max(newer)[1]
    return None
