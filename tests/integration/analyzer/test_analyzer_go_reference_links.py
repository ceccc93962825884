"""A name the repository's own reference pages document is its claim, whatever its examples call.

The repository (a Go module, ``example.com/shop``) had a ``WithValue`` middleware in its
``middleware`` package and renamed it. Its README lists the middleware in a table by a reference
link to the package's reference page (``[WithValue]: https://pkg.go.dev/example.com/shop/middleware#WithValue``,
as go-chi/chi's does), and its Go example calls the standard library's ``context.WithValue``.
The example's use is the standard library's; the link names the repository's middleware, which
history shows renamed: drift. A link to the standard library's page names nothing of the
repository's, nor does one to another module's package.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from palimpsest.analyzer.doccheck import Judged
from palimpsest.core.service import Infra
from tests.integration.analyzer.support import index_and_check
from tests.support.gitrepo import commit, init_repo

GO_MOD = "module example.com/shop\n\ngo 1.22\n"
VALUE_GO = (
    'package middleware\n\nimport "net/http"\n\n'
    "// WithValue sets a key/value on the request context.\n"
    "func WithValue(key, val interface{}) func(http.Handler) http.Handler {\n"
    "\treturn func(next http.Handler) http.Handler {\n"
    "\t\treturn http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {\n"
    "\t\t\tnext.ServeHTTP(w, r.WithContext(withKey(r.Context(), key, val)))\n"
    "\t\t})\n\t}\n}\n"
)
README = """# shop

```go
import (
  "context"
  "net/http"
)

func ArticleCtx(next http.Handler) http.Handler {
  return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
    ctx := context.WithValue(r.Context(), "article", "x")
    next.ServeHTTP(w, r.WithContext(ctx))
  })
}
```

| middleware    | description                                        |
| :------------ | :------------------------------------------------- |
| [WithValue]   | Short-hand middleware to set a key/value on the request context |
| [Render]      | Another module's renderer                          |
| [Server]      | The standard library's server                      |

[WithValue]: https://pkg.go.dev/example.com/shop/middleware#WithValue
[Render]: https://pkg.go.dev/github.com/other/render#Render
[Server]: https://pkg.go.dev/net/http#Server
"""


@pytest.fixture(scope="module")
def shop(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    repo = init_repo(tmp_path_factory.mktemp("goref") / "shop")
    shas: dict[str, str] = {}
    shas["first"] = commit(
        repo,
        "2023-01-01T00:00:00+00:00",
        {"go.mod": GO_MOD, "middleware/value.go": VALUE_GO, "README.md": README},
    )
    shas["rename"] = commit(
        repo,
        "2023-06-01T00:00:00+00:00",
        {
            "middleware/value.go": VALUE_GO.replace("WithValue sets", "WithValueRenamed sets").replace(
                "func WithValue(", "func WithValueRenamed("
            )
        },
    )
    return repo, shas


@pytest.fixture(scope="module")
async def judged(infra: Infra, shop: tuple[Path, dict[str, str]]) -> Judged:
    repo, _ = shop
    return await index_and_check(infra, repo, "goref")


async def test_the_link_to_the_repository_s_own_reference_page_is_drift(
    judged: Judged, shop: tuple[Path, dict[str, str]]
) -> None:
    _, shas = shop
    found = [f for f in judged.findings if f.kind == "missing_identifier"]
    assert [(f.doc, f.line, f.claim) for f in found] == [("README.md", 23, "`middleware.WithValue`")]
    evidence = found[0].evidence
    assert evidence is not None and evidence.removed_in_commit == shas["rename"]
    # the example's ``context.WithValue`` (line 11) is the standard library's, set aside
    rules = judged.rules
    assert rules.get("identifier.foreign_attribute", 0) + rules.get("identifier.standard_library", 0) >= 1
    assert rules.get("identifier.foreign_root", 0) >= 1  # ``render.Render``: another module's package
