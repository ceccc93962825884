"""The review itself: the prompt, the model's structured findings, or the brief without a model.

With a model routed for ``review``, the diff and the labelled context go through the LLM gateway
and the reply is read as JSON (findings and a summary). Findings that do not point at changed
lines (new side) are dropped and counted; at most ``max_findings`` are kept. A diff larger than
``max_diff_chars`` is reviewed in parts (:mod:`palimpsest.reviewer.parts`), and the summary says
so. Context from linked and pattern repositories is framed as a hint from other repositories; the
PR's own repository is authoritative. Without a model the
review is the context brief — what changed, what uses it, what usually changes with it, stale
docs in play — and says that findings need a model.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from palimpsest.core.jsonshape import JsonObject
from palimpsest.index.context.assemble import DOC_ANNOTATION, ReviewContext
from palimpsest.index.context.diff import ChangedFile
from palimpsest.index.context.finding import Finding
from palimpsest.index.context.rules import SEVERITIES

CODE_IS_AUTHORITATIVE = "Where documentation and code conflict, the code is authoritative."
OTHER_REPOSITORIES_ARE_HINTS = (
    "Context from other repositories (linked or pattern repositories) is a hint about how the code is"
    " used or usually written elsewhere; the code of this pull request's own repository is authoritative."
)
NEEDS_MODEL = (
    "No model is configured for reviews, so this review is the context brief only; findings need a"
    " model (set PALIMPSEST_LLM_REVIEW_MODEL or PALIMPSEST_LLM_MODEL, or route 'review' for the tenant)."
)
_SEVERITY_ALIASES = {"low": "minor", "medium": "major", "high": "major", "warning": "minor", "error": "major"}
SOURCE_TITLES = {
    "definitions": "Definitions of symbols the diff changes and calls",
    "usage": "Usage: places that use a changed definition",
    "related": "Related code (similarity search — a hint, not ground truth)",
    "neighbourhood": "Neighbourhood: files the code graph ranks around the changed files",
    "cochange": "Co-change partners: files that usually change with the changed files but are not in this PR",
    "linked": "Linked repository {repository} — context from another repository (a hint; this PR's"
    " repository is authoritative): definitions and uses of the changed and called symbols",
    "pattern": "Pattern repository {repository} — how related code is usually written in another"
    " repository (an example, not a rule; this PR's repository is authoritative)",
}
SYSTEM = (
    "You review pull requests. Report only real problems in the changed lines: bugs, security issues,"
    " broken contracts with the code that uses them, missing companion changes. "
    + CODE_IS_AUTHORITATIVE
    + " Answer with one JSON object and nothing else:"
    ' {"summary": "...", "findings": [{"path": "...", "start_line": 1, "end_line": 1,'
    ' "side": "new", "severity": "info|minor|major|critical", "category": "...", "message": "...",'
    ' "suggested_change": "... or null"}]}. Line numbers are new-side lines of the diff ("side": "new");'
    ' a problem in removed lines uses their old-side line numbers and "side": "old".'
    ' "suggested_change" is the exact replacement text for lines start_line..end_line (new side only).'
)


@dataclass(slots=True)
class Outcome:
    summary: str
    findings: list[Finding] = field(default_factory=list)
    findings_dropped: int = 0
    partial_diff: bool = False


def render_context(ctx: ReviewContext) -> str:
    """The labelled context block of the prompt, in prompt order."""
    lines = [
        f"Context from the code index at commit {ctx.snapshot_commit[:12]}"
        + ("" if ctx.on_base else " (not the PR's base: the newest indexed commit)")
        + ". "
        + CODE_IS_AUTHORITATIVE,
    ]
    if any(item.repository for item in ctx.items):
        lines.append(OTHER_REPOSITORIES_ARE_HINTS)
    current: tuple[str, str | None] | None = None
    for item in ctx.items:
        if (item.source, item.repository) != current:
            current = (item.source, item.repository)
            lines += ["", "### " + SOURCE_TITLES[item.source].format(repository=item.repository)]
        note = f" {item.annotation}" if item.annotation else ""
        where = f"{item.repository}: " if item.repository else ""
        why = f" — why: {item.reason}" if item.reason else ""
        lines += [
            f"// {where}{item.path}:L{item.start_line}-L{item.end_line}{note}{why}",
            item.content.rstrip(),
            "",
        ]
    if ctx.cochange_missing:
        lines += ["", "These usually change together with the changed files and are not in this PR:"]
        lines += [f"- {p['path']}: {p['reason']}" for p in ctx.cochange_missing]
    return "\n".join(lines)


INCREMENTAL_HEADING = (
    "## Diff: the changes since the last review ({commits} commit(s) since {since}; report findings"
    " on these changes only)"
)
WHOLE_HEADING = "## The whole pull request (context only: it was reviewed before)"
INSTRUCTIONS_HEADING = "## Repository instructions (from the repository's .palimpsest/config.yml)"


@dataclass(frozen=True, slots=True)
class Framing:
    """What the prompt says beside the diff: an incremental review's whole PR, the repository's rules."""

    whole: str | None = None  # incremental: the whole PR's diff (context), already cut to fit
    since: str | None = None
    commits: int = 0
    instructions: str = ""


def messages(
    ctx: ReviewContext,
    diff: str,
    title: str,
    body: str,
    *,
    part: tuple[int, int] | None = None,
    framing: Framing | None = None,
) -> list[dict[str, str]]:
    """The chat messages; ``part`` = (i, n) when the diff is reviewed in n parts."""
    framing = framing or Framing()
    heading = "## Diff"
    if framing.whole is not None:
        heading = INCREMENTAL_HEADING.format(commits=framing.commits, since=(framing.since or "")[:12])
    if part is not None and part[1] > 1:
        heading += (
            f" (part {part[0]} of {part[1]}: the other parts are reviewed separately;"
            " report findings in the files shown here)"
        )
    lines = [f"## Pull request: {title}".rstrip(), body.strip(), ""]
    if framing.instructions:
        lines += [INSTRUCTIONS_HEADING, framing.instructions, ""]
    lines += [heading, "```diff", diff.rstrip(), "```", ""]
    if framing.whole is not None:
        lines += [WHOLE_HEADING, "```diff", framing.whole.rstrip(), "```", ""]
    lines += ["## Codebase context", render_context(ctx)]
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "\n".join(lines)}]


def read_reply(text: str, files: Sequence[ChangedFile], *, max_findings: int, left_out: int) -> Outcome:
    """The model's JSON reply → findings on changed lines (the rest dropped and counted)."""
    data = _json_object(text)
    raw = data.get("findings") if isinstance(data.get("findings"), list) else []
    by_path = {f.path: f for f in files}
    kept: list[Finding] = []
    dropped = 0
    for entry in raw or []:
        finding = _finding(entry)
        target = by_path.get(finding.path) if finding is not None else None
        if finding is None or target is None or not _on_changed_lines(finding, target):
            dropped += 1
            continue
        if len(kept) >= max_findings:
            dropped += 1
            continue
        kept.append(finding)
    summary = str(data.get("summary") or "").strip() or (text.strip() if not data else "")
    if left_out:
        summary += (
            f"\n\n(The diff was too large to review whole: {left_out} changed file(s) were not shown to"
            " the model; this review covers the rest.)"
        )
    return Outcome(summary.strip(), kept, dropped, partial_diff=bool(left_out))


def _on_changed_lines(finding: Finding, target: ChangedFile) -> bool:
    if finding.side == "old":
        return target.touches_old(finding.start_line, finding.end_line)
    return target.touches(finding.start_line, finding.end_line)


def _json_object(text: str) -> JsonObject:
    cleaned = re.sub(r"^```(?:json)?\s*|\s*```\s*$", "", text.strip())
    start, end = cleaned.find("{"), cleaned.rfind("}")
    if start < 0 or end <= start:
        return {}
    try:
        data = json.loads(cleaned[start : end + 1])
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def _finding(entry: Any) -> Finding | None:
    if not isinstance(entry, dict):
        return None
    try:
        start = int(entry.get("start_line") or entry.get("line") or 0)
        end = int(entry.get("end_line") or start)
    except (TypeError, ValueError):
        return None
    path, message = str(entry.get("path") or ""), str(entry.get("message") or "").strip()
    if not path or not message or start < 1:
        return None
    severity = str(entry.get("severity") or "info").lower()
    severity = _SEVERITY_ALIASES.get(severity, severity)
    suggestion = entry.get("suggested_change")
    side = "old" if str(entry.get("side") or "new").lower() in ("old", "left", "base") else "new"
    return Finding(
        path=path,
        start_line=start,
        end_line=max(start, end),
        severity=severity if severity in SEVERITIES else "info",
        category=(str(entry.get("category") or "other").strip() or "other")[:100],
        message=message[:10000],
        suggested_change=str(suggestion)[:20000] if suggestion and side == "new" else None,
        side=side,
    )


BRIEF_LIST = 10  # names a line of the brief lists at most; the rest are counted


def capped(names: Sequence[str], most: int = BRIEF_LIST) -> str:
    """``names`` joined, at most ``most`` of them, with a count of the rest."""
    shown = ", ".join(names[:most])
    return shown + (f" and {len(names) - most} more" if len(names) > most else "")


def brief(ctx: ReviewContext, files: Sequence[ChangedFile], why: str = NEEDS_MODEL) -> str:
    """The review without a model: what changed, what uses it, what usually changes with it, then
    ``why`` there are no findings — no model configured, or the model call that failed (one of the
    two, never both).

    Markdown (the web view and the providers render it): each part is a paragraph of its own, so
    a line after a list never reads as a continuation of the list's last item."""
    lines = [f"What changed: {len(files)} file(s)."]
    lines += [f"- {f.path} ({f.status}, +{len(f.added)} -{len(f.removed)})" for f in files[:BRIEF_LIST]]
    if len(files) > BRIEF_LIST:
        lines.append(f"- … and {len(files) - BRIEF_LIST} more")
    users = sorted({i.path for i in ctx.items if i.source == "usage"})
    lines.append("")
    lines.append(
        "What uses it: " + (capped(users) if users else "no indexed usages of the changed definitions.")
    )
    lines.append("")
    lines.append(
        "What usually changes with it (not in this PR):" + ("" if ctx.cochange_missing else " nothing.")
    )
    lines += [f"- {p['path']}: {p['reason']}" for p in ctx.cochange_missing]
    lines.append("")
    # one line per doc: in the context (with its marker) or left out as stale, never both; the
    # marker's own parentheses are the note's (never "((documentation …), …)")
    docs = list(
        dict.fromkeys(
            f"{i.path} ({i.annotation.replace(DOC_ANNOTATION, DOC_ANNOTATION[1:-1])})"
            for i in ctx.items
            if i.annotation and DOC_ANNOTATION in i.annotation
        )
    )
    shown = {i.path for i in ctx.items}
    stale, drift = (
        list(
            dict.fromkeys(d["path"] for d in ctx.dropped if d["reason"] == reason and d["path"] not in shown)
        )
        for reason in ("stale_doc", "drift_doc")
    )
    lines.append(
        "Documentation in play: "
        + (capped(docs) if docs else "none")
        + (f"; stale docs left out: {capped(stale)}" if stale else "")
        + (f"; docs with proved drift left out: {capped(drift)}" if drift else "")
        + "."
    )
    others = list(dict.fromkeys(f"{i.repository} ({i.source})" for i in ctx.items if i.repository))
    if others:
        lines += ["", "Context from other repositories (hints): " + ", ".join(others) + "."]
    lines += ["", why]
    return "\n".join(lines)
