"""The review context's ranking pieces that need no database: agreement between sources, tests
paired by name, uses narrowed to their surroundings, and the base-side lines a diff touches."""

from __future__ import annotations

import asyncio
from uuid import uuid4

import pytest

from palimpsest.index.context.assemble import SOURCE_PRECISION, ReviewContext, _score
from palimpsest.index.context.candidates import Candidate, Source, focus, paired_tests
from palimpsest.index.context.diff import DiffNames, parse_diff


def cand(source: Source, path: str, reason: str = "", ordinal: int = 0) -> Candidate:
    return Candidate(source, path, 1, 3, f"text of {path}", f"blob-{path}", ordinal, reason)


def context() -> ReviewContext:
    return ReviewContext(uuid4(), uuid4(), "c" * 40, "c" * 40, 8000, ["src/seed.py"], DiffNames([], [], []))


def test_a_file_several_sources_found_outranks_one_found_by_one_source_at_the_top() -> None:
    found = [
        cand("related", "src/lonely.py", "similar code"),
        cand("cochange", "src/partner.py", "changed together with src/seed.py in 3 commits"),
        cand("usage", "src/only_usage.py", "uses `f`"),
        cand("usage", "src/partner.py", "uses `f`", ordinal=1),
    ]
    ctx = context()
    assert asyncio.run(_score(found, ctx, None)) == "fused"
    scores = {c.path: c.score for c in found}
    assert scores["src/partner.py"] > scores["src/only_usage.py"] > scores["src/lonely.py"]
    a, _ = SOURCE_PRECISION["usage"]
    assert scores["src/only_usage.py"] == a  # the usage source's first file: its measured precision
    assert scores["src/lonely.py"] == pytest.approx(SOURCE_PRECISION["related"][0])
    # every chunk of the file says every source's reason; each source's rank is kept
    partner = [c for c in found if c.path == "src/partner.py"]
    assert all(c.reason == "changed together with src/seed.py in 3 commits; uses `f`" for c in partner)
    assert ctx.file_signals["src/partner.py"] == {"cochange": 0, "usage": 1}
    assert all(0 <= c.score <= 1 for c in found)


def test_tests_are_paired_with_the_code_they_test_in_every_convention() -> None:
    def pairs(paths: list[str], changed: str) -> list[str]:
        return [p for p, partner in paired_tests(paths, [changed]) if partner == changed]

    assert pairs(["tests/test_billing.py", "src/billing.py", "docs/billing.md"], "src/billing.py") == [
        "tests/test_billing.py"
    ]
    assert pairs(["billing_test.go", "billing.go"], "billing.go") == ["billing_test.go"]
    assert pairs(["src/billing.test.ts", "src/billing.spec.js", "src/billing.ts"], "src/billing.ts") == [
        "src/billing.spec.js",  # one language family: ts and js
        "src/billing.test.ts",
    ]
    assert pairs(["src/test/java/BillingTest.java", "src/billing.py"], "src/main/java/Billing.java") == [
        "src/test/java/BillingTest.java"
    ]
    assert pairs(["spec/billing_spec.rb", "spec/billing_spec.py"], "lib/billing.rb") == [
        "spec/billing_spec.rb"
    ]
    # a changed test finds the code under test, not another test of it
    assert pairs(["src/billing.py", "tests/billing_test.py"], "tests/test_billing.py") == ["src/billing.py"]
    # a benchmark or an example named like the code is not the code under test
    assert pairs(
        ["bench/object.ts", "src/v3/benchmarks/object.ts", "examples/object.ts", "src/object.ts"],
        "src/tests/object.test.ts",
    ) == ["src/object.ts"]
    # the nearest three
    many = [f"pkg{i}/test_billing.py" for i in range(5)] + ["src/test_billing.py"]
    assert pairs(many, "src/billing.py")[0] == "src/test_billing.py"
    assert len(pairs(many, "src/billing.py")) == 3


def test_a_long_chunk_is_narrowed_to_the_lines_around_a_use() -> None:
    content = "\n".join(f"line {n}" for n in range(100, 200))
    c = Candidate("usage", "a.py", 100, 199, content, "b", 0)
    focus(c, 150)
    assert (c.start_line, c.end_line) == (144, 164)
    assert c.content.splitlines()[0] == "line 144" and c.content.splitlines()[-1] == "line 164"
    short = Candidate("usage", "a.py", 10, 14, "a\nb\nc\nd\ne", "b", 0)
    assert focus(short, 12).content == "a\nb\nc\nd\ne"
    outside = Candidate("usage", "a.py", 100, 199, content, "b", 0)
    assert focus(outside, 5).start_line == 100


DIFF = """diff --git a/src/seed.py b/src/seed.py
--- a/src/seed.py
+++ b/src/seed.py
@@ -10,4 +10,5 @@ class Ledger:
     def post(self):
-        return 1
+        return 2
+        # more
     def other(self):
@@ -40,0 +42,2 @@ def tail():
+    x = 1
+    y = 2
"""


def test_the_base_side_lines_a_diff_removes_or_inserts_after_are_kept() -> None:
    [changed] = parse_diff(DIFF)
    # line 11 is removed; the insertions land after base lines 11 and 40
    assert changed.old_touched == [11, 40]
    assert changed.added_ranges == [(11, 12), (42, 43)]


def test_tests_are_what_the_shared_classifier_says() -> None:
    def pairs(paths: list[str], changed: str) -> list[str]:
        return [p for p, partner in paired_tests(paths, [changed]) if partner == changed]

    # an end-to-end test is a test by its folder, as codefacts has it; known only by its folder, it
    # pairs with the one code file of its name, not with every file of a common name
    assert pairs(["e2e/login.ts", "docs/login.md", "src/login.ts"], "src/login.ts") == ["e2e/login.ts"]
    assert pairs(["test/create.ts", "source/create.ts"], "test/create.ts") == ["source/create.ts"]
    assert (
        pairs(["test/helpers/types.ts", "source/types.ts", "source/core/types.ts"], "source/types.ts") == []
    )
    assert (
        pairs(["tests/sansio/__init__.py", "src/a/__init__.py", "src/b/__init__.py"], "src/a/__init__.py")
        == []
    )
    assert (
        pairs(["tests/res/index.html", "src/index.html"], "src/index.html") == []
    )  # data is no test of a page
    # a Spec-suffixed type beside the code is code, not its test; the test folder's Spec is a test
    assert pairs(["core/src/main/scala/BillingSpec.scala"], "core/src/main/scala/Billing.scala") == []
    assert pairs(["core/src/test/scala/BillingSpec.scala"], "core/src/main/scala/Billing.scala") == [
        "core/src/test/scala/BillingSpec.scala"
    ]
