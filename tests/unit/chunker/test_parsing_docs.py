"""Documentation: section chunks, Governs/Supersedes in the head, and what a doc mentions."""

from __future__ import annotations

import pytest

from palimpsest.chunker.parsing import Fact, analyze_file

README = """\
# Billing

Governs: src/billing/, ./lib/tax
**Supersedes:** ADR-0011 (partially), 0004

Uses `InvoiceService.create()`, `render()`, `src/billing/invoice.py`, `npm` and `config.yml`.
See [the guide](docs/guide.md#setup), [the site](https://example.com) and ![x](./img/a.png "t").

```python
def compute_total(items):
    # This Comment stays prose
    return sum_line_items(items)
```

Setup
-----

```bash
# not a heading
export PALIMPSEST_URL=x
```

```text
plain_words_in_text_fences are_ignored
```

## Reference

[guide]: ../other/README.md
"""


def _kinds(facts: list[Fact], *kinds: str) -> list[Fact]:
    return [f for f in facts if f.kind in kinds]


def test_markdown_sections_split_at_headings_not_at_fenced_hashes() -> None:
    analysis = analyze_file("README.md", README, "markdown")
    assert [(c.kind, c.name, c.start_line, c.end_line) for c in analysis.chunks] == [
        ("section", "Billing", 1, 14),
        ("section", "Setup", 15, 26),
        ("section", "Reference", 27, 29),
    ]
    assert analysis.symbols == []
    assert analysis.parse_errors == 0


def test_governs_and_supersedes() -> None:
    facts = analyze_file("README.md", README, "markdown").facts
    assert _kinds(facts, "governs", "supersedes") == [
        Fact("governs", "lib/tax", 3),
        Fact("governs", "src/billing", 3),
        Fact("supersedes", "0004", 4),
        Fact("supersedes", "ADR-0011", 4),
    ]


def test_mentions_from_inline_code_fences_and_links() -> None:
    facts = analyze_file("README.md", README, "markdown").facts
    mentions = {(f.name, f.target, f.detail, f.line) for f in _kinds(facts, "mention")}
    assert mentions == {
        ("InvoiceService.create", "identifier", "code", 6),
        ("render", "identifier", "code", 6),
        ("src/billing/invoice.py", "path", "code", 6),
        ("config.yml", "path", "code", 6),
        ("docs/guide.md", "path", "link", 7),
        ("img/a.png", "path", "link", 7),
        ("compute_total", "identifier", "fence:python", 10),
        ("sum_line_items", "identifier", "fence:python", 12),
        ("PALIMPSEST_URL", "identifier", "fence:shell", 20),
        # a text block is output: recorded as such, a claim only on a line naming the repository's module
        ("plain_words_in_text_fences", "identifier", "output", 24),
        ("are_ignored", "identifier", "output", 24),
        ("../other/README.md", "path", "link", 29),
    }


def test_governs_counts_only_in_the_first_60_lines() -> None:
    head = ["# Doc", "", "Supersedes: 0001"] + ["text"] * 56 + ["Governs: src/late"]  # line 60
    text = "\n".join([*head, "Governs: src/too_late", "Supersedes: 0002"]) + "\n"
    facts = analyze_file("docs/adr/0002.md", text, "markdown").facts
    assert _kinds(facts, "governs", "supersedes") == [
        Fact("supersedes", "0001", 3),
        Fact("governs", "src/late", 60),
    ]


def test_governs_in_front_matter_list_items_and_rst_fields() -> None:
    text = "---\ngoverns: [src/a, src/b]\n---\n- Governs: `src/c/`\n:supersedes: ADR-7\n"
    facts = analyze_file("docs/x.md", text, "markdown").facts
    assert _kinds(facts, "governs", "supersedes") == [
        Fact("governs", "src/a", 2),
        Fact("governs", "src/b", 2),
        Fact("governs", "src/c", 4),
        Fact("supersedes", "ADR-7", 5),
    ]


def test_front_matter_is_a_section_of_its_own_and_its_dashes_are_not_headings() -> None:
    text = "---\ntitle: x\n---\nIntro line\n\n# One\nbody\n"
    chunks = analyze_file("docs/x.md", text, "markdown").chunks
    assert [(c.name, c.start_line, c.end_line) for c in chunks] == [
        (None, 1, 5),
        ("One", 6, 7),
    ]


def test_a_long_section_becomes_windows_named_after_its_heading() -> None:
    text = "# Intro\nshort\n# Long\n" + "".join(f"line {n}\n" for n in range(130))
    chunks = analyze_file("docs/long.md", text, "markdown").chunks
    assert [(c.name, c.start_line, c.end_line) for c in chunks] == [
        ("Intro", 1, 2),
        ("Long", 3, 62),
        ("Long", 53, 112),
        ("Long", 103, 133),
    ]


def test_rst_sections() -> None:
    text = (
        "=====\nTitle\n=====\n\nIntro.\n\nUsage\n-----\n\nRun ``make_report()``.\n\n"
        "Details\n~~~~~~~\n\n.. include:: ../shared/notes.rst\n"
    )
    analysis = analyze_file("docs/index.rst", text, "rst")
    assert [(c.name, c.start_line, c.end_line) for c in analysis.chunks] == [
        ("Title", 1, 6),
        ("Usage", 7, 11),
        ("Details", 12, 15),
    ]
    mentions = {(f.name, f.target) for f in _kinds(analysis.facts, "mention")}
    assert mentions == {("make_report", "identifier"), ("../shared/notes.rst", "path")}


def test_plain_text_is_windowed_and_still_read_for_governs() -> None:
    text = "Governs: tools/\n" + "".join(f"note {n}\n" for n in range(70))
    analysis = analyze_file("NOTES.txt", text, "text")
    assert [(c.kind, c.start_line, c.end_line) for c in analysis.chunks] == [
        ("section", 1, 60),
        ("section", 51, 71),
    ]
    assert _kinds(analysis.facts, "governs") == [Fact("governs", "tools", 1)]


def test_governs_is_a_doc_fact_only() -> None:
    facts = analyze_file("src/app.py", "# Governs: src/app\nx = 1\n", "python").facts
    assert _kinds(facts, "governs") == []


def test_a_doc_without_language_is_recognised_by_extension() -> None:
    facts = analyze_file("docs/notes.txt", "Supersedes: 0009\n", None).facts
    assert facts == [Fact("supersedes", "0009", 1)]


SPHINX = """\
Guide
=====

Start with :doc:`tutorial/index`, :doc:`the proxy <deploying/proxy_fix>` and :ref:`install`.
Call :func:`~flask.Flask.run` or :py:meth:`app.render`; set :envvar:`FLASK_APP`.
The app lives in flaskr/__init__.py and the templates in flaskr/templates/auth/; see
https://example.com/src/x.py and `auth/register`.

.. versionchanged:: 2.0
    :func:`old_helper` moved to :func:`new_helper`.

`gone_function` was removed in 2.0.

.. versionchanged 0.10:: ``OpenSSL`` contexts are not supported anymore.

``ssl_context_factory`` is not used any more.
"""


def test_sphinx_roles_prose_paths_and_history_lines() -> None:
    facts = analyze_file("docs/guide.rst", SPHINX, "rst").facts
    mentions = {(f.name, f.target, f.detail, f.line) for f in _kinds(facts, "mention")}
    assert mentions == {
        ("tutorial/index", "path", "docref", 4),
        ("deploying/proxy_fix", "path", "docref", 4),
        ("flask.Flask.run", "identifier", "role", 5),
        ("app.render", "identifier", "role", 5),
        ("flaskr/__init__.py", "path", "prose", 6),
        ("flaskr/templates/auth", "path", "prose", 6),
        ("auth/register", "path", "code", 7),
        ("install", "label", "ref", 4),  # a :ref: names a label, which the check resolves
    }


def test_labels_are_the_targets_rst_and_myst_define() -> None:
    rst = ".. _Routing Views:\n\nRouting\n=======\n\n.. __: https://x.test\n.. _pypi: https://pypi.org\n"
    facts = _kinds(analyze_file("docs/routing.rst", rst, "rst").facts, "label")
    assert [(f.name, f.line) for f in facts] == [("routing views", 1)]  # lower case, as Sphinx reads it
    md = "(views)=\n# Views\n\n```{note}\n(inner)=\nText.\n```\n"
    facts = _kinds(analyze_file("docs/views.md", md, "markdown").facts, "label")
    assert sorted((f.name, f.line) for f in facts) == [("inner", 5), ("views", 1)]


def test_autoprogram_targets_name_the_parser_they_document() -> None:
    rst = "pserve\n======\n\n.. autoprogram:: shop.scripts.serve:ServeCommand.parser\n    :prog: serve\n"
    facts = _kinds(analyze_file("docs/serve.rst", rst, "rst").facts, "mention")
    assert [(f.name, f.detail, f.line) for f in facts] == [
        ("shop.scripts.serve.ServeCommand.parser", "role", 4)
    ]
    md = "# report\n\n```{autoprogram} shop.scripts.report:get_parser()\n```\n"
    facts = _kinds(analyze_file("docs/report.md", md, "markdown").facts, "mention")
    assert [(f.name, f.detail, f.line) for f in facts] == [("shop.scripts.report.get_parser", "role", 3)]


def test_fences_name_their_language() -> None:
    text = "# X\n\n```golang\nfunc runServer() {}\n```\n\n```\nother_name()\n```\n\n```console\n$ run_it_now\n```\n"
    facts = analyze_file("README.md", text, "markdown").facts
    mentions = {(f.name, f.detail) for f in _kinds(facts, "mention")}
    assert mentions == {("runServer", "fence:go"), ("other_name", "fence")}  # a command at a prompt: none


def test_api_reference_directives_name_code() -> None:
    text = "API\n===\n\n.. autoclass:: flask.Flask\n    :members:\n\n.. autofunction:: flask.url_for\n\n.. py:function:: send_file(path)\n"
    facts = analyze_file("docs/api.rst", text, "rst").facts
    assert {(f.name, f.detail, f.line) for f in _kinds(facts, "mention")} == {
        ("flask.Flask", "role", 4),
        ("flask.url_for", "role", 7),
        ("send_file", "role", 9),
    }
    md = "# API\n\n::: httpx.Client\n\n::: httpx.get\n"
    facts = analyze_file("docs/api.md", md, "markdown").facts
    assert {(f.name, f.detail) for f in _kinds(facts, "mention")} == {
        ("httpx.Client", "role"),
        ("httpx.get", "role"),
    }


def test_a_link_to_a_go_package_reference_names_the_object_it_documents() -> None:
    md = (
        "# chi\n\n| [WithValue] | Short-hand middleware to set a key/value on the request context |\n\n"
        "See [Mux.Use](https://pkg.go.dev/github.com/go-chi/chi/v5#Mux.Use), "
        "[Server](https://pkg.go.dev/net/http#Server) and [the docs](https://pkg.go.dev/github.com/go-chi/chi/v5).\n\n"
        "[WithValue]: https://pkg.go.dev/github.com/go-chi/chi/middleware#WithValue\n"
        "[render]: https://godoc.org/github.com/go-chi/render#Bind\n"
    )
    facts = analyze_file("README.md", md, "markdown").facts
    assert {(f.name, f.target, f.detail, f.line) for f in _kinds(facts, "mention")} == {
        ("chi.Mux.Use", "identifier", "role", 5),  # the module's major version is no package
        ("middleware.WithValue", "identifier", "role", 7),
        ("render.Bind", "identifier", "role", 8),  # another module's: the check's tree says so
    }  # the standard library's page and a package's front page name nothing of the repository's


def test_roles_are_qualified_by_the_current_module() -> None:
    text = "X\n=\n\n.. currentmodule:: sphinxcontrib.websupport\n\nSubclass :class:`BaseSearch` or :meth:`~.WebSupport.get`.\n"
    facts = analyze_file("docs/x.rst", text, "rst").facts
    assert {f.name for f in _kinds(facts, "mention")} == {
        "sphinxcontrib.websupport.BaseSearch",
        "sphinxcontrib.websupport.WebSupport.get",
    }


def test_a_relative_role_belongs_to_the_module_its_name_was_declared_under() -> None:
    text = (
        "B\n=\n\n.. module:: sphinxcontrib.serializinghtml\n\n.. class:: PickleHTMLBuilder\n\n"
        ".. module:: sphinx.builders.xml\n\nThe :class:`.PickleHTMLBuilder` and :class:`.XMLBuilder`.\n"
    )
    names = {f.name for f in _kinds(analyze_file("docs/b.rst", text, "rst").facts, "mention")}
    assert names == {
        "sphinxcontrib.serializinghtml.PickleHTMLBuilder",  # declared under that module
        "sphinx.builders.xml.XMLBuilder",  # the current module
    }


def test_rows_of_a_table_that_maps_old_names_to_new_ones_are_no_claims() -> None:
    rst = (
        "S\n=\n\n=========================  =====================\n**Setting name**           **Replace with**\n"
        "=========================  =====================\n``CELERY_ACKS_LATE``       :setting:`task_acks_late`\n"
        "=========================  =====================\n\nUse ``task_acks_late_now`` today.\n"
    )
    names = {f.name for f in _kinds(analyze_file("docs/c.rst", rst, "rst").facts, "mention")}
    assert names == {"task_acks_late_now"}
    md = "# M\n\n| Old name | New name |\n|---|---|\n| `old_fn` | `new_fn` |\n\n| Name | Use |\n|---|---|\n| `run_all` | x |\n"
    names = {f.name for f in _kinds(analyze_file("docs/m.md", md, "markdown").facts, "mention")}
    assert names == {"run_all"}


def test_keyword_arguments_and_sections_that_tell_history_are_no_claims() -> None:
    md = (
        "# Guide\n\n```python\nresponse = session.send(request, allow_redirects=False)\nx = run_all(y)\n```\n\n"
        "## Deprecated\n\n- `ping_task()` goes away.\n\n## Usage\n\nCall `start_all()`.\n"
    )
    names = {f.name for f in _kinds(analyze_file("docs/g.md", md, "markdown").facts, "mention")}
    assert names == {"run_all", "start_all"}


RST_CODE = """\
Coroutines
==========

Fire and forget with `.IOLoop.spawn_callback`, a `title reference`, or see `the docs`_::

    IOLoop.current().spawn_callback(divide, 1, 0)
    # comment_name()

Back to prose naming nothing.

.. code-block:: go

    client.UseCompressor(gzip_name)

.. testoutput::

    printed_value

>>> from shop import build_invoice
>>> build_invoice(
...     HTTP_ACCEPT_CHARSET='utf-8',
... )
"""


def test_rst_default_role_literal_blocks_code_directives_and_doctests() -> None:
    facts = analyze_file("docs/guide.rst", RST_CODE, "rst").facts
    assert {(f.name, f.detail, f.line) for f in _kinds(facts, "mention")} == {
        ("IOLoop.spawn_callback", "role", 4),  # the default role: an object reference
        ("spawn_callback", "fence:literal", 6),  # the block after ``::``, highlighted as Python
        ("UseCompressor", "fence:go", 13),
        ("gzip_name", "fence:go", 13),
        ("build_invoice", "fence:python", 19),  # the doctest's first mention
    }


@pytest.mark.parametrize(
    ("line", "history"),
    [
        ("`foo()` was removed in 2.0.", True),
        ("Use `new_api` instead of `old_api`.", True),
        ("The legacy loader is gone.", True),
        ("See the [legacy docs](docs/old.md) and `old_api`.", True),  # link text is prose
        ("Backwards compatibility shims live here.", True),
        ("Run `legacy/run.py` and call `parse_all()`.", False),  # the word is inside a code span
        ("The loader lives in legacy/loader.py, see `load_all()`.", False),  # … inside a path
        ("See [the loader](legacy/loader.md) and `load_all()`.", False),  # … inside a link target
        ("Call `deprecated_call()` to check warnings.", False),
        ("![badge](https://example.invalid/removed.svg) `start_all()`", False),
        ("The legacy_mode flag makes `use_loader()` lazy.", False),  # an identifier, not the word
    ],
)
def test_history_words_are_read_in_the_prose_only(line: str, history: bool) -> None:
    md = f"# Guide\n\n{line}\n"
    facts = _kinds(analyze_file("README.md", md, "markdown").facts, "mention")
    names = {f.name for f in facts if f.detail != "link"}  # a link is followed on any line (below)
    assert (not names) is history, names


def test_links_and_images_are_followed_on_every_line_and_in_html() -> None:
    """A link's target is a claim about the tree wherever it stands: a history line, a deprecated
    section, an ``<img>`` or ``<a>`` inside Markdown."""
    md = (
        "# Guide\n\nSee the [legacy docs](docs/old.md), `old_api()` was removed.\n\n"
        '<p align="center"><img src="./coverage.svg" alt="x"> <a href="docs/a.md#top">a</a></p>\n\n'
        "## Deprecated\n\n![shot](img/old.png) and `gone_call()`\n\nSee `the index <pypi_>`_ (a named target).\n"
    )
    facts = _kinds(analyze_file("README.md", md, "markdown").facts, "mention")
    assert {(f.name, f.detail) for f in facts} == {
        ("docs/old.md", "link"),
        ("coverage.svg", "link"),
        ("docs/a.md", "link"),
        ("img/old.png", "link"),
    }


def test_a_line_citing_a_legacy_folder_keeps_its_claims() -> None:
    md = "# Layout\n\nThe loader is `legacy/loader.py`; call `load_everything()` from it.\n"
    mentions = {
        (f.name, f.target) for f in _kinds(analyze_file("README.md", md, "markdown").facts, "mention")
    }
    assert ("legacy/loader.py", "path") in mentions
    assert ("load_everything", "identifier") in mentions


def test_a_path_written_as_a_link_s_text_is_a_prose_path() -> None:
    md = "# X\n\nDefaults are in [lib/defaults.js](https://example.invalid/lib/defaults/index.js#L28).\n"
    mentions = {
        (f.name, f.target, f.detail)
        for f in _kinds(analyze_file("README.md", md, "markdown").facts, "mention")
    }
    assert mentions == {("lib/defaults.js", "path", "prose")}  # the URL target is no claim
    image = "# X\n\n![docs/diagram.svg](https://example.invalid/d.svg)\n"
    assert not _kinds(analyze_file("README.md", image, "markdown").facts, "mention")  # alt text is not prose


def test_signature_listings_in_inline_code_name_their_definition() -> None:
    md = (
        "# API\n\n* `def .stream_bytes()` yields bytes; `async def aclose()` closes.\n"
        "* `func (c *Client) DoRequest(req)` and `class Transport:`.\n* `def not a signature`\n"
    )
    facts = _kinds(analyze_file("docs/api.md", md, "markdown").facts, "mention")
    assert {(f.name, f.detail) for f in facts} == {
        ("stream_bytes", "code"),
        ("aclose", "code"),
        ("DoRequest", "code"),
        ("Transport", "code"),
    }


MYST_PAGE = """\
# Guide

Run it[^json] and see [the page](install.md).

[^json]: Until this very step the file is empty.

(my-label)=
## Install

Write `[text](your/page.md)` to link; see [above](my-label).

<!-- [[[cog
import cog
cog.outl(f"[{name}]({name}/README.md)")
]]] -->
<!-- [[[end]]] -->

<img src="./logo.svg"> and <!-- <img src="gone.png"> -->
"""


def test_footnotes_labels_comments_and_code_spans_are_never_links() -> None:
    """Read as CommonMark and MyST read it: a footnote definition (``[^json]: Until …``) is a
    paragraph, ``(label)=`` a target and a link to it a reference, a ``[…](…)`` inside a code span
    is code, and an HTML comment (a cog generator block) is read for nothing."""
    facts = _kinds(analyze_file("docs/guide.md", MYST_PAGE, "markdown").facts, "mention")
    assert {(f.name, f.detail, f.line) for f in facts if f.target == "path"} == {
        ("install.md", "link", 3),
        ("logo.svg", "link", 18),
    }
    assert [(c.name, c.start_line) for c in analyze_file("docs/guide.md", MYST_PAGE, "markdown").chunks] == [
        ("Guide", 1),
        ("Install", 8),
    ]


MYST_API = """\
```{currentmodule} shop.cart
```

Call {py:meth}`Cart.add_item` or see {ref}`my-label` and {doc}`guide/install`.

```{autoclass} Basket
```

```{note}
The `remove_item()` call, and [the old page](gone.md).
```

```{versionchanged} 2.0
`old_name` was here.
```
"""


def test_myst_roles_and_directives_are_read_as_sphinx_reads_them() -> None:
    """``{py:meth}`…``` is a cross-reference role, ``{autoclass}`` names the class it documents
    under the current module, a ``{note}``'s body is Markdown (its code and links are read as
    such), and a ``{versionchanged}`` body names old things on purpose."""
    facts = _kinds(analyze_file("docs/api.md", MYST_API, "markdown").facts, "mention")
    assert {(f.name, f.target, f.detail, f.line) for f in facts} == {
        ("Cart.add_item", "identifier", "role", 4),
        ("guide/install", "path", "docref", 4),
        ("shop.cart.Basket", "identifier", "role", 6),
        ("remove_item", "identifier", "code", 10),
        ("gone.md", "path", "link", 10),
        ("my-label", "label", "ref", 4),
    }


def test_rst_comments_are_read_for_nothing() -> None:
    text = (
        "Title\n=====\n\n"
        ".. This comment names :func:`shop.old_func`\n"
        "   and continues with ``OldThing.method()`` and `x <gone/page.rst>`_.\n\n"
        ".. image:: _static/router.*\n\n"
        "See :func:`shop.add_item`.\n"
    )
    facts = _kinds(analyze_file("docs/index.rst", text, "rst").facts, "mention")
    assert {(f.name, f.detail, f.line) for f in facts} == {
        ("_static/router.*", "link", 7),
        ("shop.add_item", "role", 9),
    }


def test_myst_doctest_and_code_directives_hold_code() -> None:
    text = (
        "```{doctest}\n>>> class SemanticLogger(BoundLoggerBase):\n...     pass\n```\n\n"
        "```{testoutput}\nprinted_name here\n```\n\n"
        "```{code-block} go\nfunc (c *Client) DoThing() {}\n```\n"
    )
    facts = _kinds(analyze_file("docs/recipes.md", text, "markdown").facts, "mention")
    assert {(f.name, f.detail, f.line) for f in facts} == {
        ("SemanticLogger", "fence:python", 2),
        ("BoundLoggerBase", "fence:python", 2),
        ("DoThing", "fence:go", 11),
    }


def test_a_code_span_never_crosses_from_one_list_item_to_the_next() -> None:
    """Each paragraph, heading and list item's inline content is parsed on its own (an unclosed
    backtick in one item does not open a span that runs into the next)."""
    text = "Programs live in:\n\n* `/usr/local/bin`\n* `/usr/bin`\n* `/usr/sbin`\n* `/sbin\n\nUse `typer.FileTextWrite`.\n"
    facts = _kinds(analyze_file("docs/env.md", text, "markdown").facts, "mention")
    assert {(f.name, f.line) for f in facts} == {
        ("/usr/local/bin", 3),
        ("/usr/bin", 4),
        ("/usr/sbin", 5),
        ("typer.FileTextWrite", 8),
    }


def test_a_mkdocs_admonition_body_is_markdown_and_an_indented_block_is_code() -> None:
    text = (
        "!!! note\n    By default:\n\n    Set `populate_by_name`, see [the page](alias.md).\n\n"
        "    ```py\n    class Settings(BaseSettings):\n        pass\n    ```\n\n"
        "Plain text.\n\n    indented_code_name = 1\n"
    )
    facts = _kinds(analyze_file("docs/index.md", text, "markdown").facts, "mention")
    assert {(f.name, f.detail, f.line) for f in facts} == {
        ("populate_by_name", "code", 4),
        ("alias.md", "link", 4),
        ("BaseSettings", "fence:python", 7),
        ("indented_code_name", "fence", 13),
    }


def test_plain_text_indents_are_layout_not_code() -> None:
    text = "To do:\n\n    make_wsgi_app should take a make_pyramid_app argument\n"
    facts = _kinds(analyze_file("TODO.txt", text, "text").facts, "mention")
    assert facts == []
