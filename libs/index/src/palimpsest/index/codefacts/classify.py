"""What kind of file a path is: the one classifier of the index, the analyzer and the benchmarks.

:func:`classify` reads the path alone (no content, no language detection) and answers with a
:class:`FileFacts`: one :class:`Kind` and three flags. The kinds, decided in this order:

1. ``vendored`` -- under a vendored tree (``vendor/``, ``third_party/``, ``node_modules/`` …);
2. ``doc`` / ``changelog`` -- documentation by :func:`is_doc` (a doc suffix, unless its name or
   place says it is data with a doc extension); a changelog, release notes, a news fragment or an
   enhancement proposal is ``changelog`` (history by design, see :func:`is_history_doc`), and so
   is a changelog kept without a suffix (``CHANGES``, ``NEWS``: :func:`is_history_file`);
3. ``generated`` -- lockfiles (flag ``lockfile``: the known names and any ``*.lock``), minified bundles, source maps, protobuf and
   other generator output, and files under build-output folders (``dist/``, ``build/`` …);
4. ``test`` -- test code and test data: under a test or fixture folder, or named as a test
   (``test_*.py``, ``*_test.go``, ``*.spec.ts``, ``FooTest.java``, ``conftest.py``, ``*.snap``);
5. ``example`` -- code under ``examples/``, ``samples/``, ``demo/``, ``playground/``;
6. ``config`` -- configuration and manifests (``*.yml``, ``*.toml``, ``*.json``, ``Dockerfile``,
   ``requirements.txt`` …); CI configuration carries the flag ``ci`` (``.github/workflows/``,
   ``.gitlab-ci.yml``, ``Jenkinsfile`` …);
7. ``asset`` -- images, fonts, media, archives, binaries, data tables, markup and styles;
8. ``other`` -- a file with a doc suffix that is neither doc nor data (licences, community files);
9. ``code`` -- everything else. Code that serves the repository rather than being the product
   (scripts, benchmarks, tools, CI scripts, the docs' own code, type stubs) carries ``tooling``.

Where the four earlier copies disagreed, the choices are deliberate:

* build-output folders (``dist``, ``build``, ``target``, ``out``) are generated for every caller,
  as the package finder and the doc check already held; the history pass used to count a
  definition in a checked-in bundle as a definition of the code;
* ``e2e``, ``cypress``, ``__mocks__`` and ``mocks`` folders are tests for every caller, not only for
  the package finder; ``Test``/``Tests``-suffixed class files are tests in every language;
* examples stay code for the history pass (:func:`is_definition_site`: an example's function can
  be what a doc names) and stay outside primary source (:func:`is_primary_source`);
* ``*.d.ts`` declarations are code (they define the API a doc names); only the package finder,
  which looks for implementations, sets them aside.

The four answers that stayed outside after that are folded in too, and their disagreements
settled in the table tests (``tests/unit/index/test_codefacts.py``):

* the chunker's file kind (``languages.is_doc``, by suffix) is :func:`is_doc`: requirements files,
  licences, fixtures and templates with a doc suffix are no docs there either;
* the review context's test pairing asks :func:`is_test`: ``e2e/login.ts`` is a test by its
  folder; a ``Spec`` suffix is no test by name (``src/main/scala/FooSpec.scala`` is a type; the
  specs of Scala, Kotlin and Groovy live under test folders, which count);
* the doc check's folders of paths no repository keeps are :func:`is_output_path`: this module's
  build-output, generated and vendored folders, plus environments, caches and a generator's site
  at the root;
* the drift benchmark's code is :func:`is_definition_site`, as for the analyzer's history pass
  (its pathspecs had missed ``_spec`` files, e2e and fixture folders, and let licences and
  config define names).

Not documentation either, as issue 51 lists it: a licence of one part (``ICON_LICENSE.md``,
``licenses/``), a fixture under a private folder (``_fixture/``), a project template's folder
(``{{cookiecutter.name}}/``) and a hidden file with a doc suffix (``.git_archival.txt``, the
template ``git archive`` fills in). Pages that are docs but make no claim about the code
(pointer pages, generated reference) are told by their text: :mod:`.pages`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum
from functools import lru_cache

__all__ = [
    "DOC_SUFFIXES",
    "FileFacts",
    "Kind",
    "classify",
    "is_benchmark",
    "is_changelog",
    "is_ci_config",
    "is_definition_site",
    "is_doc",
    "is_generated",
    "is_generated_source",
    "is_history_doc",
    "is_history_file",
    "is_lockfile",
    "is_output_path",
    "is_primary_source",
    "is_test",
    "is_vendored",
    "rival_version_dirs",
    "superseded_version_dirs",
]

DOC_SUFFIXES = (".md", ".mdx", ".markdown", ".txt", ".rst")
# prose in a markup no reader here parses (AsciiDoc, RDoc, Textile, Org, POD, …): never code, so it
# defines nothing a doc may name (a translated ``README.ko.rdoc`` "defined" its example's
# variables), and no doc of ours either, since nothing reads its claims; kind ``other``, or
# ``changelog`` by its name or place
UNREAD_MARKUP_SUFFIXES = (
    ".adoc", ".asciidoc", ".rdoc", ".textile", ".org", ".pod", ".rest", ".creole", ".wiki",
)  # fmt: skip


class Kind(StrEnum):
    """The role of a file in its repository (stored and shown: the values are stable)."""

    CODE = "code"
    TEST = "test"
    DOC = "doc"
    CHANGELOG = "changelog"
    GENERATED = "generated"
    VENDORED = "vendored"
    ASSET = "asset"
    CONFIG = "config"
    EXAMPLE = "example"
    OTHER = "other"


@dataclass(frozen=True, slots=True)
class FileFacts:
    """One path's kind and flags."""

    kind: Kind
    lockfile: bool = False  # a dependency lockfile (kind generated)
    ci: bool = False  # CI configuration or a CI script
    tooling: bool = False  # code that serves the repository (scripts, benchmarks, tools), not the product
    doc: bool = False  # documentation by :func:`is_doc` (a doc, or a changelog with a doc suffix)
    benchmark: bool = False  # benchmark code (kind code, flag tooling): under a bench folder or named as one


# ----------------------------------------------------------------------------- the tables

_VENDORED_DIRS = frozenset(
    {"vendor", "vendored", "third_party", "third-party", "node_modules", "site-packages", "bower_components"}
)
# Files with a doc extension that are not documentation, by name (the stem, lower case) …
_CONFIG_STEMS = re.compile(
    r"^(?:requirements|constraints|dev-requirements|test-requirements)([._-].*)?$|^cmakelists$"
)
_OTHER_STEMS = re.compile(
    r"^(?:licen[cs]e|copying|copyright|notice|patents|third[._-]party[._-]notices)([._-].*)?$"
    # a licence of one part (``ICON_LICENSE.md``, ``fonts-license.txt``)
    r"|^.+[._-]licen[cs]es?$"
    r"|^(?:robots|humans|version|build)$"
    # community and ownership files: not about the code
    r"|^(?:code[._-]of[._-]conduct|authors|contributors|maintainers|codeowners|funding|backers|sponsors)$"
    r"|^(?:pull[._-]request[._-]template|issue[._-]template)$"
)
# the project's policies, where GitHub looks for them (the repository's root, ``.github/``): how to
# report a vulnerability, get help, or who decides; not about the code. Elsewhere the same names
# may be pages about the code (a parser's ``docs/security.md``)
_POLICY_STEMS = re.compile(r"^(?:security|support|governance|bug[._-]bounty)$")
# pip's split requirements (``requirements/base.txt``, ``requirements/dev.txt``): pins, not prose
_REQUIREMENTS_DIRS = frozenset({"requirements", "requirements.d"})
# … and by place: fixtures, golden files, templates and served files hold data, not prose.
_FIXTURE_DIRS = frozenset(
    {
        "fixtures", "fixture", "testdata", "test-data", "test_data", "__snapshots__", "snapshots",
        "golden", "goldens", "expected", "testcases", "test-cases", "corpus",
    }
)  # fmt: skip
# folders of licence texts (``licenses/django.txt``): not about the code
_LICENCE_DIRS = frozenset({"license", "licenses", "licence", "licences", "licensing"})
_DATA_DIRS = frozenset(
    {
        "templates", "template", "issue_template", "pull_request_template", "discussion_template",
        "playground", "playgrounds", "public", "static", "views", "assets", "files", "data",
    }
)  # fmt: skip
_TEST_DIRS = frozenset(
    {
        "test", "tests", "testing", "spec", "specs", "__tests__", "t", "testsuite", "test_suite",
        "funtests", "functests", "functional_tests", "e2e", "cypress", "__mocks__", "mocks",
    }
)  # fmt: skip
_SAMPLE_DIRS = frozenset({"samples", "sample"})
_EXAMPLE_DIRS = frozenset(
    {"example", "examples", "_examples", "sample", "samples", "demo", "demos", "playground", "playgrounds"}
)
_ABOUT_FOLDER = frozenset({"readme", "contributing", "howto", "guide"})
# where a .txt is documentation: under a docs folder, or by a doc's own name
_DOC_FOLDERS = frozenset(
    {"doc", "docs", "documentation", "manual", "manuals", "guide", "guides", "handbook", "wiki"}
)
_TXT_DOC_STEMS = re.compile(
    r"^(?:readme|notes?|todo|install(?:ation|ing)?|usage|faq|contributing|hacking|howto|guide|manual"
    r"|tutorial|intro(?:duction)?|overview|getting[._-]started|design|architecture|roadmap)(?:[._-].*)?$"
)
# Changelogs and release notes are history by design: what they name was true once, on purpose.
_HISTORY_STEMS = re.compile(
    r"^(?:changes|changelog|change[._-]log|history|news|releases?|release[._-]?notes|whats[._-]?new"
    r"|upgrade|upgrading|migrating|migration|migration[._-]guide|breaking[._-]changes|deprecated|deprecations"
    r"|deprecation|removals)([._-].*)?$"
)
_HISTORY_DIRS = frozenset(
    {
        "changelog", "changelogs", "changes", "changelog.d", "changes.d", "newsfragments", "news",
        "release-notes", "release_notes", "releasenotes", "releases", "whatsnew", "whats_new",
        "history", "upgrading", "migrations", "blog", "_posts", "posts", "announcements",
        # the pages of versions no longer current: Docusaurus keeps them in versioned_docs/ (and
        # their sidebars in versioned_sidebars/), other sites in a folder named for them
        "versioned_docs", "versioned_sidebars", "previous-versions", "previous_versions",
        "older-versions", "old-versions",
        # enhancement proposals record a design as it was proposed (ADRs stay docs: their
        # Governs: lines are checked)
        "sep", "seps", "pep", "peps", "rfc", "rfcs", "kep", "keps", "proposals", "enhancements",
    }
)  # fmt: skip
_LOCKFILES = frozenset(
    {
        "package-lock.json", "npm-shrinkwrap.json", "yarn.lock", "pnpm-lock.yaml", "bun.lock", "bun.lockb",
        "cargo.lock", "poetry.lock", "pipfile.lock", "pdm.lock", "uv.lock", "gemfile.lock", "composer.lock",
        "go.sum", "flake.lock", "mix.lock", "pubspec.lock", "podfile.lock", "packages.lock.json",
        "paket.lock", "gradle.lockfile", "package.resolved", "requirements.lock", "conda-lock.yml",
    }
)  # fmt: skip
_GENERATED_DIRS = frozenset(
    {
        "dist",
        "build",
        "target",
        "out",
        "generated",
        "__generated__",
        "_generated",
        "coverage",
        ".next",
        "_build",
    }
)
# what a checkout or a tool makes at the root and nobody commits: environments, caches, a doc
# generator's site (MkDocs ``site/``, Hugo ``public/``); a doc naming a path there names no file
# of the repository
_LOCAL_ROOTS = frozenset(
    {
        ".venv", "venv", "env", "__pycache__", ".git", ".cache", "tmp", ".tox", ".nox", ".mypy_cache",
        ".pytest_cache", ".ruff_cache", "site", "public",
    }
)  # fmt: skip
_GENERATED_NAME = re.compile(
    r"(?:\.min\.(?:js|mjs|cjs|css)|\.(?:js|css)\.map|\.map|_pb2(?:_grpc)?\.pyi?|\.pb\.(?:go|cc|h)"
    r"|\.pb\.gw\.go|_grpc\.pb\.go|\.generated\.\w+|\.g\.dart|\.freezed\.dart|_generated\.\w+)$"
)
_TEST_DATA_SUFFIXES = (".golden", ".snap", ".expected", ".out")
_CONFIG_SUFFIXES = (
    ".yml", ".yaml", ".toml", ".ini", ".cfg", ".conf", ".xml", ".json", ".jsonc", ".json5", ".properties",
    ".env", ".plist", ".editorconfig",
)  # fmt: skip
_CONFIG_NAMES = frozenset(
    {
        "dockerfile", "containerfile", "procfile", ".gitignore", ".gitattributes", ".gitmodules",
        ".dockerignore", ".npmrc", ".nvmrc", ".npmignore", ".prettierrc", ".eslintrc", ".babelrc",
        ".editorconfig", ".env", ".python-version", ".tool-versions", "jenkinsfile", "vagrantfile",
    }
)  # fmt: skip
_ASSET_SUFFIXES = (
    # images, audio, video, fonts
    ".png", ".jpg", ".jpeg", ".gif", ".svg", ".bmp", ".ico", ".icns", ".webp", ".tif", ".tiff", ".psd",
    ".heic", ".avif", ".mp3", ".wav", ".ogg", ".flac", ".aac", ".m4a", ".mp4", ".m4v", ".mov", ".avi",
    ".mkv", ".webm", ".ttf", ".otf", ".woff", ".woff2", ".eot",
    # archives, packages, compiled code
    ".zip", ".gz", ".tgz", ".bz2", ".xz", ".zst", ".7z", ".rar", ".tar", ".jar", ".war", ".whl", ".egg",
    ".deb", ".rpm", ".exe", ".dll", ".so", ".dylib", ".a", ".o", ".obj", ".class", ".pyc", ".pyo",
    ".wasm", ".bin", ".dat",
    # documents and data tables
    ".pdf", ".doc", ".docx", ".xls", ".xlsx", ".ppt", ".pptx", ".csv", ".tsv", ".parquet", ".sqlite",
    ".db", ".npy", ".npz", ".pkl", ".pickle", ".h5",
    # markup and styles: keys and ids there are not definitions of the code
    ".html", ".htm", ".css", ".scss", ".sass", ".less",
)  # fmt: skip
# code suffixes: a file under a history folder with one of these is code (``blog/views.py``)
_PROGRAM_SUFFIXES = (
    ".py", ".pyi", ".js", ".mjs", ".cjs", ".jsx", ".ts", ".tsx", ".go", ".rs", ".java", ".kt", ".kts",
    ".scala", ".rb", ".php", ".c", ".h", ".cc", ".cpp", ".hpp", ".cs", ".swift", ".ex", ".exs", ".sh",
    ".lua", ".dart", ".m", ".mm", ".vue", ".svelte", ".clj", ".erl", ".hs", ".ml", ".pl", ".pm",
    ".sql", ".proto", ".graphql",
)  # fmt: skip
_CI_DIRS = frozenset({".circleci", ".buildkite", ".azure-pipelines", ".ci", ".woodpecker"})
_CI_NAMES = frozenset(
    {
        ".gitlab-ci.yml", ".travis.yml", "azure-pipelines.yml", "azure-pipelines.yaml", "jenkinsfile",
        "appveyor.yml", ".appveyor.yml", ".drone.yml", "bitbucket-pipelines.yml", ".woodpecker.yml",
        "cloudbuild.yaml", "cloudbuild.yml", "codecov.yml", ".codecov.yml",
    }
)  # fmt: skip
_TOOLING_DIRS = frozenset(
    {
        "bench", "benches", "benchmark", "benchmarks", "scripts", "script", "tools", "ci", "misc", "contrib",
        "site", ".github", ".gitlab", ".devcontainer", ".vscode", "typings", "stubs", "doc", "docs",
        "documentation", "hack",
    }
)  # fmt: skip


_BENCH_DIRS = frozenset({"bench", "benches", "benchmark", "benchmarks", "__benchmarks__"})
_BENCH_NAME = re.compile(r"^(?:bench|benchmark)_|[._-](?:bench|benchmark)\.[a-z]+$")
_VERSION_DIR = re.compile(r"^v(\d+)$")


# ----------------------------------------------------------------------------- the classifier


@lru_cache(maxsize=1 << 16)
def classify(path: str) -> FileFacts:
    """The kind and flags of ``path`` (a repository-relative POSIX path; case-insensitive)."""
    lowered = path.lower()
    *folders, name = lowered.split("/")
    ci = _is_ci(folders, name)
    if any(f in _VENDORED_DIRS for f in folders):
        return FileFacts(Kind.VENDORED, ci=ci)
    if lowered.endswith(DOC_SUFFIXES):
        found = _doc_suffixed(path, folders, name, ci)
        if found is not None:
            return found
    if lowered.endswith(UNREAD_MARKUP_SUFFIXES):
        return FileFacts(Kind.CHANGELOG if is_history_doc(path) else Kind.OTHER, ci=ci)
    if (_history_name(name) and "." not in name.lstrip(".")) or (
        any(f in _HISTORY_DIRS for f in folders) and _fragment(name)
    ):
        return FileFacts(Kind.CHANGELOG, ci=ci)
    if "." not in name and _OTHER_STEMS.match(name):
        return FileFacts(Kind.OTHER, ci=ci)  # LICENSE, AUTHORS, NOTICE without a suffix
    if name in _LOCKFILES or name.endswith(".lock"):
        return FileFacts(Kind.GENERATED, lockfile=True, ci=ci)
    if any(f in _GENERATED_DIRS for f in folders) or _GENERATED_NAME.search(name):
        return FileFacts(Kind.GENERATED, ci=ci)
    if _test_folder(folders) or _test_name(path.rsplit("/", 1)[-1]) or name.endswith(_TEST_DATA_SUFFIXES):
        return FileFacts(Kind.TEST, ci=ci)
    if name.endswith(_CONFIG_SUFFIXES) or name in _CONFIG_NAMES:
        return FileFacts(Kind.CONFIG, ci=ci)
    if name.endswith(_ASSET_SUFFIXES):
        return FileFacts(Kind.ASSET, ci=ci)
    if any(f in _EXAMPLE_DIRS for f in folders):
        return FileFacts(Kind.EXAMPLE, ci=ci)
    benchmark = any(f in _BENCH_DIRS for f in folders) or bool(_BENCH_NAME.search(name))
    tooling = ci or benchmark or any(f in _TOOLING_DIRS for f in folders)
    return FileFacts(Kind.CODE, ci=ci, tooling=tooling, benchmark=benchmark)


def _doc_suffixed(path: str, folders: list[str], name: str, ci: bool) -> FileFacts | None:
    """A file with a doc suffix: a doc, a changelog, or what its name or place says it is."""
    stem = name.rsplit(".", 1)[0]
    if _CONFIG_STEMS.match(stem) or (name.endswith(".txt") and any(f in _REQUIREMENTS_DIRS for f in folders)):
        return FileFacts(Kind.CONFIG, ci=ci)
    if _OTHER_STEMS.match(stem) or any(f in _LICENCE_DIRS for f in folders):
        return FileFacts(Kind.OTHER, ci=ci)
    if _POLICY_STEMS.match(stem) and folders in ([], [".github"]):
        return FileFacts(Kind.OTHER, ci=ci)
    if name.startswith("."):
        # a hidden file with a doc suffix is a tool's input: ``.git_archival.txt`` is the
        # template ``git archive`` fills in, not prose
        return FileFacts(Kind.CONFIG, ci=ci)
    if any(_fixture_dir(f) for f in folders):
        return FileFacts(Kind.TEST, ci=ci)
    if any(_data_dir(f) for f in folders):
        return FileFacts(Kind.ASSET, ci=ci)
    if stem.startswith("test_") or stem.endswith(("_test", ".test")):
        return FileFacts(Kind.TEST, ci=ci)  # a test's input or expected output
    if stem not in _ABOUT_FOLDER and any(f in _TEST_DIRS or f in _SAMPLE_DIRS for f in folders):
        # pages a test or a sample site reads as input; their README is a doc
        return FileFacts(Kind.TEST if _test_folder(folders) else Kind.EXAMPLE, ci=ci)
    if name.endswith(".txt") and any(f.startswith(".") for f in folders):
        return FileFacts(Kind.ASSET, ci=ci)  # a .txt in a tool's hidden folder is data (word lists)
    if name.endswith(".txt") and not (
        _TXT_DOC_STEMS.match(stem) or _history_name(name) or any(f in _DOC_FOLDERS for f in folders)
    ):
        # outside the docs, a .txt is what a program reads (target lists it embeds, a banner,
        # version.txt, robots.txt, word lists, samples), not prose about the code: a doc only by
        # a doc's name (README.txt, NOTES.txt) or in a docs folder (Sphinx sources of .txt)
        return FileFacts(Kind.ASSET, ci=ci)
    kind = Kind.CHANGELOG if is_history_doc(path) else Kind.DOC
    return FileFacts(kind, ci=ci, doc=True)


def _fragment(name: str) -> bool:
    """A news fragment's name (``123.bugfix``, ``NEWS``): not code, config or an asset."""
    return not name.endswith(_PROGRAM_SUFFIXES + _CONFIG_SUFFIXES + _ASSET_SUFFIXES)


def _data_dir(part: str) -> bool:
    """A folder of templates (``template-vue-ts``, a cookiecutter's ``{{cookiecutter.name}}``),
    playgrounds or served files."""
    return part in _DATA_DIRS or part.startswith(("template-", "template_", "templates-")) or "{{" in part


def _fixture_dir(part: str) -> bool:
    """A fixture folder, also when marked private (``_fixture``, ``_testdata``)."""
    return part in _FIXTURE_DIRS or part.lstrip("_") in _FIXTURE_DIRS


def _test_folder(folders: list[str]) -> bool:
    return any(f in _TEST_DIRS or _fixture_dir(f) for f in folders)


def _test_name(name: str) -> bool:
    """Test code by its file name, in the common conventions of the parsed languages."""
    lowered = name.lower()
    stem = lowered.split(".", 1)[0]
    return (
        stem.startswith(("test_", "tests_"))
        or stem.endswith(("_test", "_tests", "_spec"))
        or ".test." in lowered
        or ".spec." in lowered
        or lowered == "conftest.py"
        or (name.split(".", 1)[0].endswith(("Test", "Tests")) and "." in name)
    )


def _is_ci(folders: list[str], name: str) -> bool:
    if name in _CI_NAMES:
        return True
    if folders[:2] == [".github", "workflows"] or folders[:2] == [".github", "actions"]:
        return True
    return bool(folders) and (folders[0] in _CI_DIRS or folders[:2] == [".gitlab", "ci"])


# ----------------------------------------------------------------------------- the questions callers ask


def is_doc(path: str) -> bool:
    """Documentation by the shared rule: a doc suffix (case-insensitive), unless its name or place
    says it is data with a doc extension (requirements, licences, ``CMakeLists.txt``, test
    fixtures, templates, vendored trees)."""
    return classify(path).doc


def is_history_file(path: str) -> bool:
    """A changelog kept as a file of its own (``CHANGES``, ``NEWS``, ``HISTORY.rst``): by its name,
    with a doc suffix or none. Unlike :func:`is_history_doc`, a code file never is one, wherever it
    lives and whatever it is called (``blog/views.py``, ``utils/deprecated.py`` are code)."""
    name = path.rsplit("/", 1)[-1].lower()
    return _history_name(name) and ("." not in name.lstrip(".") or is_doc(path))


def _history_name(name: str) -> bool:
    stem = name.split(".", 1)[0] if not name.startswith(".") else name
    return bool(_HISTORY_STEMS.match(stem))


def is_history_doc(path: str) -> bool:
    """A changelog or release notes by name or place (any case, any extension): asked of docs, whose
    claims are history by design there."""
    parts = path.lower().split("/")
    stem = parts[-1].split(".", 1)[0] if not parts[-1].startswith(".") else parts[-1]
    return bool(_HISTORY_STEMS.match(stem)) or any(p in _HISTORY_DIRS for p in parts[:-1])


def is_changelog(path: str) -> bool:
    """A changelog, release notes or news fragment (kind ``changelog``)."""
    return classify(path).kind is Kind.CHANGELOG


def is_test(path: str) -> bool:
    """Test code or test data."""
    return classify(path).kind is Kind.TEST


def is_lockfile(path: str) -> bool:
    """A dependency lockfile (``package-lock.json``, ``uv.lock``, ``go.sum`` …)."""
    return classify(path).lockfile


def is_generated(path: str) -> bool:
    """Generator output: lockfiles, bundles, source maps, protobuf output, build-output trees."""
    return classify(path).kind is Kind.GENERATED


def is_generated_source(path: str) -> bool:
    """Generator output kept by name beside a package's hand-written code (``altsrc/flag_generated.go``,
    ``api/v1/x.pb.go``, ``x_pb2.py``): still the package's code, whose definitions its users call; not
    a lockfile, a bundle, a source map or a build-output tree."""
    facts = classify(path)
    folders, _, name = path.rpartition("/")
    return (
        facts.kind is Kind.GENERATED
        and not facts.lockfile
        and not any(f in _GENERATED_DIRS for f in folders.lower().split("/"))
        and not name.lower().endswith((".map", ".min.js", ".min.mjs", ".min.cjs", ".min.css"))
    )


def is_vendored(path: str) -> bool:
    return classify(path).kind is Kind.VENDORED


def is_ci_config(path: str) -> bool:
    """CI configuration or a CI script (``.github/workflows/``, ``.gitlab-ci.yml``, ``Jenkinsfile``)."""
    return classify(path).ci


def is_definition_site(path: str) -> bool:
    """A file whose definitions a doc may name: the repository's own code or examples (not a doc,
    a test, test data, generated or vendored code, config, an asset)."""
    return classify(path).kind in (Kind.CODE, Kind.EXAMPLE)


def rival_version_dirs(paths: Iterable[str]) -> dict[str, bool]:
    """Major-version folders with a rival: ``v3`` and ``v4`` under the same parent (any depth),
    each mapped to whether it is superseded (every version but the newest). Unlike
    :func:`classify` this needs the tree, not one path: a lone ``v2`` (a Go module's
    major-version folder) is the current version and has no rival."""
    versions: dict[str, dict[int, str]] = {}
    seen: set[str] = set()
    for path in paths:
        directory = path.rpartition("/")[0]
        if directory in seen:
            continue
        parts = directory.split("/")
        for depth in range(len(parts), 0, -1):  # every ancestor once
            folder = "/".join(parts[:depth])
            if folder in seen:
                break
            seen.add(folder)
            match = _VERSION_DIR.match(parts[depth - 1].lower())
            if match:
                versions.setdefault("/".join(parts[: depth - 1]), {})[int(match.group(1))] = folder
    rivals: dict[str, bool] = {}
    for found in versions.values():
        if len(found) > 1:
            newest = max(found)
            rivals.update((folder, version != newest) for version, folder in found.items())
    return rivals


def superseded_version_dirs(paths: Iterable[str]) -> frozenset[str]:
    """Folders of a superseded major version: ``v3`` beside a ``v4`` (:func:`rival_version_dirs`)."""
    return frozenset(folder for folder, superseded in rival_version_dirs(paths).items() if superseded)


def is_output_path(path: str) -> bool:
    """A path (as a doc names it: ``./dist/app.js``, ``.venv/bin/python``) that a build, a checkout
    or a tool makes rather than the repository keeps: its first folder is a build-output,
    generated or vendored folder (as :func:`classify` has them) or an environment, cache or
    generated-site folder at the root."""
    first = path.lstrip("./").split("/", 1)[0].lower()
    return first in _GENERATED_DIRS or first in _VENDORED_DIRS or first in _LOCAL_ROOTS


def is_benchmark(path: str) -> bool:
    """Benchmark code (``benchmarks/``, ``bench_parse.py``, ``parse.bench.ts``)."""
    return classify(path).benchmark


def is_primary_source(path: str) -> bool:
    """Code the repository exists to ship: kind ``code`` and not tooling."""
    facts = classify(path)
    return facts.kind is Kind.CODE and not facts.tooling
