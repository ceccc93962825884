"""What a doc's mention claims about the repository: one answer for the analysis's doc check and
the review's left-behind check."""

from __future__ import annotations

__all__ = ["bare_file_name"]


def bare_file_name(written: str, source: str | None) -> bool:
    """A path written with no folder (``setup.py``, ``conf.py``, ``.env``) names a file of the
    reader's own project, not one of this repository's -- unless it is a link or a document
    reference, which resolve from the doc's folder. ``source`` is how the doc wrote the mention
    (``code``, ``fence:python``, ``link``, ``docref``, ``prose`` …)."""
    return "/" not in written.strip().strip("/") and source not in ("link", "docref")
