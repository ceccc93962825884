"""The two collapsed sections that end every pull request's summary comment, model or not.

* **Context used** — the review's top context items, each ``path:lines``, its source and why it
  was chosen, and how many chunks the token budget left out;
* **Usually changes with these, not in this pull request** — the co-change warning
  (:func:`palimpsest.index.cochange.missing_partners`: the one list the brief, ``review --json``,
  MCP and the web view show too), each with its reason.

Both are bounded: at most ``MAX_ITEMS`` context lines and the warning's own length, and the whole
comment within the provider's limit (:data:`COMMENT_LIMITS`): when the summary and its findings
leave too little room, context lines go first (counted as left out), then the text is cut. Every
untrusted string (paths, reasons, model text is not touched here) is HTML-escaped so that it
cannot close the ``<details>`` it sits in.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["COCHANGE_TITLE", "COMMENT_LIMITS", "CONTEXT_TITLE", "MAX_ITEMS", "context_sections", "fit"]

COMMENT_LIMITS: Mapping[str, int] = {
    "github": 65_536,  # characters of an issue comment's body
    "gitlab": 1_000_000,  # characters of a note
    "bitbucket": 32_768,  # characters of a pull request comment (Bitbucket Cloud)
}
CONTEXT_TITLE = "Context used"
COCHANGE_TITLE = "Usually changes with these, not in this pull request"
MAX_ITEMS = 25  # context lines shown at most; the rest are counted
CUT_NOTE = "\n… (cut to fit the provider's comment limit)\n"


def _text(value: Any) -> str:
    """Untrusted text for a Markdown line inside HTML: escaped, on one line, bounded."""
    return html.escape(" ".join(str(value).split()), quote=False)[:300]


def _context_lines(context: Sequence[Mapping[str, Any]], limit: int) -> list[str]:
    out = []
    for item in context[:limit]:
        where = f"{_text(item['repository'])}: " if item.get("repository") else ""
        lines = f"{item.get('start_line')}-{item.get('end_line')}"
        why = f" — {_text(item['reason'])}" if item.get("reason") else ""
        note = f" {_text(item['annotation'])}" if item.get("annotation") else ""
        out.append(
            f"- `{where}{_text(item.get('path', ''))}:{lines}` ({_text(item.get('source', ''))}){note}{why}"
        )
    return out


def context_sections(
    context: Sequence[Mapping[str, Any]],
    dropped: Sequence[Mapping[str, Any]],
    cochange: Sequence[Mapping[str, Any]],
    *,
    max_items: int = MAX_ITEMS,
) -> str:
    """Both sections as Markdown (collapsed ``<details>`` blocks), ``max_items`` context lines at most."""
    budget = sum(1 for d in dropped if d.get("reason") == "budget")
    context = sorted(context, key=lambda c: -float(c.get("score") or 0.0))  # the top items first
    shown = min(len(context), max(max_items, 0))
    lines = ["<details>", f"<summary>{CONTEXT_TITLE} ({len(context)} item(s))</summary>", ""]
    lines += _context_lines(context, shown) or ["- nothing from the index."]
    rest = []
    if len(context) > shown:
        rest.append(f"{len(context) - shown} more item(s) not shown here")
    if budget:
        rest.append(f"{budget} chunk(s) left out by the token budget")
    if rest:
        lines += ["", "; ".join(rest).capitalize() + "."]
    lines += ["", "</details>", ""]
    lines += ["<details>", f"<summary>{COCHANGE_TITLE} ({len(cochange)})</summary>", ""]
    if cochange:
        for partner in cochange:
            reason = partner.get("reason")
            lines.append(f"- `{_text(partner.get('path', ''))}`" + (f": {_text(reason)}" if reason else ""))
    else:
        lines.append("- nothing: no file's history clears the bar.")
    lines += ["", "</details>"]
    return "\n".join(lines)


def fit(
    provider: str,
    head: str,
    context: Sequence[Mapping[str, Any]],
    dropped: Sequence[Mapping[str, Any]],
    cochange: Sequence[Mapping[str, Any]],
    tail: str,
) -> str:
    """``head`` (the summary and its findings), the two sections and ``tail`` (the marker) within
    the provider's comment limit: fewer context lines first, then ``head`` cut."""
    limit = COMMENT_LIMITS.get(provider, min(COMMENT_LIMITS.values()))
    items = MAX_ITEMS
    sections = context_sections(context, dropped, cochange, max_items=items)
    while items > 0 and len(head) + len(sections) + len(tail) + 4 > limit:
        items //= 2
        sections = context_sections(context, dropped, cochange, max_items=items)
    room = limit - len(sections) - len(tail) - 4
    if len(head) > room:
        head = head[: max(room - len(CUT_NOTE), 0)] + CUT_NOTE
    return f"{head}\n\n{sections}\n\n{tail}"
