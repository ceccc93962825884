"""How the documentation check reads references, and how history names a definition."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from palimpsest.analyzer.doccheck import (
    Claim,
    Claims,
    _about_something_else,
    _checked_identifier,
    _foreign_attribute,
    _is_tree_claim,
    _Mention,
    _resolutions,
    _Tree,
    judge,
)
from palimpsest.analyzer.history import (
    History,
    LineOrigin,
    _moved_directory,
    _porcelain,
    _Removal,
)
from palimpsest.index.codefacts import is_doc, is_history_doc
from palimpsest.index.codefacts.definitions import defined_names

TREE = _Tree.of(
    [
        "src/payments/billing/invoice.py",
        "src/ledger.py",
        "docs/guide/index.rst",
        "docs/install.md",
        "examples/tutorial/flaskr/blog.py",
    ]
)


def test_links_resolve_against_the_document_first() -> None:
    assert _resolutions("docs/design.md", "../src/x.py", "link") == ["src/x.py"]
    assert _resolutions("docs/design.md", "guide.md", "link") == ["docs/guide.md", "guide.md"]
    assert _resolutions("docs/design.md", "src/x", "code") == ["src/x", "docs/src/x"]
    assert _resolutions("docs/index.rst", "guide/index", "docref") == ["docs/guide/index", "guide/index"]
    assert _resolutions("README.md", "/src/x", "code") == ["src/x"]
    assert _resolutions("README.md", "../../outside", "link") == []


def test_document_references_resolve_without_their_extension() -> None:
    assert TREE.exists_as_doc("docs/guide/index")  # Sphinx :doc: and toctree entries
    assert TREE.exists_as_doc("docs/guide")  # a folder with an index
    assert TREE.exists_as_doc("docs/install.html")  # a link to the built page
    assert not TREE.exists_as_doc("docs/deploying/proxy_fix")


def test_paths_relative_to_an_example_folder_resolve() -> None:
    assert TREE.ends_with("flaskr/blog.py")
    assert TREE.ends_with("tutorial/flaskr")
    assert not TREE.ends_with("flaskr/auth.py")
    assert not TREE.ends_with("r/blog.py")  # a whole segment, not a substring


@pytest.mark.parametrize(
    ("target", "source", "claim"),
    [
        ("src/billing", "code", True),
        ("config.yml", "code", False),  # a bare name in inline code is often a runtime file
        ("guide.md", "link", True),
        ("path/to/your/app.py", "prose", False),  # a placeholder
        ("yourapp/settings.py", "code", False),
        ("/etc/nginx/nginx.conf", "code", False),  # a system path
        ("node_modules/x/index.js", "code", False),  # generated
        ("github.com/org/repo", "code", False),  # a domain
        ("src/{name}.py", "code", False),
        ("-f/--file", "code", False),  # a flag
        ("multipart/form-data", "code", False),  # a MIME type
        ("application/vnd.api+json", "code", False),
    ],
)
def test_what_counts_as_a_claim_about_the_tree(target: str, source: str, claim: bool) -> None:
    assert _is_tree_claim(target, source, TREE) is claim


@pytest.mark.parametrize(
    ("code", "name", "defined"),
    [
        (b"def compute_total(lines):\n", "compute_total", True),
        (b"class LedgerEntry(Base):\n", "LedgerEntry", True),
        (b"func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {\n", "ServeHTTP", True),
        (b"pub(crate) fn parse_args() -> Args {\n", "parse_args", True),
        (b"export async function renderPage(ctx) {\n", "renderPage", True),
        (b"  async fetchItems(id: string): Promise<Item[]> {\n", "fetchItems", True),
        (b"public static int countLines(String s) throws IOException {\n", "countLines", True),
        (b"MAX_RETRIES = 3\n", "MAX_RETRIES", True),
        (b"type Options struct {\n", "Options", True),
        (b"class Model(BaseModel):\n    list_of_ints: list[int]\n", "list_of_ints", True),
        (
            b"def get(url,\n        allow_redirects: bool = True,\n):\n",
            "allow_redirects",
            False,
        ),  # a parameter
        (b"total = compute_total(lines)\n", "compute_total", False),  # a use, not a definition
        (b"    return compute_total(x) {\n", "compute_total", False),
        (b"  compute_total(a, b);\n", "compute_total", False),
        (b"def compute_totals(x):\n", "compute_total", False),  # another name
        (b"\x00def compute_total(x):\n", "compute_total", False),  # binary
    ],
)
def test_regex_definitions_across_languages(code: bytes, name: str, defined: bool) -> None:
    """The keyword regex: the fallback for blobs without a grammar and for a doc's own example."""
    assert (name in defined_names(code, {name})) is defined


def _removal(renamed_to: str | None) -> _Removal:
    return _Removal(1, "c" * 40, datetime(2024, 1, 1, tzinfo=UTC), "p" * 40, renamed_to)


def test_a_directory_moved_when_all_its_files_moved_together() -> None:
    moved = [
        ("src/billing/a.py", _removal("src/pay/billing/a.py")),
        ("src/billing/x/b.py", _removal("src/pay/billing/x/b.py")),
    ]
    assert _moved_directory("src/billing", moved) == "src/pay/billing"
    split = [("src/billing/a.py", _removal("lib/a.py")), ("src/billing/b.py", _removal("other/b.py"))]
    assert _moved_directory("src/billing", split) is None
    assert _moved_directory("src/billing", [("src/billing/a.py", _removal(None))]) is None


def test_blame_porcelain_gives_each_line_its_commit_and_date() -> None:
    sha = "a" * 40
    text = f"{sha} 3 3 1\nauthor X\ncommitter-time 1704067200\nfilename README.md\n\tCall `x()`.\n"
    [(key, origin)] = _porcelain("README.md", text).items()
    assert key == ("README.md", 3) and origin.commit == sha
    assert origin.when == datetime(2024, 1, 1, tzinfo=UTC)


@pytest.mark.parametrize(
    ("path", "doc", "history"),
    [
        ("README.md", True, False),
        ("docs/api.rst", True, False),
        ("requirements-dev.txt", False, False),
        ("LICENSE.txt", False, False),
        ("CMakeLists.txt", False, False),
        ("tests/templates/mail.txt", False, False),
        ("tests/data/expected.txt", False, False),
        ("tests/roots/test-root/index.rst", False, False),  # a Sphinx test project's input
        ("pelican/tests/content/article.md", False, False),
        ("samples/content/super_article.rst", False, False),
        ("tests/README.md", True, False),  # how the tests work: a doc
        ("src/fixtures/readme.md", False, False),
        ("packages/create-vite/template-vue-ts/README.md", False, False),
        ("playground/fs-serve/root/unsafe.txt", False, False),
        (".github/ISSUE_TEMPLATE/bug.md", False, False),
        ("CODE_OF_CONDUCT.md", False, False),
        (".hyperlint/styles/vocabularies/accept.txt", False, False),
        (".hyperlint/style_guide_test.md", False, False),
        ("doc/extdev/deprecated.rst", True, True),
        ("docs/blog/announcing-vite5.md", True, True),
        ("docs/migration.md", True, True),
        ("sep/sep-019.rst", True, True),
        ("docs/internals/deprecation.rst", True, True),
        ("examples/static-files/public/hello.txt", False, False),
        ("examples/markdown/views/index.md", False, False),
        ("docs/adr/0004-billing.md", True, False),  # ADRs are docs: their Governs: lines are checked
        ("CHANGES.rst", True, True),
        ("docs/changelog.md", True, True),
        ("HISTORY.md", True, True),
        ("docs/releases/3.0.txt", True, True),
        ("docs/release-notes/v2.md", True, True),
        ("NEWS", False, True),
        ("docs/guide.md", True, False),
    ],
)
def test_documentation_by_name_and_place(path: str, doc: bool, history: bool) -> None:
    assert is_doc(path) is doc
    assert is_history_doc(path) is history


def test_translations_and_doc_versions_fall_back_to_a_mirrored_path() -> None:
    tree = _Tree.of(["docs/en/docs/newsletter.md", "docs/de/docs/index.md", "src/app.py"])
    assert tree.mirrored("docs/de/docs/newsletter.md")  # MkDocs i18n falls back to English
    assert not tree.mirrored("docs/de/docs/gone.md")
    assert not tree.mirrored("docs/de/guide/newsletter.md")  # two folders differ: not a mirror


def test_a_qualified_name_must_start_with_something_of_this_repository() -> None:
    tree = _Tree.of(["src/flask/app.py", "README.md", "doc/websupport/index.rst"])
    assert tree.has_stem("flask") and tree.has_stem("app") and tree.has_stem("Flask")
    assert not tree.has_stem("tempfile") and not tree.has_stem("sphinxcontrib")
    assert not tree.has_stem("websupport") and not tree.has_stem("readme")  # folders and files of docs


def _claims(*mentions: tuple[str, str]) -> Claims:
    claims = Claims()
    for name, source in mentions:
        mention = _Mention("docs/guide.md", 10, "mention", name, "identifier", source)
        claims.claims.append(Claim(mention, "missing_identifier", f"`{name}`", (name,)))
    return claims


def _history(**seen_in: str) -> History:
    history = History()
    removed, parent = datetime(2022, 3, 10, tzinfo=UTC), "p" * 40
    history.dates[parent] = datetime(2022, 3, 9, tzinfo=UTC)
    for name, path in seen_in.items():
        history.identifiers[name] = _Removal(5, "r" * 40, removed, parent, seen_in=path)
    return history


def test_an_example_can_only_use_public_api() -> None:
    claims = _claims(
        ("addCmd", "fence:go"), ("NewRunner", "fence:go"), ("_helper", "fence:python"), ("runAll", "code")
    )
    history = _history(addCmd="cmd/add.go", NewRunner="runner.go", _helper="pkg/util.py", runAll="run.go")
    written = {("docs/guide.md", 10): LineOrigin("l" * 40, datetime(2021, 1, 1, tzinfo=UTC))}
    judged = judge(claims, history, lines=written, list_unverified=True)
    assert [f.claim for f in judged.findings] == [
        "`NewRunner`",
        "`runAll`",
    ]  # inline code may name private code
    assert {u["claim"]: u["rule"] for u in judged.unverified} == {
        "`addCmd`": "judge.private_in_example",
        "`_helper`": "judge.private_in_example",
    }


def test_a_name_written_after_its_definition_was_gone_is_not_a_finding() -> None:
    claims = _claims(("build_only", "code"))
    history = _history(build_only="flask/app.py")
    later = {("docs/guide.md", 10): LineOrigin("l" * 40, datetime(2023, 1, 1, tzinfo=UTC))}
    judged = judge(claims, history, lines=later, list_unverified=True)
    assert judged.findings == [] and judged.unverified[0]["rule"] == "judge.written_after"
    assert judge(claims, history).findings[0].evidence is not None  # without blame: reported, date unknown


def test_a_signature_listing_is_the_repository_s_api_not_the_doc_s_own_example() -> None:
    tree = _Tree.of(["call.go", "README.md"])
    listing = "```go\nfunc WithCompressor(c Compressor) DialOption {}\nfunc UseCompressor(name) CallOption {}\n```\n"
    example = "```go\nfunc UseCompressor(name string) CallOption {\n\treturn nil\n}\n```\n"
    mention = _Mention("docs/compression.md", 11, "mention", "UseCompressor", "identifier", "code")
    assert not _about_something_else(mention, listing, tree, set())  # listed with an empty body: the API
    assert _about_something_else(mention, example, tree, set())  # defined with a body: the doc's own example


def test_an_attribute_of_an_object_the_example_never_made_is_another_library_s() -> None:
    tree = _Tree.of(["aiohttp/helpers.py", "aiohttp/web.py", "docs/web_advanced.rst"])
    text = "async def listen(app):\n    client = redis.from_url('redis://')\n    resp = web.from_url(x)\n"
    mention = _Mention("docs/web_advanced.rst", 1203, "mention", "from_url", "identifier", "fence:python")
    assert _foreign_attribute(mention, "    client = redis.from_url('redis://')", text, tree)
    assert not _foreign_attribute(mention, "    resp = web.from_url(x)", text, tree)  # a module of ours
    made = text + "auth = make()\nauth.from_url(y)\n"
    assert not _foreign_attribute(mention, "auth.from_url(y)", made, tree)  # the example made ``auth``
    assert not _foreign_attribute(mention, "from_url(z)", text, tree)  # called bare
    prose = _Mention("docs/web_advanced.rst", 3, "mention", "from_url", "identifier", "code")
    assert not _foreign_attribute(prose, "call `redis.from_url`", text, tree)  # only examples


def test_a_setting_only_a_deleted_file_read_may_live_on_elsewhere() -> None:
    claims = _claims(("POETRY_VERSION", "code"), ("friendfeed_consumer_key", "code"))
    history = _history(POETRY_VERSION="install-poetry.py", friendfeed_consumer_key="tornado/auth.py")
    history.identifiers["POETRY_VERSION"].how = "read"  # the installer script was deleted
    history.identifiers["friendfeed_consumer_key"].how = "read"
    history.identifiers["friendfeed_consumer_key"].new_blob = "b" * 40  # auth.py lives on without it
    for removal in history.identifiers.values():
        removal.old_blob = "a" * 40
    judged = judge(claims, history, list_unverified=True)
    assert [f.claim for f in judged.findings] == ["`friendfeed_consumer_key`"]
    assert "read as a key in tornado/auth.py" in judged.findings[0].detail
    assert judged.unverified[0]["rule"] == "judge.deleted_reader"


def test_a_shell_session_names_commands_not_definitions() -> None:
    tree = _Tree.of(["okhttp/src/Call.kt", "scripts/release.sh"])
    languages = {"kotlin", "shell"}
    shell = _Mention("README.md", 213, "mention", "nativeImage", "identifier", "fence:shell")
    kotlin = _Mention("README.md", 220, "mention", "newCall", "identifier", "fence:kotlin")
    assert not _checked_identifier(shell, set(), languages, tree)
    assert _checked_identifier(kotlin, set(), languages, tree)


def test_an_example_s_own_names_are_not_the_repository_s() -> None:
    tree = _Tree.of(["celery/app/task.py", "examples/app/myapp.py", "docs/faq.rst"])
    imported = "    >>> from myapp.tasks import MyPeriodicTask\n    >>> MyPeriodicTask.delay()\n"
    mention = _Mention("docs/faq.rst", 340, "mention", "MyPeriodicTask", "identifier", "fence:python")
    assert _about_something_else(mention, imported, tree, set())  # imported from the reader's own package
    ours = "    >>> from celery.app.task import MyPeriodicTask\n"
    assert not _about_something_else(mention, ours, tree, set())

    def claim(name: str, **flags: bool) -> Claim:
        mention = _Mention("docs/guide.rst", 10, "mention", name, "identifier", "fence:python")
        return Claim(mention, "missing_identifier", f"`{name}`", (name,), **flags)

    claims = Claims()
    claims.claims += [
        claim("do_work", bare_call=True),  # only ever a method of the repository
        claim("feed_url"),  # a quoted name in an example
        claim("run_work", bare_call=True, unimported=True),  # never imported: a placeholder
        claim("chord_join", bare_call=True),  # imported by the doc: the repository's
    ]
    history = _history(
        do_work="celery/concurrency/threads.py",
        feed_url="celery/task/sets.py",
        run_work="celery/worker.py",
        chord_join="celery/canvas.py",
    )
    history.identifiers["do_work"].how = "member"
    history.identifiers["feed_url"].how = "read"
    judged = judge(claims, history, list_unverified=True)
    assert [f.claim for f in judged.findings] == ["`chord_join`"]
    assert {u["rule"] for u in judged.unverified} == {
        "judge.method_called_bare",
        "judge.quoted_name",
        "judge.unimported_call",
    }
    assert judged.rules["finding"] == 1 and judged.rules["judge.quoted_name"] == 1


def test_an_attribute_chain_is_judged_by_its_root() -> None:
    tree = _Tree.of(["src/werkzeug/datastructures/auth.py", "docs/quickstart.rst"])
    text = ">>> response = Response('Hello World!')\n>>> response.www_authenticate.set_basic('realm')\n"
    mention = _Mention("docs/quickstart.rst", 2, "mention", "set_basic", "identifier", "fence:python")
    line = ">>> response.www_authenticate.set_basic('realm')"
    assert not _foreign_attribute(mention, line, text, tree)  # the example made ``response``
    assert _foreign_attribute(mention, ">>> other.www_authenticate.set_basic('realm')", text, tree)
