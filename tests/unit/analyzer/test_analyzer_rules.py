"""Every rule of the documentation check, with the cases it must decide and the ones it must not.

One table: each row names a rule, an input at the rule's stage, and whether that rule decides it.
A rule with no positive and no negative row fails ``test_every_rule_has_cases``.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

import pytest

from palimpsest.analyzer.doccheck import (
    Claim,
    Claims,
    _about_something_else,
    _foreign_attribute,
    _foreign_output,
    _governs_claim,
    _identifier_rule,
    _label_claim,
    _Mention,
    _not_about_the_code,
    _path_claim,
    _Tree,
    foreign_away,
    judge,
    settle_weak_uses,
    weak_support,
)
from palimpsest.analyzer.history import Evidence, History
from palimpsest.analyzer.rules import RULES, Rule
from palimpsest.index.codefacts.dependencies import read_manifests

TREE = _Tree.of(
    [
        "src/shop/cart.py",
        "src/shop/__init__.py",
        "docs/guide/index.rst",
        "docs/install.md",
        "examples/tutorial/flaskr/blog.py",
        "site/public/logo/glow.png",
        "site/content/index.mdx",
        "web/src/docs/routing.md",
        "web/src/routing/mod.rs",
        "web/Cargo.toml",
        "docs/conf.py",
        "docs/_static/router.svg",
    ]
)
SYMBOLS = {"add_item", "Cart", "shop"}
LANGUAGES = {"python"}
T0, T1, T2 = (
    datetime(2023, 1, 1, tzinfo=UTC),
    datetime(2024, 1, 1, tzinfo=UTC),
    datetime(2024, 6, 1, tzinfo=UTC),
)


def _mention(
    name: str, target: str = "identifier", source: str = "code", doc: str = "docs/guide.md"
) -> _Mention:
    return _Mention(doc, 3, "mention", name, target, source)


def path(target: str, source: str = "code", doc: str = "docs/guide.md") -> str:
    found = _path_claim(_mention(target, "path", source, doc), TREE)
    return found.name if isinstance(found, Rule) else "claim"


def governs(target: str) -> str:
    found = _governs_claim(_Mention("docs/x.md", 3, "governs", target, None, None), TREE)
    return found.name if isinstance(found, Rule) else "claim"


def identifier(name: str, source: str = "code") -> str:
    found = _identifier_rule(_mention(name, source=source), SYMBOLS, LANGUAGES, TREE)
    return found.name if found is not None else "claim"


def elsewhere(name: str, text: str) -> str:
    found = _about_something_else(_mention(name, source="fence:python"), text, TREE, SYMBOLS)
    return found.name if found is not None else "claim"


def attribute(name: str, line: str, text: str = "") -> str:
    return (
        "identifier.foreign_attribute"
        if _foreign_attribute(_mention(name, source="fence:python"), line, text or line, TREE)
        else "claim"
    )


LABELS = frozenset({"routing", "api:views"})
INTERSPHINX = _Tree.of(
    ["docs/conf.py", "docs/guide/a.rst", "README.rst"],
    {"docs/conf.py": 'extensions = ["sphinx.ext.intersphinx"]\n'},
)


def label(name: str, doc: str = "docs/guide/a.rst", tree: _Tree = TREE) -> str:
    found = _label_claim(_Mention(doc, 3, "mention", name, "label", "ref"), tree, LABELS)
    return found.name if isinstance(found, Rule) else "claim"


def output(name: str, line: str) -> str:
    mention = _Mention("docs/guide.md", 3, "mention", name, "identifier", "output")
    return "identifier.foreign_output" if _foreign_output(mention, line, TREE) else "claim"


def judged(
    name: str = "make_cart",
    source: str = "code",
    *,
    how: str = "defined",
    seen_in: str = "src/shop/cart.py",
    written: datetime | None = T0,
    bare_call: bool = False,
    unimported: bool = False,
    reader_deleted: bool = False,
    qualified: bool = False,
    copied_from: str | None = None,
    quoted: bool = False,
) -> str:
    claim = Claim(
        _mention(name, source=source),
        "missing_identifier",
        f"`{name}`",
        (name,),
        bare_call,
        unimported,
        qualified=qualified,
        quoted=quoted,
    )
    evidence = Evidence(
        "a" * 40, T1, "b" * 40, T2, seen_in=seen_in, how=how, reader_deleted=reader_deleted,
        line_commit="c" * 40 if written else None, line_written_at=written,
    )  # fmt: skip
    found = _not_about_the_code(claim, evidence, copied_from=copied_from)
    return found.name if found is not None else "finding"


MANIFESTS = read_manifests(
    {
        "pyproject.toml": b'[project]\nname = "shop"\ndependencies = ["shop-handlers"]\n',
        "web/package.json": b'{"name": "shop-web", "devDependencies": {"pino-pretty": "^10"}}',
    }
)


def foreign(name: str, text: str, line: int, source: str = "fence:python", doc: str = "docs/guide.md") -> str:
    """What :func:`foreign_away` makes of the claim ``name`` on ``line`` of ``text``."""
    mention = _Mention(doc, line, "mention", name, "identifier", source)
    claims = Claims(claims=[Claim(mention, "missing_identifier", f"`{name}`", (name,))])
    foreign_away(claims, MANIFESTS, {doc: text}, TREE.files)
    return next(iter(claims.rules), "claim")


GO_SERVER = '```go\nimport (\n\t"net/http"\n)\n\ns := &http.Server{\n\tReadTimeout: 5,\n}\n```\n'
GO_OWN = '```go\nimport "example.com/shop/server"\n\ns := &server.Server{\n\tReadTimeout: 5,\n}\n```\n'
JS_PINO = "```js\nconst l = {\n  transport: {\n    target: 'pino-pretty',\n    options: { translateTime: 'x' },\n  },\n}\n```\n"
JS_OWN = "```js\nconst l = {\n  transport: {\n    target: 'console',\n    options: { translateTime: 'x' },\n  },\n}\n```\n"
PY_PLUGIN = "```python\nimport shop_handlers\nconfig.include(shop_handlers)\nconfig.add_handler('a')\n```\n"
PY_ADDON = "```python\nimport other_addon\nconfig.include(other_addon)\nconfig.add_handler('a')\n```\n"
PY_OWN = "```python\nfrom shop import cart\nconfig.include(cart)\nconfig.add_handler('a')\n```\n"
PY_BLOG = (
    "A ``Blog``.\n\n```python\nfrom resources import Blog\n```\n\n```python\nclass Blog:\n    pass\n```\n"
)
PY_BLOG_IMPORTED = "A ``Blog``.\n\n```python\nfrom shop.cart import Blog\n```\n"
GO_UNIMPORTED = "```go\ns := &http.Server{\n\tReadTimeout: 5,\n}\n```\n"
GO_OWN_PACKAGE = "```go\nc := shop.Config{\n\tReadTimeout: 5,\n}\n```\n"
PY_STD = "```python\nfrom wsgiref.simple_server import make_server\n```\n"
PY_OWN_IMPORT = "```python\nfrom shop.cart import make_server\n```\n"


def proved(history: History | None) -> str:
    claims = Claims(
        claims=[Claim(_mention("make_cart"), "missing_identifier", "`make_cart`", ("make_cart",))]
    )
    result = judge(claims, history)
    return "finding" if result.findings else next(iter(k for k in result.rules if k != "finding"))


def removed_history() -> History:
    history = History()
    from palimpsest.analyzer.history import _Removal

    history.identifiers["make_cart"] = _Removal(
        1, "b" * 40, T2, "a" * 40, seen_in="src/shop/cart.py", how="defined"
    )
    history.dates["a" * 40] = T1
    return history


def weakly_used(own: tuple[str, ...], other: tuple[str, ...], seen_in: str = "src/shop/cart.py") -> str:
    """What becomes of ``make_cart``, removed by history and used at head only in ``own``, when
    ``load_basket``, removed too (from ``seen_in``), is used only in ``other``."""
    history = removed_history()
    from palimpsest.analyzer.history import _Removal

    history.identifiers["load_basket"] = _Removal(1, "b" * 40, T2, "a" * 40, seen_in=seen_in, how="defined")
    cart = Claim(_mention("make_cart"), "missing_identifier", "`make_cart`", ("make_cart",), support=own)
    basket = Claim(
        _mention("load_basket"), "missing_identifier", "`load_basket`", ("load_basket",), support=other
    )
    claims = settle_weak_uses(Claims(claims=[cart, basket]), history)
    kept = [c for c in claims.claims if c.lookups == ("make_cart",)]
    if kept:
        assert kept[0].support_note is not None and "load_basket" in kept[0].support_note
        return "finding"
    return next(iter(claims.rules))


def linked(history: History | None, target: str = "img/shot.png") -> str:
    """What the check makes of a doc's link to ``target`` that is not in the tree."""
    mention = _Mention("docs/guide.md", 3, "mention", target, "path", "link")
    claims = Claims(claims=[Claim(mention, "missing_path", f"`{target}`", (f"docs/{target}",))])
    result = judge(claims, history)
    kinds = {f.kind for f in result.findings}
    if not kinds and [f.kind for f in result.unresolved_links] == ["unresolved_link"]:
        return "link.unresolved"  # apart from the findings: nothing proves the target existed
    return ",".join(sorted(kinds)) or "none"


def manual(doc: str, others: list[str]) -> str:
    """What a finding on ``doc`` becomes when the docs hold ``others`` too."""
    claims = Claims(
        claims=[Claim(_mention("make_cart", doc=doc), "missing_identifier", "`make_cart`", ("make_cart",))],
        docs={doc, *others},
    )
    result = judge(claims, removed_history())
    if [f.kind for f in result.findings] == ["versioned_manual"]:
        assert result.findings[0].detail == "1 claim(s) no longer hold at head"
        return "manual.older_release"
    return "finding"


Case = tuple[str, Callable[[], str], bool]
CASES: list[Case] = [
    # resolve: paths
    ("path.placeholder", lambda: path("path/to/your/file.py"), True),
    ("path.placeholder", lambda: path("~/.config/app.toml"), True),
    ("path.placeholder", lambda: path("-f/--file"), True),
    ("path.placeholder", lambda: path("src/shop/gone.py"), False),
    ("path.mime", lambda: path("multipart/form-data"), True),
    ("path.mime", lambda: path("src/form-data"), False),
    ("path.bare_name", lambda: path("settings.toml"), True),
    ("path.bare_name", lambda: path("settings.toml", "link"), False),
    ("path.generated", lambda: path("dist/app.js"), True),
    ("path.generated", lambda: path("node_modules/x/index.js"), True),
    ("path.generated", lambda: path("distribution/app.js"), False),
    ("path.domain", lambda: path("example.com/docs/page"), True),
    ("path.domain", lambda: path("src/shop/x.py"), False),
    ("path.system", lambda: path("/etc/app/app.conf"), True),
    ("path.system", lambda: path("/src/shop/gone.py"), False),
    ("path.outside", lambda: path("../../elsewhere/x.md", "link"), True),
    ("path.outside", lambda: path("../install.md", "link", "docs/guide/a.md"), False),
    ("path.exists", lambda: path("src/shop/cart.py"), True),
    ("path.exists", lambda: path("guide/index", "docref", "docs/index.rst"), True),
    ("path.exists", lambda: path("src/shop/gone.py"), False),
    ("path.exists", lambda: path("/src/shop/cart.py", "link"), True),
    ("path.exists", lambda: path("install", "link"), True),  # a docs site's page URL
    ("path.exists", lambda: path("src/shop/cart.py", "link"), False),  # a link is relative to its doc
    ("path.generated", lambda: path("dist/app.js", "link"), False),  # a link is followed wherever it points
    ("path.placeholder", lambda: path("path/to/file.md", "link"), False),
    ("path.placeholder", lambda: path("{{ url }}", "link"), True),
    ("link.code_reference", lambda: path("tower_http::trace", "link"), True),
    ("link.code_reference", lambda: path("fn@crate::middleware::from_fn", "link"), True),
    ("link.code_reference", lambda: path("crate#sharing-state-with-handlers", "link"), True),
    ("link.code_reference", lambda: path("super", "link"), True),
    ("link.code_reference", lambda: path("img/shot.png", "link"), False),
    ("link.code_reference", lambda: path("crates/core/README.md", "link"), False),
    # docs/ is a Sphinx site (docs/conf.py): its root is the source folder, docs/install.md
    ("path.exists", lambda: path("/install", "link", "docs/guide/a.md"), True),
    ("link.site_root", lambda: path("/install", "link", "docs/guide/a.md"), False),
    ("link.site_root", lambda: path("/src/shop/gone.py", "link", "docs/guide/a.md"), False),
    ("link.site_root", lambda: path("/logo/glow.png", "link", "site/content/index.mdx"), True),
    ("link.site_root", lambda: path("/logo/gone.png", "link", "site/content/index.mdx"), False),
    (
        "link.rustdoc_page",
        lambda: path("middleware/index.html#section", "link", "web/src/docs/routing.md"),
        True,
    ),
    ("link.rustdoc_page", lambda: path("struct.Router.html", "link", "web/src/docs/routing.md"), True),
    ("link.rustdoc_page", lambda: path("middleware/index.html", "link", "docs/guide/a.md"), False),
    ("link.rustdoc_page", lambda: path("guide.html", "link", "web/src/docs/routing.md"), False),
    ("link.image_glob", lambda: path("../_static/router.*", "link", "docs/guide/a.rst"), True),
    ("link.image_glob", lambda: path("../_static/gone.*", "link", "docs/guide/a.rst"), False),
    ("link.image_glob", lambda: path("../_static/route.*", "link", "docs/guide/a.rst"), False),
    ("link.sphinx_page", lambda: path("../_modules/shop/cart.html", "link", "docs/guide/a.rst"), True),
    ("link.sphinx_page", lambda: path("/_modules/shop/cart.html", "link", "docs/guide/a.rst"), True),
    ("link.sphinx_page", lambda: path("../_modules/shop/cart.html", "link", "src/shop/README.md"), False),
    ("link.sphinx_page", lambda: path("../genindex", "link", "docs/guide/a.rst"), True),
    ("link.sphinx_page", lambda: path("modules/shop.html", "link", "docs/guide/a.rst"), False),
    ("label.exists", lambda: label("routing"), True),
    ("label.exists", lambda: label("api:views"), True),  # autosectionlabel, prefixed by its document
    ("label.exists", lambda: label("genindex"), True),  # Sphinx's own
    ("label.exists", lambda: label("gone"), False),
    ("label.external", lambda: label("tut-intro", tree=INTERSPHINX), True),
    ("label.external", lambda: label("routing", tree=INTERSPHINX), False),
    ("label.external", lambda: label("tut-intro"), False),  # no intersphinx: an unresolved link
    ("label.external", lambda: label("tut-intro", "README.rst", INTERSPHINX), False),  # outside the site
    ("path.suffix", lambda: path("flaskr/blog.py"), True),
    ("path.suffix", lambda: path("flaskr/views.py"), False),
    ("governs.placeholder", lambda: governs("path/to/x"), True),
    ("governs.placeholder", lambda: governs("src/gone"), False),
    ("governs.exists", lambda: governs("src/shop"), True),
    ("governs.exists", lambda: governs("src/gone"), False),
    # resolve: identifiers
    ("identifier.short", lambda: identifier("ab"), True),
    ("identifier.short", lambda: identifier("abc_gone"), False),
    ("identifier.defined", lambda: identifier("add_item"), True),
    ("identifier.defined", lambda: identifier("Cart.add_item"), True),
    ("identifier.defined", lambda: identifier("remove_item"), False),
    ("identifier.foreign_root", lambda: identifier("tempfile.gettempdir"), True),
    ("identifier.foreign_root", lambda: identifier("shop.gone_helper"), False),
    ("identifier.shell", lambda: identifier("build_all", "fence:shell"), True),
    ("identifier.shell", lambda: identifier("build_all", "fence:python"), False),
    ("identifier.foreign_fence", lambda: identifier("build_all", "fence:ruby"), True),
    ("identifier.foreign_fence", lambda: identifier("build_all", "fence"), True),
    ("identifier.foreign_fence", lambda: identifier("build_all", "fence:literal"), False),
    (
        "identifier.own_example",
        lambda: elsewhere("show_page", "```python\ndef show_page(x):\n    return x\n```"),
        True,
    ),
    (
        "identifier.own_example",
        lambda: elsewhere("show_page", "```python\ndef show_page(x): ...\n```"),
        False,
    ),
    (
        "identifier.own_example",
        lambda: elsewhere("header_map", "```rust\nlet mut header_map = HeaderMap::new();\n```"),
        True,
    ),
    (
        "identifier.own_example",  # a field of the example's own struct, read as Go
        lambda: elsewhere(
            "CheckIn", '```go\ntype Booking struct {\n\tCheckIn  time.Time `form:"in"`\n}\n```'
        ),
        True,
    ),
    (
        "identifier.own_example",  # the example only uses it
        lambda: elsewhere("CheckIn", "```go\nfmt.Println(b.CheckIn)\n```"),
        False,
    ),
    (
        "identifier.own_example",  # an option the example passes: a key of the API, not its own
        lambda: elsewhere("withCredentials", "```js\naxios({\n  withCredentials: false,\n})\n```"),
        False,
    ),
    (
        "identifier.own_example",  # a variable the example declares
        lambda: elsewhere("instance", "```js\nconst instance = axios.create({ timeout: 1000 });\n```"),
        True,
    ),
    ("identifier.readers_import", lambda: elsewhere("MyTask", "from myapp.tasks import MyTask\n"), True),
    ("identifier.readers_import", lambda: elsewhere("Cart", "from shop.cart import Cart\n"), False),
    # a module of the repository's package that is gone: the repository's own name, gone with it
    ("identifier.readers_import", lambda: elsewhere("Basket", "from shop.basket import Basket\n"), False),
    (
        "identifier.readers_import",
        lambda: elsewhere("Post", "from blog.views import Post\n"),
        True,
    ),  # blog.py is a file
    (
        "identifier.other_package",
        lambda: elsewhere("render_widget", "import otherpkg\n\nrender_widget()\n"),
        True,
    ),
    (
        "identifier.other_package",
        lambda: elsewhere("render_widget", "import shop\n\nrender_widget()\n"),
        False,
    ),
    ("identifier.foreign_attribute", lambda: attribute("from_url", "client = redis.from_url('x')"), True),
    ("identifier.foreign_attribute", lambda: attribute("from_url", "client = shop.from_url('x')"), False),
    ("identifier.foreign_attribute", lambda: attribute("from_url", "client = from_url('x')"), False),
    (
        "identifier.foreign_output",
        lambda: output("acquire_connection", "TRACE [2019] other._pool - acquire_connection origin=x"),
        True,
    ),
    (
        "identifier.foreign_output",
        lambda: output("load_state", 'File "/usr/lib/x/run.py", in load_state'),
        True,
    ),
    (
        "identifier.foreign_output",
        lambda: output("acquire_connection", "TRACE [2019] shop.cart - acquire_connection origin=x"),
        False,
    ),
    (
        "identifier.foreign_output",
        lambda: output("load_state", 'File "/home/me/src/shop/cart.py", line 3, in load_state'),
        False,
    ),
    # prove
    ("history.unavailable", lambda: proved(None), True),
    ("history.unavailable", lambda: proved(History()), False),
    ("history.never", lambda: proved(History()), True),
    ("history.never", lambda: proved(removed_history()), False),
    ("finding", lambda: proved(removed_history()), True),
    ("link.unresolved", lambda: linked(History()), True),
    ("link.unresolved", lambda: linked(None), True),
    ("link.unresolved", lambda: proved(History()), False),
    (
        "manual.older_release",
        lambda: manual("docs/v1/guide.md", ["docs/v2/guide.md", "docs/v1/api.md"]),
        True,
    ),
    (
        "manual.older_release",
        lambda: manual("versioned_docs/version-1.x/a.md", ["versioned_docs/version-2.x/a.md"]),
        True,
    ),
    ("manual.older_release", lambda: manual("docs/v2.x/a.md", ["docs/v10.x/a.md"]), True),
    ("manual.older_release", lambda: manual("docs/v2/guide.md", ["docs/v1/guide.md"]), False),  # the newest
    (
        "manual.older_release",
        lambda: manual("docs/v1/guide.md", ["docs/guide.md"]),
        False,
    ),  # no newer sibling
    ("manual.older_release", lambda: manual("api/2/x.md", ["api/3/x.md"]), False),  # a bare number
    (
        "manual.older_release",
        lambda: manual("docs/v1/guide.md", ["site/v2/guide.md"]),
        False,
    ),  # not a sibling
    ("finding", lambda: proved(History()), False),
    # judge
    ("judge.written_after", lambda: judged(written=datetime(2025, 1, 1, tzinfo=UTC)), True),
    ("judge.written_after", lambda: judged(written=T0), False),
    ("judge.written_after", lambda: judged(written=None), False),
    # qualified by this repository's package or class, or copied from a doc of the time: still about this code
    ("judge.written_after", lambda: judged(written=datetime(2025, 1, 1, tzinfo=UTC), qualified=True), False),
    (
        "judge.written_after",
        lambda: judged(written=datetime(2025, 1, 1, tzinfo=UTC), copied_from="docs/old.md"),
        False,
    ),
    ("identifier.used_current", lambda: weakly_used(("tests/test_cart.py",), ("examples/shop.py",)), True),
    ("identifier.used_current", lambda: weakly_used(("examples/shop.py",), ("examples/shop.py",)), False),
    # load_basket was an example's own definition: no sign that examples/shop.py is out of date
    (
        "identifier.used_current",
        lambda: weakly_used(("examples/shop.py",), ("examples/shop.py",), "examples/old.py"),
        True,
    ),
    ("judge.quoted_name", lambda: judged(source="fence:python", how="read"), True),
    ("judge.quoted_name", lambda: judged(source="code", how="read"), False),
    ("judge.quoted_name", lambda: judged(source="code", how="read", quoted=True), True),
    ("judge.quoted_name", lambda: judged(source="code", how="defined", quoted=True), False),
    ("identifier.standard_library", lambda: foreign("ReadTimeout", GO_SERVER, 7, "fence:go"), True),
    ("identifier.standard_library", lambda: foreign("make_server", PY_STD, 2), True),
    ("identifier.standard_library", lambda: foreign("ReadTimeout", GO_UNIMPORTED, 3, "fence:go"), True),
    ("identifier.standard_library", lambda: foreign("ReadTimeout", GO_OWN_PACKAGE, 3, "fence:go"), False),
    ("identifier.standard_library", lambda: foreign("ReadTimeout", GO_OWN, 5, "fence:go"), False),
    ("identifier.standard_library", lambda: foreign("make_server", PY_OWN_IMPORT, 2), False),
    ("identifier.dependency", lambda: foreign("translateTime", JS_PINO, 5, "fence:javascript"), True),
    ("identifier.dependency", lambda: foreign("add_handler", PY_PLUGIN, 4), True),
    ("identifier.dependency", lambda: foreign("translateTime", JS_OWN, 5, "fence:javascript"), False),
    ("identifier.dependency", lambda: foreign("add_handler", PY_OWN, 4), False),
    ("identifier.other_module", lambda: foreign("add_handler", PY_ADDON, 4), True),
    ("identifier.own_example", lambda: foreign("Blog", PY_BLOG, 1, "code"), True),
    ("identifier.own_example", lambda: foreign("Blog", PY_BLOG_IMPORTED, 1, "code"), False),
    ("identifier.other_module", lambda: foreign("add_handler", PY_PLUGIN, 4), False),
    ("judge.method_called_bare", lambda: judged(source="fence:python", how="member", bare_call=True), True),
    ("judge.method_called_bare", lambda: judged(source="fence:python", how="member"), False),
    ("judge.unimported_call", lambda: judged(source="fence:python", bare_call=True, unimported=True), True),
    ("judge.unimported_call", lambda: judged(source="fence:python", bare_call=True), False),
    ("judge.deleted_reader", lambda: judged(how="read", reader_deleted=True), True),
    ("judge.deleted_reader", lambda: judged(how="read"), False),
    ("judge.private_in_example", lambda: judged("_helper", "fence:python"), True),
    ("judge.private_in_example", lambda: judged("addCmd", "fence:go", seen_in="cmd/root.go"), True),
    ("judge.private_in_example", lambda: judged("_helper", "code"), False),
    ("judge.private_in_example", lambda: judged("AddCmd", "fence:go", seen_in="cmd/root.go"), False),
]
# decided against git or the stored index, in the integration tests (a symbolic link, a class with a
# base from elsewhere, a published docs mirror, a name the code uses, a variable a settings class reads)
DECIDED_ELSEWHERE = {
    "path.through_link",
    "identifier.inherited",
    "path.mirrored",
    "identifier.used",
    "identifier.setting",
}


@pytest.mark.parametrize(
    ("rule", "case", "decides"), CASES, ids=[f"{r}-{i}" for i, (r, _, _) in enumerate(CASES)]
)
def test_the_rule_decides_its_cases(rule: str, case: Callable[[], str], decides: bool) -> None:
    assert rule in RULES
    outcome = case()
    assert (outcome == rule) is decides, outcome


def test_every_rule_has_cases() -> None:
    positive = {r for r, _, d in CASES if d}
    negative = {r for r, _, d in CASES if not d}
    for name in RULES:
        if name not in DECIDED_ELSEWHERE:
            assert name in positive and name in negative, name


def test_every_rule_says_what_it_decides_in_one_line() -> None:
    for rule in RULES.values():
        assert rule.doc and "\n" not in rule.doc and rule.doc.endswith("."), rule.name
        assert rule.stage in ("resolve", "prove", "judge") and rule.name.count(".") <= 1


def test_weak_support_is_a_test_fixture_or_example() -> None:
    """Only a use the shared classifier calls a test (fixtures included) or an example may be out of
    date itself; a build script (fastify's ``build/build-validation.js`` passes Ajv's options) or
    the code's tooling is support."""
    assert weak_support("tests/test_cart.py") and weak_support("test/fixtures/app.js")
    assert weak_support("examples/shop/app.py")
    assert not weak_support("build/build-validation.js")
    assert not weak_support("scripts/release.py") and not weak_support("src/shop/cart.py")
