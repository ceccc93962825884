"""Names that belong to someone else are not this repository's claim; a name it truly removed is.

The repository the test builds once defined six names and removes them all in one commit. Its
docs were written while they existed, so history proves every one of them removed. Five of the
docs' mentions, though, name another package's thing that happens to share the name, and the
docs' own code says whose:

* ``ReadTimeout`` is a field of a Go example's ``&http.Server{…}``, ``net/http`` imported: the
  standard library's;
* ``make_server`` is imported by a Python example ``from wsgiref.simple_server``: the standard
  library's;
* ``translateTime`` is an option inside ``transport: { target: 'pino-pretty', options: {…} }``, a
  package ``package.json`` declares: the dependency's;
* ``add_handler`` is called on a configurator the example hands ``shop_handlers`` to
  (``config.include(shop_handlers)``), an add-on ``pyproject.toml`` declares as optional;
* ``do_timing`` is a setting the example itself reads by a quoted key (``settings.get('do_timing')``),
  mentioned again in the prose, and the code only ever read it as a key: the example's own.

``make_cart``, imported from the repository's own ``shop.cart`` and removed from it, is drift.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from palimpsest.analyzer.doccheck import Judged
from palimpsest.core.service import Infra
from tests.integration.analyzer.support import (
    index_and_check,
)
from tests.support.gitrepo import commit, init_repo

PYPROJECT = """[project]
name = "shop"
version = "1.0"
dependencies = ["requests>=2"]

[project.optional-dependencies]
handlers = ["shop-handlers>=0.1"]
"""
PACKAGE_JSON = json.dumps({"name": "shop-web", "devDependencies": {"pino-pretty": "^10.0.0"}})
CART = "def make_cart(owner):\n    return {'owner': owner}\n\n\ndef checkout_cart(cart):\n    return cart\n"
CART_AFTER = "def checkout_cart(cart):\n    return cart\n"
CONFIG = (
    "class Configurator:\n    def add_handler(self, name, path):\n        return name\n\n"
    "    def add_route(self, name, path):\n        return name\n"
)
CONFIG_AFTER = "class Configurator:\n    def add_route(self, name, path):\n        return name\n"
SERVE = (
    "def make_server(host, port, app):\n    return (host, port, app)\n\n\n"
    "def tween(settings):\n    return settings.get('do_timing')\n"
)
SERVE_AFTER = "def serve_forever(app):\n    return app\n"
SERVER_GO = "package server\n\ntype Server struct {\n\tReadTimeout int\n\tAddr        string\n}\n"
SERVER_GO_AFTER = "package server\n\ntype Server struct {\n\tAddr string\n}\n"
LOGGER_JS = "function translateTime(value) {\n  return value\n}\n\nfunction log(line) {\n  return line\n}\n"
LOGGER_JS_AFTER = "function log(line) {\n  return line\n}\n\nmodule.exports = { log }\n"

README = """# Shop

```python
from shop.cart import make_cart

cart = make_cart("me")
```

Serve it with the standard library:

```python
from wsgiref.simple_server import make_server

make_server("0.0.0.0", 8080, app).serve_forever()
```

Handlers come from an add-on:

```python
import shop_handlers
from shop.config import Configurator

config = Configurator()
config.include(shop_handlers)
config.add_handler("home", "/")
```
"""
SERVING_MD = """# Serving behind Go

```go
package main

import (
\t"net/http"
\t"time"
)

func main() {
\ts := &http.Server{
\t\tAddr:        ":8080",
\t\tReadTimeout: 20 * time.Second,
\t}
\ts.ListenAndServe()
}
```

Pretty logs:

```js
const logger = {
  transport: {
    target: 'pino-pretty',
    options: {
      translateTime: 'HH:MM:ss Z',
    },
  },
}
```
"""
TWEENS_RST = """Tweens
======

A tween factory reads its own setting:

.. code-block:: python

    def timing_tween_factory(handler, registry):
        if registry.settings.get('do_timing'):
            return handler
        return handler

If the user has defined a ``do_timing`` setting, the tween times requests.
"""


@pytest.fixture(scope="module")
def shop(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    repo = init_repo(tmp_path_factory.mktemp("foreign") / "shop")
    shas: dict[str, str] = {}
    shas["first"] = commit(
        repo,
        "2023-01-01T00:00:00+00:00",
        {
            "pyproject.toml": PYPROJECT,
            "package.json": PACKAGE_JSON,
            "shop/__init__.py": "",
            "shop/cart.py": CART,
            "shop/config.py": CONFIG,
            "shop/serve.py": SERVE,
            "server/server.go": SERVER_GO,
            "web/logger.js": LOGGER_JS,
            "README.md": README,
            "docs/serving.md": SERVING_MD,
            "docs/tweens.rst": TWEENS_RST,
        },
    )
    shas["removal"] = commit(
        repo,
        "2023-06-01T00:00:00+00:00",
        {
            "shop/cart.py": CART_AFTER,
            "shop/config.py": CONFIG_AFTER,
            "shop/serve.py": SERVE_AFTER,
            "server/server.go": SERVER_GO_AFTER,
            "web/logger.js": LOGGER_JS_AFTER,
        },
    )
    return repo, shas


@pytest.fixture(scope="module")
async def judged(infra: Infra, shop: tuple[Path, dict[str, str]]) -> Judged:
    repo, _ = shop
    return await index_and_check(infra, repo, "foreign")


async def test_a_name_the_repository_truly_removed_is_still_drift(
    judged: Judged, shop: tuple[Path, dict[str, str]]
) -> None:
    _, shas = shop
    found = [f for f in judged.findings if f.kind == "missing_identifier"]
    assert [(f.doc, f.line, f.claim) for f in found] == [("README.md", 4, "`make_cart`")]
    for f in found:
        assert f.evidence is not None and f.evidence.removed_in_commit == shas["removal"]


async def test_names_the_docs_own_code_gives_to_someone_else_are_no_findings(judged: Judged) -> None:
    claimed = {f.claim.strip("`") for f in judged.findings}
    assert claimed & {"ReadTimeout", "make_server", "translateTime", "add_handler", "do_timing"} == set()
    assert judged.doc_states["docs/serving.md"] != "drift"
    assert judged.doc_states["docs/tweens.rst"] != "drift"


async def test_each_is_set_aside_by_the_rule_that_says_whose_it_is(judged: Judged) -> None:
    rules = judged.rules
    assert rules.get("identifier.standard_library", 0) >= 2  # ReadTimeout, make_server
    assert rules.get("identifier.dependency", 0) >= 2  # translateTime, add_handler
    assert rules.get("judge.quoted_name", 0) >= 1  # do_timing in the prose
