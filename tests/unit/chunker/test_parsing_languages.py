"""Language detection by file name, and the staleness rule's definition of a document."""

from __future__ import annotations

import pytest

from palimpsest.chunker.parsing import (
    DOC_LANGUAGES,
    PARSED_LANGUAGES,
    TEXT_LANGUAGES,
    detect_language,
    is_doc,
)
from palimpsest.index.codefacts.queries import SPECS


@pytest.mark.parametrize(
    ("path", "language"),
    [
        ("src/app/main.py", "python"),
        ("typings/stub.pyi", "python"),
        ("web/src/api.ts", "typescript"),
        ("web/src/App.tsx", "tsx"),
        ("web/index.js", "javascript"),
        ("web/server.mjs", "javascript"),
        ("web/Button.jsx", "javascript"),
        ("cmd/server/main.go", "go"),
        ("crates/core/src/lib.rs", "rust"),
        ("src/main/java/com/acme/Order.java", "java"),
        ("app/src/main/kotlin/User.kt", "kotlin"),
        ("build.gradle.kts", "kotlin"),
        ("src/list.c", "c"),
        ("include/list.h", "cpp"),
        ("src/engine.cpp", "cpp"),
        ("src/engine.hpp", "cpp"),
        ("src/Service.cs", "csharp"),
        ("lib/billing.rb", "ruby"),
        ("Rakefile", "ruby"),
        ("public/index.php", "php"),
        ("Sources/App/View.swift", "swift"),
        ("src/main/scala/App.scala", "scala"),
        ("README.md", "markdown"),
        ("docs/intro.mdx", "markdown"),
        ("CHANGES.markdown", "markdown"),
        ("docs/index.rst", "rst"),
        ("notes.txt", "text"),
        ("package.json", "json"),
        ("deploy/values.yaml", "yaml"),
        (".github/workflows/ci.yml", "yaml"),
        ("pyproject.toml", "toml"),
        ("scripts/run.sh", "shell"),
        ("db/001_init.sql", "sql"),
        ("public/index.html", "html"),
        ("styles/site.css", "css"),
        ("Dockerfile", "dockerfile"),
        ("deploy/Dockerfile.worker", "dockerfile"),
        ("Makefile", "makefile"),
        ("C:\\repo\\src\\Main.JAVA", "java"),
        ("bin/tool", None),
        ("assets/logo.png", None),
    ],
)
def test_detect_language(path: str, language: str | None) -> None:
    assert detect_language(path) == language


def test_every_parsed_language_has_a_query_spec_and_kinds_are_disjoint() -> None:
    assert set(SPECS) == PARSED_LANGUAGES
    assert not PARSED_LANGUAGES & DOC_LANGUAGES
    assert not TEXT_LANGUAGES & (PARSED_LANGUAGES | DOC_LANGUAGES)
    assert {"json", "yaml", "toml", "shell", "sql", "html", "css", "dockerfile", "makefile"} <= (
        TEXT_LANGUAGES
    )


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("README.md", True),
        ("docs/guide.MDX", True),
        ("notes.txt", True),
        ("docs/index.rst", True),
        ("CHANGES.markdown", True),  # Markdown under its long suffix, a changelog like CHANGES.md
        ("src/app.py", False),
        ("README", False),
    ],
)
def test_is_doc_follows_the_staleness_rule(path: str, expected: bool) -> None:
    assert is_doc(path) is expected
