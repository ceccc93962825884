"""The model-less brief reads right: a doc is in the context (with its marker) or left out, never
both; the pull request's own files are shown from the head, not listed as dropped; lists of
usages are capped with a count of the rest; the co-change warning comes with its reasons."""

from __future__ import annotations

import re
from uuid import uuid4

from palimpsest.index.context.assemble import DOC_ANNOTATION, FROM_HEAD_NOTE, ReviewContext, _fresh_only
from palimpsest.index.context.candidates import Candidate
from palimpsest.index.context.diff import ChangedFile, DiffNames
from palimpsest.ingest.web.markdown import render_markdown
from palimpsest.reviewer.review import BRIEF_LIST, brief


def _ctx(
    items: list[Candidate], dropped: list[dict[str, object]], cochange: list[dict[str, object]]
) -> ReviewContext:
    ctx = ReviewContext(uuid4(), uuid4(), "c" * 40, "c" * 40, 8000, ["src/billing.py"], DiffNames([], [], []))
    ctx.items, ctx.dropped, ctx.cochange_missing = items, dropped, cochange
    return ctx


def _item(source: str, path: str, annotation: str | None = None) -> Candidate:
    return Candidate(source, path, 1, 3, f"text of {path}", f"blob-{path}", 0, "why", annotation=annotation)  # type: ignore[arg-type]


def test_a_doc_is_in_play_or_left_out_never_both() -> None:
    guide = _item("usage", "docs/guide.md", f"{DOC_ANNOTATION}, last modified 2024-03-01")
    dropped = [
        {"path": "docs/guide.md", "reason": "stale_doc"},  # another chunk of the same doc
        {"path": "docs/old.md", "reason": "stale_doc"},
        {"path": "docs/old.md", "reason": "stale_doc"},
        {"path": "docs/wrong.md", "reason": "drift_doc"},  # the analysis proved a claim of it false
    ]
    text = brief(_ctx([guide], dropped, []), [ChangedFile("src/billing.py")])
    [line] = [line for line in text.splitlines() if line.startswith("Documentation in play")]
    assert line == (
        "Documentation in play: docs/guide.md (documentation — verify against code, last modified"
        " 2024-03-01); stale docs left out: docs/old.md; docs with proved drift left out: docs/wrong.md."
    )
    assert "((" not in text  # the marker's parentheses are not doubled


def test_a_line_after_a_list_is_its_own_paragraph_not_the_last_items_continuation() -> None:
    users = [_item("usage", "src/user.py")]
    text = brief(_ctx(users, [], []), [ChangedFile("src/billing.py")])
    html = str(render_markdown(text))
    [item] = re.findall(r"<li>.*?</li>", html, re.S)
    assert "src/billing.py" in item and "What uses it" not in item
    assert re.search(r"<p>What uses it: (<code>)?src/user.py(</code>)?</p>", html)


def test_usages_are_capped_with_a_count_of_the_rest() -> None:
    users = [_item("usage", f"src/user_{i:02}.py") for i in range(BRIEF_LIST + 7)]
    text = brief(_ctx(users, [], []), [ChangedFile("src/billing.py")])
    [line] = [line for line in text.splitlines() if line.startswith("What uses it")]
    assert line.endswith(f"src/user_{BRIEF_LIST - 1:02}.py and 7 more")
    assert f"src/user_{BRIEF_LIST:02}.py" not in line


def test_the_warning_lists_each_partner_with_its_reason_or_says_nothing() -> None:
    reason = "changed in 3 of the 3 commits that changed `src/billing.py` since 2024-03 (lift 2.0)"
    text = brief(_ctx([], [], [{"path": "src/tax.py", "reason": reason}]), [ChangedFile("src/billing.py")])
    assert f"What usually changes with it (not in this PR):\n- src/tax.py: {reason}" in text
    quiet = brief(_ctx([], [], []), [ChangedFile("src/billing.py")])
    assert "What usually changes with it (not in this PR): nothing." in quiet


def test_the_prs_own_files_are_shown_from_the_head_not_dropped() -> None:
    own = Candidate("definitions", "src/billing.py", 2, 3, "old body\n", "b1", 0, "defines compute_total")
    gone = Candidate("definitions", "src/removed.py", 1, 1, "old\n", "b2", 0, "defines x")
    other = Candidate("usage", "src/moved.py", 1, 1, "old\n", "b3", 0, "calls x")
    at_head = {"src/billing.py": "line 1\nnew body\nmore\n", "src/removed.py": None, "src/moved.py": "new\n"}
    dropped: list[dict[str, object]] = []
    kept = _fresh_only(
        [own, gone, other], at_head, dropped, own=frozenset({"src/billing.py", "src/removed.py"})
    )
    assert kept == [own]
    assert (own.start_line, own.end_line, own.content) == (2, 3, "new body\nmore\n")
    assert own.reason == f"defines compute_total; {FROM_HEAD_NOTE}"
    # a file the PR deletes is left out without a word; a changed file outside the PR is stale
    assert [(d["path"], d["reason"]) for d in dropped] == [("src/moved.py", "stale")]
