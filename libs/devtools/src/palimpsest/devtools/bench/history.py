"""Replaying real history as pull requests: the changes, the truth and the baselines.

Everything here reads git only — never the index — so the truth and the baselines are computed
independently of the product's retrieval (:mod:`palimpsest.devtools.bench.replay` drives the product).

* :func:`eligible_changes` — first-parent commits of a branch (a merge diffed against its first
  parent) touching 3..12 files of which at least two are modified code files;
* :func:`truth_of` — for one change: its *seed* (the modified code file with the most changed
  lines), *targets* (the other modified code files) and *usages* (files at the base that mention a
  definition the seed's diff adds, changes or removes: whole-word match of names of 4+ characters
  found in at most 15 files);
* :func:`baselines` — ``cochange`` (files sharing 2..30-file commits with the seed before the base,
  most first), ``grep`` (files containing the most changed definition names), ``mix`` (the two
  interleaved) and ``none``.
"""

from __future__ import annotations

import os
import random
import subprocess
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from palimpsest.chunker.parsing.chunks import analyze_file
from palimpsest.index.languages import PARSED_LANGUAGES, detect_language

__all__ = [
    "Change",
    "ReplayError",
    "Truth",
    "baselines",
    "eligible_changes",
    "git",
    "is_code",
    "sample_changes",
    "truth_of",
]

MIN_FILES, MAX_FILES = 3, 12
MIN_NAME = 4
MAX_NAME_FILES = 15
COCHANGE_COMMIT_FILES = (2, 30)


class ReplayError(RuntimeError):
    """A repository the replay cannot use (not git, no such branch, no eligible change)."""


def git(repo: Path, *args: str, input_text: str | None = None, env: dict[str, str] | None = None) -> str:
    proc = subprocess.run(
        ["git", "-C", str(repo), *args],
        capture_output=True,
        text=True,
        errors="replace",
        input=input_text,
        env={**os.environ, **env} if env else None,
        check=False,
        timeout=600,
    )
    if proc.returncode != 0:
        raise ReplayError(f"git {args[0]} failed: {proc.stderr.strip()[:300]}")
    return proc.stdout


def is_code(path: str) -> bool:
    return detect_language(path) in PARSED_LANGUAGES


@dataclass(frozen=True, slots=True)
class Change:
    sha: str
    parent: str
    when: int  # committer time, seconds
    files: tuple[tuple[str, str], ...]  # (status letter, path) against the first parent

    @property
    def modified_code(self) -> list[str]:
        return [p for s, p in self.files if s == "M" and is_code(p)]


def eligible_changes(repo: Path, branch: str) -> list[Change]:
    """Every eligible first-parent change of ``branch``, oldest first (one ``git log`` pass)."""
    out = git(
        repo,
        "log",
        "--first-parent",
        "--diff-merges=first-parent",
        "--name-status",
        "--no-renames",
        "--format=%x01%H %P %ct",
        branch,
        "--",
    )
    found: list[Change] = []
    for block in out.split("\x01")[1:]:
        head, _, body = block.partition("\n")
        parts = head.split()
        if len(parts) < 3:
            continue  # a root commit has no parent: nothing to diff against
        files = tuple(
            (line[0], line.split("\t", 1)[1])
            for line in body.splitlines()
            if "\t" in line and line[:1].isalpha()
        )
        change = Change(parts[0], parts[1], int(parts[-1]), files)
        if MIN_FILES <= len(files) <= MAX_FILES and len(change.modified_code) >= 2:
            found.append(change)
    found.reverse()
    return found


def sample_changes(eligible: Sequence[Change], count: int, seed: int) -> list[Change]:
    """``count`` changes drawn with ``seed``, oldest first."""
    picked = random.Random(seed).sample(list(eligible), min(count, len(eligible)))  # noqa: S311 - reproducible
    return sorted(picked, key=lambda c: (c.when, c.sha))


@dataclass(slots=True)
class Truth:
    seed: str
    seed_lines: int
    targets: list[str]
    usages: list[str]
    names: list[str]  # the definitions the seed's diff changes (all of them)
    usage_names: list[str]  # the ones that define usages (4+ characters, in at most 15 files)
    usage_by: dict[str, list[str]] = field(default_factory=dict)  # usage file -> names it mentions

    @property
    def both(self) -> list[str]:
        return list(dict.fromkeys([*self.targets, *self.usages]))


def truth_of(repo: Path, change: Change) -> Truth:
    """The seed, targets and usages of ``change`` (see the module docstring)."""
    code = change.modified_code
    lines = _changed_lines(repo, change.parent, change.sha, code)
    seed = max(code, key=lambda p: (lines.get(p, 0), p))
    targets = [p for p in code if p != seed]
    names = changed_definitions(repo, change.parent, change.sha, seed)
    counts = _grep_files(repo, change.parent, [n for n in names if len(n) >= MIN_NAME])
    usage_names = [n for n, files in counts.items() if 0 < len(files) <= MAX_NAME_FILES]
    usage_by: dict[str, list[str]] = {}
    for name in usage_names:
        for path in counts[name]:
            if path != seed:
                usage_by.setdefault(path, []).append(name)
    return Truth(seed, lines.get(seed, 0), targets, sorted(usage_by), names, usage_names, usage_by)


def _changed_lines(repo: Path, base: str, head: str, paths: Sequence[str]) -> dict[str, int]:
    out = git(repo, "diff", "--numstat", "--no-renames", base, head, "--", *paths)
    lines: dict[str, int] = {}
    for row in out.splitlines():
        added, removed, path = row.split("\t", 2)
        lines[path] = (int(added) if added.isdigit() else 0) + (int(removed) if removed.isdigit() else 0)
    return lines


def changed_definitions(repo: Path, base: str, head: str, path: str) -> list[str]:
    """Names of the definitions (tree-sitter) that the diff of ``path`` adds, changes or removes:
    those of the base whose span has a removed line, and those of the head with an added line."""
    old_lines, new_lines = _hunk_lines(git(repo, "diff", "-U0", "--no-renames", base, head, "--", path))
    names: dict[str, None] = {}
    for rev, touched in ((base, old_lines), (head, new_lines)):
        text = git(repo, "show", f"{rev}:{path}")
        for symbol in analyze_file(path, text, detect_language(path)).symbols:
            if any(symbol.start_line <= n <= symbol.end_line for n in touched):
                names.setdefault(symbol.name)
    return list(names)


def _hunk_lines(diff: str) -> tuple[set[int], set[int]]:
    old: set[int] = set()
    new: set[int] = set()
    for line in diff.splitlines():
        if not line.startswith("@@"):
            continue
        left, right = line.split()[1:3]
        for spans, into in ((left[1:], old), (right[1:], new)):
            start, _, count = spans.partition(",")
            n = int(count) if count else 1
            into.update(range(int(start), int(start) + n))
    return old, new


def _grep_files(repo: Path, rev: str, names: Iterable[str]) -> dict[str, list[str]]:
    """name → the files at ``rev`` that contain it as a whole word."""
    found: dict[str, list[str]] = {}
    for name in dict.fromkeys(names):
        proc = subprocess.run(
            ["git", "-C", str(repo), "grep", "-l", "-w", "-F", "-I", "-e", name, rev, "--"],
            capture_output=True,
            text=True,
            errors="replace",
            check=False,
            timeout=120,
        )
        found[name] = [line.split(":", 1)[1] for line in proc.stdout.splitlines() if ":" in line]
    return found


def baselines(repo: Path, change: Change, truth: Truth, n: int) -> dict[str, list[str]]:
    """The four baselines' files at ``n`` files (the seed excluded)."""
    cochange = cochange_partners(repo, change.parent, truth.seed)
    grep = grep_ranked(repo, change.parent, truth.names, truth.seed)
    return {
        "cochange": cochange[:n],
        "grep": grep[:n],
        "mix": interleave(cochange, grep)[:n],
        "none": [],
    }


def cochange_partners(repo: Path, base: str, seed: str | Sequence[str]) -> list[str]:
    """Files sharing 2..30-file commits with ``seed`` up to ``base``, most shared first (ties: the
    more recent shared commit first). Several seeds (a pull request's files): the counts summed
    over them, the seeds themselves left out."""
    seeds = [seed] if isinstance(seed, str) else list(seed)
    counts: Counter[str] = Counter()
    recent: dict[str, int] = {}
    for one in seeds:
        out = git(repo, "log", "--full-diff", "--name-only", "--no-renames", "--format=%x01", base, "--", one)
        for age, block in enumerate(out.split("\x01")[1:]):
            files = [line for line in block.splitlines() if line.strip()]
            if not COCHANGE_COMMIT_FILES[0] <= len(files) <= COCHANGE_COMMIT_FILES[1] or one not in files:
                continue
            for path in files:
                if path not in seeds:
                    counts[path] += 1
                    recent[path] = min(recent.get(path, age), age)
    present = set(git(repo, "ls-tree", "-r", "--name-only", base).splitlines())
    return sorted((p for p in counts if p in present), key=lambda p: (-counts[p], recent[p], p))


def grep_ranked(repo: Path, base: str, names: Sequence[str], seed: str) -> list[str]:
    """Files containing the most of the changed definition names (4+ characters), most first."""
    found = _grep_files(repo, base, [n for n in names if len(n) >= MIN_NAME])
    hits: Counter[str] = Counter()
    for files in found.values():
        for path in files:
            if path != seed:
                hits[path] += 1
    return sorted(hits, key=lambda p: (-hits[p], p))


def interleave(*lists: Sequence[str]) -> list[str]:
    out: dict[str, None] = {}
    for i in range(max((len(x) for x in lists), default=0)):
        for x in lists:
            if i < len(x):
                out.setdefault(x[i])
    return list(out)


def recall(found: Iterable[str], truth: Sequence[str]) -> float | None:
    if not truth:
        return None
    have = set(found)
    return sum(1 for t in truth if t in have) / len(truth)
