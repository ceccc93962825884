"""The one file classifier: every kind and flag, positive and negative, in one table."""

from __future__ import annotations

import pytest

from palimpsest.index.codefacts import (
    Kind,
    classify,
    is_benchmark,
    is_changelog,
    is_ci_config,
    is_definition_site,
    is_doc,
    is_generated,
    is_history_doc,
    is_history_file,
    is_lockfile,
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
    # docs
    ("README.md", D, frozenset()),
    ("docs/guide.MDX", D, frozenset()),
    ("docs/testing.md", D, frozenset()),
    ("notes.txt", D, frozenset()),
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
    # config
    ("pyproject.toml", F, frozenset()),
    ("package.json", F, frozenset()),
    ("config/app.yaml", F, frozenset()),
    ("Dockerfile", F, frozenset()),
    (".gitignore", F, frozenset()),
    ("requirements.txt", F, frozenset()),
    ("requirements-dev.txt", F, frozenset()),
    ("CMakeLists.txt", F, frozenset()),
    (".github/workflows/ci.yml", F, frozenset({"ci"})),
    (".gitlab-ci.yml", F, frozenset({"ci"})),
    (".circleci/config.yml", F, frozenset({"ci"})),
    ("Jenkinsfile", F, frozenset({"ci"})),
    (".travis.yml", F, frozenset({"ci"})),
    ("azure-pipelines.yml", F, frozenset({"ci"})),
    (".github/dependabot.yml", F, frozenset()),
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
    assert is_doc(path) is (kind in (D, H) and path.lower().endswith((".md", ".mdx", ".txt", ".rst")))


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
