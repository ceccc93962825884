"""The reviewer's pure rules: stale-doc demotion, diff reading, and which findings survive."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from palimpsest.index.context.assemble import DOC_ANNOTATION, apply_recency
from palimpsest.index.context.candidates import Candidate, Source
from palimpsest.index.context.diff import diff_names, parse_diff
from palimpsest.reviewer.review import read_reply


def _at(day: str) -> datetime:
    return datetime.fromisoformat(day).replace(tzinfo=UTC)


def cand(path: str, score: float, day: str | None, source: Source = "related") -> Candidate:
    c = Candidate(source, path, 1, 5, "text", f"sha-{path}", 0, score=score)
    c.last_modified_at = _at(day) if day else None
    return c


def test_a_stale_doc_is_dropped_and_a_high_scoring_one_kept() -> None:
    ranked = [
        cand("src/a.py", 1.0, "2024-05-01"),
        cand("src/b.py", 0.9, "2024-06-01"),
        cand("src/c.py", 0.8, "2024-04-01"),
        cand("docs/old.md", 0.4, "2022-01-01"),
        cand("docs/kept.md", 0.6, "2022-01-01"),
        cand("docs/fresh.md", 0.3, "2024-05-15"),
    ]
    dropped: list[dict[str, Any]] = []
    median, kept = apply_recency(ranked, dropped)
    assert median == _at("2024-05-01")
    assert [d["path"] for d in dropped] == ["docs/old.md"]
    assert dropped[0]["reason"] == "stale_doc"
    notes = {c.path: c.annotation for c in kept}
    assert notes["docs/kept.md"] == f"{DOC_ANNOTATION}, last modified 2022-01-01"
    assert notes["docs/fresh.md"] == f"{DOC_ANNOTATION}, last modified 2024-05-15"
    assert notes["src/a.py"] == "last modified 2024-05-01"


def test_undated_chunks_are_untouched() -> None:
    ranked = [
        cand("src/a.py", 1.0, "2024-05-01"),
        cand("docs/undated.md", 0.1, None),
        cand("src/x.py", 0.2, None),
    ]
    dropped: list[dict[str, Any]] = []
    _, kept = apply_recency(ranked, dropped)
    assert dropped == []
    notes = {c.path: c.annotation for c in kept}
    assert notes["src/x.py"] is None
    assert notes["docs/undated.md"] == DOC_ANNOTATION  # a doc is still a doc, but no date and no demotion


def test_no_dated_code_means_no_demotion() -> None:
    dropped: list[dict[str, Any]] = []
    _, kept = apply_recency([cand("docs/old.md", 0.0, "2010-01-01"), cand("src/a.py", 1.0, None)], dropped)
    assert dropped == [] and len(kept) == 2


DIFF = """diff --git a/src/billing.py b/src/billing.py
index 1111111..2222222 100644
--- a/src/billing.py
+++ b/src/billing.py
@@ -1,4 +1,6 @@ import os
 def compute_total(items):
-    total = 0
+    total = discount(items)
+    total += 1
     for item in items:
         total += item.price
@@ -10,2 +12,3 @@ def tax_rate(region):
     return 0.2
+# note
diff --git a/src/gone.py b/src/gone.py
deleted file mode 100644
index 3333333..0000000
--- a/src/gone.py
+++ /dev/null
@@ -1,1 +0,0 @@
-def gone(): pass
"""


def test_a_diff_is_read_into_files_lines_and_names() -> None:
    files = parse_diff(DIFF)
    assert [(f.path, f.status) for f in files] == [("src/billing.py", "modified"), ("src/gone.py", "deleted")]
    billing = files[0]
    assert billing.added_ranges == [(2, 3), (13, 13)]
    assert billing.touches(3, 3) and not billing.touches(5, 12)
    names = diff_names(files)
    assert "compute_total" in names.defined and "tax_rate" in names.defined and "gone" in names.defined
    assert "discount" in names.called


def test_findings_off_the_changed_lines_are_dropped_and_counted() -> None:
    reply = """```json
    {"summary": "Looks risky.", "findings": [
      {"path": "src/billing.py", "start_line": 2, "end_line": 3, "severity": "high", "category": "bug",
       "message": "discount() may return None.", "suggested_change": "total = discount(items) or 0"},
      {"path": "src/billing.py", "start_line": 8, "end_line": 9, "severity": "minor", "category": "style",
       "message": "Unchanged line."},
      {"path": "src/other.py", "start_line": 1, "severity": "minor", "category": "style", "message": "Not in PR."}
    ]}
    ```"""
    out = read_reply(reply, parse_diff(DIFF), max_findings=10, left_out=0)
    assert out.summary == "Looks risky."
    assert [(f.path, f.start_line, f.severity) for f in out.findings] == [("src/billing.py", 2, "major")]
    assert out.findings[0].suggested_change == "total = discount(items) or 0"
    assert out.findings_dropped == 2


def test_a_partly_shown_diff_says_so() -> None:
    out = read_reply('{"summary": "ok", "findings": []}', parse_diff(DIFF), max_findings=10, left_out=3)
    assert "3 changed file(s) were not shown" in out.summary
