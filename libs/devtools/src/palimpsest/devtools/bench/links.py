"""A plain link checker: the yardstick the documentation check is measured against.

Written apart from the check on purpose (no code of ``palimpsest.analyzer`` or of the chunker's
doc reader): every relative link and image target in the docs at a commit -- Markdown links and
images, HTML ``src``/``href`` inside Markdown, reStructuredText hyperlinks, ``image``/``figure``/
``include`` directives -- resolved against the document's folder (a leading ``/`` against the
root, or against a folder above the document or its ``public/``/``static/``: the root of the docs
site it is published in) and looked up in the commit's tree. A doc in a Rust crate's ``src/`` is
rendered by rustdoc, so its links to rustdoc's own pages (``index.html``, ``struct.X.html``) are not
files. A target that is neither a file nor a folder there is
broken -- also when written as a docs site writes its pages (without the ``.md``/``.rst``/
``.html`` of the page, or from the page's own folder as MkDocs' directory URLs have it). Fenced and indented code blocks are skipped; anchors and queries are dropped.
"""

from __future__ import annotations

import posixpath
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote

from palimpsest.index.codefacts import is_doc, is_history_doc

__all__ = ["BrokenLink", "broken_links", "resolve"]

_MD_LINK = re.compile(r"!?\[[^\]\n]*\]\(\s*<?([^)\s>]+)>?(?:\s+[\"'][^\"'\n]*[\"'])?\s*\)")
_MD_REFERENCE = re.compile(r"^\s{0,3}\[[^\]\n]+\]:\s*<?(\S+?)>?(?:\s+[\"'(].*)?$")
_HTML = re.compile(r"<(?:img|a|source|script|link)\b[^>]*?\b(?:src|href)\s*=\s*[\"']([^\"']+)[\"']", re.I)
_RST_LINK = re.compile(r"`[^`<\n]*<([^<>`\s]+)>`__?")
_RST_DIRECTIVE = re.compile(r"^\s*\.\.\s+(?:image|figure|include|literalinclude)::\s+(\S+)\s*$")
_FENCE = re.compile(r"^\s{0,3}(`{3,}|~{3,})")
_SCHEME = re.compile(r"^[a-zA-Z][\w+.-]*:")
# the pages rustdoc writes: ``index.html`` of a module, ``<kind>.<Name>.html`` of an item
_RUSTDOC = re.compile(
    r"(^|/)(index|(struct|enum|fn|trait|macro|type|constant|static|union|attr|derive|primitive|keyword)\.\w+)\.html(#|$)"
)


@dataclass(frozen=True, slots=True)
class BrokenLink:
    doc: str
    line: int
    target: str  # as written
    resolved: str  # the repository path it points at


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=repo, capture_output=True, text=True, check=True, errors="replace"
    ).stdout


def broken_links(repo: Path, commit: str) -> tuple[int, list[BrokenLink]]:
    """How many relative links the docs at ``commit`` hold, and the broken ones."""
    files = [p for p in _git(repo, "ls-tree", "-r", "--name-only", "-z", commit).split("\0") if p]
    tree = set(files) | {posixpath.dirname(p) for p in files}
    tree |= {"/".join(p.split("/")[:i]) for p in files for i in range(1, p.count("/") + 1)}
    docs = [p for p in files if (is_doc(p) and not is_history_doc(p)) or p.lower().endswith(".rst")]
    checked, broken = 0, []
    for doc in sorted(set(docs)):
        text = _git(repo, "show", f"{commit}:{doc}")
        for line, target in _targets(text, rst=doc.lower().endswith(".rst")):
            resolved = resolve(doc, target)
            if resolved is None:
                continue
            checked += 1
            page = resolve(doc.rsplit(".", 1)[0] + "/index", target)  # a directory URL's folder
            forms = [resolved, page]
            # … or from the docs site's root: a folder above the doc, or its public/ or static/
            if target.startswith("/"):
                folders = doc.split("/")[:-1]
                above = ["/".join(folders[:i]) for i in range(len(folders) + 1)]
                forms += [posixpath.join(a, s, resolved) for a in above for s in ("", "public", "static")]
            if _RUSTDOC.search(target) and _in_crate_src(doc, tree):
                continue  # rustdoc renders the doc and generates the page linked to
            if not any(_exists(p, tree) for p in forms if p is not None):
                broken.append(BrokenLink(doc, line, target, resolved))
    return checked, broken


def _in_crate_src(doc: str, tree: set[str]) -> bool:
    """A doc under a Rust crate's ``src/`` (``Cargo.toml`` beside it) is included into rustdoc's pages."""
    parts = doc.split("/")
    return any(
        part == "src" and "/".join([*parts[:i], "Cargo.toml"]) in tree for i, part in enumerate(parts[:-1])
    )


def _exists(path: str, tree: set[str]) -> bool:
    stem = path.removesuffix(".html")
    forms = (
        path,
        stem + ".md",
        stem + ".rst",
        stem + ".mdx",
        stem + "/index.md",
        stem + "/README.md",
        stem + "/index.rst",
    )
    return any(f in tree for f in forms)


def _targets(text: str, *, rst: bool) -> list[tuple[int, str]]:
    out: list[tuple[int, str]] = []
    fence: str | None = None
    for number, line in enumerate(text.splitlines(), start=1):
        opened = _FENCE.match(line)
        if fence is not None:
            if opened and opened.group(1)[0] == fence[0]:
                fence = None
            continue
        if opened and not rst:
            fence = opened.group(1)
            continue
        if not rst and line.startswith("    "):
            continue  # an indented code block
        patterns = (_RST_LINK, _RST_DIRECTIVE) if rst else (_MD_LINK, _MD_REFERENCE, _HTML)
        for pattern in patterns:
            out.extend((number, m.group(1)) for m in pattern.finditer(line))
    return out


def resolve(doc: str, target: str) -> str | None:
    """The repository path a relative target points at; None for URLs, anchors, mail and the like."""
    if (
        target.endswith("_")
        or "::" in target
        or "`" in target
        or re.match(r"^([a-z]+@|(crate|self|super)(#|$))", target)
    ):
        return None  # ``<pypi_>``: a named reStructuredText target; ``crate::x``, ``fn@x``, ``crate#s``: rustdoc's links to code
    target = unquote(target.split("#", 1)[0].split("?", 1)[0]).strip()
    if not target or _SCHEME.match(target) or target.startswith(("//", "{", "$", "<")):
        return None
    joined = target.lstrip("/") if target.startswith("/") else posixpath.join(posixpath.dirname(doc), target)
    normal = posixpath.normpath(joined)
    if normal.startswith("..") or normal == ".":
        return None  # outside the repository, or the repository itself
    return normal.rstrip("/")
