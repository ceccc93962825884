"""The history pass on real git repositories the tests build: what it proves, and what it refuses.

No database: :func:`read_history` reads ``git log --first-parent --raw`` and the old blobs of the
repository directly, as the analyzer does after its read transaction.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from palimpsest.analyzer.doccheck import Claims, judge
from palimpsest.analyzer.history import blame_lines, first_mentions, read_history
from palimpsest.analyzer.proof import _read_history, _stats
from palimpsest.analyzer.source import open_history
from palimpsest.core.git_errors import GitError
from palimpsest.core.sources import SourcePolicy
from tests.support.gitrepo import checkout, commit, git, init_repo, merge, move


def _paths(repo: Path) -> set[str]:
    return set(git(repo, "ls-tree", "-r", "--name-only", "HEAD").split())


async def test_a_definition_removed_on_a_merged_branch_is_removed_by_the_merge(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "r")
    base = commit(repo, "2023-01-01", {"app/core.py": "def old_name(x):\n    return x\n"})
    checkout(repo, "topic", create=True)
    commit(repo, "2023-02-01", {"app/core.py": "def new_name(x):\n    return x\n"})
    checkout(repo, "main")
    commit(repo, "2023-02-15", {"README.md": "# R\n"})
    side = git(repo, "rev-parse", "HEAD").strip()
    merged = merge(repo, "2023-03-01", "topic")
    history = await read_history(repo, merged, {"old_name"}, head_paths=_paths(repo))
    evidence = history.identifier("old_name")
    assert evidence is not None
    # first-parent: the change landed on main with the merge; its first parent still had it
    assert (evidence.removed_in_commit, evidence.last_seen_commit) == (merged, side)
    assert evidence.renamed_to == "new_name" and evidence.seen_in == "app/core.py"
    assert base != side


async def test_docs_examples_and_never_defined_names_prove_nothing(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "r")
    commit(
        repo,
        "2023-01-01",
        {
            "README.md": "```python\ndef only_in_docs(x):\n    return x\n```\n",
            "app.py": "value = used_not_defined(1)\n",
        },
    )
    last = commit(repo, "2023-02-01", {"README.md": "# R\n", "app.py": "value = 1\n"})
    history = await read_history(repo, last, {"only_in_docs", "used_not_defined"}, head_paths=_paths(repo))
    assert history.identifier("only_in_docs") is None  # a doc is not the code
    assert history.identifier("used_not_defined") is None  # a use is not a definition
    assert history.complete and history.commits == 2


async def test_paths_deleted_moved_and_re_added(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "r")
    first = commit(
        repo,
        "2023-01-01",
        {"pkg/a.py": "A = 1\n", "pkg/b.py": "B = 2\n", "tools/run.sh": "echo\n", "back.py": "X = 1\n"},
    )
    moved = move(repo, "2023-02-01", "pkg", "lib/pkg")
    gone = commit(repo, "2023-03-01", {"tools/run.sh": None, "back.py": None})
    head = commit(repo, "2023-04-01", {"back.py": "X = 2\n"})  # re-added: it exists again
    history = await read_history(repo, head, set(), head_paths=_paths(repo))
    folder = history.path("pkg")
    assert folder is not None and folder.renamed_to == "lib/pkg"
    assert folder.how is None  # a path is not defined or read: the field is for identifiers
    assert (folder.last_seen_commit, folder.removed_in_commit) == (first, moved)
    script = history.path("tools/run.sh")
    assert script is not None and script.renamed_to is None
    assert (script.last_seen_commit, script.removed_in_commit) == (moved, gone)
    assert history.path("tools") is not None  # the folder went with its only file
    assert history.path("back.py") is None and history.path("never/there.py") is None
    moved_file = history.path("pkg/a.py")
    assert moved_file is not None and moved_file.renamed_to == "lib/pkg/a.py"


async def test_each_old_blob_is_read_once(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "r")
    body = "def keep(x):\n    return x\n"
    commit(repo, "2023-01-01", {"m.py": body, "n.py": "N = 1\n"})
    commit(repo, "2023-02-01", {"m.py": body + "# 1\n"})
    commit(repo, "2023-03-01", {"m.py": body})  # a revert: the same blob as the first
    last = commit(repo, "2023-04-01", {"m.py": body + "# 2\n"})
    history = await read_history(repo, last, {"never_defined"}, head_paths=_paths(repo))
    assert history.blobs_read == 2 and history.complete  # three old sides, two distinct blobs


async def test_a_blob_budget_stops_the_reading_and_says_so(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "r")
    commit(
        repo, "2023-01-01", {"a.py": "A = 1\n" + "# pad\n" * 50, "b.py": "def gone_later(x):\n    return x\n"}
    )
    last = commit(repo, "2023-02-01", {"a.py": "A = 2\n", "b.py": "B = 1\n"})
    history = await read_history(repo, last, {"gone_later"}, head_paths=_paths(repo), max_blob_bytes=10)
    # a.py's old blob alone is over the budget: b.py's is never read, so nothing is claimed
    assert not history.complete and history.blobs_read == 1 and history.identifier("gone_later") is None


async def test_blame_dates_each_claimed_line(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "r")
    first = commit(repo, "2023-01-01", {"README.md": "# R\n\nCall `a()`.\n"})
    second = commit(repo, "2024-01-01", {"README.md": "# R\n\nCall `a()`.\n\nCall `b()`.\n"})
    lines = await blame_lines(repo, second, [("README.md", 3), ("README.md", 5), ("missing.md", 1)])
    assert lines[("README.md", 3)].commit == first and lines[("README.md", 5)].commit == second
    assert lines[("README.md", 3)].when.year == 2023 and ("missing.md", 1) not in lines


@pytest.mark.parametrize("allow_local", [True, False])
async def test_the_source_policy_decides_whether_history_is_read(tmp_path: Path, allow_local: bool) -> None:
    repo = init_repo(tmp_path / "r")
    sha = commit(repo, "2023-01-01", {"a.py": "A = 1\n"})
    policy = SourcePolicy(allow_local=allow_local)
    async with open_history(str(repo), "main", sha, policy=policy) as source:
        if allow_local:
            assert source.git_dir == repo and source.local and source.reason is None
        else:
            assert source.git_dir is None and source.reason is not None and "refused" in source.reason
    async with open_history(str(repo), "main", "f" * 40, policy=SourcePolicy(allow_local=True)) as source:
        assert source.git_dir is None and "no longer holds" in (source.reason or "")


async def test_test_data_golden_files_and_vendored_code_are_not_the_code(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "r")
    body = "var (\n\tcfgFile string\n)\nfunc initConfig() {}\n"
    commit(
        repo,
        "2023-01-01",
        {
            "cmd/testdata/root.go.golden": body,
            "vendor/x/lib.go": "func VendoredThing() {}\n",
            "a.go": "package a\n",
        },
    )
    last = commit(repo, "2023-02-01", {"cmd/testdata/root.go.golden": None, "vendor/x/lib.go": None})
    history = await read_history(repo, last, {"initConfig", "VendoredThing"}, head_paths=_paths(repo))
    assert history.identifier("initConfig") is None and history.identifier("VendoredThing") is None


async def test_when_a_doc_first_named_something_survives_a_reformatting(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "r")
    first = commit(repo, "2015-01-01", {"docs/tree.rst": "Tree\n====\n\n* celery.bin.amqp.AMQPAdmin\n"})
    commit(repo, "2016-04-13", {"docs/tree.rst": "Tree\n====\n\n* ``celery.bin.amqp.AMQPAdmin``\n"})
    head = commit(repo, "2017-01-01", {"other.py": "X = 1\n"})
    lines = await blame_lines(repo, head, [("docs/tree.rst", 4)])
    assert lines[("docs/tree.rst", 4)].when.year == 2016  # blame sees the markup change
    named = await first_mentions(repo, head, [("docs/tree.rst", 4, "celery.bin.amqp.AMQPAdmin")])
    assert named[("docs/tree.rst", 4)].commit == first  # the doc has named it since 2015
    fallback = await first_mentions(repo, head, [("docs/tree.rst", 4, "not in the doc")])
    assert fallback[("docs/tree.rst", 4)].when.year == 2016  # nothing added it: blame decides


async def test_what_a_deleted_file_s_definition_became_in_another_file(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "r")
    commit(
        repo,
        "2023-01-01",
        {
            "orca/call_metric_recorder.go": "package orca\n\nfunc CallMetricRecorderFromContext() {}\n",
            "orca/orca.go": "package orca\n\nfunc Helper() {}\n",
        },
    )
    removed = commit(
        repo,
        "2023-05-02",
        {
            "orca/call_metric_recorder.go": None,  # deleted, not renamed: the new file is unlike it
            "orca/call_metrics.go": "package orca\n\nfunc CallMetricsRecorderFromContext() {}\n"
            + "// a much longer body\n" * 40,
            "orca/orca.go": "package orca\n\nfunc Helper() {}\n\nfunc Unrelated() {}\n",
        },
    )
    history = await read_history(repo, removed, {"CallMetricRecorderFromContext"}, head_paths=_paths(repo))
    evidence = history.identifier("CallMetricRecorderFromContext")
    assert evidence is not None and evidence.removed_in_commit == removed
    assert evidence.renamed_to == "CallMetricsRecorderFromContext"  # not ``Unrelated``


async def test_imports_bound_to_a_fallback_and_function_locals_are_not_definitions(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "r")
    commit(
        repo,
        "2014-01-01",
        {
            "pkg/serving.py": "try:\n    import OpenSSL\nexcept ImportError:\n    OpenSSL = None\n",
            "src/stream.rs": "pub fn linger(&self) {\n        let mio_socket = self.to_mio();\n}\n",
            "lib/app.js": "const express = require('express')\nconst PORT = 80\n",
        },
    )
    last = commit(repo, "2014-08-22", {"pkg/serving.py": None, "src/stream.rs": "\n", "lib/app.js": "\n"})
    names = {"OpenSSL", "mio_socket", "express", "PORT"}
    history = await read_history(repo, last, names, head_paths=_paths(repo))
    assert history.identifier("OpenSSL") is None  # another package's name, bound here
    assert history.identifier("mio_socket") is None  # a variable of a function body
    assert history.identifier("express") is None  # require() binds a package
    found = history.identifier("PORT")  # a module-level constant is a definition
    assert found is not None and found.removed_in_commit == last


async def test_an_unreadable_old_blob_costs_the_inexact_renames_not_the_proof(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "r")
    body = "".join(f"def f{i}(x):\n    return x + {i}\n" for i in range(30))
    commit(repo, "2023-01-01", {"pkg/old.py": body + "def gone_soon():\n    pass\n", "b.py": "B = 1\n"})
    moved = commit(repo, "2023-02-01", {"pkg/old.py": None, "pkg/new.py": body + "# edited\n"})
    lost = git(repo, "rev-parse", f"{moved}^:pkg/old.py").strip()
    (repo / ".git" / "objects" / lost[:2] / lost[2:]).unlink()  # a partial clone's missing blob
    paths = _paths(repo)
    with pytest.raises(GitError, match="unable to read"):
        await read_history(repo, moved, {"gone_soon"}, head_paths=paths)
    history = await _read_history(repo, moved, {"gone_soon"}, paths, 60.0)
    assert history.renames == "exact"
    removed = history.path("pkg/old.py")  # seen as deleted: the edit hides the rename now
    assert removed is not None and removed.removed_in_commit == moved and removed.renamed_to is None


async def test_a_setting_the_code_read_by_its_quoted_name_is_proved_as_read(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "r")
    commit(
        repo,
        "2013-01-01",
        {
            "app/auth.py": "def key(handler):\n    return handler.settings['friendfeed_consumer_key']\n",
            "app/cli.py": "import os\nENDPOINT = os.environ.get(\"ETCDCTL_ENDPOINT\")\nMODE = 'verbose'\n",
        },
    )
    removed = commit(repo, "2019-03-01", {"app/auth.py": None, "app/cli.py": "import os\n"})
    names = {"friendfeed_consumer_key", "ETCDCTL_ENDPOINT", "verbose"}
    history = await read_history(repo, removed, names, head_paths=_paths(repo))
    setting = history.identifier("friendfeed_consumer_key")
    assert setting is not None and (setting.how, setting.seen_in) == ("read", "app/auth.py")
    assert setting.removed_in_commit == removed
    env = history.identifier("ETCDCTL_ENDPOINT")
    assert env is not None and env.how == "read"
    assert history.identifier("verbose") is None  # a quoted plain word is data, not a setting's name


async def test_code_in_a_blog_folder_or_named_like_a_changelog_is_code(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "r")
    commit(
        repo,
        "2023-01-01",
        {
            "demos/blog/blog.py": "def render_entry(x):\n    return x\n",
            "pkg/deprecated.py": "def warn_deprecated(x):\n    return x\n",
            "CHANGES": "def not_code_entry():\n",
        },
    )
    last = commit(
        repo, "2023-02-01", {"demos/blog/blog.py": "\n", "pkg/deprecated.py": "\n", "CHANGES": "\n"}
    )
    names = {"render_entry", "warn_deprecated", "not_code_entry"}
    history = await read_history(repo, last, names, head_paths=_paths(repo))
    assert history.identifier("render_entry") is not None  # an app's blog/ package is code
    assert history.identifier("warn_deprecated") is not None
    assert history.identifier("not_code_entry") is None  # a changelog without extension is not


async def test_a_name_only_ever_a_method_is_proved_as_a_member(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "r")
    commit(
        repo,
        "2011-01-01",
        {
            "celery/concurrency/threads.py": "class Pool:\n    def do_work(self):\n        pass\n",
            "celery/conf.py": "def get_queues():\n    return []\n",
            "funtests/stress/templates.py": "def use_template(name):\n    return name\n",
        },
    )
    last = commit(repo, "2011-04-02", {"celery/concurrency/threads.py": "\n", "celery/conf.py": "\n"})
    names = {"do_work", "get_queues", "use_template"}
    history = await read_history(repo, last, names, head_paths=_paths(repo))
    method, function = history.identifier("do_work"), history.identifier("get_queues")
    assert method is not None and method.how == "member"
    assert function is not None and function.how == "defined"
    assert history.identifier("use_template") is None  # functional tests are tests


async def test_a_second_analysis_reads_old_definitions_from_the_cache(tmp_path: Path) -> None:
    """The analyzer's passes share one cache by blob id: the second parses and reads nothing it
    parsed before, and still proves the same removal. A name unique to this test keeps the blobs
    its own."""
    unique = f"fetch_{tmp_path.name.replace('-', '_')}"
    repo = init_repo(tmp_path / "r")
    commit(
        repo,
        "2023-01-01",
        {
            "lib/client.py": f"class Client:\n    def {unique}(self):\n        return 1\n",
            "tool.ex": f"def {unique}",
        },
    )
    commit(repo, "2023-02-01", {"lib/client.py": "class Client:\n    def get(self):\n        return 1\n"})
    last = commit(repo, "2023-03-01", {"tool.ex": "# gone\n"})
    first = await _read_history(repo, last, {unique}, _paths(repo), 60.0)
    second = await _read_history(repo, last, {unique}, _paths(repo), 60.0)

    assert first.definitions == {"tree_sitter": 1, "regex": 1} and first.definitions_cached == 0
    assert second.definitions == first.definitions and second.definitions_cached == 2
    assert (first.blobs_read, second.blobs_read) == (2, 0)
    for history in (first, second):
        evidence = history.identifier(unique)
        assert evidence is not None and evidence.seen_in == "tool.ex" and evidence.how == "defined"


async def test_the_check_facts_count_blobs_by_how_their_definitions_were_read(tmp_path: Path) -> None:
    """``facts.doc_check.definitions``: old blobs read by tree-sitter, by the regex fallback (no
    grammar), or not parsed at all (they name no candidate); and how many the cache had."""
    unique = f"parse_{tmp_path.name.replace('-', '_')}"
    repo = init_repo(tmp_path / "r")
    commit(
        repo,
        "2023-01-01",
        {"a.py": f"def {unique}():\n    pass\n", "b.ex": f"def {unique}", "c.py": "x = 1\n"},
    )
    last = commit(repo, "2023-02-01", {"a.py": "pass\n", "b.ex": "# gone\n", "c.py": "x = 2\n"})
    history = await _read_history(repo, last, {unique}, _paths(repo), 60.0)
    stats = _stats(Claims(), judge(Claims(), history), history, 0.1)
    assert stats["definitions"] == {"no_candidate": 1, "regex": 1, "tree_sitter": 1}
    assert stats["definitions_cached"] == 0


async def test_the_file_that_defines_a_name_outright_speaks_for_its_removal(tmp_path: Path) -> None:
    """One commit renames a method in the interface that lists it (a.go, first in the commit)
    and in the type that defines it (mux.go): the evidence is the definition, not the listing."""
    router = "package chi\n\ntype Router interface {\n\t{name}(pattern string)\n}\n"
    mux = "package chi\n\ntype Mux struct{}\n\nfunc (mx *Mux) {name}(pattern string) {}\n"
    repo = init_repo(tmp_path / "r")
    commit(
        repo,
        "2023-01-01",
        {"a.go": router.replace("{name}", "HandleFunc"), "mux.go": mux.replace("{name}", "HandleFunc")},
    )
    last = commit(
        repo,
        "2023-02-01",
        {"a.go": router.replace("{name}", "HandleRoute"), "mux.go": mux.replace("{name}", "HandleRoute")},
    )
    history = await read_history(repo, last, {"HandleFunc"}, head_paths=_paths(repo))
    evidence = history.identifier("HandleFunc")
    assert evidence is not None and evidence.removed_in_commit == last
    assert (evidence.seen_in, evidence.how, evidence.renamed_to) == ("mux.go", "defined", "HandleRoute")
