"""``palimpsest bench drift-future --repo R --at-months-ago 12``: does the future agree with the check?

No hand judgement: the repository is analysed as it was N months before its head (the newest
first-parent commit at least that old), through the bus like any repository, and each doc line
the check flagged then (a finding about a line: ``missing_identifier``, ``missing_path``,
``unmatched_governs``) is looked up in the history since: did the maintainers change or remove it
by the head? That share is set beside the *base rate*, the share of all non-blank lines of the same
documents that changed in the same period, and their ratio is the *lift*: 1 means the check
points at lines no likelier to be fixed than any line of those docs; well above 1, it points at
what maintainers themselves found wrong. Unresolved links (not findings) are measured apart.

Only git is read for the fate of a line (``git diff -U0 -M`` from the base to the head, a doc
renamed since followed to its new path; a doc deleted since has every line removed).
"""

from __future__ import annotations

import tempfile
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from palimpsest.cli.output import progress
from palimpsest.cli.session import Session
from palimpsest.core.settings import BaseServiceSettings
from palimpsest.core.wire import parse_hunk_header
from palimpsest.devtools.bench.drift_history import git_text

__all__ = ["DocFate", "base_commit", "doc_fates", "future_report", "run_bench_drift_future"]

LINE_KINDS = ("missing_identifier", "missing_path", "unmatched_governs")
_DAYS_PER_MONTH = 30.44


@dataclass(slots=True)
class DocFate:
    """What became of one doc's lines between the base and the head."""

    lines: int = 0  # non-blank lines at the base
    written: int = 0  # all lines at the base
    changed: set[int] = field(default_factory=set)  # base line numbers changed or removed since
    blank: set[int] = field(default_factory=set)  # blank lines at the base (not counted)
    now: str | None = None  # its path at the head (None: deleted)


def base_commit(repo: Path, months: int, rev: str = "HEAD") -> tuple[str, str]:
    """The head commit and the newest first-parent commit at least ``months`` older than it
    (by committer date): the snapshot the check is run on."""
    head, stamp = git_text(repo, "log", "-1", "--format=%H %ct", rev).split()
    before = datetime.fromtimestamp(int(stamp), UTC) - timedelta(days=months * _DAYS_PER_MONTH)
    base = git_text(repo, "rev-list", "--first-parent", "-n1", f"--before={before.isoformat()}", rev).strip()
    if not base:
        raise RuntimeError(f"the history of {rev} does not reach back {months} months")
    return head, base


def doc_fates(repo: Path, base: str, head: str, docs: set[str]) -> dict[str, DocFate]:
    """For each doc (a path at ``base``), its non-blank lines and which of them changed by ``head``."""
    fates: dict[str, DocFate] = {}
    for doc in sorted(docs):
        text = git_text(repo, "show", f"{base}:{doc}", ok=(0, 128))
        numbered = text.splitlines()
        blank = {n for n, line in enumerate(numbered, start=1) if not line.strip()}
        fates[doc] = DocFate(lines=len(numbered) - len(blank), written=len(numbered), blank=blank)
    if not fates:
        return fates
    renamed: dict[str, str] = {}
    deleted: set[str] = set()
    for row in git_text(repo, "diff", "--name-status", "-M", base, head).splitlines():
        parts = row.split("\t")
        if parts[0].startswith("R") and parts[1] in fates:
            renamed[parts[1]] = parts[2]
        elif parts[0] == "D" and parts[1] in fates:
            deleted.add(parts[1])
    for doc, fate in fates.items():
        if doc in deleted:
            fate.changed = set(range(1, fate.written + 1)) - fate.blank
            continue
        fate.now = renamed.get(doc, doc)
        args = ["diff", "-U0", "-M", base, head, "--", doc] + ([fate.now] if fate.now != doc else [])
        for line in git_text(repo, *args).splitlines():
            hunk = parse_hunk_header(line)
            if hunk is not None:
                fate.changed.update(range(hunk.old_start, hunk.old_start + hunk.old_count))
        fate.changed -= fate.blank
    return fates


def future_report(flagged: list[dict[str, Any]], fates: dict[str, DocFate]) -> dict[str, Any]:
    """The share of flagged lines changed by now, the base rate of their docs' lines, the lift."""
    lines = {(f["doc"], f["line"]) for f in flagged}
    changed = {(doc, n) for doc, n in lines if doc in fates and n in fates[doc].changed}
    total = sum(fates[doc].lines for doc in {d for d, _ in lines} if doc in fates)
    moved = sum(len(fates[doc].changed) for doc in {d for d, _ in lines} if doc in fates)
    share = len(changed) / len(lines) if lines else None
    base = moved / total if total else None
    by_kind: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for f in flagged:
        key = (f["doc"], f["line"])
        by_kind[f["kind"]][1] += 1
        by_kind[f["kind"]][0] += key in changed
    return {
        "flagged_lines": len(lines),
        "flagged_changed": len(changed),
        "flagged_share": round(share, 4) if share is not None else None,
        "doc_lines": total,
        "doc_lines_changed": moved,
        "base_rate": round(base, 4) if base is not None else None,
        "lift": round(share / base, 3) if share is not None and base else None,
        "by_kind": {kind: {"changed": n, "of": of} for kind, (n, of) in sorted(by_kind.items())},
        "lines": [
            {**f, "changed_by_now": (f["doc"], f["line"]) in changed}
            for f in sorted(flagged, key=lambda f: (f["doc"], f["line"]))
        ][:300],
    }


async def run_bench_drift_future(
    sess: Session,
    settings: BaseServiceSettings,
    repo: Path,
    *,
    months: int,
    timeout_s: float = 7200.0,
) -> dict[str, Any]:
    from palimpsest.cli.commands_analyze import run_analysis
    from palimpsest.devtools.bench.analyze import unresolved_links

    head, base = base_commit(repo, months)
    progress(f"analysing {base[:12]} ({months} months before {head[:12]}) through the bus…")
    with tempfile.TemporaryDirectory(prefix="palimpsest-drift-future-") as scratch:
        clone = Path(scratch) / repo.name
        git_text(Path(scratch), "clone", "--quiet", "--shared", str(repo), str(clone))
        git_text(clone, "checkout", "--quiet", "-B", "drift-future", base)  # a branch: indexed as any
        view = await run_analysis(sess, settings, str(clone), reindex=True, timeout_s=timeout_s)
    flagged: list[dict[str, Any]] = [
        {k: f.get(k) for k in ("doc", "line", "kind", "claim", "detail")}
        for f in view["doc_findings"]
        if f["kind"] in LINE_KINDS
    ]
    links: list[dict[str, Any]] = [
        {k: u.get(k) for k in ("doc", "line", "kind", "claim")} for u in unresolved_links(view)
    ]
    fates = doc_fates(repo, base, head, {f["doc"] for f in flagged} | {u["doc"] for u in links})
    kinds: dict[str, int] = defaultdict(int)
    for f in view["doc_findings"]:
        kinds[f["kind"]] += 1
    return {
        "repository": str(repo),
        "head": head,
        "base": base,
        "months": months,
        "findings_by_kind": dict(sorted(kinds.items())),
        **future_report(flagged, fates),
        # links no history showed existed: not findings; their fate, measured the same way
        "unresolved_links": {k: v for k, v in future_report(links, fates).items() if k != "by_kind"},
    }
