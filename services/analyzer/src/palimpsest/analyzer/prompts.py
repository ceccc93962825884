"""The messages the model receives for an analysis and for a summary.

Both carry the framing line that makes documentation a claim to verify, never a fact; the
analysis additionally asks for seven fixed sections — the seventh, Documentation Accuracy, fed
with the mechanical check's findings as evidence. The summary stays short: framing line only.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from palimpsest.analyzer.context import format_context
from palimpsest.analyzer.doccheck import DocFinding
from palimpsest.analyzer.selection import Selection
from palimpsest.core.llm import Message

FRAMING = (
    "Documentation excerpts describe intent at the time they were written. Verify claims against the "
    "code; never repeat a documentation claim as fact without code evidence."
)

SECTIONS: tuple[tuple[str, str], ...] = (
    (
        "Architecture Overview",
        "How the system is structured: its components, layers, entry points and the flow of data "
        "between them, as the code shows it.",
    ),
    (
        "Tech Stack",
        "Languages, frameworks, libraries, storage and infrastructure the code actually uses.",
    ),
    (
        "Code Quality",
        "Structure, naming, typing, error handling, tests and consistency, with concrete examples "
        "(cite file paths).",
    ),
    (
        "Security Observations",
        "Handling of secrets and credentials, input validation, authentication and authorisation, "
        "injection and other risks visible in the code.",
    ),
    (
        "Key Components",
        "The most important modules, classes and functions and what each one does (cite file paths).",
    ),
    (
        "Dependencies & Risks",
        "External dependencies, coupling, single points of failure and maintenance risks.",
    ),
    (
        "Documentation Accuracy",
        "Compare documentation claims against the code. List claims the code contradicts or that "
        "appear outdated (cite the doc file and the contradicting code). Note which docs appear "
        "current and trustworthy. If no documentation was provided, say so in one line.",
    ),
)
SECTION_TITLES = tuple(title for title, _ in SECTIONS)
FINDINGS_BANNER = (
    "--- Mechanical documentation check (computed from the index without a model; "
    "use it as evidence for Documentation Accuracy) ---"
)
MAX_PROMPT_FINDINGS = 60


@dataclass(frozen=True, slots=True)
class RepositoryFacts:
    """What the prompt says about the repository beside the chunks."""

    name: str
    commit_sha: str
    files: int
    chunks: int


def analysis_system() -> str:
    sections = "\n\n".join(f"## {title}\n{what}" for title, what in SECTIONS)
    return (
        "You are a senior software engineer analysing a code repository for the platform team that "
        "owns it. You are given code excerpts, then documentation excerpts, each headed by its path "
        "and, when known, the date it was last modified.\n"
        f"{FRAMING}\n\n"
        "Write Markdown with exactly these seven sections, in this order, each a level-2 heading "
        "with the title as written:\n\n"
        f"{sections}\n\n"
        "Be specific: name files, modules and functions. Do not invent what the excerpts do not show; "
        "say what is unknown."
    )


def summary_system() -> str:
    return (
        "You are a senior software engineer writing a catalogue entry for a code repository. In at most "
        "five sentences of plain prose (no headings, no lists), say what the repository is, what it "
        "does and how it is built.\n"
        f"{FRAMING}"
    )


def _preamble(repo: RepositoryFacts, selection: Selection) -> str:
    median = selection.median_code
    return (
        f"Repository: {repo.name}\n"
        f"Commit: {repo.commit_sha}\n"
        f"Median code-file date: {_day(median) if median else 'unknown (no recency data)'}\n"
        f"Excerpts: {len(selection.code)} code and {len(selection.docs)} documentation chunks, chosen from "
        f"{repo.chunks} chunks of {repo.files} files."
    )


def finding_line(finding: DocFinding) -> str:
    nearest = f" (it became `{finding.nearest}`)" if finding.nearest else ""
    detail = f" — {finding.detail}" if finding.detail else ""
    return f"- {finding.doc}:{finding.line} {finding.kind} {finding.claim}{detail}{nearest}"


def findings_block(findings: Sequence[DocFinding]) -> str:
    if not findings:
        return (
            f"{FINDINGS_BANNER}\nNo findings: every identifier, path and Governs: target the documentation "
            "names exists in this snapshot, and no doc is both unverified and old."
        )
    shown = [finding_line(f) for f in findings[:MAX_PROMPT_FINDINGS]]
    if len(findings) > MAX_PROMPT_FINDINGS:
        shown.append(f"- … and {len(findings) - MAX_PROMPT_FINDINGS} more")
    return f"{FINDINGS_BANNER}\n" + "\n".join(shown)


def analysis_messages(
    repo: RepositoryFacts, selection: Selection, findings: Sequence[DocFinding]
) -> list[Message]:
    user = "\n\n".join([_preamble(repo, selection), format_context(selection), findings_block(findings)])
    return [{"role": "system", "content": analysis_system()}, {"role": "user", "content": user}]


def summary_messages(repo: RepositoryFacts, selection: Selection) -> list[Message]:
    user = "\n\n".join([_preamble(repo, selection), format_context(selection)])
    return [{"role": "system", "content": summary_system()}, {"role": "user", "content": user}]


def _day(when: datetime) -> str:
    return when.date().isoformat()
