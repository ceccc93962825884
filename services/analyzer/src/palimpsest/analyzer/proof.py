"""From claims to proved findings: open the history, walk it once, date when each doc named it.

Runs between the read transaction and the model call, with no transaction open. Returns the
judged check and what it cost (``facts.doc_check`` of the analysis): the history's status,
commits walked, blobs read, seconds, and how many claims stayed unverified (named in docs, never
in the code by history).
"""

from __future__ import annotations

import contextlib
import logging
import posixpath
import re
import time
from collections import defaultdict
from collections.abc import Awaitable, Callable
from dataclasses import replace
from pathlib import Path
from typing import Any, Literal, Required, TypedDict
from uuid import UUID

from palimpsest.analyzer import rules as R
from palimpsest.analyzer.doccheck import (
    Claim,
    Claims,
    Judged,
    foreign_away,
    judge,
    reopen_weak_uses,
    settle_weak_uses,
    used_in_docs,
    used_names,
    weak_support,
)
from palimpsest.analyzer.history import (
    DEFINITIONS_CACHE,
    History,
    LineOrigin,
    first_mentions,
    read_history,
)
from palimpsest.analyzer.snapshot import SnapshotIndex
from palimpsest.analyzer.source import open_history
from palimpsest.core.db import Conn
from palimpsest.core.git import GitAuth, decode_path, read_blobs, run_git, stream_git
from palimpsest.core.git_errors import GitError
from palimpsest.core.sources import SourcePolicy
from palimpsest.index.codefacts import is_doc, is_history_doc, is_history_file, is_vendored
from palimpsest.index.codefacts.dependencies import is_manifest, read_manifests
from palimpsest.index.codefacts.settings import (
    EnvName,
    SettingsModule,
    env_names,
    read_settings,
    settings_classes,
)

log = logging.getLogger(__name__)

__all__ = ["AuthProvider", "prove", "prove_in"]

AuthProvider = Callable[[Conn, UUID], Awaitable[GitAuth | None]]

MAX_CLASSES = 200
_SEGMENTS = re.compile(r"\.|::|#|->")
_CLASS_LINE = re.compile(r"class\s+(\w+)\s*(?:\(([^)]*)\)|extends\s+([\w.]+))?")
_CLASS_FILES = (
    "*.py",
    "*.pyi",
    "*.js",
    "*.mjs",
    "*.ts",
    "*.tsx",
    "*.java",
    "*.kt",
    "*.scala",
    "*.rb",
    "*.php",
)
_PYTHON = (".py", ".pyi")
_PLAIN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
MIN_COPIED_LINE = 16  # characters: a shorter line (a heading, a bare name) is no evidence of a copy
MAX_COPIED_GREPS = 100  # doc lines written after the removal, looked up in the docs of that time
MAX_WEAK_DOCS = 200  # docs read again for identifiers used only in tests, examples, fixtures
MAX_SETTINGS_FILES = 500  # Python files read for the settings classes of a snapshot
MAX_MANIFESTS = 300  # manifests read for the packages a repository declares
MAX_SETTINGS_ROUNDS = 4  # … a subclass of a subclass of a class declaring settings
_NO_MEMBERS = frozenset({"object", "ABC", "Protocol", "Generic", "NamedTuple", "TypedDict", "Enum"})


class UnresolvedLink(TypedDict):
    """A link whose target no history shows existed (not drift, shown apart)."""

    doc: str
    line: int
    claim: str
    detail: str | None


class DocCheck(TypedDict, total=False):
    """What the documentation check read and found beside its findings (``facts.doc_check``):
    the first four keys always; the history's cost once it was read; a reason when it could not
    be; the unverified claims when listed; the unresolved links when there are any."""

    history: Required[Literal["not_needed", "read", "unavailable"]]
    claims: Required[int]
    proved: int
    unverified_count: int
    docs: Required[dict[str, int]]  # docs by state: drift, verified, reference, unverified_old, …
    rules: Required[dict[str, int]]  # rule name → mentions it decided (palimpsest.analyzer.rules)
    seconds: float
    reason: str
    renames: str
    commits: int
    blobs_read: int
    bytes_read: int
    complete: bool
    definitions: dict[str, int]
    definitions_cached: int
    unverified: list[dict[str, Any]]  # doccheck.Judged.unverified
    unresolved_link_count: int
    unresolved_links: list[UnresolvedLink]


async def prove(
    claims: Claims,
    index: SnapshotIndex,
    *,
    clone_url: str,
    branch: str,
    policy: SourcePolicy,
    auth: GitAuth | None = None,
    list_unverified: bool = False,
    timeout_s: float = 1800.0,
) -> tuple[Judged, DocCheck]:
    """The judged documentation check of ``index`` and its cost (``facts.doc_check``)."""
    if not claims.claims:
        judged = judge(claims, None, list_unverified=list_unverified)
        return judged, {
            "history": "not_needed",
            "claims": 0,
            "docs": judged.state_counts(),
            "rules": judged.rules,
        }
    async with open_history(
        clone_url, branch, index.commit_sha, policy=policy, auth=auth, timeout_s=timeout_s
    ) as source:
        if source.git_dir is None:
            judged = judge(claims, None, list_unverified=list_unverified)
            return judged, _stats(claims, judged, None, 0.0, reason=source.reason)
        return await prove_in(source.git_dir, claims, index.commit_sha, list_unverified, timeout_s)


async def prove_in(
    git_dir: Path, claims: Claims, commit: str, list_unverified: bool = False, timeout_s: float = 1800.0
) -> tuple[Judged, DocCheck]:
    """The check against the history of ``commit`` in ``git_dir`` (also used by the benchmark)."""
    started = time.monotonic()
    try:
        head_paths, links, python, manifests = await _tree_paths(git_dir, commit, timeout_s)
        claims = _linked_away(claims, head_paths, links)
        claims = await _foreign_away(git_dir, commit, claims, head_paths, manifests, timeout_s)
        claims = await _inherited_away(git_dir, commit, claims, timeout_s)
        claims = await _settings_away(git_dir, commit, claims, python, timeout_s)
        claims = await _weak_uses_reopened(git_dir, commit, claims, head_paths, timeout_s)
        history = await _read_history(git_dir, commit, claims.identifiers, head_paths, timeout_s)
        claims = settle_weak_uses(claims, history)
    except GitError as exc:
        log.warning("reading history for the documentation check failed: %s", exc)
        judged = judge(claims, None, list_unverified=list_unverified)
        return judged, _stats(claims, judged, None, time.monotonic() - started, reason=str(exc))
    first = judge(claims, history)
    proved = {(f.doc, f.line) for f in first.findings if f.evidence is not None}
    named = [(c.mention.doc, c.mention.line, c.mention.name) for c in claims.claims]
    lines = await first_mentions(git_dir, commit, (n for n in named if (n[0], n[1]) in proved))
    copied = await _copied_lines(git_dir, commit, first, lines, timeout_s)
    judged = judge(claims, history, lines=lines, copied=copied, list_unverified=list_unverified)
    return judged, _stats(claims, judged, history, time.monotonic() - started)


async def _copied_lines(
    git_dir: Path, commit: str, first: Judged, lines: dict[tuple[str, int], LineOrigin], timeout_s: float
) -> dict[tuple[str, int], str]:
    """Doc lines that named an identifier only after its definition was gone, but that a doc of
    the repository (not a changelog) held word for word at the last commit where it existed:
    copied in or restored from the repository's own docs, so about this code -- ``(doc, line)``
    → that doc. A line reworded since (a page rewritten around a plugin that took the name over)
    is not a copy."""
    out: dict[tuple[str, int], str] = {}
    texts: dict[str, list[str]] = {}
    asked = 0
    for f in first.findings:
        e, origin = f.evidence, lines.get((f.doc, f.line))
        if f.kind != "missing_identifier" or e is None or origin is None or origin.when < e.removed_at:
            continue
        if asked >= MAX_COPIED_GREPS:
            break
        asked += 1
        if f.doc not in texts:
            try:
                raw = await run_git(["show", f"{commit}:{f.doc}"], cwd=git_dir, timeout_s=timeout_s)
            except GitError:
                raw = b""
            texts[f.doc] = raw.decode("utf-8", "replace").split("\n")
        written = texts[f.doc][f.line - 1].strip() if 0 < f.line <= len(texts[f.doc]) else ""
        if len(written) < MIN_COPIED_LINE:
            continue
        args = ["grep", "-l", "-I", "-F", "-e", written, e.last_seen_commit, "--"]
        try:
            found = await run_git(args, cwd=git_dir, timeout_s=timeout_s)
        except GitError:  # exit 1: no file held it
            continue
        prefix = f"{e.last_seen_commit}:"
        docs = [
            p
            for p in (line.removeprefix(prefix) for line in found.decode("utf-8", "replace").splitlines())
            if is_doc(p) and not is_history_doc(p)
        ]
        if docs:
            out[(f.doc, f.line)] = f.doc if f.doc in docs else docs[0]
    return out


async def _read_history(
    git_dir: Path, commit: str, identifiers: set[str], head_paths: set[str], timeout_s: float
) -> History:
    """The history pass; when git cannot read an old blob it needs to compare for renames (a
    partial clone whose promisor is gone, a damaged pack), again with exact renames only, which
    need no blob: removals keep their proof, only a rename with edits is seen as delete + add."""
    try:
        return await read_history(
            git_dir, commit, identifiers, head_paths=head_paths, timeout_s=timeout_s, cache=DEFINITIONS_CACHE
        )
    except GitError as exc:
        if "unable to read" not in str(exc):
            raise
        log.warning("history with inexact renames failed (%s); reading it with exact renames only", exc)
    history = await read_history(
        git_dir,
        commit,
        identifiers,
        head_paths=head_paths,
        exact_renames=True,
        timeout_s=timeout_s,
        cache=DEFINITIONS_CACHE,
    )
    history.renames = "exact"
    return history


async def _tree_paths(
    git_dir: Path, commit: str, timeout_s: float
) -> tuple[set[str], dict[str, str], dict[str, str], dict[str, str]]:
    """Every path of the snapshot's tree, its symbolic links with their targets, its Python
    files' blobs (path → blob id) and its manifests' (:func:`is_manifest`, not vendored)."""
    out = await run_git(["ls-tree", "-r", "-z", commit], cwd=git_dir, timeout_s=timeout_s)
    paths: set[str] = set()
    python: dict[str, str] = {}
    manifests: dict[str, str] = {}
    links: dict[str, list[str]] = defaultdict(list)  # blob id → link paths (one target, many links)
    for record in out.split(b"\0"):
        if not record:
            continue
        meta, _, raw = record.partition(b"\t")
        path = decode_path(raw)
        paths.add(path)
        mode, _, rest = meta.partition(b" ")
        if mode == b"120000":
            links[rest.split(b" ")[-1].decode("ascii")].append(path)
        elif mode.startswith(b"100") and path.endswith(_PYTHON):
            python[path] = rest.split(b" ")[-1].decode("ascii")
        elif mode.startswith(b"100") and is_manifest(path) and not is_vendored(path):
            manifests[path] = rest.split(b" ")[-1].decode("ascii")
    targets: dict[str, str] = {}
    if links:
        async for sha, content in read_blobs(git_dir, list(links), missing_ok=True, lazy_fetch=False):
            for link in links[sha]:
                targets[link] = content.decode("utf-8", "replace")
    return paths, targets, python, manifests


async def _foreign_away(
    git_dir: Path,
    commit: str,
    claims: Claims,
    paths: set[str],
    manifests: dict[str, str],
    timeout_s: float,
) -> Claims:
    """Drop the identifiers the doc's code ties to the standard library, a declared dependency or
    another module (:func:`palimpsest.analyzer.doccheck.foreign_away`): the manifests at
    ``commit`` read with their formats' parsers, then the texts of the docs with such claims."""
    docs = sorted({c.mention.doc for c in claims.claims if c.kind == "missing_identifier"})
    if not docs:
        return claims
    by_blob: dict[str, list[str]] = defaultdict(list)
    for path in sorted(manifests, key=lambda p: (p.count("/"), p))[:MAX_MANIFESTS]:
        by_blob[manifests[path]].append(path)
    contents: dict[str, bytes] = {}
    async for sha, content in read_blobs(git_dir, list(by_blob), missing_ok=True, lazy_fetch=False):
        for path in by_blob[sha]:
            contents[path] = content
    texts: dict[str, str] = {}
    for doc in docs[:MAX_WEAK_DOCS]:
        with contextlib.suppress(GitError):
            raw = await run_git(["show", f"{commit}:{doc}"], cwd=git_dir, timeout_s=timeout_s)
            texts[doc] = raw.decode("utf-8", "replace")
    return foreign_away(claims, read_manifests(contents), texts, paths)


def _through_links(path: str, links: dict[str, str], tree: set[str], dirs: set[str]) -> bool:
    """Whether ``path`` exists once symbolic links on its way are followed (a few hops at most)."""
    for _ in range(8):
        parts = path.split("/")
        for i in range(1, len(parts) + 1):
            prefix = "/".join(parts[:i])
            if prefix in links:
                target = posixpath.normpath(posixpath.join(posixpath.dirname(prefix), links[prefix]))
                path = "/".join([target, *parts[i:]])
                break
        else:
            return False
        if not path.startswith("..") and (path in tree or path in dirs):
            return True
    return False


def _linked_away(claims: Claims, tree: set[str], links: dict[str, str]) -> Claims:
    """The claims left once paths reached through symbolic links are resolved."""
    if not links:
        return claims
    dirs = {"/".join(p.split("/")[:i]) for p in tree for i in range(1, p.count("/") + 1)}
    kept = []
    for c in claims.claims:
        if c.kind != "missing_identifier" and any(_through_links(p, links, tree, dirs) for p in c.lookups):
            claims.decided(c.mention, R.PATH_THROUGH_LINK)
        else:
            kept.append(c)
    return replace(claims, claims=kept)


async def _inherited_away(git_dir: Path, commit: str, claims: Claims, timeout_s: float) -> Claims:
    """Drop ``Class.member`` claims whose class still exists and extends a class from outside
    the repository (``class Selector(parsel.Selector)``): the member may well be inherited."""
    owners: dict[str, list[Claim]] = defaultdict(list)
    for claim in claims.claims:
        segments = [s for s in _SEGMENTS.split(claim.mention.name) if s]
        if claim.kind == "missing_identifier" and len(segments) >= 2 and segments[-2] in claims.symbols:
            owners[segments[-2]].append(claim)
    if not owners:
        return claims
    foreign = await _foreign_bases(git_dir, commit, sorted(owners)[:MAX_CLASSES], claims.symbols, timeout_s)
    dropped = {id(c) for name in foreign for c in owners[name]}
    for claim in claims.claims:
        if id(claim) in dropped:
            claims.decided(claim.mention, R.IDENTIFIER_INHERITED)
    return replace(claims, claims=[c for c in claims.claims if id(c) not in dropped])


async def _settings_away(
    git_dir: Path, commit: str, claims: Claims, python: dict[str, str], timeout_s: float
) -> Claims:
    """Drop identifier claims that name an environment variable a settings class of the snapshot
    reads (``PALIMPSEST_HOME``: the field ``home`` under ``env_prefix="PALIMPSEST_"``), the code's
    name though the code never writes it (:mod:`palimpsest.index.codefacts.settings`)."""
    wanted = {
        c.lookups[0] for c in claims.claims if c.kind == "missing_identifier" and _PLAIN.match(c.lookups[0])
    }
    if not wanted or not python:
        return claims
    names = {e.name for e in await _settings_names(git_dir, commit, python, timeout_s)}
    kept = []
    for claim in claims.claims:
        if claim.kind == "missing_identifier" and claim.lookups[0] in names:
            claims.decided(claim.mention, R.IDENTIFIER_SETTING)
        else:
            kept.append(claim)
    # in place: a copy would collect the later steps of an explained claim (``--explain``) apart
    claims.claims = kept
    return claims


async def _settings_names(
    git_dir: Path, commit: str, python: dict[str, str], timeout_s: float
) -> list[EnvName]:
    """The environment variables the settings classes at ``commit`` read: the files declaring
    settings (or a prefix), then, a few rounds, the files naming a settings class found so far
    (a subclass in another module), read together."""
    modules: dict[str, SettingsModule] = {}
    grep: list[str] = ["-e", "BaseSettings", "-e", "SettingsConfigDict", "-e", "env_prefix"]
    for _ in range(MAX_SETTINGS_ROUNDS):
        found = [
            p for p in await _grep_files(git_dir, commit, grep, timeout_s) if p in python and p not in modules
        ]
        found = found[: max(0, MAX_SETTINGS_FILES - len(modules))]
        if not found:
            break
        by_blob: dict[str, list[str]] = defaultdict(list)
        for path in found:
            by_blob[python[path]].append(path)
        async for sha, content in read_blobs(git_dir, list(by_blob), missing_ok=True, lazy_fetch=False):
            for path in by_blob[sha]:
                modules[path] = read_settings(content)
        for path in found:
            modules.setdefault(path, SettingsModule())  # a blob the clone lacks
        classes = sorted(settings_classes(modules.values()))
        grep = [arg for name in classes for arg in ("-e", name)]
        if not grep:
            break
    return env_names(modules.values())


async def _weak_uses_reopened(
    git_dir: Path, commit: str, claims: Claims, paths: set[str], timeout_s: float
) -> Claims:
    """Reopen the identifiers the snapshot's code uses only in tests, fixtures or
    examples (:func:`palimpsest.analyzer.doccheck.reopen_weak_uses`): one ``git grep`` for every
    used name, then the texts of the docs naming those."""
    names = used_names(claims)
    if not names:
        return claims
    uses = await _uses(git_dir, commit, names, timeout_s)
    support = {
        name: tuple(sorted(files))
        for name, files in uses.items()
        if files and all(weak_support(f) for f in files)
    }
    docs = sorted(used_in_docs(claims, set(support)))
    texts: dict[str, str] = {}
    for doc in docs[:MAX_WEAK_DOCS]:
        with contextlib.suppress(GitError):
            raw = await run_git(["show", f"{commit}:{doc}"], cwd=git_dir, timeout_s=timeout_s)
            texts[doc] = raw.decode("utf-8", "replace")
    return reopen_weak_uses(claims, support, texts, paths)


async def _uses(git_dir: Path, commit: str, names: set[str], timeout_s: float) -> dict[str, set[str]]:
    """The files (not docs or changelogs) at ``commit`` that hold each of ``names`` as a whole word."""
    out: dict[str, set[str]] = defaultdict(set)
    args = ["grep", "-I", "-o", "-w", "-F", "-z", "-f", "-", commit, "--"]
    prefix = f"{commit}:".encode()
    pending = b""
    stdin = "\n".join(sorted(names)).encode() + b"\n"
    try:
        async with contextlib.aclosing(
            stream_git(args, cwd=git_dir, timeout_s=timeout_s, stdin=stdin)
        ) as chunks:
            async for chunk in chunks:
                pending += chunk
                *lines, pending = pending.split(b"\n")
                for line in lines:
                    raw, _, match = line.partition(b"\0")
                    path = decode_path(raw.removeprefix(prefix))
                    if not is_doc(path) and not is_history_file(path):
                        out[match.decode("utf-8", "replace")].add(path)
    except GitError:  # git grep exits 1 when nothing matches
        pass
    return out


async def _grep_files(git_dir: Path, commit: str, patterns: list[str], timeout_s: float) -> list[str]:
    """The Python files at ``commit`` that hold any of the fixed words ``patterns`` (``-e w``…)."""
    args = ["grep", "-l", "-I", "-w", "-F", *patterns, commit, "--", *(f"*{s}" for s in _PYTHON)]
    try:
        out = await run_git(args, cwd=git_dir, timeout_s=timeout_s)
    except GitError:  # git grep exits 1 when nothing matches
        return []
    prefix = f"{commit}:"
    return [line.removeprefix(prefix) for line in out.decode("utf-8", "replace").splitlines()]


async def _foreign_bases(
    git_dir: Path, commit: str, classes: list[str], symbols: set[str], timeout_s: float
) -> set[str]:
    """Which of ``classes`` are declared (at ``commit``) with a base class defined elsewhere."""
    names = "|".join(re.escape(c) for c in classes)
    args = ["grep", "-h", "-I", "-E", "-e", f"class[[:space:]]+({names})([^[:alnum:]_]|$)", commit]
    try:
        out = await run_git([*args, "--", *_CLASS_FILES], cwd=git_dir, timeout_s=timeout_s)
    except GitError:  # git grep exits 1 when nothing matches
        return set()
    foreign: set[str] = set()
    for line in out.decode("utf-8", "replace").splitlines():
        found = _CLASS_LINE.search(line)
        if found is None or found.group(1) not in classes:
            continue
        written = found.group(2) or found.group(3) or ""
        bases = [b.strip().split(".")[-1].split("[")[0] for b in written.split(",")]
        if any(b.isidentifier() and b not in symbols and b not in _NO_MEMBERS for b in bases):
            foreign.add(found.group(1))
    return foreign


def _stats(
    claims: Claims, judged: Judged, history: History | None, seconds: float, *, reason: str | None = None
) -> DocCheck:
    stats: DocCheck = {
        "history": "read" if history is not None else "unavailable",
        "claims": len(claims.claims),
        "proved": sum(1 for f in judged.findings if f.evidence is not None),
        "unverified_count": judged.unverified_count,
        "docs": judged.state_counts(),  # docs by state: drift, verified, reference, unverified_old, …
        "rules": judged.rules,  # rule name → mentions it decided (palimpsest.analyzer.rules)
        "seconds": round(seconds, 3),
    }
    if reason:
        stats["reason"] = reason[:300]
    if history is not None:
        stats["renames"] = history.renames
        stats["commits"] = history.commits
        stats["blobs_read"] = history.blobs_read
        stats["bytes_read"] = history.bytes_read
        stats["complete"] = history.complete
        # old blobs by how their definitions were read ({tree_sitter: n, regex: m}), and how
        # many of them the definitions cache already had
        stats["definitions"] = dict(sorted(history.definitions.items()))
        stats["definitions_cached"] = history.definitions_cached
    if judged.unverified:
        stats["unverified"] = judged.unverified
    # links no history shows existed: not drift, off the findings list, shown apart
    stats["unresolved_link_count"] = judged.unresolved_count
    if judged.unresolved_links:
        stats["unresolved_links"] = [
            {"doc": f.doc, "line": f.line, "claim": f.claim, "detail": f.detail}
            for f in judged.unresolved_links
        ]
    return stats
