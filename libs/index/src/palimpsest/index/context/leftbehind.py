"""Docs this change leaves behind: the doc lines a pull request makes wrong, found from the change alone.

No model is involved; these findings are facts about the change, not opinions, and a model
never drops them.

1. **What the pull request takes away** (:func:`taken_away`):

   * definitions present at the base and absent at the head: the names the index stores as
     defined in the changed code files at the base snapshot (:func:`base_definitions`, the one
     place that reads definitions) that no longer occur as a whole word anywhere in the head's
     code (``git grep`` at the head commit: a name still defined or used elsewhere — an
     overload, another definition of the same name — is not drift). A rename is evident when a
     removed line of the diff reads the same as an added line but for the name (the diff's own
     rename);
   * files deleted or moved (the diff's renames give the new path), and folders all of whose
     files went;
   * ``Governs:`` targets among those paths.

2. **The doc lines at the base that name them**: the chunker's mention extraction stored in the
   index (``code_facts`` of the base snapshot's docs: identifiers, paths, ``Governs:`` lines;
   changelogs and release notes excluded, as in the analysis). Each line is checked against the
   base text (the snapshot may be the newest rather than the base). A doc line the pull request
   itself edits so that the name is gone counts as fixed; one it edits keeping the name is
   reported on the new line.

3. **Findings** (:func:`findings`): category ``docs``, severity ``minor`` (the review scale's
   warning), one per doc line, on the head's line of the doc: inline with a suggestion when the
   doc line is on the diff, otherwise in the summary's section :data:`SECTION_TITLE`.
"""

from __future__ import annotations

import logging
import posixpath
import re
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal
from uuid import UUID

from palimpsest.core.db import Conn, Pool, tenant_tx
from palimpsest.core.git import GitAuth, read_blobs, run_git
from palimpsest.core.git_errors import GitError
from palimpsest.core.repositories import Repository
from palimpsest.core.sources import SourcePolicy
from palimpsest.core.wire import parse_hunk_header
from palimpsest.index import snapshots
from palimpsest.index.codefacts import is_doc, is_history_doc, is_history_file, is_test
from palimpsest.index.codefacts.definitions import definitions as code_definitions
from palimpsest.index.codefacts.examples import example_containers, example_defines
from palimpsest.index.codefacts.mentions import bare_file_name, versioned_manual
from palimpsest.index.codefacts.sites import Sites, is_site_config
from palimpsest.index.context.diff import ChangedFile, definition_name, parse_diff
from palimpsest.index.context.finding import Finding
from palimpsest.index.context.source import files_at
from palimpsest.index.stored import left_behind_fingerprints

__all__ = [
    "CATEGORY",
    "LEAD",
    "SECTION_TITLE",
    "SEVERITY",
    "LeftBehind",
    "Taken",
    "base_definitions",
    "earlier_fingerprints",
    "is_left_behind",
    "left_behind",
    "preview_left_behind",
]

log = logging.getLogger(__name__)

CATEGORY = "docs"
SEVERITY = "minor"  # the review scale's "warning" (see review._SEVERITY_ALIASES)
SECTION_TITLE = "Docs this change leaves behind"
LEAD = "This doc line names"  # how the check's messages begin (the summary's section gathers them)
MIN_NAME = 3  # shorter names (``x``, ``db``) are words, not claims
MAX_LISTED = 200  # names the review's sources list at most
MAX_NAMES = 2000  # removed definitions looked up at most (a vendored tree deleted whole)
_IDENT = re.compile(r"[A-Za-z_$][\w$]*")
_ATTRIBUTE = re.compile(r"\b(?:self|this)\.([A-Za-z_$][\w$]*)\s*=(?!=)")
_SEGMENTS = re.compile(r"\.|::|#|->")


@dataclass(frozen=True, slots=True)
class Taken:
    """One thing the pull request takes away."""

    name: str  # the definition's name, or the path at the base
    kind: Literal["definition", "path"]
    became: str | None  # the rename target or the new path, when evident
    where: str  # the base file that defined it (definitions), or the path itself

    def what(self) -> str:
        if self.kind == "definition":
            return f"renames to `{self.became}`" if self.became else f"removes (from `{self.where}`)"
        return f"moves to `{self.became}`" if self.became else "deletes"


@dataclass(slots=True)
class LeftBehind:
    """The check's outcome: findings (unidentified) and what it counted, for the review's sources."""

    findings: list[Finding] = field(default_factory=list)
    head_texts: dict[str, str | None] = field(default_factory=dict)  # doc → head text (anchors)
    taken: list[Taken] = field(default_factory=list)
    still_in_code: int = 0  # removed definitions whose name the head's code still has
    unparsed: int = 0  # changed code files whose base blob the index has not parsed
    fixed: int = 0  # doc lines the pull request itself edited so the name is gone
    older_manual: int = 0  # doc lines of a manual kept for an older release (it describes that release)
    ran: bool = False

    def summary(self) -> dict[str, Any]:
        return {
            "ran": self.ran,
            "taken": len(self.taken),
            "still_in_code": self.still_in_code,
            "unparsed": self.unparsed,
            "fixed_in_pr": self.fixed,
            "in_older_manual": self.older_manual,
            "findings": len(self.findings),
            "names": [t.name for t in self.taken][:MAX_LISTED],
        }


# ----------------------------------------------------------------------------- what is taken away


async def base_definitions(conn: Conn, repository_id: UUID, blobs: Mapping[str, str]) -> dict[str, set[str]]:
    """Path → the names the index stores as defined in that file's blob (``blobs``: path → blob
    sha at the base). The one place the check reads definitions (the chunker's symbols today);
    blobs the index never parsed are left out."""
    if not blobs:
        return {}
    paths: dict[str, list[str]] = defaultdict(list)
    for path, sha in blobs.items():
        paths[sha].append(path)
    out: dict[str, set[str]] = defaultdict(set)
    for row in await snapshots.blob_symbol_names(conn, repository_id, list(paths)):
        for path in paths[row.blob_sha]:
            out[path].add(row.name)
    return dict(out)


async def _defined_at_base(
    conn: Conn, repository_id: UUID, base_tree: Mapping[str, str], names: frozenset[str]
) -> set[str]:
    """Which of ``names`` a code file of the base defines (the index's symbols of its blobs)."""
    if not names:
        return set()
    blobs = sorted({sha for path, sha in base_tree.items() if not is_doc(path)})
    return await snapshots.defined_names(conn, repository_id, sorted(names), blobs)


async def _present_at_head(git_dir: Path, head_sha: str, names: Sequence[str]) -> set[str]:
    """Which ``names`` occur as a whole word in the head's code (docs and changelogs aside)."""
    present: set[str] = set()
    todo = list(names)
    for start in range(0, len(todo), 200):
        chunk = todo[start : start + 200]
        args = ["grep", "-I", "-o", "-w", "-F", "-z"]
        for name in chunk:
            args += ["-e", name]
        try:
            out = await run_git([*args, head_sha, "--"], cwd=git_dir)
        except GitError as exc:
            if "no error output" in exc.detail:  # exit 1: no match at all
                continue
            raise
        prefix = f"{head_sha}:"
        for line in out.decode("utf-8", "replace").splitlines():
            path, _, match = line.partition("\0")
            path = path.removeprefix(prefix)
            if path and not is_doc(path) and not is_history_file(path):
                present.add(match)
    return present


def _removed_definitions(lines: Sequence[str]) -> set[str]:
    """Names the diff's removed lines define: a definition line, or an attribute set on ``self``/``this``."""
    out: set[str] = set()
    for line in lines:
        name = definition_name(line)
        if name is not None:
            out.add(name)
        out.update(_ATTRIBUTE.findall(line))
    return out


def _renamed_to(name: str, files: Sequence[ChangedFile]) -> str | None:
    """The diff's own rename: a removed line that reads as an added line of the same file but for
    ``name`` (the definition's line first)."""
    word = re.compile(rf"(?<![\w$]){re.escape(name)}(?![\w$])")
    votes: dict[str, int] = defaultdict(int)
    for f in files:
        added = set(f.added)
        for line in f.removed:
            found = word.search(line)
            if found is None:
                continue
            before, after = line[: found.start()], line[found.end() :]
            for new in added:
                if (
                    len(new) <= len(before) + len(after)
                    or not new.startswith(before)
                    or not new.endswith(after)
                ):
                    continue
                middle = new[len(before) : len(new) - len(after)]
                if middle != name and _IDENT.fullmatch(middle):
                    votes[middle] += 3 if definition_name(line) == name else 1
    if not votes:
        return None
    return max(votes.items(), key=lambda kv: (kv[1], kv[0]))[0]


async def _tree(git_dir: Path, rev: str) -> dict[str, str]:
    """Path → blob sha of every file at ``rev``."""
    out = await run_git(["ls-tree", "-r", "-z", "--end-of-options", rev], cwd=git_dir)
    tree: dict[str, str] = {}
    for record in out.split(b"\0"):
        meta, sep, raw = record.partition(b"\t")
        fields = meta.split()
        if sep and len(fields) == 3 and fields[1] == b"blob":
            tree[raw.decode("utf-8", "surrogateescape")] = fields[2].decode()
    return tree


def _folders(paths: set[str]) -> set[str]:
    out: set[str] = set()
    for p in paths:
        parts = p.split("/")
        out.update("/".join(parts[:i]) for i in range(1, len(parts)))
    return out


async def taken_away(
    conn: Conn,
    repository_id: UUID,
    git_dir: Path,
    base_tree: Mapping[str, str],
    head_sha: str,
    files: Sequence[ChangedFile],
    out: LeftBehind,
) -> tuple[list[Taken], dict[str, Taken]]:
    """Definitions the change removes (by name) and paths it deletes or moves (by base path)."""
    # a name only a test defined is no claim of the docs
    code = [
        f
        for f in files
        if f.status != "added" and not is_doc(f.old_path or f.path) and not is_test(f.old_path or f.path)
    ]
    bases = [f.old_path or f.path for f in code]
    blobs = {p: base_tree[p] for p in bases if p in base_tree}
    defined = await base_definitions(conn, repository_id, blobs)
    for f in code:  # and what the removed lines define (all of it when the index never parsed the blob)
        path = f.old_path or f.path
        if path not in defined:
            out.unparsed += 1
        defined.setdefault(path, set()).update(_removed_definitions(f.removed))
    # and what the code facts read on the base blob's removed lines: members, fields and constants
    # the chunker's symbols leave out (a TypeScript interface's ``_ctx_out: unknown``); only those
    # lines, so a large changed file (a bundle) does not send its every name to the look-up below
    removed = {f.old_path or f.path: f.removed_ranges for f in code}
    by_sha = {sha: path for path, sha in blobs.items()}
    async for sha, data in read_blobs(git_dir, by_sha, missing_ok=True):
        path = by_sha[sha]
        defined[path].update(
            d.name
            for d in code_definitions(path, data).items
            if any(start <= d.line <= end for start, end in removed.get(path, ()))
        )
    where: dict[str, str] = {}
    for path, names in sorted(defined.items()):
        for name in names:
            if len(name) >= MIN_NAME and _IDENT.fullmatch(name):
                where.setdefault(name, path)
    wanted = sorted(where)[:MAX_NAMES]
    present = await _present_at_head(git_dir, head_sha, wanted) if wanted else set()
    out.still_in_code = len(set(wanted) & present)
    definitions = [
        Taken(n, "definition", _renamed_to(n, files), where[n]) for n in wanted if n not in present
    ]
    paths: dict[str, Taken] = {}
    moved = {f.old_path: f.path for f in files if f.old_path and f.old_path != f.path}
    for f in files:
        if f.status == "deleted":
            paths[f.path] = Taken(f.path, "path", None, f.path)
        elif f.old_path and f.old_path != f.path:
            paths[f.old_path] = Taken(f.old_path, "path", f.path, f.old_path)
    if paths:
        head_dirs = _folders(set(await _tree(git_dir, head_sha)))
        for folder in sorted(_folders(set(base_tree)) - head_dirs):
            under = [p for p in base_tree if p.startswith(folder + "/")]
            targets = {_moved_folder(folder, p, moved.get(p)) for p in under}
            became = targets.pop() if len(targets) == 1 else None
            paths[folder] = Taken(folder, "path", became, folder)
    return definitions, paths


def _moved_folder(folder: str, old: str, new: str | None) -> str | None:
    """The folder ``old`` (a file under ``folder``) moved to, when the rest of its path is kept."""
    rest = old[len(folder) :]
    if new is None or not new.endswith(rest):
        return None
    return new[: len(new) - len(rest)] or None


# ----------------------------------------------------------------------------- the doc lines


@dataclass(frozen=True, slots=True)
class _Mention:
    doc: str
    line: int
    kind: str  # mention | governs
    name: str
    target: str | None
    source: str | None = None  # how the doc wrote it: code, fence:<language>, link, docref, prose …


async def _mentions(conn: Conn, repository_id: UUID, base_tree: Mapping[str, str]) -> list[_Mention]:
    """Every identifier, path and ``Governs:`` mention the index stores for the base's docs
    (changelogs and release notes aside)."""
    docs: dict[str, list[str]] = defaultdict(list)
    for path, sha in base_tree.items():
        if is_doc(path) and not is_history_doc(path):
            docs[sha].append(path)
    if not docs:
        return []
    return [
        _Mention(path, r.line, r.kind, r.name, r.target, r.detail)
        for r in await snapshots.doc_mentions(conn, repository_id, list(docs))
        for path in docs[r.blob_sha]
    ]


def _path_forms(
    doc: str, written: str, source: str | None = None, sites: Sites | None = None
) -> list[tuple[str, bool]]:
    """The repository paths a written path may stand for: (path, relative to the doc's folder). A
    link or document reference points where the doc's site resolves it (:mod:`.sites`)."""
    text = written.strip().split("#", 1)[0].split("?", 1)[0].rstrip("/")
    if not text or "://" in text:
        return []
    if sites is not None and source in ("link", "docref"):
        found = sites.resolve(doc, text).found
        if found is None:
            return []
        # written relative to the doc when it is the doc's folder joined with what is written
        return [(found, posixpath.normpath(posixpath.join(posixpath.dirname(doc), text)) == found)]
    if text.startswith("/"):
        return [(text.lstrip("/"), False)]
    out = [(posixpath.normpath(text.removeprefix("./")), False)]
    folder = posixpath.dirname(doc)
    if folder:
        out.append((posixpath.normpath(posixpath.join(folder, text)), True))
    return [(p, rel) for p, rel in out if p and not p.startswith("..")]


def _word(name: str) -> re.Pattern[str]:
    return re.compile(rf"(?<![\w$]){re.escape(name)}(?![\w$])")


@dataclass(slots=True)
class _Hit:
    doc: str
    line: int  # at the base
    taken: list[tuple[Taken, str, str | None]]  # what, as written in the doc, as it should read


def _hits(
    mentions: Sequence[_Mention],
    definitions: Sequence[Taken],
    paths: Mapping[str, Taken],
    existing: set[str],  # the base's files and folders
    sites: Sites | None = None,  # the base's docs sites
) -> list[_Hit]:
    """The base doc lines naming what is taken; a written path is the first of its forms the base
    has (the doc's folder first: ``guide.md`` in ``docs/`` is ``docs/guide.md`` when that exists)."""
    by_name = {t.name: t for t in definitions}
    found: dict[tuple[str, int], _Hit] = {}
    for m in mentions:
        picked: tuple[Taken, str, str | None] | None = None
        if m.kind == "mention" and m.target == "identifier":
            for segment in _SEGMENTS.split(m.name.removesuffix("()")):
                t = by_name.get(segment)
                if t is not None:
                    picked = (t, segment, t.became)
                    break
        else:  # a path mention or a Governs: target
            picked = _path_taken(m, paths, existing, sites)
        if picked is None:
            continue
        hit = found.setdefault((m.doc, m.line), _Hit(m.doc, m.line, []))
        if all(picked[0] != t for t, _, _ in hit.taken):
            hit.taken.append(picked)
    return list(found.values())


def _path_taken(
    m: _Mention, paths: Mapping[str, Taken], existing: set[str], sites: Sites | None = None
) -> tuple[Taken, str, str | None] | None:
    """What a path mention or ``Governs:`` target names that is taken, as written and as it should
    read; a bare file name (``setup.py``) is the reader's own file, not the repository's."""
    if m.kind == "mention" and bare_file_name(m.name, m.source):
        return None
    forms = (
        _path_forms(m.doc, m.name, m.source, sites)
        if m.kind == "mention"
        else [(m.name.strip().lstrip("/"), False)]
    )
    at_base = sorted((f for f in forms if f[0] in existing), key=lambda f: not f[1])
    for path, relative in at_base[:1]:
        t = paths.get(path)
        if t is None:
            continue
        written = m.name.strip().split("#", 1)[0].split("?", 1)[0].rstrip("/")
        new = None
        if t.became is not None:
            new = posixpath.relpath(t.became, posixpath.dirname(m.doc) or ".") if relative else t.became
            if written.startswith("/"):
                # root-relative: to the repository on GitHub; a site's root is another folder
                new = "/" + t.became if path == written.lstrip("/") else None
            elif written.startswith("./") and not new.startswith("."):
                new = "./" + new
        return (t, written, new)
    return None


def _moved_with_the_doc(item: tuple[Taken, str, str | None], head_doc: str) -> bool:
    """A relative path the doc wrote that still resolves from the doc's folder at the head: the doc
    moved with what it names (an example folder renamed whole, its README's ``./render.yaml``)."""
    t, written, _ = item
    if t.kind != "path" or t.became is None or written.startswith("/"):
        return False
    return posixpath.normpath(posixpath.join(posixpath.dirname(head_doc), written)) == t.became


def _outside_older_manuals(hits: list[_Hit], base_tree: Mapping[str, str]) -> tuple[list[_Hit], int]:
    """The hits not in a manual kept for an older release (``docs/v1/`` beside ``docs/v2/``), which
    describes that release on purpose, and how many were; the doc check folds those the same way."""
    docs = [p for p in base_tree if is_doc(p)]
    kept = [h for h in hits if versioned_manual(h.doc, docs) is None]
    return kept, len(hits) - len(kept)


@dataclass(slots=True)
class _DocDiff:
    """One doc's section of the diff: base line → head line, and each hunk's added lines."""

    path: str
    old_map: dict[int, int | None] = field(default_factory=dict)  # None: removed
    hunk_of: dict[int, int] = field(default_factory=dict)  # removed base line → hunk
    added: dict[int, list[tuple[int, str]]] = field(default_factory=dict)  # hunk → (head line, text)
    shifts: list[tuple[int, int]] = field(default_factory=list)  # (first base line after a hunk, delta)

    def head_line(self, line: int) -> int | None:
        if line in self.old_map:
            return self.old_map[line]
        delta = 0
        for after, d in self.shifts:
            if line >= after:
                delta = d
        return line + delta


def _doc_diffs(text: str) -> dict[str, _DocDiff]:
    """Per base path of a changed doc, its :class:`_DocDiff` (deleted docs are left out)."""
    out: dict[str, _DocDiff] = {}
    for section in re.split(r"(?m)^(?=diff --git )", text):
        parsed = parse_diff(section)
        if not parsed or parsed[0].status == "deleted":
            continue
        f = parsed[0]
        d = _DocDiff(f.path)
        hunk, old, new = -1, 0, 0
        for raw in section.splitlines():
            header = parse_hunk_header(raw)
            if header is not None:
                hunk += 1
                old, new = header.old_line, header.new_start
                d.added[hunk] = []
                continue
            if hunk < 0 or raw[:1] not in (" ", "+", "-"):
                continue
            if raw.startswith("+"):
                d.added[hunk].append((new, raw[1:]))
                new += 1
            elif raw.startswith("-"):
                d.old_map[old], d.hunk_of[old] = None, hunk
                old += 1
            else:
                d.old_map[old] = new
                old, new = old + 1, new + 1
            d.shifts = [s for s in d.shifts if s[0] != old] + [(old, new - old)]
        out[f.old_path or f.path] = d
    return out


# ----------------------------------------------------------------------------- findings


def _finding(doc: str, line: int, text: str, taken: list[tuple[Taken, str, str | None]]) -> Finding:
    parts = [f"`{written}`, which this pull request {t.what()}" for t, written, _ in taken]
    corrected = text
    for t, written, new in taken:
        if new is None:
            corrected = ""
            break
        corrected = (_word(written) if t.kind == "definition" else re.compile(re.escape(written))).sub(
            new.replace("\\", "\\\\"), corrected
        )
    message = f"{LEAD} {'; and '.join(parts)}: “{text.strip()}”."
    if corrected and corrected != text:
        message += f" Corrected line: “{corrected.strip()}”."
    elif any(t.kind == "definition" and new is None for t, _, new in taken):
        message += " Nothing in the code takes the name's place: the line needs rewriting or removing."
    return Finding(
        path=doc,
        start_line=line,
        end_line=line,
        severity=SEVERITY,
        category=CATEGORY,
        message=message,
        suggested_change=corrected if corrected and corrected != text else None,
    )


async def _sites_at(git_dir: Path, rev: str, tree: Mapping[str, str]) -> Sites:
    """The docs sites of the tree at ``rev`` (its files and folders), configurations read at ``rev``."""
    configs = await files_at(git_dir, rev, sorted(p for p in tree if is_site_config(p)))
    return Sites.of(tree, {p: t for p, t in configs.items() if t is not None}, _folders(set(tree)))


async def left_behind(
    conn: Conn,
    repository_id: UUID,
    git_dir: Path,
    base_sha: str,
    head_sha: str,
    files: Sequence[ChangedFile],
    diff_text: str,
) -> LeftBehind:
    """The doc lines at the base that this change makes wrong, as findings on the head's doc lines."""
    out = LeftBehind()
    base_tree = await _tree(git_dir, base_sha)
    definitions, paths = await taken_away(conn, repository_id, git_dir, base_tree, head_sha, files, out)
    out.taken = [*definitions, *paths.values()]
    out.ran = True
    if not out.taken:
        return out
    sites = await _sites_at(git_dir, base_sha, base_tree)
    hits = _hits(
        await _mentions(conn, repository_id, base_tree),
        definitions,
        paths,
        set(sites.files | sites.dirs),
        sites,
    )
    hits, out.older_manual = _outside_older_manuals(hits, base_tree)
    if not hits:
        return out
    docs = sorted({h.doc for h in hits})
    changed = _doc_diffs(diff_text)
    deleted = {f.path for f in files if f.status == "deleted"}
    base_texts = await files_at(git_dir, base_sha, docs)
    head_paths = {d: changed[d].path if d in changed else d for d in docs if d not in deleted}
    head_texts = await files_at(git_dir, head_sha, sorted(set(head_paths.values())))
    listed_in: dict[str, set[str]] = {}
    for hit in sorted(hits, key=lambda h: (h.doc, h.line)):
        base_text = base_texts.get(hit.doc) or ""
        lines = base_text.splitlines()
        if hit.doc not in head_paths or not 1 <= hit.line <= len(lines):
            continue
        text = lines[hit.line - 1]
        if hit.doc not in listed_in:  # the types the doc's examples declare that the code defines too
            listed_in[hit.doc] = await _defined_at_base(
                conn, repository_id, base_tree, example_containers(base_text)
            )
        listed = listed_in[hit.doc]
        head_path = head_paths[hit.doc]
        taken = [
            t
            for t in hit.taken
            if t[1] in text
            and not (t[0].kind == "definition" and example_defines(base_text, t[1], listed))
            and not _moved_with_the_doc(t, head_path)
        ]
        if not taken:
            continue
        head_lines = (head_texts.get(head_path) or "").splitlines()
        d = changed.get(hit.doc)
        at: int | None = hit.line if d is None else d.head_line(hit.line)
        if at is None and d is not None:  # the PR edits the line: fixed unless the name stays
            still = [
                (n, t) for n, t in d.added.get(d.hunk_of[hit.line], []) if any(w in t for _, w, _ in taken)
            ]
            if not still:
                out.fixed += 1
                continue
            at = still[0][0]
        if at is None or not 1 <= at <= len(head_lines):
            continue
        now = head_lines[at - 1]
        taken = [t for t in taken if t[1] in now]
        if not taken:
            out.fixed += 1
            continue
        if any(f.path == head_path and f.start_line == at for f in out.findings):
            continue  # two edited base lines whose names stay on one new line: one finding
        out.findings.append(_finding(head_path, at, now, taken))
        out.head_texts[head_path] = head_texts.get(head_path)
    return out


def is_left_behind(f: Finding) -> bool:
    """Whether ``f`` is one of this check's findings."""
    return f.category == CATEGORY and f.message.startswith(LEAD)


async def earlier_fingerprints(
    conn: Conn, repository_id: UUID, provider: str, number: int, head_sha: str
) -> set[str]:
    """Fingerprints of this check's findings on the pull request's earlier heads."""
    return await left_behind_fingerprints(conn, repository_id, provider, number, head_sha)


async def preview_left_behind(
    pool: Pool,
    tenant_id: UUID,
    repo: Repository,
    *,
    base: str | None,
    head: str | None,
    diff: str | None,
    policy: SourcePolicy,
    auth: GitAuth | None,
) -> list[Finding]:
    """The left-behind findings a review of ``base``..``head`` (or ``diff`` on ``base``) would
    have, after the base's ``review.ignore`` and ``review.min_severity`` (for MCP's
    ``review_context``; the change is opened as a review opens it)."""
    from palimpsest.index.context.change import opened_change
    from palimpsest.index.context.rules import read_rules, severe_enough

    async with opened_change(
        repo.clone_url, base or repo.default_branch, head, diff, auth=auth, policy=policy
    ) as change:
        rules = await read_rules(change.head.git_dir, change.base_sha)
        files = [f for f in change.pr.files if not rules.ignored(f.path)]
        async with tenant_tx(pool, tenant_id) as conn:
            found = await left_behind(
                conn,
                repo.repository_id,
                change.head.git_dir,
                change.pr.start or change.base_sha,
                change.head_sha,
                files,
                change.pr.text,
            )
    return [
        f
        for f in found.findings
        if severe_enough(f.severity, rules.min_severity) and not rules.ignored(f.path)
    ]
