"""``palimpsest bench cochange-warning``: the co-change warning in the protocols of the literature.

"Usually changes with these, not in this pull request" is measured the way ROSE (Zimmermann et
al., TSE 2005) measured its suggestions, on real merged changes replayed through the real
reviewer:

* **error prevention** (``holdout``): the pull request is the change less one of its files,
  picked at random per seed; the expected warning is that file;
* **closure** (``complete``): the pull request is the whole change; the expected warning is
  nothing, so every file listed is a false alarm;
* optionally (``--less-two``) the change less two files, both expected.

A change counts when it modified 3-12 files, 3+ of them counted and every counted file modified
(not added or deleted); lockfiles, generated and vendored files, CI files, changelogs and the
like (:func:`palimpsest.index.cochange.excluded_kind`) are not counted — never held out, never
expected. The machinery is ``bench replay``'s (:mod:`palimpsest.devtools.bench.replay`): a
scratch repository borrowing the clone's objects has its branch moved to each change's base, the
base is indexed through the bus (the recency scanner reads the history up to it and no later),
the replayed pull request is committed on top and reviewed with ``palimpsest review``'s own path;
changes run one after another, oldest first.

Per replay the listed files are compared with the held-out files, and with two baselines cut to
the same length: raw co-change counts summed over the pull request's files (``git log``), and
the last stop's scoring (each partner's best pair, from the same index,
``missing_partners(combine=False)``). Pooled over both protocols: precision (hits / files
listed), recall (held-out files named / held out), silence on complete changes, files listed per
pull request.
"""

from __future__ import annotations

import asyncio
import random
import tempfile
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any
from uuid import UUID

from nats.aio.client import Client as NATS

from palimpsest.cli.commands_review import review_local
from palimpsest.cli.local import checked_out_branch, register_path
from palimpsest.cli.pipeline import index_and_wait
from palimpsest.core.db import Pool, tenant_tx
from palimpsest.core.events import SnapshotBuilt
from palimpsest.core.settings import BaseServiceSettings
from palimpsest.devtools.bench import history
from palimpsest.devtools.bench.history import MAX_FILES, Change, git
from palimpsest.devtools.bench.replay import _budget_env, _scratch_repository, partial_commit
from palimpsest.devtools.scratch import scratch_pipeline
from palimpsest.index.cochange import excluded_kind, missing_partners

__all__ = ["PROTOCOLS", "counted_files", "eligible", "held_out", "run_bench_cochange_warning", "summarize"]

PROTOCOLS = ("holdout", "complete", "holdout2")
MIN_COUNTED = 3
"""A change counts when it modified at least this many counted files (and at most ``MAX_FILES`` files)."""


def counted_files(change: Change) -> list[str] | None:
    """The change's counted files (not lockfiles, changelogs, build output and the like), or None
    when the change does not count: fewer than ``MIN_COUNTED``, or one of them added or deleted."""
    counted = [(s, p) for s, p in change.files if excluded_kind(p) is None]
    if len(counted) < MIN_COUNTED or len(change.files) > MAX_FILES or any(s != "M" for s, _ in counted):
        return None
    return [p for _, p in counted]


def eligible(changes: Iterable[Change]) -> list[Change]:
    """The changes that count (:func:`counted_files`), in their order."""
    return [c for c in changes if counted_files(c) is not None]


def held_out(change: Change, seed: int, how_many: int) -> list[str]:
    """The files held out of ``change`` for ``seed``: ``how_many`` of its counted files at random."""
    files = counted_files(change) or []
    draw = random.Random(f"{seed}:{change.sha}:{how_many}")  # noqa: S311 - reproducible, not secret
    return sorted(draw.sample(files, min(how_many, len(files) - 1)))


async def run_bench_cochange_warning(
    settings: BaseServiceSettings,
    *,
    repo: Path,
    changes: int,
    seeds: Sequence[int],
    less_two: bool = False,
    say: Callable[[str], None] = lambda _: None,
) -> dict[str, Any]:
    repo = repo.resolve()
    branch = checked_out_branch(repo) or "HEAD"  # a detached checkout: its commit
    head = git(repo, "rev-parse", "--verify", f"{branch}^{{commit}}").strip()
    counted = eligible(await asyncio.to_thread(history.eligible_changes, repo, branch))
    samples = {seed: history.sample_changes(counted, changes, seed) for seed in seeds}
    union = sorted(
        {c.sha: c for picked in samples.values() for c in picked}.values(), key=lambda c: (c.when, c.sha)
    )
    say(f"{len(counted)} eligible changes; replaying {len(union)} for seeds {list(seeds)}")
    protocols = PROTOCOLS if less_two else PROTOCOLS[:2]
    records: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="palimpsest-cochange-warning-") as tmp, _budget_env(8000):
        root = Path(tmp)
        scratch = _scratch_repository(repo, root / "replay.git")
        async with scratch_pipeline(settings, root / "home") as (_, _, infra, tenant):
            for i, change in enumerate(union, 1):
                say(f"[{i}/{len(union)}] {change.sha[:12]}")
                wanted = [
                    (seed, protocol)
                    for seed, picked in samples.items()
                    if any(c.sha == change.sha for c in picked)
                    for protocol in protocols
                ]
                records += await _replay_change(infra.pool, infra.nc, tenant, repo, scratch, change, wanted)
    return {
        "benchmark": "cochange-warning",
        "repository": repo.name,
        "branch": branch,
        "commit": head,
        "eligible": len(counted),
        "changes": changes,
        "seeds": list(seeds),
        "protocols": list(protocols),
        **summarize(records),
        "per_seed": {str(seed): summarize(r for r in records if r["seed"] == seed) for seed in seeds},
        "records": records,
    }


async def _replay_change(
    pool: Pool,
    nc: NATS,
    tenant: UUID,
    repo: Path,
    scratch: Path,
    change: Change,
    wanted: Sequence[tuple[int, str]],
) -> list[dict[str, Any]]:
    """Index the change's base once, then review each wanted (seed, protocol) replay of it."""
    git(scratch, "update-ref", "refs/heads/main", change.parent)
    repo_id = await register_path(pool, tenant, scratch)
    built = (await index_and_wait(pool, nc, tenant, repo_id, reason="push", recency_required=True))[
        SnapshotBuilt
    ]
    files = counted_files(change) or []
    done: dict[tuple[str, ...], dict[str, Any]] = {}  # the complete change is the same for every seed
    out: list[dict[str, Any]] = []
    for seed, protocol in wanted:
        held = [] if protocol == "complete" else held_out(change, seed, 2 if protocol == "holdout2" else 1)
        key = tuple(held)
        if key not in done:
            done[key] = await _review(pool, nc, tenant, repo, scratch, repo_id, change, files, held)
        out.append(
            {
                "change": change.sha,
                "base": change.parent,
                "seed": seed,
                "protocol": protocol,
                "index": built.state,
            }
            | done[key]
        )
    return out


async def _review(
    pool: Pool,
    nc: NATS,
    tenant: UUID,
    repo: Path,
    scratch: Path,
    repo_id: UUID,
    change: Change,
    files: Sequence[str],
    held: Sequence[str],
) -> dict[str, Any]:
    query = [p for p in files if p not in held]
    kept = [p for _, p in change.files if p not in held]  # lockfiles and the like stay in the pull request
    message = f"replay of {change.sha} less {', '.join(held) or 'nothing'}"
    head = partial_commit(scratch, change, kept, message)
    review = await review_local(pool, nc, tenant, scratch, change.parent, head, say=lambda _: None)
    listed = [str(m["path"]) for m in review.get("cochange_missing") or [] if isinstance(m, dict)]
    n = len(listed)
    raw = [
        p
        for p in await asyncio.to_thread(history.cochange_partners, repo, change.parent, query)
        if p not in kept and excluded_kind(p) is None
    ][:n]
    previous = await _previous(pool, tenant, repo_id, review.get("snapshot_id"), query, kept, n)
    expected = set(held)
    return {
        "held_out": list(held),
        "files": list(query),
        "state": review.get("state"),
        "listed": listed,
        "reasons": [m.get("reason") for m in review.get("cochange_missing") or [] if isinstance(m, dict)],
        "hits": len(expected & set(listed)),
        "raw": raw,
        "raw_hits": len(expected & set(raw)),
        "previous": previous,
        "previous_hits": len(expected & set(previous)),
    }


async def _previous(
    pool: Pool,
    tenant: UUID,
    repo_id: UUID,
    snapshot_id: str | None,
    query: Sequence[str],
    kept: Sequence[str],
    n: int,
) -> list[str]:
    """The last stop's list at length ``n``: each partner by its best pair, from the same index."""
    from palimpsest.index.context.candidates import history_sources
    from palimpsest.index.recency import cochange_evidence

    if not n or snapshot_id is None:
        return []
    async with tenant_tx(pool, tenant) as conn:
        evidence = await cochange_evidence(conn, repo_id, history_sources(query))
        cur = await conn.execute(
            "SELECT path FROM code_index_files WHERE snapshot_id = %s AND path = ANY(%s::text[])",
            (UUID(snapshot_id), list({e.partner for e in evidence})),
        )
        present = {row["path"] for row in await cur.fetchall()}
    found = missing_partners(
        evidence, touched=set(kept), present=present.__contains__, limit=n, min_confidence=0.0, combine=False
    )
    return [m.path for m in found]


def summarize(records: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """Pooled over the protocols: precision (hits / files listed), recall (held-out files named /
    held out), silence on complete changes, files listed per pull request; the baselines' precision
    and recall at the same list length."""
    rows = list(records)
    listed = sum(len(r["listed"]) for r in rows)
    expected = sum(len(r["held_out"]) for r in rows)
    complete = [r for r in rows if r["protocol"] == "complete"]

    def share(key: str, over: int) -> float | None:
        return round(sum(r[key] for r in rows) / over, 4) if over else None

    return {
        "replays": len(rows),
        "by_protocol": {p: sum(1 for r in rows if r["protocol"] == p) for p in PROTOCOLS},
        "listed": listed,
        "listed_per_pr": round(listed / len(rows), 2) if rows else None,
        "precision": share("hits", listed),
        "recall": share("hits", expected),
        "silent_complete": round(sum(1 for r in complete if not r["listed"]) / len(complete), 4)
        if complete
        else None,
        "false_alarms_complete": sum(len(r["listed"]) for r in complete),
        "raw": {"precision": share("raw_hits", listed), "recall": share("raw_hits", expected)},
        "previous": {"precision": share("previous_hits", listed), "recall": share("previous_hits", expected)},
    }
