"""Planted drift in a real repository: the recall of the documentation check where truth is known.

A real repository's documentation rarely drifts in a way anyone wrote down, so its findings say
little about what the check misses. This module makes drift whose truth is known, in a scratch
clone of a real repository, with plain git and without the index:

* **renamed definitions** -- a name the docs mention (sampled from the doc mentions the chunker
  extracts) that exactly one product code file defines is renamed, whole word, in every non-doc
  file; the docs keep the old name;
* **moved files** -- a code file the docs name by path is moved into a new sub-folder.

Each plant is one commit, so the expected evidence is exact: ``removed_in_commit`` is the plant,
``last_seen_commit`` its parent, ``renamed_to`` the new name or path. The truth lines are found by
``git grep`` of the docs (changelogs excluded), independently of the check's own extraction: a
whole-word match of the old name, or the old path as written. :func:`score` compares the findings
of an analysis of the scratch clone with them: per plant whether it was found, per doc naming it
whether that doc was flagged (the check reports a subject once per doc, at its first mention), per
truth line whether it was, and whether the evidence names the right commits and successor. Lines are
split by how they name the subject (inline code, a fence, a Sphinx role, plain prose), so a miss
says which form of documentation the check does not read.
"""

from __future__ import annotations

import random
import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from palimpsest.analyzer.history import defined_names
from palimpsest.chunker.parsing.chunks import analyze_file
from palimpsest.devtools.bench.history import git, is_code
from palimpsest.index.codefacts import is_definition_site, is_doc, is_history_doc, is_history_file
from palimpsest.index.languages import detect_language

__all__ = ["Plan", "Planted", "plant", "score"]

PlantKind = Literal["identifier", "path"]
MIN_NAME = 6
MAX_NAME_FILES = 40  # a name used in more files than this is too common to rename cleanly
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_SEGMENTS = re.compile(r"\.|::|#|->")
_ROLE = re.compile(r":[\w:]+:`[^`]*$")
_TICKS = re.compile(r"`+")
_DIRECTIVE = re.compile(r"^\s*(?:\.\.\s+[\w:-]+::|:::\s)")
_NAME_LIKE = re.compile(r"[_\d/.]|[a-z][A-Z]")  # ``parse_date``, ``ClosingIterator``: not a word
_AUTHOR = ["-c", "user.name=Palimpsest bench", "-c", "user.email=bench@palimpsest.invalid"]


@dataclass(frozen=True, slots=True)
class TruthLine:
    doc: str
    line: int
    form: str  # code | fence | role | link | prose


@dataclass(slots=True)
class Planted:
    kind: PlantKind
    old: str
    new: str
    commit: str
    parent: str
    lines: list[TruthLine] = field(default_factory=list)


@dataclass(slots=True)
class Plan:
    scratch: Path
    head: str  # the real head the plants were made on
    planted: list[Planted] = field(default_factory=list)


def plant(source: Path, scratch: Path, *, identifiers: int, paths: int, seed: int) -> Plan:
    """Clone ``source`` into ``scratch`` and commit the plants on its checked-out branch."""
    git(scratch.parent, "clone", "--quiet", "--shared", str(source), str(scratch))
    head = git(scratch, "rev-parse", "HEAD").strip()
    files = [p for p in git(scratch, "ls-files", "-z").split("\0") if p]
    docs = [p for p in files if is_doc(p) and not is_history_doc(p) and (scratch / p).is_file()]
    mentions = _doc_mentions(scratch, docs)
    fences = _FenceMap(scratch)  # the plants touch no doc: one map serves every plant
    rng = random.Random(seed)  # noqa: S311  # a reproducible sample, not a secret
    plan = Plan(scratch, head)
    names = sorted({_last(name) for name, target in mentions if target == "identifier"})
    rng.shuffle(names)
    for name in names:
        if len([p for p in plan.planted if p.kind == "identifier"]) >= identifiers:
            break
        planted = _rename_definition(scratch, name, docs, fences, _lines_taken(plan))
        if planted is not None:
            plan.planted.append(planted)
    taken = {f for p in plan.planted for f in (p.old, p.new)}
    named = len(plan.planted)
    existing = set(git(scratch, "ls-files", "-z").split("\0"))
    candidates = sorted(
        {name.strip("/") for name, target in mentions if target == "path"}
        & {p for p in existing if is_definition_site(p) and is_code(p)}
    )
    rng.shuffle(candidates)
    for path in candidates:
        if len(plan.planted) - named >= paths:
            break
        moved = _move_file(scratch, path, docs, fences) if path not in taken else None
        if moved is not None:
            plan.planted.append(moved)
    return plan


def _doc_mentions(repo: Path, docs: list[str]) -> set[tuple[str, str]]:
    """``(name, target)`` of every identifier and path the docs mention (the chunker's reading)."""
    out: set[tuple[str, str]] = set()
    for doc in docs:
        text = (repo / doc).read_text(encoding="utf-8", errors="replace")
        for fact in analyze_file(doc, text, detect_language(doc)).facts:
            if fact.kind == "mention" and fact.target in ("identifier", "path"):
                out.add((fact.name, fact.target))
    return out


def _lines_taken(plan: Plan) -> set[tuple[str, int]]:
    return {(t.doc, t.line) for p in plan.planted for t in p.lines}


def _rename_definition(
    repo: Path, name: str, docs: list[str], fences: _FenceMap, taken: set[tuple[str, int]]
) -> Planted | None:
    if len(name) < MIN_NAME or not _IDENTIFIER.match(name) or not _NAME_LIKE.search(name):
        return None  # ``Client``, ``failed``: a renamed English word would be found in every prose line
    users = _grep_files(repo, name)
    code = [p for p in users if not is_doc(p) and not is_history_file(p)]
    if not code or len(code) > MAX_NAME_FILES:
        return None
    text = {p: _read(repo / p) for p in code}
    definers = [p for p in code if is_definition_site(p) and defined_names(text[p].encode(), {name})]
    if len(definers) != 1 or _body_variable(text[definers[0]], name):
        return None
    lines = _truth_lines(repo, name, docs, fences, whole_word=True)
    if not lines or any((t.doc, t.line) in taken for t in lines):
        # a line naming two plants (``RequestHandler.get_secure_cookie``) would measure their
        # interplay: a member of a renamed class is no longer qualified by this repository
        return None
    new = f"{name}_renamed" if "_" in name or name.islower() else f"{name}Renamed"
    word = re.compile(rf"(?<![\w$]){re.escape(name)}(?![\w$])")
    for path, content in text.items():
        with (repo / path).open("w", encoding="utf-8", errors="surrogateescape", newline="") as handle:
            handle.write(word.sub(new, content))
    parent, commit = _commit(repo, code, f"plant: rename {name} to {new}")
    return Planted("identifier", name, new, commit, parent, lines)


def _body_variable(content: str, name: str) -> bool:
    """``name`` is only ever declared as a variable inside a body (an indented ``let``/``var``/
    ``const``/``val``/``my``/``local``) and defined no other way: a local a doc's example may reuse as a
    placeholder of its own, not a definition of the code a doc names, so no plant (the picker's own
    reading, apart from the check's definitions)."""
    word = re.escape(name)
    declared = re.compile(
        rf"^(?P<indent>[ \t]*)(?:export\s+)?(?:let|var|const|val|my|local)\s+{word}\b", re.M
    )
    found = list(declared.finditer(content))
    if not found or not all(m.group("indent") for m in found):
        return False
    other = re.compile(
        rf"\b(?:def|class|function|func|fn|struct|interface|type|enum|trait)\s+{word}\b"
        rf"|^[ \t]*(?:(?:this|self)\.)?{word}\s*[:=](?!=)",
        re.M,
    )
    return other.search(content) is None


def _read(path: Path) -> str:
    """The text as stored: line endings kept, undecodable bytes kept (written back the same)."""
    with path.open(encoding="utf-8", errors="surrogateescape", newline="") as handle:
        return handle.read()


def _move_file(repo: Path, path: str, docs: list[str], fences: _FenceMap) -> Planted | None:
    folder, _, base = path.rpartition("/")
    new = f"{folder}/relocated/{base}" if folder else f"relocated/{base}"
    lines = _truth_lines(repo, path, docs, fences, whole_word=False)
    if not lines:
        return None
    (repo / new).parent.mkdir(parents=True, exist_ok=True)
    git(repo, "mv", path, new)
    parent, commit = _commit(repo, [], f"plant: move {path} to {new}")
    return Planted("path", path, new, commit, parent, lines)


def _commit(repo: Path, paths: list[str], message: str) -> tuple[str, str]:
    parent = git(repo, "rev-parse", "HEAD").strip()
    if paths:
        git(repo, "add", "--", *paths)
    git(repo, *_AUTHOR, "commit", "--quiet", "--no-verify", "-m", message)
    return parent, git(repo, "rev-parse", "HEAD").strip()


def _grep_files(repo: Path, name: str) -> list[str]:
    try:
        out = git(repo, "grep", "-l", "-z", "-I", "-w", "-F", "-e", name)
    except RuntimeError:  # git grep exits 1 when nothing matches
        return []
    return [p for p in out.split("\0") if p]


def _truth_lines(
    repo: Path, text: str, docs: list[str], fences: _FenceMap, *, whole_word: bool
) -> list[TruthLine]:
    """Every line of the docs (changelogs excluded) naming ``text``, with how it names it."""
    flags = ["-w"] if whole_word else []
    try:
        out = git(repo, "grep", "-n", "-z", "-I", *flags, "-F", "-e", text, "--", *docs)
    except RuntimeError:
        return []
    found: list[TruthLine] = []
    for record in out.splitlines():
        doc, line_no, content = [*record.split("\0", 2), "", ""][:3]
        if not line_no.isdigit():
            continue
        line = int(line_no)
        form = _form(content, text, fences.inside(doc, line))
        if form == "link" and not whole_word and "/" in doc:
            continue  # a link is relative to its doc: from a sub-folder it names another file
        if form is not None:
            found.append(TruthLine(doc, line, form))
    return found


def _form(content: str, text: str, fenced: bool) -> str | None:
    """How a doc line names ``text``: in a fence or doctest, an API directive, a Sphinx role,
    inline code, a link, or plain prose (``None``: an English word in prose, not a name)."""
    stripped = content.strip()
    if fenced or stripped.startswith((">>>", "... ")):
        return "fence"
    if _DIRECTIVE.match(content):
        return "directive"
    before = _TICKS.sub("`", content[: content.find(text)])
    if before.count("`") % 2 == 1:
        return "role" if _ROLE.search(before[-80:]) else "code"
    if f"]({text}" in content or f"]({text}" in content.replace("./", ""):
        return "link"
    return "prose" if _NAME_LIKE.search(text) else None


class _FenceMap:
    """Which lines of a doc are inside fenced (Markdown) or literal (RST ``::``) code blocks."""

    def __init__(self, repo: Path) -> None:
        self.repo = repo
        self.cache: dict[str, set[int]] = {}

    def inside(self, doc: str, line: int) -> bool:
        if doc not in self.cache:
            self.cache[doc] = _fenced_lines((self.repo / doc).read_text(encoding="utf-8", errors="replace"))
        return line in self.cache[doc]


def _fenced_lines(text: str) -> set[int]:
    out: set[int] = set()
    fence: str | None = None
    literal_indent: int | None = None
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if fence is not None:
            out.add(number)
            if stripped.startswith(fence):
                fence = None
            continue
        if stripped.startswith(("```", "~~~")):
            fence = stripped[:3]
            continue
        indent = len(line) - len(line.lstrip())
        if literal_indent is not None:
            if not stripped or indent > literal_indent:
                out.add(number)
                continue
            literal_indent = None
        if stripped.endswith("::") or stripped.startswith(".. code"):
            literal_indent = indent
    return out


def _last(name: str) -> str:
    return ([s for s in _SEGMENTS.split(name) if s] or [name])[-1]


def score(plan: Plan, findings: list[dict[str, Any]]) -> dict[str, Any]:
    """Recall of the plants by ``findings`` (the analysis of the scratch clone), with evidence checks."""
    by_line: dict[tuple[str, int], list[dict[str, Any]]] = defaultdict(list)
    for finding in findings:
        by_line[(finding["doc"], finding["line"])].append(finding)
    items: list[dict[str, Any]] = []
    forms: Counter[str] = Counter()
    found_forms: Counter[str] = Counter()
    doc_units = [0, 0]  # (doc, plant) pairs: the check names each subject once per doc
    for planted in plan.planted:
        hits = []
        for truth in planted.lines:
            forms[truth.form] += 1
            match = next((f for f in by_line[(truth.doc, truth.line)] if _about(f, planted)), None)
            if match is not None:
                found_forms[truth.form] += 1
                hits.append(match)
        evidence_ok = [_evidence_ok(f, planted) for f in hits]
        docs = {t.doc for t in planted.lines}
        docs_found = {f["doc"] for f in findings if f["doc"] in docs and _about(f, planted)}
        doc_units[0] += len(docs)
        doc_units[1] += len(docs_found)
        items.append(
            {
                "kind": planted.kind,
                "old": planted.old,
                "new": planted.new,
                "commit": planted.commit,
                "lines": len(planted.lines),
                "lines_found": len(hits),
                "docs": len(docs),
                "docs_found": len(docs_found),
                "found": bool(hits),
                "evidence_ok": bool(hits) and all(evidence_ok),
                "renamed_to_ok": bool(hits) and all(_renamed_ok(f, planted) for f in hits),
                "missed": [
                    f"{t.doc}:{t.line} ({t.form})" for t in planted.lines if not _hit(by_line, t, planted)
                ][:5],
            }
        )
    lines = sum(forms.values())
    found_lines = sum(found_forms.values())
    return {
        "planted": len(items),
        "found": sum(1 for i in items if i["found"]),
        "item_recall": round(sum(1 for i in items if i["found"]) / len(items), 3) if items else None,
        "doc_recall": round(doc_units[1] / doc_units[0], 3) if doc_units[0] else None,
        "line_recall": round(found_lines / lines, 3) if lines else None,
        "evidence_ok": sum(1 for i in items if i["evidence_ok"]),
        "renamed_to_ok": sum(1 for i in items if i["renamed_to_ok"]),
        "lines_by_form": {form: {"lines": n, "found": found_forms[form]} for form, n in forms.most_common()},
        "items": items,
    }


def _hit(by_line: dict[tuple[str, int], list[dict[str, Any]]], truth: TruthLine, planted: Planted) -> bool:
    return any(_about(f, planted) for f in by_line[(truth.doc, truth.line)])


def _about(finding: dict[str, Any], planted: Planted) -> bool:
    claim = str(finding.get("claim", "")).strip("`")
    if planted.kind == "identifier":
        return finding["kind"] == "missing_identifier" and _last(claim) == planted.old
    return finding["kind"] in ("missing_path", "unmatched_governs") and claim.rstrip("/").endswith(
        planted.old
    )


def _evidence_ok(finding: dict[str, Any], planted: Planted) -> bool:
    evidence = finding.get("evidence") or {}
    return bool(
        evidence.get("removed_in_commit") == planted.commit
        and evidence.get("last_seen_commit") == planted.parent
        and evidence.get("written_while_existed") is not False
    )


def _renamed_ok(finding: dict[str, Any], planted: Planted) -> bool:
    return (finding.get("evidence") or {}).get("renamed_to") == planted.new
