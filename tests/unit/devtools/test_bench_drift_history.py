"""The drift-history truth, mined from a history made here with plain git."""

from __future__ import annotations

from pathlib import Path

from palimpsest.devtools.bench.drift_history import mine_windows, pick_commits
from tests.support.gitrepo import commit, init_repo

README = (
    "# App\n\nCall `start_service()` to start; `helper_fn()` helps.\n"
    "See [the notes](notes/old.md).\n\n```python\ndef own_example():\n    pass\n```\n"
)
FIXED = "# App\n\nCall `start_app()` to start.\n\n```python\ndef own_example():\n    pass\n```\n"
APP = "def start_service():\n    return 1\n\n\ndef helper_fn():\n    return 2\n\n\ndef own_example():\n    return 3\n"


def test_windows_come_from_git_alone(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo")
    commit(
        repo,
        "2023-01-01T00:00:00+00:00",
        {
            "src/app.py": APP,
            "README.md": README,
            "notes/old.md": "# Notes\n",
            "CHANGES.md": "- `start_service`\n",
        },
    )
    removal = commit(
        repo,
        "2023-06-01T00:00:00+00:00",
        {
            "src/app.py": APP.replace("start_service", "start_app").replace("own_example", "other"),
            "notes/old.md": None,
        },
    )
    between = commit(repo, "2023-07-01T00:00:00+00:00", {"src/db.py": "def connect():\n    return 0\n"})
    fix = commit(repo, "2023-08-01T00:00:00+00:00", {"README.md": FIXED, "CHANGES.md": "- gone\n"})
    windows, order = mine_windows(repo, commits=50)
    assert order[:3] == [fix, between, removal]
    found = {(w.doc, w.subject, w.kind, w.form, w.line, w.fixed_in, w.removed_in) for w in windows}
    assert (
        found
        == {
            ("README.md", "start_service", "name", "code", 3, fix, removal),
            ("README.md", "notes/old.md", "path", "link", 4, fix, removal),
        }
    )  # helper_fn: still in the code at the fix's parent; own_example: defined in the doc; CHANGES: a changelog
    assert pick_commits(windows, order, 1) == [between]  # inside both windows [removal, fix)
    assert pick_commits([], order, 3) == []


def test_a_name_the_docs_own_example_defines_is_no_truth() -> None:
    from palimpsest.devtools.bench.drift_history import own_example

    assert own_example("deserialized_map", "```rust\nlet deserialized_map: Map = from_str(s)?;\n```")
    assert own_example("point_y", "```rust\nlet mut point_y = 3;\n```")
    assert own_example(
        "SCRIPT_ROOT", "<script>\nSCRIPT_ROOT = {{ request.script_root|tojson }};\n</script>\n"
    )
    assert not own_example("zip_safe", "setup(\n    name='x',\n    zip_safe=False,\n)\n")  # an argument
    assert own_example("own_example", "def own_example():\n    pass\n")
    assert not own_example("compute_total", "Call `compute_total()`; `total == compute_total(x)`.\n")


def test_the_code_is_what_the_shared_classifier_says(tmp_path: Path) -> None:
    from palimpsest.devtools.bench.drift_history import code_paths, first_code_change

    repo = init_repo(tmp_path / "repo")
    stale_uses = {  # tests by the classifier (an e2e folder, a spec file) that still call the old name
        "e2e/login.ts": "import { start_service } from '../src/app';\nstart_service();\n",
        "spec/app_spec.rb": "describe 'start_service' do\nend\n",
    }
    commit(repo, "2023-01-01T00:00:00+00:00", {"src/app.py": APP, "README.md": README, **stale_uses})
    removal = commit(
        repo, "2023-06-01T00:00:00+00:00", {"src/app.py": APP.replace("start_service", "start_app")}
    )
    commit(repo, "2023-07-01T00:00:00+00:00", {"e2e/login.ts": stale_uses["e2e/login.ts"] + "// more\n"})
    fix = commit(repo, "2023-08-01T00:00:00+00:00", {"README.md": FIXED})
    # the newest pickaxe hit in the code: not the later e2e commit, which only tests touch
    assert first_code_change(repo, "-Sstart_service", f"{fix}^") == removal
    assert code_paths(["src/app.py", "e2e/login.ts", "spec/app_spec.rb", "README.md", "LICENSE"]) == [
        "src/app.py"
    ]
    windows, _ = mine_windows(repo, commits=50)
    # the tests' stale uses are no use by the code: the rename is drift the fix repaired
    assert ("README.md", "start_service", removal) in {(w.doc, w.subject, w.removed_in) for w in windows}


SETUP_PY = (
    "from setuptools import setup\n\nsetup(\n    name='app',\n    zip_safe=False,\n"
    "    include_package_data=True,\n)\n"
)
CLIENT = "class Client:\n    def __init__(\n        self,\n        verify_ssl=True,\n    ):\n        pass\n"
GUIDE = (
    "# Packaging\n\nSet `zip_safe` and `include_package_data` in `setup()`.\n\n"
    "Pass `verify_ssl` to the client.\n"
)


def test_a_keyword_argument_of_a_removed_build_script_is_no_truth(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo")
    commit(
        repo,
        "2023-01-01T00:00:00+00:00",
        {"setup.py": SETUP_PY, "src/app/client.py": CLIENT, "docs/guide.md": GUIDE},
    )
    removal = commit(
        repo,
        "2023-06-01T00:00:00+00:00",
        {"setup.py": None, "src/app/client.py": CLIENT.replace("verify_ssl", "verify")},
    )
    fix = commit(
        repo, "2023-08-01T00:00:00+00:00", {"docs/guide.md": "# Packaging\n\nSee `pyproject.toml`.\n"}
    )
    windows, _ = mine_windows(repo, commits=50)
    # ``zip_safe=False,`` passed to ``setup()`` is setuptools' parameter, not a name of this code;
    # a parameter of the repository's own signature is
    assert {(w.subject, w.removed_in, w.fixed_in) for w in windows} == {("verify_ssl", removal, fix)}
    from palimpsest.devtools.bench.drift_history import keyword_argument

    lines = SETUP_PY.split("\n")
    assert keyword_argument(lines, 5) and not keyword_argument(lines, 1)
    assert not keyword_argument(CLIENT.split("\n"), 4)  # inside ``def __init__(``


def test_a_name_moved_into_generated_code_beside_the_package_is_still_the_code_s(tmp_path: Path) -> None:
    flags = "package altsrc\n\nfunc NewIntFlag(name string) string {\n\treturn name\n}\n"
    repo = init_repo(tmp_path / "repo")
    commit(
        repo,
        "2023-01-01T00:00:00+00:00",
        {"altsrc/flag.go": flags, "README.md": "# cli\n\nCall `NewIntFlag` for an int flag.\n"},
    )
    commit(  # the generator writes it now, beside the package's code (urfave/cli's altsrc)
        repo,
        "2023-06-01T00:00:00+00:00",
        {"altsrc/flag.go": "package altsrc\n", "altsrc/flag_generated.go": flags},
    )
    commit(repo, "2023-08-01T00:00:00+00:00", {"README.md": "# cli\n\nSee the manual.\n"})
    windows, _ = mine_windows(repo, commits=50)
    assert windows == []  # the doc's rewrite fixed no drift: the package still defines it
