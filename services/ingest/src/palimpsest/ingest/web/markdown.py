"""Stored Markdown (analyses, review summaries: model output is untrusted) rendered safely.

Raw HTML is off (a ``<script>`` in the text is shown as text), images are not rendered (no
requests to hosts the text names), and links keep only http, https and mailto schemes or
relative targets; every other scheme (``javascript:``, ``data:``, ``vbscript:``…) is not a link.
"""

from __future__ import annotations

import re

from markdown_it import MarkdownIt
from markupsafe import Markup

__all__ = ["render_markdown"]

_SCHEME = re.compile(r"^\s*([a-zA-Z][a-zA-Z0-9+.-]*):")
_ALLOWED = frozenset({"http", "https", "mailto"})


def _safe_link(url: str) -> bool:
    found = _SCHEME.match(url)
    return found is None or found.group(1).lower() in _ALLOWED


_MD = MarkdownIt(
    "commonmark", {"html": False, "linkify": False, "typographer": False, "breaks": True}
).enable("table")
_MD.disable("image")
_MD.validateLink = _safe_link  # type: ignore[method-assign]


def render_markdown(text: str | None) -> Markup:
    """HTML for ``text``; markdown-it escapes all text and attributes itself."""
    return Markup(_MD.render(text or ""))  # noqa: S704 - raw HTML is disabled; output is escaped
