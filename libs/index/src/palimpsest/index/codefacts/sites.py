"""Where a link in a document points: the one answer for the doc check, the graph's mention edges
and the review's left-behind check, read from the configuration of the site the doc is published in.

A repository publishes its docs with a generator, or with none (GitHub renders the files). Each
resolves a relative link its own way, and :class:`Sites` resolves it the same way:

* **MkDocs** (``mkdocs.yml``, read with PyYAML; its custom tags such as ``!!python/name:`` are read
  as nothing; ``INHERIT`` is followed): pages live in ``docs_dir`` (``docs`` beside the config);
  a relative link is relative to the page's source file, a root-relative one (``/img/x.png``) to
  ``docs_dir``; a link to a folder is its ``index.md`` or ``README.md``. ``nav`` names the site's
  pages (:attr:`Site.pages`).
* **Sphinx** (``conf.py`` in the usual places: ``docs/``, ``doc/``, their ``source/``, or the root;
  read with :mod:`ast`, literal assignments only, never run): the source folder is the config's
  folder. A file a directive or MyST link names (``.. image:: x.png``, ``[x](y.md)``) is relative
  to the document, a root-relative one (``/x``) to the source folder; a URL to a built page
  (``../api.html``) is the source file it is built from; ``html_extra_path`` is served at the root,
  ``html_static_path`` under ``_static/``; the pages Sphinx writes itself (``_modules/``,
  ``genindex``, ``search``, ``py-modindex`` …) are generated, no claim about the tree; an image
  ``x.*`` is whichever ``x.<extension>`` exists.
* **Docusaurus** (``docusaurus.config.{js,ts,mjs,cjs}``: the ``path:`` and ``routeBasePath:``
  string literals of the ``docs`` options, read without running the config): a relative link is
  relative to the file; a route ``/docs/x`` is ``<docs path>/x.md`` (``.mdx``, ``x/index.md``,
  ``x/README.md``); ``@site/x`` is the site's folder; any other root-relative path is served from
  ``static/``.
* **No generator** (GitHub): relative to the file, root-relative to the repository; a folder is
  its own target. A doc outside every configured site may still be published by a generator
  this module does not read (VitePress, Next.js, Hugo): a root-relative link there also resolves
  from a folder above the doc or its ``public/``/``static/`` (:meth:`Sites.resolve`, ``site_root``).

Every generator also finds a file relative to the page's own source (what GitHub shows too), so
that form is always a candidate.
"""

from __future__ import annotations

import ast
import posixpath
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Literal
from urllib.parse import unquote

import yaml  # type: ignore[import-untyped]  # PyYAML ships no stubs; types-PyYAML is not in the lock

from palimpsest.core.jsonshape import JsonObject

__all__ = [
    "Resolution",
    "Site",
    "SiteKind",
    "Sites",
    "is_site_config",
    "read_sites",
]

SiteKind = Literal["mkdocs", "sphinx", "docusaurus"]

_MKDOCS_NAMES = frozenset({"mkdocs.yml", "mkdocs.yaml"})
_DOCUSAURUS_NAMES = frozenset(f"docusaurus.config.{e}" for e in ("js", "ts", "mjs", "cjs", "mts", "cts"))
_SPHINX_FOLDERS = frozenset({"", "docs", "doc", "docs/source", "doc/source", "docs/src", "doc/src"})
_DOC_FORMS = (".md", ".mdx", ".rst", ".txt", ".ipynb", ".markdown")
_FOLDER_PAGES = ("index.md", "README.md", "index.mdx", "index.rst", "readme.md")
# the pages and folders Sphinx writes into its output itself (viewcode's highlighted sources, the
# indexes, search, copied sources, images and downloads)
_SPHINX_GENERATED_PAGES = frozenset({"genindex", "search", "py-modindex", "np-modindex", "objects.inv"})
_SPHINX_GENERATED_FOLDERS = frozenset(
    {"_modules", "_sources", "_images", "_downloads", "_sphinx_design_static"}
)
_SITE_FOLDERS = ("public", "static")
"""The folders a docs site this module does not read serves as its root (Next.js, Vite and
VitePress ``public/``; Hugo and Gatsby ``static/``)."""


def is_site_config(path: str) -> bool:
    """Whether ``path`` configures a docs site :class:`Sites` reads (its text is wanted)."""
    folder, _, name = path.rpartition("/")
    lowered = name.lower()
    if lowered in _MKDOCS_NAMES or lowered in _DOCUSAURUS_NAMES:
        return True
    return name == "conf.py" and folder in _SPHINX_FOLDERS


@dataclass(frozen=True, slots=True)
class Site:
    """One docs site: what generates it, where its config is, where its pages are."""

    kind: SiteKind
    config: str  # the config file's path
    source: str  # the folder its pages are read from ("" for the repository's root)
    route: str = ""  # Docusaurus: the URL path the docs are served under (``docs``)
    served: tuple[tuple[str, str], ...] = ()  # (URL prefix, repository folder) served as they are
    pages: tuple[str, ...] = field(
        default=(), repr=False
    )  # MkDocs ``nav``: the pages named (repository paths)
    autosectionlabel: bool = False  # Sphinx: every section title is a ``:ref:`` label
    label_prefix: bool = False  # … prefixed by its document (``autosectionlabel_prefix_document``)
    intersphinx: bool = False  # Sphinx: ``:ref:`` may name another project's label
    myst: bool = False  # Sphinx with MyST: a Markdown link may be a cross-reference (a label, an object)

    def section_label(self, doc: str, title: str) -> str:
        """The label autosectionlabel gives a section of ``doc`` (lower case, as Sphinx normalises it)."""
        name = " ".join(title.replace("`", "").replace("*", "").lower().split())
        if not self.label_prefix:
            return name
        page = doc[len(self.source) + 1 :] if self.source else doc
        return f"{page.rpartition('.')[0] or page}:{name}"

    @property
    def folder(self) -> str:
        """The folder the config is in (the site's own root: ``@site/`` in Docusaurus)."""
        return self.config.rpartition("/")[0]

    def holds(self, doc: str) -> bool:
        """Whether ``doc`` is a page of this site (under its source folder)."""
        return not self.source or doc.startswith(self.source + "/")


@dataclass(frozen=True, slots=True)
class Resolution:
    """Where a link in a document points.

    ``found`` is the repository path it reaches (a file or folder of the tree), else None;
    ``candidates`` are the paths it may stand for, nearest first (what history is asked about
    when none exists); ``how`` says which rule decided:

    * ``exists`` -- the target (or its document form) is in the tree;
    * ``glob`` -- a Sphinx image ``x.*`` with some ``x.<extension>`` in the tree;
    * ``site_root`` -- a root-relative link found from a folder above the doc (a site this module
      does not read);
    * ``generated`` -- a page the site's generator writes itself (Sphinx ``genindex``, ``_modules/``):
      no claim about the tree;
    * ``outside`` -- it leaves the repository (or names nothing);
    * ``missing`` -- none of the candidates exists.
    """

    how: Literal["exists", "glob", "site_root", "generated", "outside", "missing"]
    candidates: tuple[str, ...] = ()
    found: str | None = None
    site: Site | None = None

    @property
    def holds(self) -> bool:
        return self.how in ("exists", "glob", "site_root")


@dataclass(slots=True)
class Sites:
    """The docs sites of one tree, and the resolution of links in its documents."""

    files: frozenset[str]
    dirs: frozenset[str]
    sites: list[Site] = field(default_factory=list)

    @classmethod
    def of(cls, paths: Iterable[str], texts: Mapping[str, str], dirs: Collection[str] | None = None) -> Sites:
        """The sites configured in a tree (``paths``: its files; ``texts``: the text of its site
        configs, :func:`is_site_config`; a config whose text is missing is read as the defaults)."""
        files = frozenset(paths)
        if dirs is None:
            found: set[str] = set()
            for path in files:
                parts = path.split("/")
                found.update("/".join(parts[:i]) for i in range(1, len(parts)))
            dirs = found
        return cls(files, frozenset(dirs), read_sites([p for p in files if is_site_config(p)], texts))

    def exists(self, path: str) -> bool:
        return path in ("", ".") or path in self.files or path in self.dirs

    def site_of(self, doc: str) -> Site | None:
        """The site ``doc`` is a page of: the one with the deepest source folder holding it."""
        holding = [s for s in self.sites if s.holds(doc)]
        return max(holding, key=lambda s: len(s.source), default=None)

    def resolve(self, doc: str, target: str) -> Resolution:
        """Where ``target``, a relative link, an image, an included file or a document reference
        written in ``doc``, points (``#fragment`` and ``?query`` dropped, ``%20`` decoded)."""
        written = unquote(target.strip().split("#", 1)[0].split("?", 1)[0])
        site = self.site_of(doc)
        if not written:
            return Resolution("outside", site=site)
        if site is not None and _generated(site, doc, written):
            return Resolution("generated", site=site)
        candidates = _candidates(site, doc, written)
        if not candidates:
            return Resolution("outside", site=site)
        for candidate in candidates:
            found = self.document(candidate)
            if found is not None:
                return Resolution("exists", tuple(candidates), found, site)
        if site is not None and site.kind == "sphinx" and written.endswith(".*"):
            for candidate in candidates:
                if candidate.endswith(".*") and self._any_extension(candidate[:-2]):
                    return Resolution("glob", tuple(candidates), candidate, site)
        if site is None and written.startswith("/"):
            for root in _site_roots(doc):
                found = self.document(posixpath.join(root, written.lstrip("/")))
                if found is not None:
                    return Resolution("site_root", tuple(candidates), found, site)
        return Resolution("missing", tuple(candidates), None, site)

    def document(self, path: str) -> str | None:
        """``path`` when the tree has it, else the document it names without its extension
        (``guide/index`` for ``guide/index.rst``, ``x.html`` for ``x.md``) or the page of the
        folder it names (``guide/`` for ``guide/index.md``)."""
        if self.exists(path):
            return path
        base = path.removesuffix(".html").removesuffix(".htm")
        for form in _DOC_FORMS:
            if base + form in self.files:
                return base + form
        if base in self.dirs:
            return base
        for page in _FOLDER_PAGES:
            if posixpath.join(base, page) in self.files:
                return posixpath.join(base, page)
        return None

    def _any_extension(self, stem: str) -> bool:
        """Some file is ``stem.<extension>``: what a Sphinx image ``stem.*`` stands for."""
        folder, _, last = stem.rpartition("/")
        prefix = (folder + "/" if folder else "") + last + "."
        return any(f.startswith(prefix) and "/" not in f[len(prefix) :] for f in self.files)


def _normal(path: str) -> str | None:
    """A repository path with ``.``/``..`` folded, or None when it leaves the repository."""
    normal = posixpath.normpath(path) if path else "."
    if normal.startswith("..") or normal.startswith("/"):
        return None
    return "" if normal == "." else normal.rstrip("/")


def _site_roots(doc: str) -> list[str]:
    """The folders a root-relative link in ``doc`` may be served from, nearest first: each folder
    above the doc (the root of a docs site it is published in) and its ``public/``/``static/``."""
    folders = doc.split("/")[:-1]
    roots: list[str] = []
    for i in range(len(folders), -1, -1):
        here = "/".join(folders[:i])
        roots += ([here] if i else []) + [posixpath.join(here, s) for s in _SITE_FOLDERS]
    return roots


def _candidates(site: Site | None, doc: str, written: str) -> list[str]:
    """The repository paths a link may stand for in ``site`` (None: rendered by GitHub), in the
    order the site resolves them; the file-relative form is always one."""
    here = posixpath.dirname(doc)
    out: list[str | None] = []
    if written.startswith("@site/") and site is not None:
        out.append(_normal(posixpath.join(site.folder, written.removeprefix("@site/"))))
    elif written.startswith("/"):
        rest = written.lstrip("/")
        if site is not None:
            out += _rooted(site, rest)
        out.append(_normal(rest))  # GitHub: the repository's root
    else:
        relative = _normal(posixpath.join(here, written))
        if relative is None:
            return []  # it leaves the repository
        out.append(relative)
        if site is not None and site.kind == "sphinx":
            out += _sphinx_output(site, doc, written)
        else:  # a page served as a folder (``a/b.md`` at ``a/b/``): what raw HTML in it is relative to
            out.append(_normal(posixpath.join(doc.rpartition(".")[0] or doc, written)))
    seen: list[str] = []
    for candidate in out:
        if candidate is not None and candidate not in seen:
            seen.append(candidate)
    return seen


def _rooted(site: Site, rest: str) -> list[str | None]:
    """A root-relative link in a page of ``site``."""
    out: list[str | None] = []
    if site.kind == "docusaurus":
        route = site.route.strip("/")
        if route and (rest == route or rest.startswith(route + "/")):
            out.append(_normal(posixpath.join(site.source, rest[len(route) :].lstrip("/"))))
        elif not route:
            out.append(_normal(posixpath.join(site.source, rest)))
    else:  # MkDocs and Sphinx: the source folder is the site's root
        out.append(_normal(posixpath.join(site.source, rest)))
    out += _served(site, rest)
    return out


def _served(site: Site, rest: str) -> list[str | None]:
    """Where a path of the built site (relative to its root) is served from as it is."""
    out: list[str | None] = []
    for prefix, folder in site.served:
        if not prefix:
            out.append(_normal(posixpath.join(folder, rest)))
        elif rest == prefix or rest.startswith(prefix + "/"):
            out.append(_normal(posixpath.join(folder, rest[len(prefix) :].lstrip("/"))))
    return out


def _output_path(site: Site, doc: str, written: str) -> str | None:
    """Where a URL written in a Sphinx page lands in the built site (relative to its root): the
    page is built at its source path, so the URL is relative to that."""
    page = doc[len(site.source) + 1 :] if site.source else doc
    return _normal(posixpath.join(posixpath.dirname(page), written))


def _sphinx_output(site: Site, doc: str, written: str) -> list[str | None]:
    """A relative URL in a Sphinx page read as a path of the built site: a page built from the
    source folder, or a file served from ``html_extra_path``/``html_static_path``."""
    output = _output_path(site, doc, written)
    if output is None:
        return []
    return [_normal(posixpath.join(site.source, output)), *_served(site, output)]


def _generated(site: Site, doc: str, written: str) -> bool:
    """Whether a link names a page the site's generator writes itself."""
    if site.kind != "sphinx" or "://" in written:
        return False
    output = (
        _output_path(site, doc, written.lstrip("/"))
        if not written.startswith("/")
        else _normal(written.lstrip("/"))
    )
    if output is None:
        return False
    first = output.split("/", 1)[0]
    page = output.removesuffix(".html")
    return first in _SPHINX_GENERATED_FOLDERS or page in _SPHINX_GENERATED_PAGES


# ----------------------------------------------------------------------------- configs


def read_sites(configs: Iterable[str], texts: Mapping[str, str]) -> list[Site]:
    """The sites the configs at ``configs`` describe (their texts in ``texts``)."""
    out: list[Site] = []
    for config in sorted(configs):
        name = config.rpartition("/")[2].lower()
        text = texts.get(config, "")
        if name in _MKDOCS_NAMES:
            out.append(_mkdocs(config, text, texts))
        elif name in _DOCUSAURUS_NAMES:
            out.append(_docusaurus(config, text))
        else:
            out.append(_sphinx(config, text))
    return out


class _TolerantLoader(yaml.SafeLoader):  # type: ignore[misc]  # PyYAML ships no stubs
    """PyYAML's safe loader reading any tag it does not know (``!!python/name:x``, ``!ENV``) as None."""


def _unknown_tag(loader: yaml.SafeLoader, suffix: str, node: yaml.Node) -> None:
    return None


_TolerantLoader.add_multi_constructor("", _unknown_tag)


def _yaml(text: str) -> JsonObject:
    try:
        loaded = yaml.load(text, Loader=_TolerantLoader)  # noqa: S506  # a safe loader
    except yaml.YAMLError:
        return {}
    return loaded if isinstance(loaded, dict) else {}


def _mkdocs(config: str, text: str, texts: Mapping[str, str]) -> Site:
    folder = config.rpartition("/")[0]
    data = _yaml(text)
    inherit = data.get("INHERIT")
    if isinstance(inherit, str):  # the parent's settings, this file's on top
        parent = _normal(posixpath.join(folder, inherit))
        if parent is not None and parent in texts:
            data = _yaml(texts[parent]) | data
    docs_dir = data.get("docs_dir")
    source = _normal(posixpath.join(folder, docs_dir if isinstance(docs_dir, str) else "docs")) or ""
    pages = tuple(
        p for p in (_normal(posixpath.join(source, page)) for page in _nav_pages(data.get("nav"))) if p
    )
    return Site("mkdocs", config, source, pages=pages)


def _nav_pages(nav: object) -> list[str]:
    """The local pages a MkDocs ``nav`` names (nested sections, titled or not; URLs aside)."""
    if isinstance(nav, str):
        return [] if "://" in nav else [nav]
    if isinstance(nav, list):
        return [page for item in nav for page in _nav_pages(item)]
    if isinstance(nav, dict):
        return [page for value in nav.values() for page in _nav_pages(value)]
    return []


def _sphinx(config: str, text: str) -> Site:
    folder = config.rpartition("/")[0]
    values = _literal_assignments(text)
    served: list[tuple[str, str]] = []
    for extra in _strings(values.get("html_extra_path")):
        if (path := _normal(posixpath.join(folder, extra))) is not None:
            served.append(("", path))
    for static in _strings(values.get("html_static_path")):
        if (path := _normal(posixpath.join(folder, static))) is not None:
            served.append(("_static", path))
    extensions = _strings(values.get("extensions"))
    return Site(
        "sphinx",
        config,
        folder,
        served=tuple(served),
        autosectionlabel="sphinx.ext.autosectionlabel" in extensions,
        label_prefix=values.get("autosectionlabel_prefix_document") is True,
        intersphinx="sphinx.ext.intersphinx" in extensions,
        myst=any(e in ("myst_parser", "myst_nb") for e in extensions),
    )


def _literal_assignments(text: str) -> dict[str, object]:
    """``name = <literal>`` at the top of a Python file (``+=`` of a literal list extends it),
    read with :mod:`ast` and never run; anything else is left out."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return {}
    values: dict[str, object] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign):
            targets, value = [t for t in node.targets if isinstance(t, ast.Name)], node.value
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value:
            targets, value = [node.target], node.value
        elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
            try:
                more = ast.literal_eval(node.value)
            except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                continue
            before = values.get(node.target.id)
            if isinstance(before, list) and isinstance(more, list | tuple):
                values[node.target.id] = [*before, *more]
            continue
        else:
            continue
        try:
            literal = ast.literal_eval(value)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            continue
        for target in targets:
            values[target.id] = list(literal) if isinstance(literal, tuple) else literal
    return values


def _strings(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [v for v in value if isinstance(v, str)]
    return []


def _docusaurus(config: str, text: str) -> Site:
    """The docs plugin's ``path`` (default ``docs``) and ``routeBasePath`` (default ``docs``),
    read from the string literals of the ``docs: {…}`` options; ``static/`` is served at the root."""
    folder = config.rpartition("/")[0]
    options = _js_object(text, "docs") or ""
    path = _js_string(options, "path") or "docs"
    route = _js_string(options, "routeBasePath")
    source = _normal(posixpath.join(folder, path.removeprefix("./"))) or ""
    static = _normal(posixpath.join(folder, "static")) or "static"
    return Site(
        "docusaurus", config, source, route="docs" if route is None else route, served=(("", static),)
    )


def _skip_string(text: str, start: int) -> int:
    """The index after the string literal opening at ``start``."""
    quote, i = text[start], start + 1
    while i < len(text):
        if text[i] == "\\":
            i += 2
            continue
        if text[i] == quote:
            return i + 1
        i += 1
    return i


def _keys(text: str) -> Iterable[tuple[str, int]]:
    """``(key, index after its colon)`` of each ``key:`` outside strings and comments, with its depth
    in braces (only depth 0 keys are yielded)."""
    depth, i, n = 0, 0, len(text)
    while i < n:
        c = text[i]
        if c in "'\"`":
            i = _skip_string(text, i)
            continue
        if text.startswith("//", i):
            i = text.find("\n", i) if "\n" in text[i:] else n
            continue
        if text.startswith("/*", i):
            end = text.find("*/", i + 2)
            i = n if end < 0 else end + 2
            continue
        if c in "{[(":
            depth += 1
        elif c in "}])":
            depth -= 1
        elif c == ":" and depth == 0:
            j = i - 1
            while j >= 0 and text[j] in " \t":
                j -= 1
            k = j
            while k >= 0 and (text[k].isalnum() or text[k] in "_$'\""):
                k -= 1
            key = text[k + 1 : j + 1].strip("'\"")
            if key:
                yield key, i + 1
        i += 1


def _js_object(text: str, key: str) -> str | None:
    """The text inside the braces of the first ``key: {…}`` at any depth of a JavaScript config."""
    start = 0
    while True:
        found = text.find(key, start)
        if found < 0:
            return None
        start = found + len(key)
        before = text[found - 1] if found else " "
        rest = text[start:].lstrip(" \t'\"")
        if (before.isalnum() or before in "_$.") or not rest.startswith(":"):
            continue
        value = rest[1:].lstrip()
        if not value.startswith("{"):
            continue
        opened = len(text) - len(value)
        depth, i = 0, opened
        while i < len(text):
            c = text[i]
            if c in "'\"`":
                i = _skip_string(text, i)
                continue
            if c == "{":
                depth += 1
            elif c == "}":
                depth -= 1
                if depth == 0:
                    return text[opened + 1 : i]
            i += 1
        return None


def _js_string(obj: str, key: str) -> str | None:
    """The string literal value of ``key`` at the top level of an object's text."""
    for name, after in _keys(obj):
        if name != key:
            continue
        value = obj[after:].lstrip()
        if value[:1] in ("'", '"', "`"):
            end = _skip_string(value, 0)
            literal = value[1 : end - 1]
            return None if "${" in literal else literal
        return None
    return None
