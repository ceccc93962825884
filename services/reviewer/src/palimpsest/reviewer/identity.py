"""Finding identity: a fingerprint that survives pushes, and whether a finding's anchor is still there.

A finding is anchored on the lines it points at (head side for added and context lines, base side
for removed ones). Its fingerprint hashes:

* the path;
* the anchoring code's content (each line stripped, blank lines left out) — not the line numbers,
  so the same problem keeps its fingerprint when lines above it move;
* the enclosing symbol (the nearest definition above the anchor that is less indented);
* the category (lower case) and the message normalised (lower case, numbers and punctuation
  folded, whitespace collapsed: a model that says "line 12" one time and "line 14" the next
  still reports the same problem).

A later push resolves an earlier finding when its anchor — the same normalised lines — is no
longer in the file at the new head (changed or vanished): :func:`anchor_present`.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import replace

from palimpsest.index.context.diff import definition_name
from palimpsest.index.context.finding import Finding

__all__ = [
    "anchor_hash",
    "anchor_present",
    "enclosing_symbol",
    "fingerprint",
    "identify",
    "normalise_message",
]

_NUMBER = re.compile(r"\d+")
_PUNCT = re.compile(r"[^\w#]+")


def normalise_message(message: str) -> str:
    folded = _NUMBER.sub("#", message.lower())
    return " ".join(_PUNCT.sub(" ", folded).split())


def _anchor(lines: list[str]) -> list[str]:
    return [line.strip() for line in lines if line.strip()]


def anchor_hash(lines: list[str]) -> str:
    return hashlib.sha256("\n".join(_anchor(lines)).encode("utf-8", "replace")).hexdigest()[:32]


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def enclosing_symbol(lines: list[str], start: int) -> str | None:
    """The nearest definition at or above line ``start`` (1-based) that encloses it."""
    if not 1 <= start <= len(lines):
        return None
    first = next((ln for ln in lines[start - 1 :] if ln.strip()), lines[start - 1])
    limit = _indent(first)
    for i in range(start - 1, -1, -1):
        line = lines[i]
        if not line.strip():
            continue
        name = definition_name(line)
        if name is not None and (i == start - 1 or _indent(line) < limit):
            return name[:200]
    return None


def fingerprint(path: str, anchor: str, symbol: str | None, category: str, message: str) -> str:
    key = "\0".join([path, anchor, symbol or "", category.strip().lower(), normalise_message(message)])
    return hashlib.sha256(key.encode("utf-8", "replace")).hexdigest()[:32]


def identify(finding: Finding, text: str | None) -> Finding:
    """The finding with its anchor, enclosing symbol and fingerprint (``text``: the file on the
    finding's side; None when it cannot be read — the anchor is then the message alone)."""
    lines = (text or "").splitlines()
    picked = lines[finding.start_line - 1 : finding.end_line]
    anchor = anchor_hash(picked)
    symbol = enclosing_symbol(lines, finding.start_line)
    return replace(
        finding,
        fingerprint=fingerprint(finding.path, anchor, symbol, finding.category, finding.message),
        anchor_hash=anchor,
        anchor_lines=len(picked),
        symbol=symbol,
    )


def anchor_present(text: str | None, anchor: str, count: int) -> bool:
    """Whether ``count`` consecutive lines of ``text`` hash to ``anchor`` (see :func:`anchor_hash`)."""
    if text is None or count < 1:
        return False
    lines = text.splitlines()
    if count > len(lines):
        return False
    return any(anchor_hash(lines[i : i + count]) == anchor for i in range(len(lines) - count + 1))
