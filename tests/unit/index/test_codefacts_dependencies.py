"""Declared dependencies read from manifests with their formats' parsers, the standard libraries,
and whose module a doc's example ties a name to (:mod:`palimpsest.index.codefacts.dependencies`,
:mod:`palimpsest.index.codefacts.owners`)."""

from __future__ import annotations

import json

import pytest

from palimpsest.index.codefacts.dependencies import (
    import_names,
    is_manifest,
    read_manifest,
    read_manifests,
    standard_module,
)
from palimpsest.index.codefacts.owners import Owner, block_defines, code_blocks, name_owners, quoted_only

PYPROJECT = b"""[project]
name = "shop"
dependencies = ["requests>=2", "zope.interface >= 3.8 ; python_version >= '3.10'"]

[project.optional-dependencies]
yaml = ["PyYAML"]

[dependency-groups]
dev = ["pytest", {include-group = "lint"}]

[tool.poetry.dependencies]
python = "^3.11"
pyramid-handlers = "*"
"""
PACKAGE_JSON = json.dumps(
    {
        "name": "fastify",
        "dependencies": {"avvio": "^9"},
        "devDependencies": {"pino-pretty": "^10", "@fastify/pre-commit": "^2"},
        "peerDependencies": {"typescript": ">=5"},
    }
).encode()
GO_MOD = b"""module github.com/labstack/echo/v5

go 1.25.0

require github.com/stretchr/testify v1.11.1

require (
\tgolang.org/x/net v0.57.0 // indirect
\tgolang.org/x/time v0.15.0
)
"""
CARGO = b"""[package]
name = "fd-find"

[dependencies]
regex = "1"
clap = { version = "4", features = ["derive"] }
lscolors = { package = "lscolors-ng", version = "0.1" }

[dev-dependencies]
tempfile = "3"

[target.'cfg(unix)'.dependencies]
nix = "0.29"
"""
GEMSPEC = b"""Gem::Specification.new do |s|
  s.name = "sinatra"
  s.add_dependency "rack", ">= 3"
  s.add_development_dependency('rake')
end
"""
POM = b"""<project xmlns="http://maven.apache.org/POM/4.0.0">
  <groupId>com.squareup.retrofit2</groupId>
  <dependencies>
    <dependency><groupId>com.squareup.okhttp3</groupId><artifactId>okhttp</artifactId></dependency>
  </dependencies>
</project>
"""


@pytest.mark.parametrize(
    ("path", "content", "own", "declared"),
    [
        (
            "pyproject.toml",
            PYPROJECT,
            {"shop"},
            {"requests", "zope.interface", "PyYAML", "pytest", "pyramid-handlers"},
        ),
        (
            "package.json",
            PACKAGE_JSON,
            {"fastify"},
            {"avvio", "pino-pretty", "@fastify/pre-commit", "typescript"},
        ),
        (
            "go.mod",
            GO_MOD,
            {"github.com/labstack/echo/v5"},
            {"github.com/stretchr/testify", "golang.org/x/net", "golang.org/x/time"},
        ),
        ("Cargo.toml", CARGO, {"fd-find"}, {"regex", "clap", "lscolors", "lscolors-ng", "tempfile", "nix"}),
        ("sinatra.gemspec", GEMSPEC, {"sinatra"}, {"rack", "rake"}),
        (
            "Gemfile",
            b"source 'https://example.invalid'\ngem 'puma'\ngem \"rspec\", group: :test\n",
            set(),
            {"puma", "rspec"},
        ),
        ("pom.xml", POM, {"com.squareup.retrofit2"}, {"com.squareup.okhttp3:okhttp"}),
        (
            "build.gradle",
            b"dependencies {\n  implementation 'com.google.guava:guava:33.0'\n}\n",
            set(),
            {"com.google.guava:guava"},
        ),
        (
            "requirements/dev.txt",
            b"# tools\n-r base.txt\nblack==24.1 ; python_version > '3.8'\nhttps://x.invalid/p.whl\nmypy  # types\n",
            set(),
            {"black", "mypy"},
        ),
    ],
)
def test_each_manifest_is_read_with_its_formats_parser(
    path: str, content: bytes, own: set[str], declared: set[str]
) -> None:
    assert is_manifest(path)
    manifest = read_manifest(path, content)
    assert (set(manifest.own), set(manifest.declared)) == (own, declared)


def test_a_manifest_that_does_not_parse_declares_nothing() -> None:
    assert read_manifest("pyproject.toml", b"[project\nname=") == read_manifest("x/package.json", b"{")
    assert not read_manifest("pom.xml", b"<project>").declared
    assert not is_manifest("docs/requirements.md") and not is_manifest("src/package.py")


def test_dependencies_answer_by_the_name_a_program_imports() -> None:
    deps = read_manifests({"pyproject.toml": PYPROJECT, "web/package.json": PACKAGE_JSON, "go.mod": GO_MOD})
    assert deps.manifests == 3
    for module in (
        "yaml" if False else "pyyaml",
        "zope.interface",
        "zope.interface.registry",
        "pyramid_handlers",
    ):
        assert deps.declares(module), module
    assert deps.declares("pino-pretty") and deps.declares("@fastify/pre-commit")
    assert deps.declares("github.com/stretchr/testify/assert")
    assert not deps.declares("fastify") and deps.owns("fastify")  # the repository's own name
    assert deps.owns("github.com/labstack/echo/v5/middleware") and not deps.declares(
        "github.com/labstack/echo/v5"
    )
    assert deps.owns("github.com/labstack/echo/middleware") and deps.owns("github.com/labstack/echo/v4")
    assert not deps.owns("github.com/labstack/echo-contrib")
    assert not deps.declares("pino") and not deps.declares("shop_handlers") and not deps.declares("")
    assert import_names("zope.interface") == {"zope.interface", "zope_interface"}
    assert import_names("com.squareup.okhttp3:okhttp") == {"com.squareup.okhttp3", "okhttp"}


@pytest.mark.parametrize(
    ("module", "language", "standard"),
    [
        ("wsgiref.simple_server", "python", True),
        ("pyramid", "python", False),
        ("node:fs", "javascript", True),
        ("fs/promises", "typescript", True),
        ("pino", "javascript", False),
        ("net/http", "go", True),
        ("github.com/labstack/echo/v5", "go", False),
        ("std::collections", "rust", True),
        ("tokio", "rust", False),
        ("java.util", "java", True),
        ("com.google.gson", "java", False),
        ("node:path", None, True),
        ("http", "go", True),
    ],
)
def test_the_standard_libraries(module: str, language: str | None, standard: bool) -> None:
    assert standard_module(module, language) is standard


GO = """```go
import (
\t"net/http"
\tsrv "example.com/shop/server"
)

s := &http.Server{
\tReadTimeout: 5,
}
t := srv.Options{ReadTimeout: 5}
```
"""
JS = """```js
const pino = require('pino')
import { join } from 'node:path'
const log = pino({ translateTime: true })
const cfg = { transport: { target: 'pino-pretty', options: { translateTime: 'x' } }, level: 'info' }
join('a', 'b')
```
"""
RST = """Title
~~~~~

A tween reads ``do_timing``:

.. code-block:: python
    :linenos:

    import pyramid_handlers
    config.include(pyramid_handlers)
    config.add_handler('one')
    if registry.settings.get('do_timing'):
        pass

Or::

    context = 'mypackage.resources.Blog'
"""


def test_code_blocks_of_markdown_and_restructured_text() -> None:
    assert [(b.language, b.first) for b in code_blocks(GO)] == [("go", 2)]
    assert [(b.language, b.first) for b in code_blocks(RST, "docs/tweens.rst")] == [
        ("python", 8),
        ("python", 16),
    ]
    assert code_blocks("Title\n~~~~~\n\ntext\n", "a.rst") == []  # an underline is no fence


def test_whose_name_the_examples_own_code_says() -> None:
    assert name_owners(GO, "ReadTimeout", 8) == [Owner("net/http", "go", "field")]
    assert name_owners(GO, "ReadTimeout", 10) == [Owner("example.com/shop/server", "go", "field")]
    assert name_owners(JS, "translateTime", 4) == [Owner("pino", "javascript", "option")]
    assert name_owners(JS, "translateTime", 5, known=lambda m: m == "pino-pretty") == [
        Owner("pino-pretty", "javascript", "value")
    ]
    assert name_owners(JS, "translateTime", 5) == []  # 'pino-pretty' is a module only if known
    assert name_owners(JS, "level", 5, known=lambda m: m == "pino-pretty") == []  # not inside transport
    assert name_owners(JS, "join", 6) == [Owner("node:path", "javascript", "import")]
    assert name_owners(RST, "add_handler", 11, "t.rst") == [Owner("pyramid_handlers", "python", "plugin")]
    assert name_owners(RST, "Blog", 17, "t.rst") == [Owner("mypackage", "python", "string")]
    assert name_owners(RST, "include", 10, "t.rst") == []  # a method of the example's own object


CHI = """# chi

```go
import "context"

func ArticleCtx(next http.Handler) http.Handler {
  return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
    ctx := context.WithValue(r.Context(), "article", article)
    next.ServeHTTP(w, r.WithContext(ctx))
  })
}
```

| [WithValue] | Short-hand middleware to set a key/value on the request context |

[WithValue]: https://pkg.go.dev/github.com/go-chi/chi/middleware#WithValue
"""


def test_a_prose_mention_takes_no_owner_from_uses_qualified_by_a_module() -> None:
    # the example only ever writes ``context.WithValue``: that names the standard library's
    # function, not the bare ``WithValue`` the prose lists among chi's own middlewares
    assert name_owners(CHI, "WithValue", 8) == [Owner("context", "go", "qualified")]  # the use itself
    assert name_owners(CHI, "WithValue", 14) == []
    assert name_owners(CHI, "WithValue", 16, written="middleware.WithValue") == []
    # the prose writing the same qualifier means the same thing
    assert name_owners(CHI, "WithValue", 14, written="context.WithValue") == [
        Owner("context", "go", "qualified")
    ]
    assert name_owners(RST, "Blog", 4, "t.rst") == []
    assert name_owners(RST, "Blog", 4, "t.rst", written="mypackage.resources.Blog") == [
        Owner("mypackage", "python", "string")
    ]
    # what binds the bare word still gives its owner to the prose: a plugin's method, a field
    assert name_owners(RST, "add_handler", 4, "t.rst") == [Owner("pyramid_handlers", "python", "plugin")]
    server = GO.replace("t := srv.Options{ReadTimeout: 5}\n", "") + "\nSet `ReadTimeout`.\n"
    assert name_owners(server, "ReadTimeout", 12) == [Owner("net/http", "go", "field")]


def test_a_standard_module_written_without_its_import_unless_the_example_makes_it() -> None:
    assert name_owners("```python\nos.makedirs('x')\n```\n", "makedirs", 2) == [
        Owner("os", "python", "qualified")
    ]
    queue = "```python\nqueue = Queue(connection=redis)\nqueue.enqueue_call(job)\n```\n"
    assert name_owners(queue, "enqueue_call", 3) == []


def test_a_name_only_quoted_in_the_examples() -> None:
    assert quoted_only(RST, "do_timing", "t.rst")
    assert not quoted_only(RST, "add_handler", "t.rst")
    assert not quoted_only(RST, "missing", "t.rst")


def test_a_class_an_example_defines_block_by_block() -> None:
    text = (
        "Resources\n=========\n\n.. code-block:: python\n\n    from resources import Blog\n\n"
        ".. code-block:: python\n\n    class Blog(object):\n        def show(self):\n            pass\n"
    )
    assert block_defines(text, "Blog", "r.rst")
    assert not block_defines(text, "show", "r.rst")  # a method: reached through the object
    assert not block_defines(text, "resources", "r.rst")
