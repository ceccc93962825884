"""The mechanical documentation check: what the docs claim that the code no longer has — proved.

No model is needed. The chunker recorded, per document, the identifiers and paths it names
(inline code, fenced code, link targets, Sphinx roles, paths in prose) and its ``Governs:`` lines
(``code_facts``). The check runs in two steps:

1. :func:`gather_claims` (in the read transaction) keeps the mentions the snapshot does not
   satisfy, after resolving the documentation's own reference forms: links where the docs site
   the doc is published in resolves them (:mod:`palimpsest.index.codefacts.sites`: MkDocs,
   Sphinx, Docusaurus, GitHub), ``:ref:`` labels and MyST cross-references against the labels the
   docs define, Sphinx/MkDocs document references written without their extension (or as
   ``.html``), paths relative to the example or package folder a doc is about (any path of the
   snapshot ending in the claim), URLs, placeholders, system and generated paths. Changelogs
   and release notes (:func:`palimpsest.index.codefacts.is_history_doc`) are history by design
   and give no claim; identifiers already defined or used in the snapshot's code are current.
2. :func:`judge` keeps a claim as a finding only when git history proves its subject existed
   in the repository's code and says where it stopped (:mod:`palimpsest.analyzer.history`):
   ``missing_path`` / ``unmatched_governs`` for a path that was deleted or moved,
   ``missing_identifier`` for a definition that was removed or renamed. A name that never
   existed in the code is not drift: it is an *unverified reference*, counted (and listed only
   when asked). Without history (no readable source) no drift finding is made at all.

Every doc (not a changelog) ends in one state (:data:`palimpsest.index.docstates.DocState`,
:attr:`Judged.doc_states`; the review context reads them back through
:func:`palimpsest.index.docstates.doc_states`):

* ``drift`` -- history proves at least one of its claims false;
* ``verified`` -- at least one of its checkable claims (an identifier, path or ``Governs:`` target
  of this repository) holds at head and none is proved false, whatever the doc's age (a name
  history shows was never in the code is not counted against it: it is not about this code);
* ``reference`` -- a page made only of generated-reference directives (``.. automodule::``,
  ``.. autoprogram::``, ``::: pkg.mod``; :func:`palimpsest.index.codefacts.pages.generated_reference`):
  generated from the code, it cannot drift and is never stale;
* ``unverified_old`` -- no claim of it holds, and it is older than the shared age rule
  (:mod:`palimpsest.index.staleness`): reported as ``stale_doc``, apart from proved drift;
* ``unverified`` -- no claim of it holds and it is not old, or it is a page that only points
  elsewhere (:func:`palimpsest.index.codefacts.pages.is_pointer_page`), which age says nothing of.

What is documentation at all is the shared classifier's answer (:func:`palimpsest.index.codefacts.is_doc`):
licences, fixtures, templates and archive placeholders are not, and give no finding.
"""

from __future__ import annotations

import posixpath
import re
import sys
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any, Literal
from urllib.parse import unquote

from palimpsest.analyzer import rules as R
from palimpsest.analyzer.history import Evidence, History, LineOrigin
from palimpsest.analyzer.rules import Rule
from palimpsest.analyzer.snapshot import SnapshotIndex
from palimpsest.core.db import Conn
from palimpsest.index import snapshots
from palimpsest.index.codefacts import is_doc, is_history_doc, is_output_path
from palimpsest.index.codefacts.classify import Kind, classify
from palimpsest.index.codefacts.dependencies import Dependencies, standard_module
from palimpsest.index.codefacts.examples import example_defines
from palimpsest.index.codefacts.mentions import bare_file_name, versioned_manual
from palimpsest.index.codefacts.owners import Owner, block_defines, name_owners, quoted_only
from palimpsest.index.codefacts.pages import generated_reference, is_pointer_page
from palimpsest.index.codefacts.sites import Sites, is_site_config
from palimpsest.index.docstates import DOC_STATES, DocState
from palimpsest.index.languages import KNOWN_EXTENSIONS
from palimpsest.index.staleness import is_stale, stale_annotation
from palimpsest.index.tokens import code_tokens

__all__ = [
    "MAX_FINDINGS",
    "Claim",
    "Claims",
    "DocFinding",
    "FindingKind",
    "explains",
    "foreign_away",
    "gather_claims",
    "generated_reference",
    "judge",
    "reopen_weak_uses",
    "settle_weak_uses",
    "used_in_docs",
    "used_names",
    "weak_support",
]

FindingKind = Literal[
    "missing_identifier",
    "missing_path",
    "unmatched_governs",
    "stale_doc",
    "unresolved_link",
    "versioned_manual",
]
MAX_FINDINGS = 500
MAX_UNVERIFIED = 200
_PLACEHOLDER = re.compile(r"[*?\[\]{}<>$%|]|\.\.\.|(?:^|/)(?:your\w*|path/to|foo|bar)(?:[./-]|$)", re.I)
_DOMAIN = re.compile(
    r"^[a-z0-9-]+(\.[a-z0-9-]+)*\.(com|org|net|io|dev|app|co|rs|me|sh|ai|gov|edu|info)$", re.I
)
_IMPORT = re.compile(
    r"^\s*(?:>>>\s*)?(?:from\s+([\w.]+)\s+import\b|import\s+([\w.]+)\s*$)"
    r"|\bimport\s[^'\"\n]*\bfrom\s+['\"]([@\w][@\w./-]*)['\"]|\brequire\(\s*['\"]([@\w][@\w./-]*)['\"]",
    re.MULTILINE,
)
_STANDARD_LIBRARIES = frozenset(sys.stdlib_module_names) | {
    "node:fs", "fs", "path", "http", "https", "url", "os", "util", "crypto", "stream", "events", "child_process",
}  # fmt: skip
_SHELLS = frozenset({"shell", "powershell", "batch", "fish"})
_MIME = re.compile(r"^(?:application|text|image|audio|video|multipart|font|model|message)/[\w.+-]+$")
_SEGMENTS = re.compile(r"\.|::|#|->")
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


@dataclass(frozen=True, slots=True)
class DocFinding:
    doc: str
    line: int
    kind: FindingKind
    claim: str
    nearest: str | None = None
    detail: str | None = None
    evidence: Evidence | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "doc": self.doc,
            "line": self.line,
            "claim": self.claim,
            "kind": self.kind,
            "nearest": self.nearest,
            "detail": self.detail,
            "evidence": self.evidence.as_dict() if self.evidence else None,
        }


@dataclass(frozen=True, slots=True)
class _Mention:
    doc: str
    line: int
    fact: str  # mention | governs | label
    name: str
    target: str | None  # identifier | path (mentions)
    source: str | None  # code | fence[:language] | link | docref | role | prose (mentions)


@dataclass(frozen=True, slots=True)
class Claim:
    """A mention the snapshot does not satisfy: what history is asked about."""

    mention: _Mention
    kind: FindingKind
    shown: str  # the claim as the report shows it
    lookups: tuple[str, ...]  # paths (resolved forms) or the identifier's name
    bare_call: bool = False  # identifiers in examples: called as a plain function on the line
    unimported: bool = False  # … and the doc never imports it
    # identifiers the snapshot's code still uses, but only in tests, fixtures or examples:
    # those files (:func:`reopen_weak_uses`), and once history is read, what the
    # finding says of them (:func:`settle_weak_uses`)
    support: tuple[str, ...] = ()
    support_note: str | None = None
    qualified: bool = False  # identifiers: qualified by this repository's own package or class
    quoted: bool = False  # identifiers in prose: the doc's examples only quote it (``get('do_timing')``)


@dataclass(slots=True)
class Claims:
    claims: list[Claim] = field(default_factory=list)
    stale: list[DocFinding] = field(default_factory=list)  # docs old by the age rule (candidates)
    symbols: set[str] = field(default_factory=set)  # the snapshot's definitions
    docs: set[str] = field(default_factory=set)  # every doc checked (not a changelog)
    holding: Counter[str] = field(default_factory=Counter)  # doc → checkable claims that hold at head
    reference: set[str] = field(default_factory=set)  # old docs made only of generated-reference directives
    used: list[_Mention] = field(default_factory=list)  # identifiers held because the code uses them
    rules: Counter[str] = field(default_factory=Counter)  # rule name → mentions it decided (resolve, prove)
    explain: str | None = None  # a claim to follow (``name``, ``doc:line``): its steps go to ``steps``
    steps: list[dict[str, Any]] = field(default_factory=list)

    def decided(self, mention: _Mention, rule: Rule) -> None:
        self.rules[rule.name] += 1
        if rule.verdict == "holds":
            self.holding[mention.doc] += 1
        self.step(mention, rule.stage, rule.name, rule.verdict, rule.doc)

    def step(self, mention: _Mention, stage: str, rule: str, verdict: str, why: str) -> None:
        """Record one step of the explained claim's path (nothing when no claim is explained)."""
        if self.explain is not None and explains(self.explain, mention):
            # proof judges twice (before and after dating the lines): the later step replaces the earlier
            key = (mention.doc, mention.line, mention.name, stage)
            self.steps = [s for s in self.steps if (s["doc"], s["line"], s["name"], s["stage"]) != key]
            self.steps.append(
                {
                    "doc": mention.doc,
                    "line": mention.line,
                    "name": mention.name,
                    "form": mention.source or mention.fact,
                    "stage": stage,
                    "rule": rule,
                    "verdict": verdict,
                    "why": why,
                }
            )

    @property
    def identifiers(self) -> set[str]:
        return {c.lookups[0] for c in self.claims if c.kind == "missing_identifier"}

    @property
    def lines(self) -> set[tuple[str, int]]:
        return {(c.mention.doc, c.mention.line) for c in self.claims}


def explains(wanted: str, mention: _Mention) -> bool:
    """Whether ``wanted`` (a name as the doc wrote it, with or without backticks, or ``doc:line``)
    is ``mention``."""
    wanted = wanted.strip().strip("`").removesuffix("()")
    return wanted in (mention.name, _last(mention.name), f"{mention.doc}:{mention.line}")


@dataclass(slots=True)
class Judged:
    findings: list[DocFinding]
    unverified: list[dict[str, Any]]  # claims whose subject never existed in the code (by history)
    unverified_count: int
    doc_states: dict[str, DocState] = field(default_factory=dict)
    rules: dict[str, int] = field(default_factory=dict)  # rule name → mentions it decided, every stage
    # links and images whose target is not in the tree and that history never had: not drift,
    # kept off the findings and shown apart (``facts.doc_check.unresolved_links``)
    unresolved_links: list[DocFinding] = field(default_factory=list)
    unresolved_count: int = 0

    def state_counts(self) -> dict[str, int]:
        counts = Counter(self.doc_states.values())
        return {state: counts.get(state, 0) for state in DOC_STATES}


# ----------------------------------------------------------------------------- step 1: claims


async def gather_claims(conn: Conn, index: SnapshotIndex, *, explain: str | None = None) -> Claims:
    """The doc mentions the snapshot does not satisfy, and the stale docs (read transaction);
    with ``explain``, the steps that claim's mentions took (:attr:`Claims.steps`)."""
    configs, _ = await _doc_texts(conn, index, {f.path for f in index.files if is_site_config(f.path)})
    tree = _Tree.of((f.path for f in index.files), configs)
    mentions = await _doc_mentions(conn, index)
    symbols = await _symbol_names(conn, index)
    languages = {f.language for f in index.files if f.language and f.kind == "code"}
    out = Claims(stale=_stale_docs(index), symbols=symbols, docs=_checked_docs(index), explain=explain)
    labels = await _labels(conn, index, mentions, tree)
    identifiers = _tree_claims(mentions, tree, languages, out, labels)
    present = await _present_lexemes(conn, index, identifiers)
    folded = {m for m in identifiers if any(lex in present for lex in _lexemes(m.name))}
    exact = await _present_names(conn, index, folded)
    missing = [m for m in identifiers if m not in folded or _last(m.name) not in exact]
    for mention in identifiers:
        if mention in folded and _last(mention.name) in exact:
            out.decided(mention, R.IDENTIFIER_USED)
            out.used.append(mention)
    old = {f.doc for f in out.stale if not out.holding[f.doc]}
    old_texts, _ = await _doc_texts(conn, index, old)
    out.reference = {doc for doc, text in old_texts.items() if generated_reference(text)}
    # a page that only points elsewhere makes no claim age could make stale (codefacts.pages)
    out.stale = [f for f in out.stale if not is_pointer_page(old_texts.get(f.doc, ""))]
    texts, lines = await _doc_texts(conn, index, {m.doc for m in missing})
    for mention in missing:
        text, line = texts.get(mention.doc, ""), lines.get((mention.doc, mention.line), "")
        claim = _identifier_claim(mention, text, line, tree, out)
        if claim is not None:
            out.step(
                mention, "resolve", "claim", "claim", "Neither defined nor used at head: history is asked."
            )
            out.claims.append(claim)
    return out


def _identifier_claim(mention: _Mention, text: str, line: str, tree: _Tree, out: Claims) -> Claim | None:
    """The claim an identifier the code does not define makes, or None when a rule says the doc
    names something else (recorded in ``out``)."""
    elsewhere = (
        _about_something_else(mention, text, tree, out.symbols)
        or (R.IDENTIFIER_FOREIGN_ATTRIBUTE if _foreign_attribute(mention, line, text, tree) else None)
        or (R.IDENTIFIER_FOREIGN_OUTPUT if _foreign_output(mention, line, tree) else None)
    )
    if elsewhere is not None:
        out.decided(mention, elsewhere)
        return None
    return Claim(
        mention,
        "missing_identifier",
        f"`{mention.name}`",
        (_last(mention.name),),
        bare_call=(bare := _called_bare(mention, line)),
        unimported=bare and not _imports(text, _last(mention.name)),
        # past :func:`_identifier_rule`, a qualifier is this repository's (a defined name or a stem)
        qualified=len([s for s in _SEGMENTS.split(mention.name) if s]) >= 2,
    )


def weak_support(path: str) -> bool:
    """Whether a use of a name in ``path`` is weak support, by the shared classifier: a test or
    fixture (kind ``test``) or an example (kind ``example``) may itself be out of date. Any other
    use (the code, its tooling, a build script, configuration) is support."""
    return classify(path).kind in (Kind.TEST, Kind.EXAMPLE)


def reopen_weak_uses(
    claims: Claims, support: dict[str, tuple[str, ...]], texts: dict[str, str], paths: Iterable[str]
) -> Claims:
    """Ask history again about the identifiers held only because the code uses them, when every
    use is in a test, fixture or example (``support``: name → those files; ``texts``:
    the docs' texts at the snapshot). Such a use may be as stale as the doc: whether it counts is
    decided once history is read (:func:`settle_weak_uses`)."""
    reopened = [m for m in claims.used if support.get(_last(m.name))]
    if not reopened:
        return claims
    tree = _Tree.of(paths)
    for mention in reopened:
        claims.rules[R.IDENTIFIER_USED.name] -= 1
        claims.holding[mention.doc] -= 1
        lines = texts.get(mention.doc, "").split("\n")
        line = lines[mention.line - 1] if 0 < mention.line <= len(lines) else ""
        claim = _identifier_claim(mention, texts.get(mention.doc, ""), line, tree, claims)
        if claim is not None:
            files = support[_last(mention.name)]
            claims.step(
                mention,
                "prove",
                "claim",
                "claim",
                f"Used at head only in {_listed(files)}: history is asked.",
            )
            claims.claims.append(replace(claim, support=files))
    gone = set(reopened)
    claims.used = [m for m in claims.used if m not in gone]
    return claims


def foreign_away(
    claims: Claims, dependencies: Dependencies, texts: dict[str, str], paths: Iterable[str]
) -> Claims:
    """Drop the identifier claims whose name the doc's own code ties to a module that is not this
    repository's (:func:`palimpsest.index.codefacts.owners.name_owners`): the standard library's
    (``&http.Server{ReadTimeout: …}``), a package the manifests declare (``transport: { target:
    'pino-pretty', options: { translateTime: … } }``) or another module the example imports or
    names (``config.include(pyramid_handlers)`` then ``config.add_handler``); and a prose mention
    of a name an example of the doc defines at its top level, block by block
    (:func:`palimpsest.index.codefacts.owners.block_defines`: ``class Blog`` in one block is the
    example's own though another imports it). ``texts``: the docs'
    texts at the snapshot; ``paths``: its tree. A prose mention of a name the doc's examples only
    quote as a key is marked (:attr:`Claim.quoted`): history decides whether the code only read it."""
    tree = _Tree.of(paths)
    known = dependencies.declares  # a string value names a module only when a manifest declares it
    kept: list[Claim] = []
    for claim in claims.claims:
        mention = claim.mention
        text = texts.get(mention.doc, "")
        if claim.kind != "missing_identifier" or not text:
            kept.append(claim)
            continue
        last = _last(mention.name)
        owners = name_owners(text, last, mention.line, mention.doc, known, mention.name)
        whose = [_whose(o, dependencies, tree) for o in owners]
        if whose and all(w is not None for w in whose):
            rule = next(
                r
                for r in (R.IDENTIFIER_STANDARD_LIBRARY, R.IDENTIFIER_DEPENDENCY, R.IDENTIFIER_OTHER_MODULE)
                if r in whose
            )
            claims.decided(mention, rule)
            continue
        prose = not (mention.source or "").startswith("fence")
        if prose and block_defines(text, last, mention.doc):
            claims.decided(
                mention, R.IDENTIFIER_OWN_EXAMPLE
            )  # ``class Blog`` in one block, imported in another
            continue
        kept.append(replace(claim, quoted=True) if prose and quoted_only(text, last, mention.doc) else claim)
    claims.claims = kept
    return claims


def _whose(owner: Owner, dependencies: Dependencies, tree: _Tree) -> Rule | None:
    """Whose module ``owner`` names, as a rule: the standard library's, a declared dependency's,
    another module's; None when it is this repository's or may be (a relative import, a name the
    manifests publish, a module of the tree), or a plain string value naming nothing known."""
    module = owner.module
    if not module or module.startswith((".", "/")) or dependencies.owns(module):
        return None
    if owner.how == "package" and (tree.package(module) or tree.has_stem(module)):
        return None  # a Go package name of this repository's own (``middleware.StaticConfig{…}``)
    if standard_module(module, owner.language):
        return R.IDENTIFIER_STANDARD_LIBRARY
    if dependencies.declares(module):
        return R.IDENTIFIER_DEPENDENCY
    if owner.how == "value":
        return None
    root = re.split(r"[./]|::", module.lstrip("@"))[0]
    if tree.module(module.replace("/", ".")) or tree.package(root) or tree.has_stem(root):
        return None
    return R.IDENTIFIER_OTHER_MODULE


def used_names(claims: Claims) -> set[str]:
    """The names (last segments) of the identifiers held because the snapshot's code uses them."""
    return {_last(m.name) for m in claims.used}


def used_in_docs(claims: Claims, names: set[str]) -> set[str]:
    """The docs naming any of ``names`` among the identifiers held because the code uses them."""
    return {m.doc for m in claims.used if _last(m.name) in names}


def settle_weak_uses(claims: Claims, history: History) -> Claims:
    """Decide the identifiers used at head only in tests, fixtures or examples: a use
    counts as support unless its file is itself out of date, naming another identifier history
    proves removed; when every such file is, the claim stays, and its finding says where the name
    is still used. Only a definition history shows removed from the repository's own code (not
    from a test or example, not a key it read) counts as removed here: a name an example once defined
    and its siblings still use is the examples' own (a tutorial's ``template_path``). Any other
    name is held by its use, as before."""
    weak = [c for c in claims.claims if c.support]
    if not weak:
        return claims
    removed: set[str] = set()
    for c in claims.claims:
        found = history.identifier(c.lookups[0]) if c.kind == "missing_identifier" else None
        if found is not None and found.how != "read" and found.seen_in and not weak_support(found.seen_in):
            removed.add(c.lookups[0])
    names: dict[str, set[str]] = defaultdict(set)  # file → removed names it still uses
    for c in weak:
        if c.lookups[0] in removed:
            for path in c.support:
                names[path].add(c.lookups[0])
    kept: list[Claim] = []
    for c in claims.claims:
        name = c.lookups[0]
        if not c.support:
            kept.append(c)
        elif name not in removed:
            claims.decided(c.mention, R.IDENTIFIER_USED)
            claims.used.append(c.mention)
        elif all(names[path] - {name} for path in c.support):
            others = sorted({o for path in c.support for o in names[path]} - {name})
            note = f"still used only in {_listed(c.support)}, itself out of date (it names removed " + (
                ", ".join(f"`{o}`" for o in others[:3]) + (" …" if len(others) > 3 else "") + ")"
            )
            kept.append(replace(c, support_note=note))
        else:
            claims.decided(c.mention, R.IDENTIFIER_USED_CURRENT)
            claims.used.append(c.mention)
    claims.claims = kept
    return claims


def _listed(paths: tuple[str, ...]) -> str:
    shown = ", ".join(f"`{p}`" for p in paths[:3])
    return shown + (f" and {len(paths) - 3} more" if len(paths) > 3 else "")


def _tree_claims(
    mentions: list[_Mention],
    tree: _Tree,
    languages: set[str],
    out: Claims,
    labels: frozenset[str] = frozenset(),
) -> list[_Mention]:
    """Add the path, label and ``Governs:`` claims to ``out`` and count the claims that hold; return
    the identifiers still to look up in the snapshot's code."""
    identifiers: list[_Mention] = []
    for mention in (_myst_reference(m, tree, labels) for m in mentions):
        found: Claim | Rule | None
        if mention.fact == "governs":
            found = _governs_claim(mention, tree)
        elif mention.target == "label":
            found = _label_claim(mention, tree, labels)
        elif mention.target == "path":
            found = _path_claim(mention, tree)
        elif mention.target == "identifier":
            found = _identifier_rule(mention, out.symbols, languages, tree)
            if found is None:
                identifiers.append(mention)
                continue
        else:
            continue
        if isinstance(found, Claim):
            out.claims.append(found)
            out.step(mention, "resolve", "claim", "claim", "Not satisfied at head: history is asked.")
        elif found is not None:
            out.decided(mention, found)
    return identifiers


_SPHINX_LABELS = frozenset({"genindex", "modindex", "py-modindex", "search"})
"""The labels Sphinx's standard domain defines itself."""


async def _labels(conn: Conn, index: SnapshotIndex, mentions: list[_Mention], tree: _Tree) -> frozenset[str]:
    """The ``:ref:`` labels the repository's docs define: their targets (``.. _x:``, ``(x)=``), and
    in a Sphinx site with autosectionlabel, every section title (prefixed by its document when
    ``autosectionlabel_prefix_document`` is set)."""
    labels = {m.name for m in mentions if m.fact == "label"}
    sections = {
        f.path: site
        for f in index.files
        if f.kind == "doc" and (site := tree.resolver.site_of(f.path)) is not None and site.autosectionlabel
    }
    if not sections or not any(m.target == "label" for m in mentions):
        return frozenset(labels)
    blobs: dict[str, list[str]] = defaultdict(list)
    for f in index.files:
        if f.path in sections:
            blobs[f.blob_sha].append(f.path)
    for section in await snapshots.section_names(conn, index.repository_id, list(blobs)):
        for path in blobs[section.blob_sha]:
            labels.add(sections[path].section_label(path, section.name))
    return frozenset(labels)


def _myst_reference(mention: _Mention, tree: _Tree, labels: frozenset[str]) -> _Mention:
    """What a link is: a Markdown link in a page of a Sphinx site read with MyST whose target is
    no file is a cross-reference MyST resolves, to a label the docs define (``[machinery](filtering)``
    after ``(filtering)=``: a label mention) or to a Python object
    (``[x](structlog.processors.TimeStamper)``: an identifier, checked as a role names it); any
    other mention is what it was."""
    if mention.source != "link" or not mention.doc.endswith(".md"):
        return mention
    site = tree.resolver.site_of(mention.doc)
    written = mention.name.strip()
    name = written.split("#", 1)[0] or written.removeprefix("#")
    if site is None or not site.myst or not name:
        return mention
    if tree.resolver.resolve(mention.doc, written).holds:
        return mention
    label = " ".join(name.lower().split())
    if label in labels or label in _SPHINX_LABELS:  # a label may hold a slash: (md/security)=
        return replace(mention, name=label, target="label", source="ref")
    if "/" in name:
        return mention  # a path
    segments = name.split(".")
    dotted = len(segments) > 1 and all(s.isidentifier() for s in segments)
    if dotted and f".{segments[-1].lower()}" not in KNOWN_EXTENSIONS and classify(name).kind == Kind.CODE:
        return replace(mention, target="identifier", source="role")
    return mention


def _label_claim(mention: _Mention, tree: _Tree, labels: frozenset[str]) -> Claim | Rule:
    """A ``:ref:`` cross-reference: it holds when the docs define the label; else it is another
    project's (a Sphinx site with intersphinx) or an unresolved link, never drift (a label is no code)."""
    if mention.name in labels or mention.name in _SPHINX_LABELS:
        return R.LABEL_EXISTS
    site = tree.resolver.site_of(mention.doc)
    if site is not None and site.intersphinx:
        return R.LABEL_EXTERNAL
    return Claim(mention, "unresolved_link", f"`:ref:{mention.name}`", (mention.name,))


def _checked_docs(index: SnapshotIndex) -> set[str]:
    return {
        f.path
        for f in index.files
        if f.kind == "doc" and is_doc(f.path) and f.skip_reason is None and not is_history_doc(f.path)
    }


def _about_something_else(mention: _Mention, text: str, tree: _Tree, symbols: set[str]) -> Rule | None:
    """A name the doc's own example defines (``app = Flask(...)``, ``def show(...)``), or an
    unqualified name in a doc whose examples import only other packages (a page about
    ``sphinxcontrib.websupport`` kept in Sphinx's docs): not a claim about this repository."""
    if not text:
        return None
    last = _last(mention.name)
    if example_defines(text, last, symbols):
        return R.IDENTIFIER_OWN_EXAMPLE
    for imported in re.finditer(
        rf"^[ \t>.]*from[ \t]+([\w.]+)[ \t]+import[ \t][^\n]*\b{re.escape(last)}\b", text, re.M
    ):
        module = imported.group(1)
        root = module.split(".")[0]
        if root not in _STANDARD_LIBRARIES and not tree.module(module) and not tree.package(root):
            return R.IDENTIFIER_READERS_IMPORT  # ``from myapp.tasks import MyPeriodicTask``
    if _SEGMENTS.search(mention.name):
        return None  # qualified: its root was already checked against the repository
    written = {next((g for g in m.groups() if g), "") for m in _IMPORT.finditer(text)}
    roots = {r.split(".")[0].split("/")[0].lstrip("@") for r in written} - {""}
    roots -= _STANDARD_LIBRARIES  # ``import os`` says nothing about which package a page is about
    return R.IDENTIFIER_OTHER_PACKAGE if roots and not any(tree.has_stem(r) for r in roots) else None


async def _doc_texts(
    conn: Conn, index: SnapshotIndex, docs: set[str]
) -> tuple[dict[str, str], dict[tuple[str, int], str]]:
    """The text of each doc in ``docs`` and each of its lines (from its stored section chunks,
    which hold the doc's lines as written). The text is rebuilt line by line: a long section is
    cut into chunks that overlap, and joined as they are its overlap would repeat a fence's
    opening line and pair every later fence wrongly."""
    blobs = {f.blob_sha: f.path for f in index.files if f.path in docs}
    if not blobs:
        return {}, {}
    numbered: dict[str, dict[int, str]] = defaultdict(dict)
    for chunk in await snapshots.blob_chunks(conn, index.repository_id, list(blobs)):
        doc = blobs[chunk.blob_sha]
        for offset, line in enumerate(chunk.content.split("\n")):
            numbered[doc][chunk.start_line + offset] = line
    texts = {doc: "\n".join(got.get(n, "") for n in range(1, max(got) + 1)) for doc, got in numbered.items()}
    return texts, {(doc, n): line for doc, got in numbered.items() for n, line in got.items()}


def _imports(text: str, name: str) -> bool:
    """Whether the doc imports ``name`` (``from x import name``, ``import name``, ``import x as name``)."""
    n = re.escape(name)
    pattern = (
        rf"\bimport\b[^\n]*(?<![\w$.]){n}(?![\w$])|^[ \t>.]*from[ \t]+[\w.]+[ \t]+import[ \t]*\([^)]*\b{n}\b"
    )
    return re.search(pattern, text, re.M) is not None


def _python_fence(source: str | None) -> bool:
    return source in ("fence:python", "fence:literal")


def _called_bare(mention: _Mention, line: str) -> bool:
    """An example calls the name as a plain function (``do_work()``), never as an attribute."""
    if not (mention.source or "").startswith("fence") or not line:
        return False
    name = re.escape(mention.name)
    return bool(re.search(rf"(?<![\w$.]){name}\s*\(", line)) and not re.search(rf"\.{name}(?![\w$])", line)


def _foreign_attribute(mention: _Mention, line: str, text: str, tree: _Tree) -> bool:
    """A name an example reaches only through an object the doc never made and the repository
    does not name (``redis.from_url(...)`` in an aiohttp example): another library's attribute,
    whatever this repository once defined under that name."""
    if not (mention.source or "").startswith("fence") or not line:
        return False
    chains = [
        m.group(1)
        for m in re.finditer(rf"(?<![\w$.])((?:[\w$]+\.)*){re.escape(mention.name)}(?![\w$])", line)
    ]
    if not chains or any(not chain for chain in chains):
        return False  # named bare (or after a call) somewhere on the line
    roots = {chain.split(".", 1)[0] for chain in chains}  # ``response.www_authenticate.set_basic``
    return all(not tree.has_stem(r) and not _bound(r, text) for r in roots)


def _foreign_output(mention: _Mention, line: str, tree: _Tree) -> bool:
    """A name in a console, log or trace block on a line that names no module or file of this
    repository: another program's output (a log record or traceback frame of the repository's own
    code names its module, ``pkg._pool - acquire_connection``, or its file)."""
    if mention.source != "output":
        return False
    for dotted in re.finditer(r"(?<![\w./-])([A-Za-z_]\w*)(?:\.[A-Za-z_]\w*)+", line):
        if tree.module(dotted.group(0)) or (tree.has_stem(dotted.group(1)) and not is_doc(dotted.group(0))):
            return False
    for path in re.finditer(r"[\w.-]+(?:/[\w.-]+)+", line):
        parts = path.group(0).split("/")
        if any(tree.exists("/".join(parts[i:])) for i in range(len(parts) - 1)):
            return False
    return True


def _bound(name: str, text: str) -> bool:
    """Whether the doc makes ``name`` itself: assigns, imports, loops over or takes it as a parameter."""
    n = re.escape(name)
    return (
        re.search(
            rf"(?<![\w$.]){n}\s*(?::[^=\n]*)?=(?!=)|\b(?:as|import|for|let|const|var|val|def|class)\s+{n}\b"
            rf"|[(,]\s*{n}\s*[,:)=]"
            rf"|\b{n}\s*:=",
            text,
        )
        is not None
    )


def _checked_identifier(mention: _Mention, symbols: set[str], languages: set[str], tree: _Tree) -> bool:
    """An identifier worth asking history about (:func:`_identifier_rule` sets none aside)."""
    return _identifier_rule(mention, symbols, languages, tree) is None


def _identifier_rule(mention: _Mention, symbols: set[str], languages: set[str], tree: _Tree) -> Rule | None:
    """The rule that decides an identifier mention without history, or None: it is worth asking
    history about (long enough, not defined now, qualified by something of this repository, and
    from fenced code only when the fence is in one of the repository's own languages)."""
    last = _last(mention.name)
    if len(last) < 3:
        return R.IDENTIFIER_SHORT
    if last in symbols or mention.name in symbols:
        return R.IDENTIFIER_DEFINED
    root = next((s for s in _SEGMENTS.split(mention.name) if s), last)
    if root != last and root not in symbols and not tree.has_stem(root):
        return R.IDENTIFIER_FOREIGN_ROOT
    source = mention.source or ""
    if source.startswith("fence"):
        language = source.partition(":")[2]
        if language == "literal":  # an RST literal block: Sphinx highlights it as Python by default
            language = "python"
        if language in _SHELLS:
            return R.IDENTIFIER_SHELL
        if not language or language not in languages:
            return R.IDENTIFIER_FOREIGN_FENCE
    return None


def _last(name: str) -> str:
    return ([s for s in _SEGMENTS.split(name) if s] or [name])[-1]


# ----------------------------------------------------------------------------- step 2: proof


def judge(
    claims: Claims,
    history: History | None,
    *,
    lines: dict[tuple[str, int], LineOrigin] | None = None,
    copied: dict[tuple[str, int], str] | None = None,
    list_unverified: bool = False,
) -> Judged:
    """Findings: the claims history proves (with their evidence), and the docs left unverified and
    old (``stale_doc``); with the state of every doc. ``copied``: doc lines written after their
    subject was gone that a doc of the repository held word for word while it existed (that doc)."""
    findings: list[DocFinding] = []
    unresolved: list[DocFinding] = []
    unverified: list[dict[str, Any]] = []
    judged_by: list[Rule] = []
    count = 0
    for claim in claims.claims:
        outcome = _judge_one(claim, history, claims.symbols, lines or {}, copied or {})
        if isinstance(outcome, DocFinding) and outcome.kind == "unresolved_link":
            # never proved to have existed: listed apart, off the findings, the doc not drift
            unresolved.append(outcome)
            rule = R.LINK_UNRESOLVED
            claims.step(claim.mention, rule.stage, rule.name, rule.verdict, outcome.detail or rule.doc)
            continue
        if isinstance(outcome, DocFinding):
            findings.append(outcome)
            claims.step(claim.mention, "judge", R.FINDING.name, "finding", outcome.detail or R.FINDING.doc)
            continue
        claims.step(claim.mention, outcome.stage, outcome.name, outcome.verdict, outcome.doc)
        judged_by.append(outcome)
        count += 1
        if list_unverified and len(unverified) < MAX_UNVERIFIED:
            unverified.append(_unverified(claim, outcome))
    states = _doc_states(claims, {f.doc for f in findings})
    decided = (
        claims.rules
        + Counter(r.name for r in judged_by)
        + Counter({R.FINDING.name: len(findings), R.LINK_UNRESOLVED.name: len(unresolved)})
    )
    findings += [f for f in claims.stale if states.get(f.doc) == "unverified_old"]
    findings, folded = _fold_manuals(findings, claims.docs | {f.doc for f in claims.stale})
    if folded:
        decided[R.MANUAL_OLDER_RELEASE.name] = folded
    findings.sort(key=lambda f: (f.doc, f.line, f.kind, f.claim))
    unresolved.sort(key=lambda f: (f.doc, f.line, f.claim))
    return Judged(
        findings[:MAX_FINDINGS],
        unverified,
        count,
        states,
        dict(sorted(decided.items())),
        unresolved_links=unresolved[:MAX_UNVERIFIED],
        unresolved_count=len(unresolved),
    )


def _fold_manuals(findings: list[DocFinding], docs: set[str]) -> tuple[list[DocFinding], int]:
    """The findings with those on manuals for an older release (:func:`versioned_manual`) folded
    into one ``versioned_manual`` finding per manual; and how many were folded."""
    manuals: dict[str, tuple[str, list[DocFinding]]] = {}
    kept: list[DocFinding] = []
    for f in findings:
        manual = versioned_manual(f.doc, docs)
        if manual is None:
            kept.append(f)
        else:
            manuals.setdefault(manual[0], (manual[1], []))[1].append(f)
    for root, (newer, folded) in sorted(manuals.items()):
        claims = sum(1 for f in folded if f.kind != "stale_doc")
        old = len({f.doc for f in folded if f.kind == "stale_doc"})
        detail = f"{claims} claim(s) no longer hold at head" + (
            f"; {old} page(s) unverified and old" if old else ""
        )
        kept.append(
            DocFinding(
                root,
                1,
                "versioned_manual",
                f"manual for an older release ({root}/, newer: {newer}/)",
                None,
                detail,
            )
        )
    kept.sort(key=lambda f: (f.doc, f.line, f.kind, f.claim))
    return kept, sum(len(folded) for _, folded in manuals.values())


def _doc_states(claims: Claims, drifted: set[str]) -> dict[str, DocState]:
    old = {f.doc for f in claims.stale}
    states: dict[str, DocState] = {}
    for doc in sorted(claims.docs | old):
        if doc in drifted:
            states[doc] = "drift"
        elif claims.holding[doc]:
            states[doc] = "verified"
        elif doc in claims.reference:
            states[doc] = "reference"
        elif doc in old:
            states[doc] = "unverified_old"
        else:
            states[doc] = "unverified"
    return states


def _judge_one(
    claim: Claim,
    history: History | None,
    symbols: set[str],
    lines: dict[tuple[str, int], LineOrigin],
    copied: dict[tuple[str, int], str],
) -> DocFinding | Rule:
    """The finding a claim makes, or the rule by which it makes none."""
    if claim.kind == "unresolved_link":  # a label: history says nothing of it
        return _unresolved_link(claim, "no doc of the repository defines it")
    link = claim.mention.source == "link"
    if history is None:
        return _unresolved_link(claim, "history unavailable") if link else R.HISTORY_UNAVAILABLE
    proved = _prove(claim, history)
    if proved is None:
        return _unresolved_link(claim, "never in the repository's history") if link else R.HISTORY_NEVER
    read_as, evidence = proved
    if claim.kind == "missing_identifier" and evidence.renamed_to not in symbols:
        evidence = replace(evidence, renamed_to=None)  # what it became must exist now
    evidence = evidence.with_line(lines.get((claim.mention.doc, claim.mention.line)))
    origin = copied.get((claim.mention.doc, claim.mention.line))
    refused = _not_about_the_code(claim, evidence, copied_from=origin)
    if refused is not None:
        return refused
    return _finding(claim, read_as, replace(evidence, subject=read_as), copied_from=origin)


def _unresolved_link(claim: Claim, why: str) -> DocFinding:
    """A link or image whose target is not in the tree and that history does not show existed:
    not drift (nothing proves the repository ever had it), listed apart from the findings."""
    mention = claim.mention
    subject = f"label `{claim.lookups[0]}`" if mention.target == "label" else claim.lookups[0]
    detail = f"{subject} is not in the tree ({why})"
    return DocFinding(mention.doc, mention.line, "unresolved_link", claim.shown, None, detail)


def _not_about_the_code(claim: Claim, evidence: Evidence, *, copied_from: str | None = None) -> Rule | None:
    """Why a proved identifier still does not make a finding, or None.

    A name written after its definition was gone names something else (another library's API,
    the doc's own example) -- unless the doc qualifies it by this repository's own package or
    class (``structlog.twisted.LogAdapter``), or the line was copied in or restored word for word
    from the repository's docs of the time it existed (``copied_from``): still wrong today.
    An example program can only use a package's public API, so a name
    from fenced code whose definition was private (unexported in Go, ``_private`` in Python)
    is the example's own name that happened to exist in the code once.
    """
    if claim.kind != "missing_identifier":
        return None
    if evidence.written_while_existed is False and not claim.qualified and copied_from is None:
        return R.JUDGE_WRITTEN_AFTER
    if evidence.how == "read" and ((claim.mention.source or "").startswith("fence") or claim.quoted):
        return R.JUDGE_QUOTED_NAME
    if evidence.how == "member" and claim.bare_call:
        return R.JUDGE_METHOD_CALLED_BARE
    if claim.bare_call and claim.unimported and _python_fence(claim.mention.source):
        # ``return do_work()`` in a Python example that never imports ``do_work``: a placeholder
        # for the reader's code (a function of this repository would have to be imported)
        return R.JUDGE_UNIMPORTED_CALL
    if evidence.how == "read" and evidence.reader_deleted:
        # an installer script moved to a repository of its own still reads POETRY_VERSION: a
        # setting only a deleted file read may well live on elsewhere (a definition is named
        # by this repository's own API; a quoted setting name is not)
        return R.JUDGE_DELETED_READER
    name = claim.lookups[0]
    if (claim.mention.source or "").startswith("fence") and evidence.seen_in:
        private = (evidence.seen_in.endswith(".go") and name[:1].islower()) or (
            evidence.seen_in.endswith(".py") and name.startswith("_")
        )
        if private:
            return R.JUDGE_PRIVATE_IN_EXAMPLE
    return None


def _unverified(claim: Claim, rule: Rule) -> dict[str, Any]:
    return {
        "doc": claim.mention.doc,
        "line": claim.mention.line,
        "claim": claim.shown,
        "rule": rule.name,
        "why": rule.doc,
    }


def _prove(claim: Claim, history: History) -> tuple[str, Evidence] | None:
    if claim.kind == "missing_identifier":
        found = history.identifier(claim.lookups[0])
        return (claim.lookups[0], found) if found is not None else None
    for path in claim.lookups:
        found = history.path(path)
        if found is not None:
            return path, found
    # A path written relative to the folder a doc is about resolves by suffix (``_path_claim``),
    # but a removed path that merely ends like it proves nothing: the doc may describe the
    # reader's own project (``app/routers/items.py``) while an example of the repository moved.
    return None


def _finding(claim: Claim, read_as: str, evidence: Evidence, *, copied_from: str | None = None) -> DocFinding:
    mention = claim.mention
    if claim.kind == "missing_identifier":
        verb = "read as a key in" if evidence.how == "read" else "defined in"
        detail = f"{verb} {evidence.seen_in} until {evidence.removed_in_commit[:12]}"
    else:
        detail = f"{read_as} existed until {evidence.removed_in_commit[:12]}"
    if evidence.renamed_to:
        detail += f", which made it {evidence.renamed_to}"
    if claim.support_note:
        detail += f"; {claim.support_note}"
    written = evidence.written_while_existed
    if written is not None:
        detail += (
            "; the line was written while it existed"
            if written
            else "; the line was written after it was gone"
        )
        if not written and copied_from is not None:
            detail += f", copied in or restored: `{copied_from}` named it while it existed"
    return DocFinding(
        mention.doc, mention.line, claim.kind, claim.shown, evidence.renamed_to, detail, evidence
    )


# ----------------------------------------------------------------------------- reading the index


async def _doc_mentions(conn: Conn, index: SnapshotIndex) -> list[_Mention]:
    docs: dict[str, list[str]] = defaultdict(list)
    for f in index.files:
        if f.kind == "doc" and is_doc(f.path) and f.skip_reason is None and not is_history_doc(f.path):
            docs[f.blob_sha].append(f.path)
    if not docs:
        return []
    out: list[_Mention] = []
    for fact in await snapshots.doc_facts(conn, index.repository_id, list(docs)):
        for path in docs[fact.blob_sha]:
            out.append(_Mention(path, fact.line, fact.kind, fact.name, fact.target, fact.detail))
    return out


async def _symbol_names(conn: Conn, index: SnapshotIndex) -> set[str]:
    return await snapshots.snapshot_symbol_names(conn, index.repository_id, index.snapshot_id)


async def _present_lexemes(conn: Conn, index: SnapshotIndex, mentions: list[_Mention]) -> set[str]:
    """Which of the mentions' lexemes occur somewhere in the snapshot's code."""
    wanted = sorted({lex for m in mentions for lex in _lexemes(m.name)})
    present: set[str] = set()
    for start in range(0, len(wanted), 2000):
        batch = wanted[start : start + 2000]
        present |= await snapshots.lexemes_present(conn, index.repository_id, index.snapshot_id, batch)
    return present


async def _present_names(conn: Conn, index: SnapshotIndex, mentions: set[_Mention]) -> set[str]:
    """Which of the mentions' names occur exactly (case, whole word) in the snapshot's code: a
    lexeme folds ``useCompressor`` and ``local_stack`` into ``UseCompressor``'s and ``LocalStack``'s."""
    pairs = sorted({(last, lex[0]) for m in mentions if (lex := _lexemes(last := _last(m.name)))})
    present: set[str] = set()
    for start in range(0, len(pairs), 2000):
        chunk = pairs[start : start + 2000]
        present |= await snapshots.names_present(
            conn, index.repository_id, index.snapshot_id, [p[0] for p in chunk], [p[1] for p in chunk]
        )
    return present


def _lexemes(name: str) -> list[str]:
    """The lexemes standing for ``name``: its last segment's joined form (and the whole, if qualified)."""
    segments = [s for s in _SEGMENTS.split(name) if s]
    if not segments:
        return []
    out: list[str] = []
    for text in (segments[-1], name):
        tokens = code_tokens(text).split()
        if tokens and tokens[0] not in out:
            out.append(tokens[0])
    return out


# ----------------------------------------------------------------------------- paths


@dataclass(frozen=True, slots=True)
class _Tree:
    files: frozenset[str]
    dirs: frozenset[str]
    by_last: dict[str, list[str]]  # last segment → files and directories ending in it
    stems: set[str] = field(default_factory=set)  # built on first use
    mirrors: set[tuple[int, str, str]] = field(default_factory=set)  # built on first use
    code_dirs: set[str] = field(default_factory=set)  # folders holding code, built on first use
    sites: Sites | None = None  # the docs sites of the tree: where a link points

    @classmethod
    def of(cls, paths: Iterable[str], configs: dict[str, str] | None = None) -> _Tree:
        """The tree of ``paths``; ``configs``: the texts of its docs sites' configurations
        (:func:`palimpsest.index.codefacts.sites.is_site_config`; missing ones read as defaults)."""
        files = frozenset(paths)
        dirs: set[str] = set()
        for path in files:
            parts = path.split("/")
            for i in range(1, len(parts)):
                dirs.add("/".join(parts[:i]))
        by_last: dict[str, list[str]] = defaultdict(list)
        for entry in sorted(files | dirs):
            by_last[entry.rsplit("/", 1)[-1]].append(entry)
        frozen = frozenset(dirs)
        return cls(files, frozen, dict(by_last), sites=Sites.of(files, configs or {}, frozen))

    def exists(self, path: str) -> bool:
        return path in ("", ".") or path in self.files or path in self.dirs

    def has_stem(self, name: str) -> bool:
        """A code file, or a folder holding code, is called ``name`` (``flask`` for
        ``src/flask/``); a folder of docs named like an old package does not count."""
        if not self.stems:
            for path in self.files:
                if not is_doc(path):
                    self.stems.update(part.split(".", 1)[0].lower() for part in path.split("/"))
        return name.lower() in self.stems

    def package(self, name: str) -> bool:
        """A folder called ``name`` holds code (``starlette/``, ``src/flask/``): a module under it
        that is gone (``from starlette.lifespan import X``) is this repository's, gone; an example
        file named like a module (``myapp.py``) is no package."""
        if not self.code_dirs:
            for path in self.files:
                if not is_doc(path):
                    parts = path.split("/")
                    self.code_dirs.update("/".join(parts[:i]) for i in range(1, len(parts)))
        return any(entry in self.code_dirs for entry in self.by_last.get(name, ()))

    def mirrored(self, path: str) -> bool:
        """The same path with one folder swapped exists: a translation (``docs/de/…`` →
        ``docs/en/…``, which MkDocs and Sphinx fall back to) or another version of the docs."""
        parts = path.split("/")
        if not self.mirrors:
            for entry in self.files:
                entry_parts = entry.split("/")
                for i in range(len(entry_parts) - 1):
                    self.mirrors.add((i, "/".join(entry_parts[:i]), "/".join(entry_parts[i + 1 :])))
        return any(
            (i, "/".join(parts[:i]), "/".join(parts[i + 1 :])) in self.mirrors for i in range(len(parts) - 1)
        )

    def exists_as_doc(self, path: str) -> bool:
        """A document reference: ``guide/index`` for ``guide/index.rst``, ``x.html`` for ``x.md``,
        ``guide`` for ``guide/index.md`` (:meth:`Sites.document`)."""
        return self.resolver.document(path) is not None

    @property
    def resolver(self) -> Sites:
        return self.sites if self.sites is not None else Sites.of(self.files, {}, self.dirs)

    def ends_with(self, tail: str) -> bool:
        """Some entry is ``…/tail``: a path written relative to the folder a doc is about."""
        last = tail.rsplit("/", 1)[-1]
        return any(entry.endswith("/" + tail) for entry in self.by_last.get(last, ()))

    def module(self, dotted: str) -> bool:
        """A module of this repository: ``flask`` (a code file or folder of that name), or a dotted
        path whose folders and file exist (``celery.app.task``; not ``myapp.tasks`` because an
        example file is called ``myapp.py``)."""
        parts = dotted.split(".")
        if len(parts) == 1:
            return self.has_stem(parts[0])
        path = "/".join(parts)
        return any(self.exists(c) or self.ends_with(c) for c in (path, path + ".py", path + ".pyi"))

    def top_level(self, segment: str) -> bool:
        return segment in self.files or segment in self.dirs


def _path_claim(mention: _Mention, tree: _Tree) -> Claim | Rule:
    """The claim a path mention makes, or the rule that decides it without history."""
    if mention.source == "link":
        return _link_claim(mention, tree)
    target = mention.name.strip()
    rule = _tree_rule(target, mention.source, tree)
    if rule is not None:
        return rule
    if mention.source == "docref" and tree.resolver.resolve(mention.doc, target).holds:
        return R.PATH_EXISTS  # a document reference as the doc's site resolves it (Sphinx ``:doc:`/x```)
    resolved = _resolutions(mention.doc, target, mention.source)
    if not resolved:
        return R.PATH_OUTSIDE
    if any(tree.exists(p) or tree.exists_as_doc(p) for p in resolved):
        return R.PATH_EXISTS
    if mention.source in ("link", "docref") and tree.mirrored(resolved[0]):
        return R.PATH_MIRRORED
    if "/" in target.strip("/") and not target.startswith(("/", "../")) and tree.ends_with(target.strip("/")):
        return R.PATH_SUFFIX
    if mention.source in ("link", "docref") and not target.startswith("/"):
        resolved = resolved[:1]  # a link is relative to its document, nothing else
    return Claim(mention, "missing_path", f"`{target}`", tuple(resolved))


_RUST_PATH_ROOT = re.compile(r"^(?:crate|self|super)(?:#|$)")
"""rustdoc's intra-doc link to a module by its path root (``[state](crate#sharing-state)``)."""
_RUSTDOC_PAGE = re.compile(
    r"(?:^|/)(?:index|(?:struct|enum|fn|trait|macro|type|constant|static|union|attr|derive|primitive|keyword)"
    r"\.\w+)\.html(?:#.*)?$"
)
"""A page rustdoc generates: a module's ``index.html``, an item's ``struct.Router.html``."""


def _rustdoc_source(doc: str, files: Callable[[str], bool]) -> bool:
    """Whether ``doc`` sits in a Rust crate's ``src/`` (a crate's ``Cargo.toml`` beside that
    folder): rustdoc renders it (``#[doc = include_str!(…)]``) among the pages it generates."""
    parts = doc.split("/")[:-1]
    return any(parts[i] == "src" and files("/".join([*parts[:i], "Cargo.toml"])) for i in range(len(parts)))


def _link_claim(mention: _Mention, tree: _Tree) -> Claim | Rule:
    """A relative link or image target (Markdown, reStructuredText, HTML inside Markdown) is a
    claim about the tree wherever it points, resolved the way the docs site the doc is published
    in resolves it (:class:`palimpsest.index.codefacts.sites.Sites`: MkDocs, Sphinx, Docusaurus or
    GitHub's rendering). A target that is not there is a claim: drift when history shows it was
    removed, else an unresolved link."""
    target = unquote(mention.name.strip())
    if not target or target.startswith(("{", "$", "<", "//")) or _SCHEME.match(target):
        return R.PATH_PLACEHOLDER
    if "::" in target or "`" in target or re.match(r"^[a-z]+@", target) or _RUST_PATH_ROOT.match(target):
        return R.LINK_CODE_REFERENCE
    if _RUSTDOC_PAGE.search(target) and _rustdoc_source(mention.doc, tree.exists):
        return R.LINK_RUSTDOC_PAGE
    resolution = tree.resolver.resolve(mention.doc, target)
    rule = _LINK_RULES.get(resolution.how)
    if rule is not None:
        return rule
    return Claim(mention, "missing_path", f"`{mention.name.strip()}`", resolution.candidates[:1])


_LINK_RULES = {
    "exists": R.PATH_EXISTS,
    "glob": R.LINK_IMAGE_GLOB,
    "site_root": R.LINK_SITE_ROOT,
    "generated": R.LINK_SPHINX_PAGE,
    "outside": R.PATH_OUTSIDE,
}


def _is_tree_claim(target: str, source: str | None, tree: _Tree) -> bool:
    """Whether a path a doc names is a claim about this repository's tree."""
    return _tree_rule(target, source, tree) is None


def _tree_rule(target: str, source: str | None, tree: _Tree) -> Rule | None:
    """The rule by which a path a doc names is no claim about this repository's tree, or None."""
    if not target or _PLACEHOLDER.search(target) or target.startswith(("~", "#", "-")):
        return R.PATH_PLACEHOLDER
    if _MIME.match(target):
        return R.PATH_MIME
    if bare_file_name(target, source):
        return R.PATH_BARE_NAME
    first = target.lstrip("./").split("/", 1)[0]
    if is_output_path(target):
        return R.PATH_GENERATED
    if _DOMAIN.match(first) and not tree.top_level(first):
        return R.PATH_DOMAIN
    if target.startswith("/") and not tree.top_level(first):
        return R.PATH_SYSTEM
    return None


def _resolutions(doc: str, target: str, source: str | None) -> list[str]:
    """Where ``target`` may point: doc-relative first for links, root-relative first otherwise."""
    if target.startswith("/"):
        candidates = [target.lstrip("/")]
    else:
        here = posixpath.dirname(doc)
        relative = posixpath.join(here, target) if here else target
        candidates = [relative, target] if source in ("link", "docref") else [target, relative]
    out: list[str] = []
    for candidate in candidates:
        normal = posixpath.normpath(candidate).rstrip("/")
        if normal == ".":
            normal = ""
        if not normal.startswith("..") and normal not in out:
            out.append(normal)
    return out


def _governs_claim(mention: _Mention, tree: _Tree) -> Claim | Rule:
    target = mention.name.strip().strip("/")
    if not target or _PLACEHOLDER.search(target):
        return R.GOVERNS_PLACEHOLDER
    if tree.exists(target):
        return R.GOVERNS_EXISTS
    return Claim(mention, "unmatched_governs", f"Governs: {mention.name}", (target,))


# ----------------------------------------------------------------------------- stale docs


def _stale_docs(index: SnapshotIndex) -> list[DocFinding]:
    median = index.median_code
    findings = []
    for f in index.files:
        if f.kind == "doc" and not is_history_doc(f.path) and is_stale(f.path, f.last_modified_at, median):
            when: datetime = f.last_modified_at  # type: ignore[assignment]  # stale ⇒ dated
            findings.append(
                DocFinding(
                    f.path,
                    1,
                    "stale_doc",
                    f"last modified {when.date().isoformat()}",
                    None,
                    f"unverified and old: {stale_annotation(f.path, f.last_modified_at, median)}",
                )
            )
    return findings
