"""The drift-prevent benchmark's sample of ordinary changes, on a repository made here."""

from __future__ import annotations

from pathlib import Path

from palimpsest.devtools.bench.drift_prevent import _ordinary, _takes_away
from tests.support.gitrepo import commit, init_repo, move


def test_changes_that_take_something_away_are_told_from_the_rest(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo")
    day = "2024-01-0{}T00:00:00+00:00"
    first = commit(
        repo,
        day.format(1),
        {
            "app/core.py": "def run():\n    return 1\n\n\ndef stop():\n    return 0\n",
            "app/util.go": "package app\n",
        },
    )
    edit = commit(
        repo, day.format(2), {"app/core.py": "def run():\n    return 2\n\n\ndef stop():\n    return 0\n"}
    )
    drop = commit(repo, day.format(3), {"app/core.py": "def run():\n    return 2\n"})  # stop() is gone
    moved = move(repo, day.format(4), "app/util.go", "pkg/util.go")
    tests_only = commit(repo, day.format(5), {"tests/test_core.py": "def test_x():\n    pass\n"})
    untest = commit(repo, day.format(6), {"tests/test_core.py": "x = 1\n"})  # a test's removal: not code
    docs = commit(repo, day.format(7), {"README.md": "# App\n"})

    assert not _takes_away(repo, first, edit)
    assert _takes_away(repo, edit, drop)
    assert _takes_away(repo, drop, moved)
    assert not _takes_away(repo, tests_only, untest)

    order = [docs, untest, tests_only, moved, drop, edit, first]  # newest first, as mine_windows gives
    takes, plain = _ordinary(repo, order, removing={drop}, sample=4, seed=1, taking=1)
    assert takes == [moved]  # the removing commit of the truth is never sampled
    assert set(plain) <= {edit, tests_only, untest} and len(plain) == 3  # a docs-only change is not sampled


def test_a_doc_line_written_after_the_removing_commit_is_not_at_its_base(tmp_path: Path) -> None:
    from palimpsest.devtools.bench.drift_history import Window
    from palimpsest.devtools.bench.drift_prevent import _named_at_base

    repo = init_repo(tmp_path / "repo")
    day = "2024-02-0{}T00:00:00+00:00"
    commit(repo, day.format(1), {"app/core.py": "def run():\n    pass\n", "docs/a.md": "Call `run()`.\n"})
    removing = commit(repo, day.format(2), {"app/core.py": "x = 1\n"})
    commit(repo, day.format(3), {"docs/b.md": "Also `run()`.\n"})

    def window(doc: str) -> Window:
        return Window(doc, "run", "run()", "name", "code", 1, "", "", removing)

    assert _named_at_base(repo, window("docs/a.md"))
    assert not _named_at_base(repo, window("docs/b.md"))  # written after the removing commit


def test_the_judge_reads_a_relative_path_from_the_flagged_doc_s_folder(tmp_path: Path) -> None:
    from palimpsest.devtools.bench.drift_prevent import judge_line

    repo = init_repo(tmp_path / "repo")
    commit(
        repo,
        "2024-03-01T00:00:00+00:00",
        {"examples/app/render.yaml": "x: 1\n", "README.md": "# R\n", "src/io.py": "md = 'notes'\n"},
    )
    tree = {"examples/app/render.yaml", "README.md", "src/io.py"}
    assert not judge_line(repo, "HEAD", ["render.yaml"], tree, "examples/app/README.md")  # still there
    assert judge_line(repo, "HEAD", ["render.yaml"], tree, "docs/README.md")  # nothing beside that doc
    assert judge_line(repo, "HEAD", ["gone/thing.yaml"], tree, "examples/app/README.md")
    assert judge_line(
        repo, "HEAD", ["README.md"], tree, "docs/guide.md", paths=["README.md"]
    )  # beside its doc only
    assert not judge_line(
        repo, "HEAD", ["examples/app"], tree, "docs/guide.md"
    )  # a folder: from the root too
    # a file's name is not grepped as an identifier (its extension ``md`` is a word of src/io.py)
    assert judge_line(repo, "HEAD", ["NOTES.md"], tree, "docs/guide.md", paths=["NOTES.md"])
    assert not judge_line(repo, "HEAD", ["md"], tree, "docs/guide.md")  # a removed name still in the code
