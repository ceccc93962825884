"""Context headers, the documentation banner and the two prompts, without a model."""

from __future__ import annotations

from datetime import UTC, datetime

from palimpsest.analyzer.context import DOC_BANNER, format_context, header
from palimpsest.analyzer.doccheck import DocFinding
from palimpsest.analyzer.prompts import (
    FRAMING,
    SECTION_TITLES,
    RepositoryFacts,
    analysis_messages,
    summary_messages,
)
from palimpsest.analyzer.report import mechanical_report
from palimpsest.analyzer.selection import AnalysisChunk, Selection

MEDIAN = datetime(2026, 5, 1, tzinfo=UTC)
REPO = RepositoryFacts("team/app", "a" * 40, 10, 30)


def chunk(
    path: str, date: datetime | None, *, kind: str = "code", stale: bool = False, age: str | None = None
) -> AnalysisChunk:
    return AnalysisChunk(path, kind, date, f"text of {path}\n", 1, 3, None, stale, age)  # type: ignore[arg-type]


SELECTION = Selection(
    [
        chunk("src/auth/session.ts", datetime(2026, 5, 28, tzinfo=UTC)),
        chunk("src/undated.ts", None),
        chunk("docs/design.md", datetime(2024, 8, 12, tzinfo=UTC), kind="doc", stale=True,
              age="20 months older than typical code in this repo"),
        chunk("docs/current.md", datetime(2026, 4, 1, tzinfo=UTC), kind="doc"),
        chunk("docs/unknown.md", None, kind="doc"),
    ],
    MEDIAN,
)  # fmt: skip


def test_headers_carry_dates_only_when_known_and_the_phrase_only_when_stale() -> None:
    assert header(SELECTION.chunks[0]) == "// src/auth/session.ts (last modified 2026-05-28)"
    assert header(SELECTION.chunks[1]) == "// src/undated.ts"
    assert header(SELECTION.chunks[2]) == (
        "// docs/design.md (last modified 2024-08-12 — 20 months older than typical code in this repo)"
    )
    assert header(SELECTION.chunks[3]) == "// docs/current.md (last modified 2026-04-01)"
    assert header(SELECTION.chunks[4]) == "// docs/unknown.md"


def test_the_documentation_checks_states_head_the_docs_as_the_report_and_the_review_say() -> None:
    judged = SELECTION.with_doc_states(
        {"docs/design.md": "verified", "docs/current.md": "drift", "docs/unknown.md": "reference"}
    )
    design, current, unknown = judged.docs
    assert not design.stale  # old, but its claims hold: not stale, and no age phrase
    assert (
        header(design)
        == "// docs/design.md (last modified 2024-08-12; verified: its claims hold at this commit)"
    )
    assert header(current) == (
        "// docs/current.md (last modified 2026-04-01; drift: the documentation check proved a claim of it false)"
    )
    assert header(unknown) == "// docs/unknown.md (generated reference, never stale)"
    old = SELECTION.with_doc_states({"docs/design.md": "unverified_old"}).docs[0]
    assert old.stale and header(old) == (
        "// docs/design.md (last modified 2024-08-12 — 20 months older than typical code in this repo;"
        " unverified and old)"
    )
    assert judged.code == SELECTION.code  # code has no state


def test_code_comes_before_the_banner_and_the_docs() -> None:
    text = format_context(SELECTION)
    assert text.index("// src/undated.ts") < text.index(DOC_BANNER) < text.index("// docs/design.md")
    assert text.count(DOC_BANNER) == 1
    assert DOC_BANNER not in format_context(Selection(SELECTION.code, MEDIAN))


def test_long_chunks_are_cut() -> None:
    long = AnalysisChunk("big.py", "code", None, "x" * 100, 1, 2, None, False, None)
    assert "… (truncated)" in format_context(Selection([long], None), max_chunk_chars=10)


def test_analysis_prompt_has_framing_seven_sections_and_evidence() -> None:
    finding = DocFinding(
        "README.md", 3, "missing_identifier", "`compute_total`", "compute_invoice_total", "gone"
    )
    system, user = (m["content"] for m in analysis_messages(REPO, SELECTION, [finding]))
    assert FRAMING in system
    assert [t for t in SECTION_TITLES if f"## {t}\n" in system] == list(SECTION_TITLES)
    assert len(SECTION_TITLES) == 7 and SECTION_TITLES[-1] == "Documentation Accuracy"
    assert "Median code-file date: 2026-05-01" in user
    assert "README.md:3 missing_identifier `compute_total`" in user and "`compute_invoice_total`" in user


def test_summary_prompt_has_the_framing_line_only() -> None:
    system, user = (m["content"] for m in summary_messages(REPO, SELECTION))
    assert FRAMING in system
    assert "Documentation Accuracy" not in system and "Mechanical documentation check" not in user


def test_mechanical_report_names_what_needs_a_model() -> None:
    facts = {
        "files": 3, "code_files": 2, "doc_files": 1, "chunks": 5, "dated_files": 2,
        "median_code": MEDIAN.isoformat(), "languages": [{"language": "python", "files": 2}],
        "top_files": [{"path": "a.py", "kind": "code", "last_modified_at": None, "stale": False, "chunks": 2}],
        "doc_freshness": [{"path": "d.md", "last_modified_at": "2020-01-01T00:00:00+00:00", "stale": True,
                           "age": "6 years older than typical code in this repo"}],
    }  # fmt: skip
    text = mechanical_report(REPO, facts, [])
    assert "No model is configured" in text and "PALIMPSEST_LLM_MODEL" in text
    for title in SECTION_TITLES[:-1]:
        assert title in text
    assert "| `d.md` | 2020-01-01 | stale — 6 years older than typical code in this repo |" in text
    assert "No drift found" in text
    failed = mechanical_report(REPO, facts, [], model_error="timeout after 3 attempt(s)")
    assert "The model call failed** (timeout after 3 attempt(s))" in failed
