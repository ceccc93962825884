"""Markdown the analyzer stores: the mechanical report, the model's sections with their evidence.

With no model (or when the model failed) the analysis is still useful: the selection facts
(languages, the top-ranked files, a doc freshness table) and the mechanical documentation check,
with a plain statement of which sections need a model. With a model, its seven sections come
first and the mechanical check follows as an appendix, so every claim in Documentation Accuracy
can be traced to evidence that did not come from the model.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import NotRequired, TypedDict

from palimpsest.analyzer.doccheck import DocFinding
from palimpsest.analyzer.prompts import SECTION_TITLES, RepositoryFacts
from palimpsest.analyzer.proof import DocCheck
from palimpsest.analyzer.selection import Selection
from palimpsest.analyzer.snapshot import SnapshotIndex
from palimpsest.index.docstates import DocState
from palimpsest.index.staleness import FileKind, is_stale, stale_annotation

MAX_TABLE_ROWS = 40
NARRATIVE = SECTION_TITLES[:-1]
MODEL_SETTINGS = "PALIMPSEST_LLM_MODEL (with PALIMPSEST_LLM_API_BASE and PALIMPSEST_LLM_API_KEY)"


def _day(when: datetime | None) -> str:
    return when.date().isoformat() if when is not None else "unknown"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


# ----------------------------------------------------------------------------- facts


class TopFile(TypedDict):
    """A selected file: its chunks, and why the selection took it (the first chunk's reason)."""

    path: str
    kind: FileKind
    last_modified_at: str | None  # ISO
    stale: bool
    chunks: int
    why: str
    primary: bool
    state: NotRequired[DocState]  # a doc's state by the documentation check


class DocFreshness(TypedDict):
    path: str
    last_modified_at: str | None  # ISO
    stale: bool
    age: str | None
    state: NotRequired[DocState]


class LanguageCount(TypedDict):
    language: str
    files: int


class PackageRoot(TypedDict):
    root: str
    declared_by: str


class SelectionFacts(TypedDict):
    """``analyses.facts``: what the selection saw, and (``doc_check``) what the doc check read."""

    files: int
    code_files: int
    doc_files: int
    chunks: int
    dated_files: int
    median_code: str | None  # ISO
    languages: list[LanguageCount]
    primary_packages: list[PackageRoot]
    primary_share: float | None
    top_files: list[TopFile]
    doc_freshness: list[DocFreshness]
    doc_check: NotRequired[DocCheck]


def selection_facts(index: SnapshotIndex, selection: Selection) -> SelectionFacts:
    """Languages, top-ranked files and doc freshness: JSON for ``analyses.facts`` and the report."""
    median = index.median_code
    languages = Counter(f.language or "other" for f in index.files if f.skip_reason is None)
    ranked: dict[str, TopFile] = {}
    for chunk in selection.chunks:
        entry = ranked.setdefault(
            chunk.path,
            {
                "path": chunk.path,
                "kind": chunk.kind,
                "last_modified_at": chunk.last_modified_at.isoformat() if chunk.last_modified_at else None,
                "stale": chunk.stale,
                "chunks": 0,
                "why": chunk.why,  # the first chunk's
                "primary": chunk.primary,
            },
        )
        entry["chunks"] += 1
    docs = sorted(
        (f for f in index.files if f.kind == "doc"),
        key=lambda f: (
            not is_stale(f.path, f.last_modified_at, median),  # stale first
            f.last_modified_at is None,  # then oldest first, unknown last
            f.last_modified_at.timestamp() if f.last_modified_at else 0.0,
            f.path,
        ),
    )
    return {
        "files": len(index.files),
        "code_files": sum(1 for f in index.files if f.kind == "code"),
        "doc_files": sum(1 for f in index.files if f.kind == "doc"),
        "chunks": len(index.chunks),
        "dated_files": sum(1 for f in index.files if f.last_modified_at is not None),
        "median_code": median.isoformat() if median else None,
        "languages": [{"language": lang, "files": n} for lang, n in languages.most_common()],
        "primary_packages": _packages(selection),
        "primary_share": _primary_share(selection),
        "top_files": list(ranked.values()),
        "doc_freshness": [
            {
                "path": f.path,
                "last_modified_at": f.last_modified_at.isoformat() if f.last_modified_at else None,
                "stale": is_stale(f.path, f.last_modified_at, median),
                "age": stale_annotation(f.path, f.last_modified_at, median),
            }
            for f in docs
        ],
    }


def apply_doc_states(facts: SelectionFacts, states: Mapping[str, DocState]) -> None:
    """Give the freshness table and the selected files the doc check's states: a doc is ``stale``
    only when it is ``unverified_old`` (an old doc whose claims hold is verified, an old page of
    generated-reference directives is never stale)."""
    entries: list[TopFile | DocFreshness] = [*facts["doc_freshness"], *facts["top_files"]]
    for entry in entries:
        state = states.get(entry["path"])
        if state is not None:
            entry["state"] = state
            entry["stale"] = state == "unverified_old"
    facts["doc_freshness"].sort(key=lambda d: not d["stale"])  # stable: oldest first within each


def _packages(selection: Selection) -> list[PackageRoot]:
    found = selection.packages
    if found is None:
        return []
    return [{"root": root, "declared_by": found.declared_by.get(root, "")} for root in found.roots]


def _primary_share(selection: Selection) -> float | None:
    """The share of selected code chunks that are source of a primary package."""
    code = selection.code
    return round(sum(1 for c in code if c.primary) / len(code), 3) if code else None


# ----------------------------------------------------------------------------- sections


def _header(repo: RepositoryFacts, mode: str) -> list[str]:
    return [f"# Repository analysis: {repo.name}", "", f"_Commit `{repo.commit_sha[:12]}` · {mode}_", ""]


def _package_list(facts: SelectionFacts) -> str:
    found = facts.get("primary_packages") or []
    if not found:
        return "none found"
    return ", ".join(f"`{p['root'] or '.'}` ({p['declared_by']})" for p in found[:8])


def _share(facts: SelectionFacts) -> str:
    share = facts.get("primary_share")
    return f"{share:.0%}" if isinstance(share, float) else "none"


def _facts_section(facts: SelectionFacts) -> list[str]:
    median = facts.get("median_code")
    langs = ", ".join(f"{x['language']} ({x['files']})" for x in facts["languages"][:12]) or "none"
    lines = [
        "## Selection facts",
        "",
        f"- {facts['files']} files ({facts['code_files']} code, {facts['doc_files']} docs), {facts['chunks']} chunks;"
        f" {facts['dated_files']} files with a known last-modified date.",
        f"- Median code-file date: {median[:10] if median else 'unknown (no recency data)'}.",
        f"- Languages (files): {langs}.",
        "",
        f"- Primary source packages: {_package_list(facts)}; {_share(facts)} of the selected code chunks"
        " come from them.",
        "",
        "### Selected files (what the analysis reads, and why)",
        "",
        "| # | file | kind | last modified | chunks | why |",
        "|---|---|---|---|---|---|",
    ]
    for number, entry in enumerate(facts["top_files"][:MAX_TABLE_ROWS], start=1):
        when = entry["last_modified_at"][:10] if entry["last_modified_at"] else "unknown"
        stale = " (stale)" if entry["stale"] else ""
        why = _cell(entry.get("why") or "")
        lines.append(
            f"| {number} | `{_cell(entry['path'])}` | {entry['kind']}{stale} | {when} | {entry['chunks']} | {why} |"
        )
    if len(facts["top_files"]) > MAX_TABLE_ROWS:
        lines.append(f"| … | {len(facts['top_files']) - MAX_TABLE_ROWS} more | | | | |")
    lines += ["", "### Documentation freshness", ""]
    docs = facts["doc_freshness"]
    if not docs:
        lines.append("The snapshot has no documentation files.")
        return lines
    lines += ["| doc | last modified | status |", "|---|---|---|"]
    for doc in docs[:MAX_TABLE_ROWS]:
        when = doc["last_modified_at"][:10] if doc["last_modified_at"] else "unknown"
        state = doc.get("state")
        if doc["stale"]:
            status = f"unverified and old — {doc['age']}" if state else f"stale — {doc['age']}"
        elif state in _STATE_TEXT:
            status = _STATE_TEXT[state]
        elif doc["last_modified_at"] is None:
            status = "age unknown"
        else:
            status = "current"
        lines.append(f"| `{_cell(doc['path'])}` | {when} | {status} |")
    if len(docs) > MAX_TABLE_ROWS:
        lines.append(f"| … {len(docs) - MAX_TABLE_ROWS} more | | |")
    return lines


_STATE_TEXT = {
    "drift": "drift (see the documentation check)",
    "verified": "verified (its claims hold at this commit)",
    "reference": "generated reference (never stale)",
}


def findings_section(findings: Sequence[DocFinding], title: str) -> list[str]:
    lines = [title, ""]
    if not findings:
        lines.append(
            "No drift found: no identifier, path or `Governs:` target the documentation names was removed "
            "from the code by history, and no doc is both unverified and old."
        )
        return lines
    counts = Counter(f.kind for f in findings)
    lines.append(
        f"{len(findings)} finding(s): "
        + ", ".join(f"{n} {kind.replace('_', ' ')}" for kind, n in sorted(counts.items()))
        + ". Computed from the index and git history, without a model. Each drift finding names the"
        " commit at which the doc's subject last existed in the code and the commit that removed it"
        " (check them out with plain git)."
    )
    lines += [
        "",
        "| doc | line | kind | claim | last seen in code | removed in | became | doc line written |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for f in findings[: MAX_TABLE_ROWS * 3]:
        lines.append(_finding_row(f))
    if len(findings) > MAX_TABLE_ROWS * 3:
        lines.append(f"| … | | | {len(findings) - MAX_TABLE_ROWS * 3} more | | | | |")
    return lines


def _finding_row(f: DocFinding) -> str:
    claim = _cell(f.claim + (f" — {f.detail}" if f.detail and f.evidence is None else ""))
    head = f"| `{_cell(f.doc)}` | {f.line} | {f.kind.replace('_', ' ')} | {claim} |"
    e = f.evidence
    if e is None:
        return head + " | | | |"
    seen = f"`{e.last_seen_commit[:12]}` {_day(e.last_seen_at)}" + (
        f" (`{_cell(e.seen_in)}`)" if e.seen_in else ""
    )
    removed = f"`{e.removed_in_commit[:12]}` {_day(e.removed_at)}"
    became = f"`{_cell(e.renamed_to)}`" if e.renamed_to else "removed"
    written = "unknown"
    if e.line_written_at is not None:
        when = "while it existed" if e.written_while_existed else "after it was removed"
        written = f"{_day(e.line_written_at)} ({when})"
    return f"{head} {seen} | {removed} | {became} | {written} |"


def _check_line(facts: SelectionFacts) -> list[str]:
    """What the history check read, and how many named things never existed in the code."""
    check = facts.get("doc_check")
    if not check or check.get("history") == "not_needed":
        return []
    if check.get("history") != "read":
        return [
            f"_History could not be read ({check.get('reason', 'unknown reason')}): no drift finding can be"
            f" proved, so none is reported; {check.get('claims', 0)} doc reference(s) were left unchecked._",
            "",
        ]
    return [
        f"_History: {check.get('commits', 0)} commits walked, {check.get('blobs_read', 0)} old blobs read in"
        f" {check.get('seconds', 0)} s. {check.get('unverified_count', 0)} doc reference(s) name something"
        " that never existed in this repository's code (not drift; listed only with"
        " PALIMPSEST_ANALYSIS_LIST_UNVERIFIED)._",
        "",
        *_unresolved_section(check),
        *_rules_line(check),
    ]


def _unresolved_section(check: DocCheck) -> list[str]:
    """Links whose target is not in the tree and never was in history, apart from the findings:
    nothing shows this repository ever had them, so they are not drift (a path git saw removed is)."""
    count = int(check.get("unresolved_link_count") or 0)
    if not count:
        return []
    lines = [
        "### Unresolved links (not drift)",
        "",
        f"{count} relative link(s) or image(s) point at a path that is not in the tree and never was in"
        " this repository's history: a typo, a page a site generates, or a target outside the repository."
        " Not counted as findings.",
        "",
        "| doc | line | target |",
        "|---|---|---|",
    ]
    listed = check.get("unresolved_links") or []
    for item in listed[:MAX_TABLE_ROWS]:
        lines.append(f"| `{_cell(item['doc'])}` | {item['line']} | {_cell(item['claim'])} |")
    if count > min(len(listed), MAX_TABLE_ROWS):
        lines.append(f"| … | | {count - min(len(listed), MAX_TABLE_ROWS)} more |")
    return [*lines, ""]


def _rules_line(check: DocCheck) -> list[str]:
    """How many doc mentions each rule of the check decided (:mod:`palimpsest.analyzer.rules`)."""
    counted = sorted((check.get("rules") or {}).items(), key=lambda item: (-item[1], item[0]))
    if not counted:
        return []
    shown = ", ".join(f"`{name}` {n}" for name, n in counted[:12])
    return [f"_Doc mentions by the rule that decided them: {shown}._", ""]


# ----------------------------------------------------------------------------- whole reports


def mechanical_report(
    repo: RepositoryFacts,
    facts: SelectionFacts,
    findings: Sequence[DocFinding],
    *,
    model_error: str | None = None,
) -> str:
    """The analysis without a model: facts, the doc check, and what needs a model."""
    if model_error is None:
        mode = "mechanical report (no model configured)"
        notice = (
            "> **No model is configured**, so this report holds only what Palimpsest establishes without one: "
            "the selection facts and the mechanical documentation check. The narrative sections — "
            + ", ".join(NARRATIVE)
            + " — and the written assessment in Documentation Accuracy need a model: set "
            + MODEL_SETTINGS
            + " for the analyzer, or add a route for the tenant's `analysis` feature."
        )
    else:
        mode = "mechanical report (the model call failed)"
        notice = (
            f"> **The model call failed** ({model_error}); the narrative sections — "
            + ", ".join(NARRATIVE)
            + " — were not written. Below is the mechanical report; nothing else was lost."
        )
    lines = [*_header(repo, mode), notice, "", *_facts_section(facts), ""]
    lines += findings_section(findings, "## Documentation Accuracy (mechanical check)")
    lines += ["", *_check_line(facts)]
    return "\n".join(lines).rstrip() + "\n"


def model_report(repo: RepositoryFacts, text: str, findings: Sequence[DocFinding], *, model: str) -> str:
    """The model's seven sections, then the mechanical check they were given as evidence."""
    lines = [*_header(repo, f"analysed by {model}"), text.strip(), ""]
    lines += findings_section(findings, "## Appendix: mechanical documentation check")
    return "\n".join(lines).rstrip() + "\n"


def mechanical_summary(repo: RepositoryFacts, facts: SelectionFacts, findings: Sequence[DocFinding]) -> str:
    """A one-paragraph summary made of facts (the model-written one needs a model)."""
    langs = ", ".join(x["language"] for x in facts["languages"][:3]) or "no recognised language"
    stale = sum(1 for d in facts["doc_freshness"] if d["stale"])
    verified = sum(1 for d in facts["doc_freshness"] if d.get("state") == "verified")
    drift = sum(1 for f in findings if f.kind != "stale_doc")
    median = facts.get("median_code")
    return (
        f"{repo.name}: {facts['files']} files, mostly {langs}; {facts['doc_files']} docs, {verified} verified against"
        f" the code, {stale} unverified and old; "
        f"{drift} documentation claim(s) the code no longer supports"
        + (f"; typical code last modified {median[:10]}." if median else "; file ages unknown.")
    )
