"""The one file classifier: every kind and flag, positive and negative, in one table."""

from __future__ import annotations

import pytest

from palimpsest.index.codefacts import (
    DOC_SUFFIXES,
    Kind,
    classify,
    is_benchmark,
    is_changelog,
    is_ci_config,
    is_definition_site,
    is_doc,
    is_generated,
    is_generated_source,
    is_history_doc,
    is_history_file,
    is_lockfile,
    is_output_path,
    is_primary_source,
    is_test,
    rival_version_dirs,
    superseded_version_dirs,
)

C, T, D, H, G, V, A, F, E, X = (
    Kind.CODE, Kind.TEST, Kind.DOC, Kind.CHANGELOG, Kind.GENERATED, Kind.VENDORED, Kind.ASSET,
    Kind.CONFIG, Kind.EXAMPLE, Kind.OTHER,
)  # fmt: skip

# path, kind, flags ("lock", "ci", "tool", "bench")
CASES: list[tuple[str, Kind, frozenset[str]]] = [
    # prose in a markup nothing here reads: not code, not a doc of ours (a changelog by its name)
    ("README.ko.rdoc", X, frozenset()),
    ("docs/guide.adoc", X, frozenset()),
    ("doc/intro.textile", X, frozenset()),
    ("CHANGES.rdoc", H, frozenset()),
    ("README.markdown", D, frozenset()),  # Markdown, under its long suffix
    ("History.markdown", H, frozenset()),
    # product code
    ("src/cart.py", C, frozenset()),
    ("src/contest.py", C, frozenset()),
    ("pkg/attestation.go", C, frozenset()),
    ("lib/latest.rb", C, frozenset()),
    ("blog/views.py", C, frozenset()),  # code under a history folder stays code
    ("utils/deprecated.py", C, frozenset()),
    ("migrations/0001_initial.py", C, frozenset()),
    ("migrations/0002.sql", C, frozenset()),
    ("types/index.d.ts", C, frozenset()),
    ("Makefile", C, frozenset()),
    ("templates/app/models.py", C, frozenset()),  # a template folder's code is code
    # tooling: code, not the product
    ("scripts/release.sh", C, frozenset({"tool"})),
    ("benchmarks/bench_parse.py", C, frozenset({"tool", "bench"})),
    ("src/bench/run.rs", C, frozenset({"tool", "bench"})),
    ("packages/core/src/parse.bench.ts", C, frozenset({"tool", "bench"})),
    ("lib/bench_helpers.py", C, frozenset({"tool", "bench"})),
    ("pkg/parse_bench.go", C, frozenset({"tool", "bench"})),
    ("src/workbench.ts", C, frozenset()),  # "bench" inside a word is not a benchmark
    ("src/benchmarking/plan.py", C, frozenset()),
    ("docs/conf.py", C, frozenset({"tool"})),
    ("stubs/foo.pyi", C, frozenset({"tool"})),
    (".ci/run", C, frozenset({"ci", "tool"})),
    # tests and test data
    ("tests/x.py", T, frozenset()),
    ("src/test_cart.py", T, frozenset()),
    ("cart_test.go", T, frozenset()),
    ("lib/cart_spec.rb", T, frozenset()),
    ("web/cart.test.ts", T, frozenset()),
    ("web/cart.spec.mjs", T, frozenset()),
    ("a/__tests__/b.js", T, frozenset()),
    ("src/CartTest.java", T, frozenset()),
    ("src/CartTests.cs", T, frozenset()),
    ("conftest.py", T, frozenset()),
    ("e2e/login.ts", T, frozenset()),
    ("src/__mocks__/fs.js", T, frozenset()),
    ("pkg/testdata/input.go", T, frozenset()),
    ("fixtures/page.md", T, frozenset()),  # a fixture with a doc suffix is data
    ("tests/pages/index.md", T, frozenset()),
    ("src/__snapshots__/a.snap", T, frozenset()),
    ("out.golden", T, frozenset()),
    ("docs/test_page.md", T, frozenset()),
    ("tests_parser.py", T, frozenset()),
    ("test/_fixture/site/README.md", T, frozenset()),  # a private fixture folder, README and all
    ("pkg/_testdata/notes.txt", T, frozenset()),
    ("core/src/test/scala/BillingSpec.scala", T, frozenset()),  # tested by its folder
    # docs
    ("README.md", D, frozenset()),
    ("docs/guide.MDX", D, frozenset()),
    ("docs/testing.md", D, frozenset()),
    ("notes.txt", D, frozenset()),
    ("INSTALL.txt", D, frozenset()),
    ("docs/topics/http.txt", D, frozenset()),  # Sphinx sources may be .txt
    # a .txt outside the docs without a doc's name is what a program reads
    ("art.txt", A, frozenset()),  # a banner the CLI prints
    ("internal/builders/deno/targets.txt", A, frozenset()),  # a list the code embeds
    ("www/static/.well-known/security.txt", A, frozenset()),
    ("tests/README.md", D, frozenset()),  # a test folder's README is a doc
    ("examples/README.md", D, frozenset()),
    ("docs/adr/0001-store.md", D, frozenset()),
    # changelogs, release notes, proposals
    ("CHANGELOG.md", H, frozenset()),
    ("CHANGES", H, frozenset()),
    ("NEWS", H, frozenset()),
    ("HISTORY.rst", H, frozenset()),
    ("docs/release-notes/1.2.md", H, frozenset()),
    ("changelog.d/123.feature", H, frozenset()),
    ("newsfragments/42.bugfix", H, frozenset()),
    ("rfcs/0001-design.md", H, frozenset()),
    ("MIGRATION_GUIDE.md", H, frozenset()),
    ("UPGRADE-GUIDE.md", H, frozenset()),  # "previously you had to use …": history by design
    ("docs/upgrade.md", H, frozenset()),
    ("website/versioned_docs/version-2.x/api.md", H, frozenset()),  # Docusaurus: a past version's pages
    ("docs/reference/previous-versions/v3-create-context.md", H, frozenset()),
    ("src/upgrade.py", C, frozenset()),  # code, whatever it is called
    # generated
    ("package-lock.json", G, frozenset({"lock"})),
    ("uv.lock", G, frozenset({"lock"})),
    ("go.sum", G, frozenset({"lock"})),
    ("web/yarn.lock", G, frozenset({"lock"})),
    ("Cargo.lock", G, frozenset({"lock"})),
    ("deps/Custom.lock", G, frozenset({"lock"})),
    ("dist/axios.js", G, frozenset()),
    ("build/lib/x.py", G, frozenset()),
    ("static/app.min.js", G, frozenset()),
    ("app.js.map", G, frozenset()),
    ("api/service_pb2.py", G, frozenset()),
    ("api/service.pb.go", G, frozenset()),
    ("src/schema.generated.ts", G, frozenset()),
    # vendored
    ("vendor/github.com/x/y.go", V, frozenset()),
    ("third_party/lib/README.md", V, frozenset()),
    ("node_modules/a/index.js", V, frozenset()),
    ("vendor/x/foo_test.go", V, frozenset()),
    # assets
    ("docs/diagram.svg", A, frozenset()),
    ("logo.png", A, frozenset()),
    ("web/site.css", A, frozenset()),
    ("web/index.html", A, frozenset()),
    ("data/table.csv", A, frozenset()),
    ("public/robots-notes.md", A, frozenset()),
    ("templates/page.md", A, frozenset()),
    (".vale/words.txt", A, frozenset()),
    ("{{cookiecutter.project_slug}}/README.md", A, frozenset()),  # a project template's page
    # config
    ("pyproject.toml", F, frozenset()),
    ("package.json", F, frozenset()),
    ("config/app.yaml", F, frozenset()),
    ("Dockerfile", F, frozenset()),
    (".gitignore", F, frozenset()),
    ("requirements.txt", F, frozenset()),
    ("requirements-dev.txt", F, frozenset()),
    ("requirements/dev.txt", F, frozenset()),  # pip's split requirements
    ("deploy/requirements/ingest.txt", F, frozenset()),
    ("docs/requirements/notes.md", D, frozenset()),  # only the .txt pins
    ("CMakeLists.txt", F, frozenset()),
    (".github/workflows/ci.yml", F, frozenset({"ci"})),
    (".gitlab-ci.yml", F, frozenset({"ci"})),
    (".circleci/config.yml", F, frozenset({"ci"})),
    ("Jenkinsfile", F, frozenset({"ci"})),
    (".travis.yml", F, frozenset({"ci"})),
    ("azure-pipelines.yml", F, frozenset({"ci"})),
    (".github/dependabot.yml", F, frozenset()),
    (".git_archival.txt", F, frozenset()),  # the template ``git archive`` fills in
    # examples
    ("examples/server.js", E, frozenset()),
    ("samples/basic/main.go", E, frozenset()),
    ("playground/app.ts", E, frozenset()),
    ("samples/site/page.md", E, frozenset()),  # a sample site's page is its input, not a doc
    # other: doc-suffixed or plain files that are neither doc nor data
    ("LICENSE.md", X, frozenset()),
    ("LICENSE", X, frozenset()),
    ("CODE_OF_CONDUCT.md", X, frozenset()),
    (".github/PULL_REQUEST_TEMPLATE.md", X, frozenset()),
    ("AUTHORS", X, frozenset()),
    ("docs/ICON_LICENSE.md", X, frozenset()),  # a licence of one part
    ("fonts-license.txt", X, frozenset()),
    # the project's policies where GitHub looks for them; elsewhere the name may be a page about the code
    ("SECURITY.md", X, frozenset()),
    (".github/SECURITY.md", X, frozenset()),
    ("BUG-BOUNTY.md", X, frozenset()),
    ("SUPPORT.md", X, frozenset()),
    ("docs/security.md", D, frozenset()),  # a parser's security considerations
    ("licenses/django.txt", X, frozenset()),
    # not a test by its name alone: a ``Spec`` suffix outside a test folder is a type like any other
    ("core/src/main/scala/BillingSpec.scala", C, frozenset()),
    ("src/licensing.py", C, frozenset()),
]


@pytest.mark.parametrize(("path", "kind", "flags"), CASES, ids=[c[0] for c in CASES])
def test_classify(path: str, kind: Kind, flags: frozenset[str]) -> None:
    facts = classify(path)
    assert facts.kind is kind
    assert facts.lockfile is ("lock" in flags)
    assert facts.ci is ("ci" in flags)
    assert facts.tooling is ("tool" in flags)
    assert facts.benchmark is ("bench" in flags)


@pytest.mark.parametrize(("path", "kind", "flags"), CASES, ids=[c[0] for c in CASES])
def test_the_questions_agree_with_the_kind(path: str, kind: Kind, flags: frozenset[str]) -> None:
    assert is_test(path) is (kind is T)
    assert is_changelog(path) is (kind is H)
    assert is_generated(path) is (kind is G)
    assert is_lockfile(path) is ("lock" in flags)
    assert is_ci_config(path) is ("ci" in flags)
    assert is_benchmark(path) is ("bench" in flags)
    assert is_definition_site(path) is (kind in (C, E))
    assert is_primary_source(path) is (kind is C and "tool" not in flags)
    # a doc is a doc or changelog page with a doc suffix
    assert is_doc(path) is (kind in (D, H) and path.lower().endswith(DOC_SUFFIXES))


@pytest.mark.parametrize(
    ("path", "history_doc", "history_file"),
    [
        ("CHANGES.rst", True, True),
        ("CHANGES", True, True),
        ("docs/whatsnew/3.0.md", True, False),  # by place: a history doc, not a changelog file
        ("blog/views.py", True, False),  # asked of docs only: a code file is never a changelog file
        ("utils/deprecated.py", True, False),
        ("docs/guide.md", False, False),
    ],
)
def test_history_by_name_and_place(path: str, history_doc: bool, history_file: bool) -> None:
    assert is_history_doc(path) is history_doc
    assert is_history_file(path) is history_file


def test_case_does_not_matter() -> None:
    assert classify("Docs/Guide.MD") == classify("docs/guide.md")
    assert classify("PACKAGE-LOCK.JSON").lockfile


@pytest.mark.parametrize(
    ("paths", "superseded"),
    [
        # a v3 beside a v4: v3 is superseded, wherever the pair sits
        (["packages/zod/src/v3/types.ts", "packages/zod/src/v4/core/api.ts"], {"packages/zod/src/v3"}),
        (["v1/a.go", "v2/a.go", "v3/a.go"], {"v1", "v2"}),
        (["api/V1/x.py", "api/v2/x.py"], {"api/V1"}),
        # a lone major-version folder is the current version (a Go module's /v2)
        (["cmd/v2/main.go", "cmd/main.go"], set()),
        # versions under different parents are not rivals
        (["a/v1/x.ts", "b/v2/x.ts"], set()),
        # not a version folder
        (["src/v4-mini/index.ts", "src/v4/index.ts", "src/version2/x.ts"], set()),
        ([], set()),
    ],
)
def test_superseded_version_dirs(paths: list[str], superseded: set[str]) -> None:
    assert superseded_version_dirs(paths) == superseded


def test_rival_version_dirs_say_which_is_superseded() -> None:
    paths = ["src/v3/a.ts", "src/v4/a.ts", "src/v4/core/v1/x.ts", "cmd/v2/main.go"]
    assert rival_version_dirs(paths) == {"src/v3": True, "src/v4": False}


# Where the four answers kept outside codefacts disagreed with it, and what holds now. Each row: the
# path, the old answer and who gave it, and the one answer every caller gets now.
SETTLED: list[tuple[str, str, str, bool]] = [
    # languages.is_doc (the chunker's file kind) went by suffix alone
    ("requirements.txt", "languages.is_doc", "doc", False),
    ("LICENSE.md", "languages.is_doc", "doc", False),
    ("tests/fixtures/page.md", "languages.is_doc", "doc", False),
    ("docs/guide.md", "languages.is_doc", "doc", True),
    # context.candidates._is_test_name went by the file name alone
    ("core/src/main/scala/BillingSpec.scala", "candidates._is_test_name", "test", False),
    ("e2e/login.ts", "candidates._is_test_name", "not a test", True),
    ("tests_parser.py", "candidates._is_test_name", "test", True),
    ("src/billing.test.ts", "candidates._is_test_name", "test", True),
]


@pytest.mark.parametrize(("path", "who", "old", "now"), SETTLED, ids=[f"{r[1]}:{r[0]}" for r in SETTLED])
def test_the_answers_kept_elsewhere_are_settled_here(path: str, who: str, old: str, now: bool) -> None:
    from palimpsest.index import languages

    assert languages.is_doc is is_doc  # one answer: the chunker's is the classifier's
    answer = is_doc(path) if who == "languages.is_doc" else is_test(path)
    assert answer is now, f"{path}: {who} said {old}"


# doccheck's own folder list: the paths a doc names that no repository keeps. The build-output,
# generated and vendored folders are the classifier's; environments, caches and a generator's
# site count only at the root, where a checkout or a tool makes them.
OUTPUT_PATHS: list[tuple[str, bool]] = [
    ("dist/app.js", True),
    ("./build/lib/x.py", True),
    (".venv/bin/python", True),
    ("env/bin/activate", True),
    ("site/index.html", True),
    ("public/index.html", True),
    ("node_modules/a/index.js", True),
    ("third_party/lib/x.c", True),  # vendored, as classify has it (doccheck's list had only vendor/)
    ("generated/api.ts", True),
    ("Target/x", True),  # case-insensitive, like classify
    ("src/env/config.ts", False),  # an env folder inside the code is code
    ("src/dist.py", False),
    ("docs/site.md", False),
]


@pytest.mark.parametrize(("path", "output"), OUTPUT_PATHS, ids=[p for p, _ in OUTPUT_PATHS])
def test_output_paths(path: str, output: bool) -> None:
    assert is_output_path(path) is output


# drift_history's excludes were git pathspecs (test globs and doc suffixes); the bench now keeps
# the classifier's definition sites, as the analyzer's history pass does
DEFINITION_SITES: list[tuple[str, bool]] = [
    ("src/app.py", True),
    ("examples/app.py", True),
    ("docs/conf.py", True),  # the docs' own code is code (tooling)
    ("spec/models/user_spec.rb", False),  # the pathspecs missed ``_spec``
    ("e2e/login.ts", False),  # … and e2e folders
    ("pkg/fixtures/app.py", False),  # … and fixture folders
    ("tests/test_app.py", False),
    ("README.md", False),
    ("README.ko.rdoc", False),  # a translated README's example variables are not the code's
    ("docs/guide.adoc", False),
    ("README.markdown", False),
    ("requirements.txt", False),
    ("LICENSE", False),  # the pathspecs let a licence define names
    ("package.json", False),  # config keys are not the code's definitions
    ("dist/app.js", False),
]


@pytest.mark.parametrize(("path", "site"), DEFINITION_SITES, ids=[p for p, _ in DEFINITION_SITES])
def test_definition_sites(path: str, site: bool) -> None:
    assert is_definition_site(path) is site


GENERATED_SOURCES: list[tuple[str, bool]] = [
    ("altsrc/flag_generated.go", True),  # a package's generated code: its users call it
    ("api/v1/service.pb.go", True),
    ("proto/service_pb2.py", True),
    ("dist/axios.js", False),  # a build-output tree
    ("pkg/generated/client.go", False),
    ("static/app.min.js", False),  # a bundle
    ("static/app.js.map", False),
    ("go.sum", False),  # a lockfile
    ("src/app.py", False),  # hand-written
]


@pytest.mark.parametrize(("path", "source"), GENERATED_SOURCES, ids=[p for p, _ in GENERATED_SOURCES])
def test_generated_sources(path: str, source: bool) -> None:
    assert is_generated_source(path) is source
