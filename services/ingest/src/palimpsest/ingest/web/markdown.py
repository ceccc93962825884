"""Stored Markdown (analyses, review summaries: model output is untrusted) rendered safely.

Raw HTML is off (a ``<script>`` in the text is shown as text), images are not rendered (no
requests to hosts the text names), and links keep only http, https and mailto schemes or
relative targets; every other scheme (``javascript:``, ``data:``, ``vbscript:``…) is not a link.

Paths and dunder names in the prose are code: ``src/jinja2/__init__.py`` is shown as written,
never as "src/jinja2/**init**.py" (Markdown emphasis read into its underscores). Before parsing,
such tokens outside code, link targets and URLs are put in backticks, and bare http(s) URLs
become autolinks (``https://host/__x__/`` is not bold either).
"""

from __future__ import annotations

import re

from markdown_it import MarkdownIt
from markupsafe import Markup

__all__ = ["paths_as_code", "render_inline", "render_markdown"]

_SCHEME = re.compile(r"^\s*([a-zA-Z][a-zA-Z0-9+.-]*):")
_ALLOWED = frozenset({"http", "https", "mailto"})


# Left alone: fenced code, code spans, link targets, autolinks, URLs. Code: paths, dunder names.
_TOKENS = re.compile(
    r"(?P<fence>^[ \t]{0,3}(?P<mark>```+|~~~+)[^\n]*\n(?:[\s\S]*?^[ \t]{0,3}(?P=mark)[ \t]*$|[\s\S]*\Z))"
    r"|(?P<span>(?P<ticks>`+)[\s\S]*?(?<!`)(?P=ticks)(?!`))"
    r"|(?P<target>\]\([^)\n]*\))"
    r"|(?P<auto><[a-zA-Z][a-zA-Z0-9+.-]*:[^<>\s]*>)"
    r"|(?P<url>\b[a-zA-Z][a-zA-Z0-9+.-]*://[^\s<>]*)"
    r"|(?<![\w/`.\\*-])(?P<path>[\w.][\w.@+*-]*(?:/[\w.@+*-]+)+/?|__\w+__)(?![\w/`])",
    re.M,
)


def _as_code(found: re.Match[str]) -> str:
    url = found.group("url")
    if url is not None and url.lower().startswith(("http://", "https://")):
        kept = url.rstrip(".,;:!?)'\"")  # a sentence's punctuation is not the URL's
        return f"<{kept}>{url[len(kept) :]}"  # an autolink: its underscores are not emphasis
    token = found.group("path")
    if token is None:
        return found.group(0)
    token, tail = token.rstrip("."), token[len(token.rstrip(".")) :]  # a sentence's full stop
    last = token.rstrip("/").rsplit("/", 1)[-1]
    if not any(c.isalpha() for c in token):  # 2024/01/02, 1/2: numbers, not paths
        return found.group(0)
    if token.startswith("__") or "_" in token or "*" in token or "." in last or token.count("/") > 1:
        return f"`{token}`{tail}"
    return found.group(0)  # "and/or", "read/write": words, not paths


def paths_as_code(text: str) -> str:
    """``text`` with its paths and dunder names in backticks (outside code, link targets, URLs)."""
    return _TOKENS.sub(_as_code, text)


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
    return Markup(_MD.render(paths_as_code(text or "")))  # noqa: S704 - raw HTML is disabled; output is escaped


def render_inline(text: str | None) -> Markup:
    """One line of Markdown (a co-change reason: ``changed with `src/a.py` …``) as inline HTML."""
    return Markup(_MD.renderInline(paths_as_code(text or "")))  # noqa: S704 - as render_markdown
