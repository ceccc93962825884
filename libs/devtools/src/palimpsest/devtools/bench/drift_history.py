"""``palimpsest bench drift-history --repo R``: the check's recall on drift maintainers fixed themselves.

**Truth from git alone**, with none of the check's code (plain ``git`` and the regular expressions
below). A *window* is a name or path that:

1. a first-parent doc commit F (a doc, not a changelog) removed from a doc line, without the
   doc naming it anywhere after F;
2. at F's parent P the product's code no longer has (``git grep -w`` finds no occurrence in a
   file the shared classifier calls a definition site, :func:`code_paths`; a path is not in P's
   tree);
3. an earlier first-parent commit B removed from the code (the newest pickaxe hit before P for a
   name, the newest delete or rename for a path), while before B the code *defined* it (a
   definition keyword or an assignment, not a mere mention) or the path existed;
4. the doc at P still names, and does not define in its own example.

The drift was there from B to F (the window [B, F)). The bench picks up to ``--at`` commits inside
the windows that cover the most of them, checks each out in a scratch clone, indexes and analyses
it through the bus like any repository, and reports per window whether the check found it (a
finding on the doc naming it), whether its evidence names B as ``removed_in``, recall per form
(inline code, role, directive, fence, link, prose path), every miss with the rule or stage that
lost it (the check's ``--explain`` path), and the findings at those commits that are not in the
truth, to be judged by hand for precision.
"""

from __future__ import annotations

import posixpath
import re
import subprocess
import tempfile
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from palimpsest.cli.output import progress
from palimpsest.cli.session import Session
from palimpsest.core.settings import BaseServiceSettings
from palimpsest.core.wire import parse_hunk_header
from palimpsest.index.codefacts import is_definition_site, is_doc, is_generated_source, is_history_doc

__all__ = [
    "Window",
    "code_paths",
    "first_code_change",
    "keyword_argument",
    "mine_windows",
    "own_example",
    "pick_commits",
    "run_bench_drift_history",
]

MAX_EXPLAINED = 12  # misses per analysed commit followed through the check (each reads the history)
MAX_CANDIDATES_PER_COMMIT = 40  # a doc rewrite removes many names: the first ones are enough
_SPAN = re.compile(r"(:[\w:+-]+:)?`+([^`\n]+?)`+")
_LINK = re.compile(r"\]\(\s*<?([^)\s>#]+)")
_PROSE_PATH = re.compile(r"(?<![\w/.:@`(])((?:\.{1,2}/)?[\w-][\w.-]*(?:/[\w.-]+)+)(?![\w/`])")
_NAME = re.compile(r"^[A-Za-z_$][\w$]*(?:(?:\.|::|#)[A-Za-z_$][\w$]*)*(?:\(\))?$")
_FENCE = re.compile(r"^\s*(`{3,}|~{3,})")
_COMMIT_LINE = "commit "


@dataclass(slots=True)
class Window:
    doc: str
    subject: str  # the name (its last segment) or the path, as the truth knows it
    written: str  # as the doc wrote it
    kind: str  # name | path
    form: str  # code | role | directive | fence | link | prose
    line: int  # the line at P
    fixed_in: str  # F
    parent: str  # P
    removed_in: str  # B
    start: int = 0  # first-parent positions (0 = newest): B, F
    end: int = 0
    found_at: list[str] = field(default_factory=list)
    as_manual: bool = False  # found as part of a manual for an older release, reported as a whole
    evidence_ok: bool = False
    missed_by: str | None = None


def git_text(repo: Path, *args: str, ok: tuple[int, ...] = (0,)) -> str:
    """``git ARGS`` in ``repo``: its standard output; RuntimeError on an exit code not in ``ok``."""
    proc = subprocess.run(
        ["git", *args], cwd=repo, capture_output=True, text=True, errors="replace", check=False
    )
    if proc.returncode not in ok:
        raise RuntimeError(f"git {args[0]} failed: {proc.stderr.strip()[:300]}")
    return proc.stdout


# ----------------------------------------------------------------------------- truth


def mine_windows(repo: Path, *, commits: int, rev: str = "HEAD") -> tuple[list[Window], list[str]]:
    """The drift windows of the last ``commits`` first-parent commits, and that commit list (newest first)."""
    order = git_text(repo, "rev-list", "--first-parent", f"--max-count={commits}", rev).split()
    position = {sha: i for i, sha in enumerate(order)}
    windows: list[Window] = []
    for fix in order:
        parents = git_text(repo, "rev-list", "--parents", "-n1", fix).split()[1:]
        if not parents:
            continue  # the root commit
        parent = parents[0]
        touched = git_text(repo, "diff", "--no-renames", "--name-only", "--diff-filter=M", parent, fix).split(
            "\n"
        )
        for doc in (d for d in touched if d and is_doc(d) and not is_history_doc(d)):
            try:
                windows += _windows_of(repo, doc, fix, parent, position)
            except RuntimeError:  # a blob the clone lacks (a mirror without its largest files)
                continue
    return windows, order


def _windows_of(repo: Path, doc: str, fix: str, parent: str, position: dict[str, int]) -> list[Window]:
    before = git_text(repo, "show", f"{parent}:{doc}", ok=(0, 128))
    after = git_text(repo, "show", f"{fix}:{doc}", ok=(0, 128))
    removed = _removed_lines(repo, parent, fix, doc)
    out: list[Window] = []
    seen: set[str] = set()
    lines = before.splitlines()
    fenced = _fenced_lines(lines)
    for number in removed:
        if number > len(lines):
            continue
        for written, subject, kind, form in _subjects(lines[number - 1], number in fenced):
            if subject in seen or len(seen) >= MAX_CANDIDATES_PER_COMMIT or subject in after:
                continue
            seen.add(subject)
            try:
                window = _window(
                    repo, doc, written, subject, kind, form, number, fix, parent, before, position
                )
            except RuntimeError:  # an object the clone cannot read (a partial mirror): no truth from it
                continue
            if window is not None:
                out.append(window)
    return out


def _removed_lines(repo: Path, parent: str, fix: str, doc: str) -> list[int]:
    """The line numbers (in the parent's doc) that ``fix`` removed or changed."""
    out: list[int] = []
    for line in git_text(repo, "diff", "-U0", parent, fix, "--", doc).splitlines():
        hunk = parse_hunk_header(line)
        if hunk is not None:
            out.extend(range(hunk.old_start, hunk.old_start + hunk.old_count))
    return out


def _fenced_lines(lines: list[str]) -> set[int]:
    inside, fence, out = False, "", set()
    for number, line in enumerate(lines, start=1):
        opened = _FENCE.match(line)
        if inside:
            if opened and opened.group(1)[0] == fence[0]:
                inside = False
            else:
                out.add(number)
        elif opened:
            inside, fence = True, opened.group(1)
    return out


def _subjects(line: str, fenced: bool) -> list[tuple[str, str, str, str]]:
    """(as written, subject, name|path, form) of what a doc line names."""
    if fenced:
        tokens = re.findall(r"[A-Za-z_][\w]{5,}", line)
        return [(t, t, "name", "fence") for t in tokens if "_" in t or re.search(r"[a-z][A-Z]", t)]
    out = _spans(line)
    if re.match(r"^\s*(?:\.\.\s+[\w:-]+::|:::\s)", line):
        found = re.search(r"::\s+~?([A-Za-z_][\w.]*)", line)
        if found:
            out.append((found.group(1), found.group(1).split(".")[-1], "name", "directive"))
    for link in _LINK.finditer(line):
        if not re.match(r"^[a-zA-Z][\w+.-]*:", link.group(1)):
            out.append((link.group(1), link.group(1), "path", "link"))
    for prose in _PROSE_PATH.finditer(_SPAN.sub(" ", re.sub(r"\]\([^)]*\)", "]", line))):
        if "." in prose.group(1).rsplit("/", 1)[-1] or prose.group(1).endswith("/"):
            out.append((prose.group(1), prose.group(1).strip("/"), "path", "prose"))
    return out


def _spans(line: str) -> list[tuple[str, str, str, str]]:
    """What the inline code and roles of a line name."""
    out: list[tuple[str, str, str, str]] = []
    for span in _SPAN.finditer(line):
        text = span.group(2).strip()
        target = re.search(r"<([^<>]+)>$", text)
        text = (target.group(1) if target else text).lstrip("~!")
        form = "role" if span.group(1) else "code"
        if "/" in text and " " not in text:
            out.append((text, text.strip("/"), "path", form))
        elif _NAME.match(text):
            last = re.split(r"\.|::|#", text.removesuffix("()"))[-1]
            if len(last) >= 4:
                out.append((text, last, "name", form))
    return out


def _window(
    repo: Path,
    doc: str,
    written: str,
    subject: str,
    kind: str,
    form: str,
    line: int,
    fix: str,
    parent: str,
    before: str,
    position: dict[str, int],
) -> Window | None:
    if kind == "name":
        if _grep_ok(repo, subject, parent):
            return None  # the code still has it at P
        removal = first_code_change(repo, f"-S{subject}", parent)
        if not removal or not _defined_before(repo, subject, removal):
            return None
        if own_example(subject, before):
            return None  # the doc's own example defines it
    else:
        path = _resolved_path(repo, doc, subject, parent, linked=form == "link")
        if path is None:
            return None
        removal = git_text(
            repo, "log", "--first-parent", "--format=%H", "-n1", "--diff-filter=DR", parent, "--", path
        ).strip()
        if not removal:
            return None
        subject = path
    if removal not in position:
        return None  # removed before the commits looked at
    return Window(
        doc,
        subject,
        written,
        kind,
        form,
        line,
        fix,
        parent,
        removal,
        start=position[removal],
        end=position[fix],
    )


def own_example(name: str, doc: str) -> bool:
    """Whether the doc's own example defines ``name``: a definition keyword (``def``, ``fn``,
    ``let mut``, ``const``…) or an assignment at the start of a line (``deserialized = …``; a
    keyword argument on a line of its own, ending in a comma, passes a value to an API instead)."""
    n = re.escape(name)
    keyword = r"\b(?:def|class|function|func|fn|let|const|var|val|struct|enum|type)\s+(?:mut\s+)?"
    assignment = rf"^[ \t>.]*{n}\s*(?::[^=\n]*)?=(?!=)[^\n]*?[^,\s][ \t]*$"
    return re.search(rf"{keyword}{n}\b|{assignment}", doc, re.M) is not None


def code_paths(paths: Iterable[str]) -> list[str]:
    """The product's code among ``paths``, as the shared classifier has it (the files whose
    definitions a doc may name, :func:`is_definition_site`): not docs, tests, test data, config,
    generated or vendored files."""
    return [path for path in paths if path and is_definition_site(path)]


def _grepped(output: str, rev: str) -> list[str]:
    """The paths of ``git grep -l <rev>`` output (``<rev>:<path>`` lines)."""
    return [line.removeprefix(f"{rev}:") for line in output.splitlines()]


def first_code_change(repo: Path, pickaxe: str, rev: str) -> str:
    """The newest first-parent commit up to ``rev`` whose pickaxe (``-S<name>`` or ``-G<re>``)
    matches in the product's code (:func:`code_paths`), or ``""``."""
    command = ["git", "log", "--first-parent", f"--format={_COMMIT_LINE}%H", "--name-only", pickaxe, rev]
    with subprocess.Popen(  # read as it comes: the first match is enough
        [*command, "--", "."],
        cwd=repo,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        errors="replace",
    ) as proc:
        assert proc.stdout is not None
        commit = ""
        for raw in proc.stdout:
            line = raw.rstrip("\n")
            if line.startswith(_COMMIT_LINE):
                commit = line.removeprefix(_COMMIT_LINE)
            elif commit and line and code_paths([line]):
                proc.kill()
                return commit
    return ""


def _grep_ok(repo: Path, name: str, commit: str) -> bool:
    """Whether the product's code at ``commit`` holds ``name`` as a whole word; generator output
    kept beside a package's code counts (:func:`is_generated_source`: urfave/cli's
    ``altsrc/flag_generated.go`` still defines ``NewIntFlag`` after a commit moved it there)."""
    found = git_text(repo, "grep", "-l", "-w", "-F", "-e", name, commit, "--", ".", ok=(0, 1))
    paths = _grepped(found, commit)
    return bool(code_paths(paths)) or any(is_generated_source(p) for p in paths)


def _defined_before(repo: Path, name: str, removal: str) -> bool:
    """Whether the product's code (:func:`code_paths`) at ``removal``'s parent *defines* ``name``.
    A keyword argument of a call (``zip_safe=False,`` inside ``setup(…)``) defines nothing of the
    repository's: it passes a value to the callee's parameter, the callee's name (setuptools' here);
    a parameter of the repository's own function is defined in its signature (``def f(\n    x=1,``)."""
    n = re.escape(name)
    pattern = (
        rf"(\b(def|class|function|func|fn|fun|struct|enum|interface|trait|type|const|let|var|val|module)"
        rf"[[:space:]]+([A-Za-z_$][A-Za-z0-9_$]*\.)?\*?{n}\b)|(^[[:space:]]*(self\.)?{n}[[:space:]]*(:[^=]*)?=[^=])"
        rf"|(^[[:space:]]*['\"]?{n}['\"]?[[:space:]]*:)|(\b{n}[[:space:]]*\([^)]*\)[[:space:]]*\{{)"
    )
    parent = f"{removal}^1"
    found = git_text(repo, "grep", "-n", "-z", "-E", "-e", pattern, parent, "--", ".", ok=(0, 1))
    hits: dict[str, list[int]] = defaultdict(list)
    for record in found.splitlines():
        fields = record.split("\0")
        if len(fields) >= 2 and fields[1].isdigit():
            hits[fields[0].removeprefix(f"{parent}:")].append(int(fields[1]))
    keyword = re.compile(rf"^\s*{n}\s*=(?!=)")
    for path in code_paths(hits):
        lines = git_text(repo, "show", f"{parent}:{path}", ok=(0, 128)).split("\n")
        for number in hits[path]:
            line = lines[number - 1] if 0 < number <= len(lines) else ""
            if not (keyword.match(line) and keyword_argument(lines, number)):
                return True
    return False


_SIGNATURE = re.compile(r"\b(?:def|fn|func|fun|function|class|constructor)\b[^()]*$")


def keyword_argument(lines: list[str], number: int) -> bool:
    """Whether line ``number`` (1-based) of a source file stands inside the parentheses of a call
    (a keyword argument on a line of its own), not of a definition's signature (``def f(``,
    ``function f(``) nor at a statement's top level."""
    depth = 0
    for index in range(number - 2, max(-1, number - 202), -1):  # the lines above, innermost out
        text = re.sub(r"""(["'])(?:\\.|(?!\1).)*\1""", "", lines[index].split("#", 1)[0])
        for at in range(len(text) - 1, -1, -1):
            c = text[at]
            if c in ")]}":
                depth += 1
            elif c in "([{":
                if depth:
                    depth -= 1
                    continue
                return c == "(" and not _SIGNATURE.search(text[:at])
    return False


def _resolved_path(repo: Path, doc: str, written: str, parent: str, *, linked: bool) -> str | None:
    """The repository path ``written`` names that is missing at ``parent`` (relative to the doc
    first, then to the root; a link only relative to its doc), or None when it exists or never did."""
    here = posixpath.dirname(doc)
    forms = [written.lstrip("/")] if written.startswith("/") else [posixpath.join(here, written), written]
    if linked and not written.startswith("/"):
        forms = forms[:1]
    for candidate in (posixpath.normpath(f) for f in forms):
        if candidate.startswith(("..", "/")) or candidate == ".":
            continue
        if git_text(repo, "ls-tree", "--name-only", parent, "--", candidate, ok=(0, 128)).strip():
            return None  # it exists at P
        if git_text(
            repo, "log", "--first-parent", "--format=%H", "-n1", parent, "--", candidate, ok=(0, 128)
        ).strip():
            return candidate  # it existed once
    return None


# ----------------------------------------------------------------------------- commits to analyse


def pick_commits(windows: list[Window], order: list[str], at: int) -> list[str]:
    """Up to ``at`` commits inside the windows (a window is open from B to F's parent) that cover
    the most windows, greedily."""
    left = list(windows)
    picked: list[str] = []
    while left and len(picked) < at:
        counts: Counter[int] = Counter()
        for w in left:
            counts.update(range(w.end + 1, w.start + 1))  # positions F-1 … B (newest first)
        if not counts:
            break
        best, _ = max(counts.items(), key=lambda item: (item[1], -item[0]))
        picked.append(order[best])
        left = [w for w in left if not (w.end < best <= w.start)]
    return picked


# ----------------------------------------------------------------------------- the run


async def run_bench_drift_history(
    sess: Session,
    settings: BaseServiceSettings,
    repo: Path,
    *,
    commits: int,
    at: int,
    timeout_s: float = 7200.0,
) -> dict[str, Any]:
    from palimpsest.cli.commands_analyze import explain_claim, run_analysis
    from palimpsest.devtools.bench.analyze import link_check, unresolved_links

    progress(f"mining drift windows from the last {commits} first-parent commits…")
    windows, order = mine_windows(repo, commits=commits)
    picked = pick_commits(windows, order, at)
    outside: list[dict[str, Any]] = []
    links: list[dict[str, Any]] = []
    index = {sha: i for i, sha in enumerate(order)}
    for commit in picked:
        position = index[commit]
        inside = [w for w in windows if w.end < position <= w.start]
        progress(f"analysing {commit[:12]} ({len(inside)} open windows) through the bus…")
        with tempfile.TemporaryDirectory(prefix="palimpsest-drift-history-") as scratch:
            clone = Path(scratch) / repo.name
            git_text(Path(scratch), "clone", "--quiet", "--shared", str(repo), str(clone))
            git_text(clone, "checkout", "--quiet", "-B", "drift-history", commit)  # a branch: indexed as any
            view = await run_analysis(sess, settings, str(clone), reindex=True, timeout_s=timeout_s)
            links.append(
                {"at": commit, **link_check(clone, commit, view["doc_findings"] + unresolved_links(view), [])}
            )
            drift = [f for f in view["doc_findings"] if f["kind"] != "stale_doc"]
            matched: set[int] = set()
            explained = 0
            for w in inside:
                hits = [i for i, f in enumerate(drift) if f["doc"] == w.doc and _names(f["claim"], w)]
                manual = [
                    i
                    for i, f in enumerate(drift)
                    if f["kind"] == "versioned_manual" and w.doc.startswith(f["doc"] + "/")
                ]
                if not hits and manual:
                    hits, w.as_manual = manual, True
                if hits:
                    matched.update(hits)
                    w.found_at.append(commit)
                    w.evidence_ok = w.evidence_ok or any(
                        (drift[i].get("evidence") or {}).get("removed_in_commit") == w.removed_in
                        for i in hits
                    )
                elif w.missed_by is None and explained < MAX_EXPLAINED:
                    explained += 1
                    steps = await explain_claim(sess, settings, str(clone), w.written, timeout_s=timeout_s)
                    own = [s for s in steps if s["doc"] == w.doc]
                    w.missed_by = own[-1]["rule"] if own else "extract (no mention recorded)"
            outside += [{**f, "at": commit} for i, f in enumerate(drift) if i not in matched]
    return _report(repo, order, windows, picked, outside, links)


def _names(claim: str, window: Window) -> bool:
    """Whether a finding's claim is the window's subject (``./x.md`` and ``x.md`` are one target)."""
    shown = _plain(claim.strip("`"))
    return shown in (_plain(window.written), window.subject) or shown.split(".")[-1] == window.subject


def _plain(written: str) -> str:
    return written.removeprefix("./").removesuffix("()")


def _report(
    repo: Path,
    order: list[str],
    windows: list[Window],
    picked: list[str],
    outside: list[dict[str, Any]],
    links: list[dict[str, Any]],
) -> dict[str, Any]:
    covered = [w for w in windows if any(w.end < order.index(c) <= w.start for c in picked)]
    found = [w for w in covered if w.found_at]
    by_form: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for w in covered:
        by_form[w.form][1] += 1
        by_form[w.form][0] += bool(w.found_at)
    misses = Counter(w.missed_by for w in covered if not w.found_at)
    return {
        "repository": str(repo),
        "head": order[0] if order else None,
        "commits_walked": len(order),
        "windows": len(windows),
        "analysed_at": picked,
        "windows_covered": len(covered),
        "found": len(found),
        "recall": round(len(found) / len(covered), 3) if covered else None,
        "found_as_manual": sum(1 for w in found if w.as_manual),
        "evidence_names_removal": sum(1 for w in found if w.evidence_ok),
        "by_form": {form: {"found": n, "of": total} for form, (n, total) in sorted(by_form.items())},
        "misses_by_rule": dict(misses.most_common()),
        "truth": [asdict(w) for w in covered],
        "not_in_truth": outside[:300],
        "not_in_truth_count": len(outside),
        # the yardstick at the same commits: a plain link check's broken relative links, and how
        # many of them the check reported (bench/links.py, written apart from the check)
        "link_check": {
            "broken": sum(c["broken"] for c in links),
            "reported_by_check": sum(c["reported_by_check"] for c in links),
            "per_commit": links,
        },
    }
