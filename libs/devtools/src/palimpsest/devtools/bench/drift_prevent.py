"""``palimpsest bench drift-prevent --repo R``: would the review of the removing change have said so?

**Recall.** The truth is ``bench drift-history``'s (:func:`~palimpsest.devtools.bench.drift_history.mine_windows`,
git alone): drift maintainers fixed themselves, each window with the first-parent commit B that
removed the name or path. Each B is replayed as a pull request from its first parent through the
real reviewer (``palimpsest review``'s path: the base indexed through the bus, ``review.requested``
→ the reviewer service → the stored review, no model), and a window counts as found when the
review has a left-behind ``docs`` finding (:mod:`palimpsest.index.context.leftbehind`) on the window's
doc naming its subject. Each miss says the stage that lost it: ``not_reviewed`` (the review
failed), ``not_taken`` (the check did not see the change take the name away: still in the head's
code, or not a definition the index knows), ``no_line`` (taken away, but no finding on the doc
naming it: the mention was not extracted, or the line was elsewhere at B), ``not_at_base`` (the
doc did not name it at B's first parent: the line came later, from a branch merged after B, so no
review of B could flag it; ``recall_at_base`` leaves these out, ``recall`` keeps them).

**Precision.** A seeded sample of ordinary first-parent changes (code changed, not a removing
commit of the truth) is replayed the same way. ``--taking N`` of them are drawn among the changes
that take something away (delete or rename a code file, or remove a line that starts a
definition, read from git alone), since a change that takes nothing away cannot be flagged; every left-behind finding is judged against git at
the repository's head: *true* when no name it reports is in the head's code (``git grep -w`` over
the shared classifier's definition sites: code and examples, not docs, tests, config, generated
or vendored files) and no path it reports is in the head's tree (the drift was real, whether
or not a later commit fixed the doc line); *false* when a name or path is still there.
"""

from __future__ import annotations

import asyncio
import posixpath
import random
import re
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any
from uuid import UUID

from nats.aio.client import Client as NATS

from palimpsest.cli.commands_review import review_local
from palimpsest.cli.local import register_path
from palimpsest.cli.pipeline import index_and_wait
from palimpsest.core.db import Pool
from palimpsest.core.settings import BaseServiceSettings
from palimpsest.devtools.bench.drift_history import (
    Window,
    _grepped,
    _plain,
    code_paths,
    git_text,
    mine_windows,
)
from palimpsest.devtools.bench.replay import _scratch_repository
from palimpsest.devtools.scratch import scratch_pipeline
from palimpsest.index.codefacts import is_doc
from palimpsest.index.context.leftbehind import CATEGORY, LEAD

__all__ = ["judge_line", "run_bench_drift_prevent"]

# "`name`, which this pull request removes|renames to|moves to|deletes" (the finding's message)
_NAMED = re.compile(r"`([^`]+)`, which this pull request (removes|renames|moves|deletes)")


def flagged(review: dict[str, Any]) -> list[dict[str, Any]]:
    """The review's left-behind findings: doc, line, the names and paths they report."""
    out = []
    for f in review.get("findings") or []:
        if f.get("category") == CATEGORY and str(f.get("message") or "").startswith(LEAD):
            named = list(_NAMED.finditer(f["message"]))
            out.append(
                {
                    "doc": f["path"],
                    "line": f["start_line"],
                    "names": [m.group(1) for m in named],
                    "paths": [m.group(1) for m in named if m.group(2) in ("moves", "deletes")],
                    "message": f["message"],
                }
            )
    return out


def _matches(window: Window, names: list[str]) -> bool:
    wanted = {_plain(window.written), window.subject}
    for name in names:
        plain = _plain(name)
        if plain in wanted or plain.split(".")[-1] == window.subject or plain.rstrip("/") == window.subject:
            return True
    return False


def judge_line(
    repo: Path, head: str, names: list[str], tree: set[str], doc: str = "", paths: Sequence[str] = ()
) -> bool:
    """True when nothing the finding reports is at ``head`` (see the module text); a path is looked
    up from the folder of ``doc``, the doc the finding is on, and, when written with a folder, from
    the root (a bare file name the check reports only as a link, which is relative to its doc)."""
    for name in names:
        plain = _plain(name).lstrip("/")
        beside = posixpath.normpath(posixpath.join(posixpath.dirname(doc), _plain(name)))
        for path in {beside.rstrip("/")} | ({plain.rstrip("/")} if "/" in plain.strip("/") else set()):
            if path in tree or any(p.startswith(path + "/") for p in tree):
                return False
        last = re.split(r"\.|::|#|->", plain)[-1]
        if name not in paths and re.fullmatch(r"[A-Za-z_$][\w$]*", last):  # a file's name is no identifier
            found = git_text(repo, "grep", "-l", "-w", "-F", "-e", last, head, "--", ".", ok=(0, 1))
            if code_paths(_grepped(found, head)):
                return False
    return True


# a removed line that starts a definition in any common language (``-def f(``, ``-func (c *C) Do(``,
# ``-export function``, ``-pub struct``): how the sample finds changes that take something away, from
# git alone and apart from the check's own definitions
_REMOVED_DEFINITION = re.compile(
    r"^-[ \t]*(?:export[ \t]+|pub(?:\([\w ]+\))?[ \t]+|async[ \t]+|public[ \t]+|static[ \t]+)*"
    r"(?:def|class|func|fn|function|struct|enum|trait|interface|type|const|let|var|macro_rules!)[ \t(]",
    re.M,
)


def _takes_away(repo: Path, parent: str, sha: str) -> bool:
    """The change deletes or renames a code file, or removes a line that defines something."""
    status = git_text(repo, "diff", "--name-status", "-M", parent, sha)
    if any(line[:1] in ("D", "R") and code_paths([line.split("\t")[1]]) for line in status.splitlines()):
        return True
    code = code_paths(line.split("\t")[-1] for line in status.splitlines() if line[:1] != "D")
    if not code:
        return False
    removed = git_text(repo, "diff", "-U0", "--no-color", parent, sha, "--", *code)
    return bool(_REMOVED_DEFINITION.search(removed))


def _named_at_base(repo: Path, w: Window) -> bool:
    """Whether the window's doc names its subject at the removing commit's first parent: a doc line
    written later (on a branch merged after B) was not there for B's review to flag."""
    parents = git_text(repo, "rev-list", "--parents", "-n1", w.removed_in).split()[1:]
    if not parents:
        return False
    text = git_text(repo, "show", f"{parents[0]}:{w.doc}", ok=(0, 128))
    return w.written in text or w.subject in text


def _ordinary(
    repo: Path, order: list[str], removing: set[str], sample: int, seed: int, taking: int
) -> tuple[list[str], list[str]]:
    """A seeded sample of first-parent changes that change code and are not removing commits:
    ``taking`` of them among the changes that take something away (where a flag can fall at
    all), the rest drawn from every change; both lists, in that order."""
    pool = [c for c in order[:-1] if c not in removing]
    random.Random(seed).shuffle(pool)  # noqa: S311 - a reproducible sample, not security
    takes: list[str] = []
    plain: list[str] = []
    for sha in pool:
        if len(takes) >= taking and len(plain) >= sample - taking:
            break
        parents = git_text(repo, "rev-list", "--parents", "-n1", sha).split()[1:]
        if not parents:
            continue
        changed = git_text(repo, "diff", "--name-only", parents[0], sha).split("\n")
        if not any(p and not is_doc(p) for p in changed):
            continue
        if len(takes) < taking and _takes_away(repo, parents[0], sha):
            takes.append(sha)
        elif len(plain) < sample - taking:
            plain.append(sha)
    return takes, plain


async def _review(
    pool: Pool, nc: NATS, tenant: UUID, scratch: Path, repo: Path, sha: str, repo_id: UUID | None
) -> tuple[dict[str, Any], UUID, float]:
    parent = git_text(repo, "rev-list", "--parents", "-n1", sha).split()[1]
    git_text(scratch, "update-ref", "refs/heads/main", parent)
    repo_id = repo_id or await register_path(pool, tenant, scratch)
    started = time.perf_counter()
    await index_and_wait(pool, nc, tenant, repo_id, reason="push")
    review = await review_local(pool, nc, tenant, scratch, parent, sha, say=lambda _: None)
    return review, repo_id, time.perf_counter() - started


async def run_bench_drift_prevent(
    settings: BaseServiceSettings,
    *,
    repo: Path,
    commits: int,
    sample: int,
    seed: int,
    max_removing: int,
    taking: int = 0,
    say: Callable[[str], None] = lambda _: None,
) -> dict[str, Any]:
    repo = repo.resolve()
    say(f"mining drift windows from the last {commits} first-parent commits…")
    windows, order = await asyncio.to_thread(mine_windows, repo, commits=commits)
    head = order[0] if order else ""
    removing = list(dict.fromkeys(w.removed_in for w in windows))[:max_removing]
    takes, plain = await asyncio.to_thread(
        _ordinary, repo, order, set(removing), sample, seed, min(taking, sample)
    )
    ordinary = takes + plain
    tree = set(git_text(repo, "ls-tree", "-r", "--name-only", head).splitlines()) if head else set()
    position = {sha: i for i, sha in enumerate(order)}
    todo = sorted({*removing, *ordinary}, key=lambda s: -position.get(s, 0))  # oldest first
    say(
        f"{len(windows)} windows, {len(removing)} removing commits,"
        f" {len(ordinary)} ordinary changes ({len(takes)} taking something away)"
    )
    reviews: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="palimpsest-drift-prevent-") as tmp:
        root = Path(tmp)
        scratch = _scratch_repository(repo, root / "prevent.git")
        async with scratch_pipeline(settings, root / "home") as (_, _, infra, tenant):
            repo_id: UUID | None = None
            for i, sha in enumerate(todo, 1):
                say(f"[{i}/{len(todo)}] {sha[:12]}")
                review, repo_id, seconds = await _review(
                    infra.pool, infra.nc, tenant, scratch, repo, sha, repo_id
                )
                left = (review.get("sources") or {}).get("left_behind") or {}
                reviews[sha] = {
                    "state": review.get("state"),
                    "reason": review.get("reason"),
                    "flagged": flagged(review),
                    "left_behind": {k: v for k, v in left.items() if k != "fingerprints"},
                    "seconds": round(seconds, 1),
                }
    return _report(repo, head, windows, removing, (takes, plain), reviews, tree)


def _report(
    repo: Path,
    head: str,
    windows: list[Window],
    removing: list[str],
    sampled: tuple[list[str], list[str]],
    reviews: dict[str, dict[str, Any]],
    tree: set[str],
) -> dict[str, Any]:
    takes, plain = sampled
    ordinary = takes + plain
    truth = [w for w in windows if w.removed_in in reviews]
    found, misses = 0, Counter[str]()
    rows = []
    for w in truth:
        r = reviews[w.removed_in]
        hit = any(f["doc"] == w.doc and _matches(w, f["names"]) for f in r["flagged"])
        stage = None
        if not hit:
            taken = [str(n) for n in r["left_behind"].get("names", [])]
            if not _named_at_base(repo, w):
                stage = "not_at_base"
            elif r["state"] != "completed":
                stage = "not_reviewed"
            elif not any(
                _plain(n) in (w.subject, _plain(w.written)) or n.split("/")[-1] == w.subject for n in taken
            ):
                stage = "not_taken"
            else:
                stage = "no_line"
            misses[stage] += 1
        found += hit
        rows.append(
            {
                "doc": w.doc,
                "subject": w.subject,
                "kind": w.kind,
                "form": w.form,
                "removed_in": w.removed_in,
                "found": hit,
                "missed_at": stage,
            }
        )
    judged = []
    for sha in ordinary:
        for f in reviews.get(sha, {}).get("flagged", []):
            judged.append(
                {
                    **f,
                    "change": sha,
                    "takes_away": sha in takes,
                    "true": judge_line(repo, head, f["names"], tree, f["doc"], f.get("paths", ())),
                }
            )
    true = sum(1 for j in judged if j["true"])
    flagged_changes = {j["change"] for j in judged}
    return {
        "benchmark": "drift-prevent",
        "repository": repo.name,
        "commit": head,
        "windows": len(windows),
        "removing_commits": len(removing),
        "truth_lines": len(truth),
        "found": found,
        "recall": round(found / len(truth), 3) if truth else None,
        "truth_lines_at_base": (at_base := len(truth) - misses["not_at_base"]),
        "recall_at_base": round(found / at_base, 3) if at_base else None,
        "misses_by_stage": dict(misses.most_common()),
        "ordinary_changes": len(ordinary),
        "ordinary_taking_away": len(takes),
        "ordinary_changes_flagged": {
            "taking_away": sum(1 for c in takes if c in flagged_changes),
            "other": sum(1 for c in plain if c in flagged_changes),
        },
        "flagged_on_ordinary": len(judged),
        "true": true,
        "precision": round(true / len(judged), 3) if judged else None,
        "review_states": dict(Counter(str(r["state"]) for r in reviews.values())),
        "review_seconds": round(sum(r["seconds"] for r in reviews.values()), 1),
        "truth": rows,
        "judged": judged,
        "outside_truth_on_removing": [
            {
                **f,
                "change": sha,
                "true": judge_line(repo, head, f["names"], tree, f["doc"], f.get("paths", ())),
            }
            for sha in removing
            for f in reviews.get(sha, {}).get("flagged", [])
            if not any(w.removed_in == sha and w.doc == f["doc"] and _matches(w, f["names"]) for w in truth)
        ],
    }
