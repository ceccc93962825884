"""The left-behind check's pure parts: the diff's own rename, doc paths, base → head doc lines."""

from __future__ import annotations

from palimpsest.index.context.diff import parse_diff
from palimpsest.index.context.leftbehind import Taken, _doc_diffs, _finding, _path_forms, _renamed_to

RENAME = """diff --git a/src/a.py b/src/a.py
--- a/src/a.py
+++ b/src/a.py
@@ -1,3 +1,3 @@
-def fetch_all(items):
+def fetch_every(items):
     return items
-x = fetch_all([])
+x = fetch_every([])
"""
DOC = """diff --git a/docs/x.md b/docs/x.md
--- a/docs/x.md
+++ b/docs/x.md
@@ -2,3 +2,4 @@
 two
-three
+three, edited
+three and a half
 four
@@ -10,2 +11,2 @@
-ten
+TEN
 eleven
"""


def test_the_diffs_own_rename_is_the_target() -> None:
    files = parse_diff(RENAME)
    assert _renamed_to("fetch_all", files) == "fetch_every"
    assert _renamed_to("items", files) is None  # unchanged on both sides: no rename


def test_doc_paths_resolve_from_the_root_and_the_docs_folder() -> None:
    assert _path_forms("docs/api.md", "./guide.md#top") == [("guide.md", False), ("docs/guide.md", True)]
    assert _path_forms("docs/api.md", "/src/a.py") == [("src/a.py", False)]
    assert _path_forms("docs/api.md", "https://example.test/a.md") == []


def test_base_lines_map_to_head_lines() -> None:
    d = _doc_diffs(DOC)["docs/x.md"]
    assert d.head_line(1) == 1 and d.head_line(2) == 2  # before and in the first hunk
    assert d.head_line(3) is None and d.added[d.hunk_of[3]] == [(3, "three, edited"), (4, "three and a half")]
    assert d.head_line(4) == 5 and d.head_line(8) == 9  # after the first hunk: one line further
    assert d.head_line(10) is None and d.head_line(11) == 12


def test_a_finding_says_what_the_change_does_and_corrects_the_line() -> None:
    moved = Taken("src/old.py", "path", "src/new/old.py", "src/old.py")
    f = _finding("docs/a.md", 4, "See [old](../src/old.py).", [(moved, "../src/old.py", "../src/new/old.py")])
    assert f.category == "docs" and f.severity == "minor"
    assert "`../src/old.py`, which this pull request moves to `src/new/old.py`" in f.message
    assert f.suggested_change == "See [old](../src/new/old.py)."
    gone = Taken("legacy", "definition", None, "src/a.py")
    f = _finding("docs/a.md", 2, "Call `legacy()`.", [(gone, "legacy", None)])
    assert "removes (from `src/a.py`)" in f.message and f.suggested_change is None


def test_removed_lines_define_names_and_attributes() -> None:
    from palimpsest.index.context.leftbehind import _removed_definitions

    lines = ["def send_headers(self):", "    self.stream_id = 3", "    if self.ready == 1:", "x = 1"]
    assert _removed_definitions(lines) == {"send_headers", "stream_id"}


def test_a_written_path_is_the_form_the_base_has_and_a_docs_own_example_is_not_a_claim() -> None:
    from palimpsest.index.context.leftbehind import _hits, _Mention

    gone = {"ERRORS.md": Taken("ERRORS.md", "path", None, "ERRORS.md")}
    link = _Mention("docs/guide.md", 3, "mention", "ERRORS.md", "path", "link")
    # docs/ERRORS.md exists at the base: the link is about it, not the deleted root file
    assert _hits([link], [], gone, {"ERRORS.md", "docs/ERRORS.md", "docs"}) == []
    [hit] = _hits([link], [], gone, {"ERRORS.md", "docs"})
    assert hit.taken[0][1] == "ERRORS.md"
    # the same name in inline code, with no folder, is the reader's own file (``setup.py``)
    bare = _Mention("docs/guide.md", 4, "mention", "ERRORS.md", "path", "code")
    assert _hits([bare], [], gone, {"ERRORS.md", "docs"}) == []
    written = _Mention("docs/guide.md", 5, "mention", "./ERRORS.md", "path", "code")
    assert len(_hits([written], [], gone, {"ERRORS.md", "docs"})) == 1


def test_a_manual_kept_for_an_older_release_is_not_left_behind() -> None:
    """``docs/v1/`` beside ``docs/v2/`` describes the v1 release on purpose: a change to the code at
    head leaves none of its lines behind (the doc check folds such a manual into one finding)."""
    from palimpsest.index.context.leftbehind import _Hit, _outside_older_manuals

    gone = Taken("NewApp", "definition", None, "app.go")
    hits = [_Hit(doc, 3, [(gone, "NewApp", None)]) for doc in ("docs/v1/manual.md", "docs/v2/manual.md")]
    tree = {"docs/v1/manual.md": "a", "docs/v2/manual.md": "b", "app.go": "c"}
    kept, older = _outside_older_manuals(hits, tree)
    assert [h.doc for h in kept] == ["docs/v2/manual.md"] and older == 1
    kept, older = _outside_older_manuals(hits[:1], {"docs/v1/manual.md": "a"})  # a lone v1: current
    assert [h.doc for h in kept] == ["docs/v1/manual.md"] and older == 0


def test_a_relative_link_that_moves_with_its_doc_still_holds() -> None:
    """An example folder renamed whole: its README's ``./render.yaml`` still resolves at the head."""
    from palimpsest.index.context.leftbehind import _moved_with_the_doc

    moved = Taken(
        "examples/app/render.yaml", "path", "examples/.interop/app/render.yaml", "examples/app/render.yaml"
    )
    assert _moved_with_the_doc((moved, "./render.yaml", None), "examples/.interop/app/README.md")
    assert not _moved_with_the_doc((moved, "./render.yaml", None), "examples/app/README.md")  # doc stayed
    assert not _moved_with_the_doc(
        (moved, "/examples/app/render.yaml", None), "examples/.interop/app/README.md"
    )
    deleted = Taken("examples/app/render.yaml", "path", None, "examples/app/render.yaml")
    assert not _moved_with_the_doc((deleted, "./render.yaml", None), "examples/.interop/app/README.md")


def test_a_link_names_the_path_its_docs_site_resolves() -> None:
    """In a MkDocs site (``docs_dir: handbook``) ``/img/logo.png`` is ``handbook/img/logo.png``: a
    change deleting that file leaves the link behind; one deleting the root's ``img/logo.png`` does not."""
    from palimpsest.index.codefacts.sites import Sites
    from palimpsest.index.context.leftbehind import _hits, _Mention

    tree = ["mkdocs.yml", "handbook/index.md", "handbook/img/logo.png", "img/logo.png"]
    sites = Sites.of(tree, {"mkdocs.yml": "docs_dir: handbook\n"})
    existing = set(sites.files | sites.dirs)
    link = _Mention("handbook/index.md", 3, "mention", "/img/logo.png", "path", "link")
    site_image = {
        "handbook/img/logo.png": Taken("handbook/img/logo.png", "path", None, "handbook/img/logo.png")
    }
    root_image = {"img/logo.png": Taken("img/logo.png", "path", None, "img/logo.png")}
    [hit] = _hits([link], [], site_image, existing, sites)
    assert hit.taken[0][1:] == ("/img/logo.png", None)
    assert _hits([link], [], root_image, existing, sites) == []
