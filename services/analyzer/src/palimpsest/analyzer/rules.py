"""The documentation check's rules: every reason a doc mention is set aside, holds, or is reported.

Each rule is named, says in one line what it decides, at which stage and with which verdict:

* stages: ``resolve`` (a mention against the snapshot, in the read transaction), ``prove``
  (against git: symbolic links, inherited members, history), ``judge`` (a proved claim that
  still makes no finding);
* verdicts: ``not_a_claim`` (the mention says nothing about this repository's code), ``holds``
  (it is true at head), ``unverified`` (history does not prove it false), ``finding``.

The check counts how many mentions each rule decided (``facts.doc_check.rules``). The cases each
rule must decide, and must not, are one table in ``tests/unit/analyzer/test_analyzer_rules.py``.
(The extract stage -- what a doc line claims at all, history words, changelog sections -- is the
chunker's reading of a doc, :mod:`palimpsest.chunker.parsing.docs`.)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["RULES", "Rule", "Stage", "Verdict"]

Stage = Literal["resolve", "prove", "judge"]
Verdict = Literal["not_a_claim", "holds", "unverified", "finding"]


@dataclass(frozen=True, slots=True)
class Rule:
    name: str
    stage: Stage
    verdict: Verdict
    doc: str


RULES: dict[str, Rule] = {}


def _rule(name: str, stage: Stage, verdict: Verdict, doc: str) -> Rule:
    assert name not in RULES, name
    found = RULES[name] = Rule(name, stage, verdict, doc)
    return found


# ----------------------------------------------------------------------------- resolve: paths
PATH_PLACEHOLDER = _rule(
    "path.placeholder", "resolve", "not_a_claim",
    "A placeholder, home path, anchor or command-line flag is no path of this repository.",
)  # fmt: skip
PATH_MIME = _rule("path.mime", "resolve", "not_a_claim", "A MIME type (``multipart/form-data``) is no path.")
PATH_BARE_NAME = _rule(
    "path.bare_name", "resolve", "not_a_claim",
    "A bare file name outside a link is usually a file made at run time, not a claim about the tree.",
)  # fmt: skip
PATH_GENERATED = _rule(
    "path.generated", "resolve", "not_a_claim",
    "A path under a build-output, cache, virtual-env or vendored folder is not kept in git.",
)  # fmt: skip
PATH_DOMAIN = _rule(
    "path.domain", "resolve", "not_a_claim", "A host name followed by a path is a URL without its scheme."
)
PATH_SYSTEM = _rule(
    "path.system", "resolve", "not_a_claim",
    "An absolute path whose first folder is not one of the repository's is a system path.",
)  # fmt: skip
PATH_OUTSIDE = _rule("path.outside", "resolve", "not_a_claim", "A relative path that leaves the repository.")
PATH_EXISTS = _rule("path.exists", "resolve", "holds", "The path, or its document form, exists at head.")
PATH_MIRRORED = _rule(
    "path.mirrored", "resolve", "holds",
    "A link to a page the docs publish under another folder of the tree.",
)  # fmt: skip
PATH_SUFFIX = _rule(
    "path.suffix", "resolve", "holds",
    "A path relative to the folder a doc is about: a path of the snapshot ends in it.",
)  # fmt: skip
LINK_CODE_REFERENCE = _rule(
    "link.code_reference", "resolve", "not_a_claim",
    "A link to code by name (rustdoc's ``[x](crate::y)``, ``fn@path``, ``crate#section``), not to a file.",
)  # fmt: skip
LINK_SITE_ROOT = _rule(
    "link.site_root", "resolve", "holds",
    "A root-relative link in a doc outside every configured docs site that resolves from a folder above the doc, or its public/ or static/: the root of a site published by a generator the check does not read.",
)  # fmt: skip
LINK_RUSTDOC_PAGE = _rule(
    "link.rustdoc_page", "resolve", "not_a_claim",
    "A link from a doc rustdoc renders (in a crate's src/) to a page rustdoc generates (index.html, struct.X.html).",
)  # fmt: skip
LINK_IMAGE_GLOB = _rule(
    "link.image_glob", "resolve", "holds",
    "An image path ending in .* in a Sphinx page (Sphinx picks whichever of its files exists) with such a file at head.",
)  # fmt: skip
LINK_SPHINX_PAGE = _rule(
    "link.sphinx_page", "resolve", "not_a_claim",
    "A link from a page of a Sphinx site (its conf.py read) to a page Sphinx writes itself (_modules/, genindex, search, py-modindex).",
)  # fmt: skip
LABEL_EXISTS = _rule(
    "label.exists", "resolve", "not_a_claim",
    "A :ref: cross-reference to a label the docs define (.. _x:, (x)=, a section title under autosectionlabel, genindex): the docs' own, no claim about the code.",
)  # fmt: skip
LABEL_EXTERNAL = _rule(
    "label.external", "resolve", "not_a_claim",
    "A :ref: label no doc defines, in a Sphinx site with intersphinx: another project's label.",
)  # fmt: skip
GOVERNS_PLACEHOLDER = _rule(
    "governs.placeholder", "resolve", "not_a_claim", "An empty or placeholder Governs: target."
)
GOVERNS_EXISTS = _rule("governs.exists", "resolve", "holds", "The Governs: target exists at head.")

# ----------------------------------------------------------------------------- resolve: identifiers
IDENTIFIER_SHORT = _rule(
    "identifier.short", "resolve", "not_a_claim", "A name shorter than three characters."
)
IDENTIFIER_DEFINED = _rule("identifier.defined", "resolve", "holds", "The snapshot's code defines the name.")
IDENTIFIER_USED = _rule("identifier.used", "resolve", "holds", "The snapshot's code uses the name, exactly.")
IDENTIFIER_USED_CURRENT = _rule(
    "identifier.used_current", "prove", "holds",
    "History shows the definition removed, but a test, fixture or example that names no"
    " other removed identifier still uses it: support that counts.",
)  # fmt: skip
IDENTIFIER_FOREIGN_ROOT = _rule(
    "identifier.foreign_root", "resolve", "not_a_claim",
    "A qualified name rooted in nothing of this repository (another package's API).",
)  # fmt: skip
IDENTIFIER_SHELL = _rule(
    "identifier.shell", "resolve", "not_a_claim",
    "A name in a shell session: commands, flags and tasks, not definitions.",
)  # fmt: skip
IDENTIFIER_FOREIGN_FENCE = _rule(
    "identifier.foreign_fence", "resolve", "not_a_claim",
    "A name in fenced code of a language the repository is not written in (or none).",
)  # fmt: skip
IDENTIFIER_OWN_EXAMPLE = _rule(
    "identifier.own_example", "resolve", "not_a_claim",
    "The doc's own example defines the name (signature listings excepted).",
)  # fmt: skip
IDENTIFIER_READERS_IMPORT = _rule(
    "identifier.readers_import", "resolve", "not_a_claim",
    "The doc imports the name from a module that is neither this repository's nor the standard library.",
)  # fmt: skip
IDENTIFIER_OTHER_PACKAGE = _rule(
    "identifier.other_package", "resolve", "not_a_claim",
    "An unqualified name in a doc whose examples import only packages this repository does not have.",
)  # fmt: skip
IDENTIFIER_FOREIGN_ATTRIBUTE = _rule(
    "identifier.foreign_attribute", "resolve", "not_a_claim",
    "An example reaches the name only through an object the doc never made and the repository does not name.",
)  # fmt: skip
IDENTIFIER_FOREIGN_OUTPUT = _rule(
    "identifier.foreign_output", "resolve", "not_a_claim",
    "A name in a console, log or trace block on a line naming no module or file of this repository.",
)  # fmt: skip

# ----------------------------------------------------------------------------- prove
PATH_THROUGH_LINK = _rule(
    "path.through_link", "prove", "holds", "The path exists once symbolic links are followed."
)
IDENTIFIER_INHERITED = _rule(
    "identifier.inherited", "prove", "not_a_claim",
    "A member of a class that extends a class from outside the repository: it may be inherited.",
)  # fmt: skip
IDENTIFIER_SETTING = _rule(
    "identifier.setting", "prove", "holds",
    "An environment variable a settings class of the code reads (a pydantic-settings field under its env_prefix).",
)  # fmt: skip
IDENTIFIER_STANDARD_LIBRARY = _rule(
    "identifier.standard_library", "prove", "not_a_claim",
    "The doc's code ties the name to the language's standard library (imported from it, qualified by it,"
    " a field or option of its type or call).",
)  # fmt: skip
IDENTIFIER_DEPENDENCY = _rule(
    "identifier.dependency", "prove", "not_a_claim",
    "The doc's code ties the name to a package the repository's manifests declare (imported from it,"
    " qualified by it, a field or option given to it, an object it was handed to).",
)  # fmt: skip
IDENTIFIER_OTHER_MODULE = _rule(
    "identifier.other_module", "prove", "not_a_claim",
    "The doc's code ties the name to a module that is neither this repository's, nor declared, nor"
    " standard: the reader's own package or an add-on the example imports.",
)  # fmt: skip
HISTORY_UNAVAILABLE = _rule(
    "history.unavailable", "prove", "unverified", "No readable history: nothing can be proved."
)
HISTORY_NEVER = _rule("history.never", "prove", "unverified", "History never had it in the code: not drift.")

# ----------------------------------------------------------------------------- judge
JUDGE_WRITTEN_AFTER = _rule(
    "judge.written_after", "judge", "unverified",
    "The doc named it only after its definition was gone: it names something else.",
)  # fmt: skip
JUDGE_QUOTED_NAME = _rule(
    "judge.quoted_name", "judge", "unverified",
    "A name the code only ever read as a key, quoted by the doc's example (or only quoted in its examples,"
    " for a mention in prose): the example's own data.",
)  # fmt: skip
JUDGE_METHOD_CALLED_BARE = _rule(
    "judge.method_called_bare", "judge", "unverified",
    "A name the code only had as a method, called as a plain function in an example.",
)  # fmt: skip
JUDGE_UNIMPORTED_CALL = _rule(
    "judge.unimported_call", "judge", "unverified",
    "Called in a Python example that never imports it: a placeholder for the reader's code.",
)  # fmt: skip
JUDGE_DELETED_READER = _rule(
    "judge.deleted_reader", "judge", "unverified",
    "A setting only a since-deleted file read: its behaviour may live on elsewhere.",
)  # fmt: skip
JUDGE_PRIVATE_IN_EXAMPLE = _rule(
    "judge.private_in_example", "judge", "unverified",
    "A private name (``_x`` in Python, lower case in Go) used in an example: the example's own.",
)  # fmt: skip
LINK_UNRESOLVED = _rule(
    "link.unresolved", "judge", "unverified",
    "A relative link or image whose target is not in the tree and never was in history (or history is"
    " unreadable): an unresolved link, listed apart, not drift.",
)  # fmt: skip
MANUAL_OLDER_RELEASE = _rule(
    "manual.older_release", "judge", "finding",
    "A manual kept for an older release beside a newer one: its findings are reported once, as a whole.",
)  # fmt: skip
FINDING = _rule(
    "finding", "judge", "finding", "History proves the subject existed in the code and was removed."
)
