"""``palimpsest bench replay``: real history replayed as pull requests through the real reviewer.

For each sampled change (:mod:`palimpsest.devtools.bench.history`, oldest first, the union of every seed's
sample processed once) the product is made to know the repository exactly as it was at the
change's base — a scratch bare repository borrowing the clone's objects has its branch moved to
the base and an index is requested through the bus, so the chunker builds the base's snapshot and
the recency scanner scans the history up to it and no later — then the seed file's part of the
change is committed on top of the base and reviewed with ``palimpsest review``'s own path
(``review.requested`` → the reviewer service → the stored review). The context's files are
compared with the truth and with the baselines at the same number of files, and every truth file
the context lacks is explained from the stored review (dropped, ranked below the cut, never a
candidate) or from the snapshot (not indexed).
"""

from __future__ import annotations

import asyncio
import math
import os
import statistics
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
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
from palimpsest.devtools.bench import history as replay
from palimpsest.devtools.bench.history import Change, Truth, git, recall
from palimpsest.devtools.scratch import scratch_pipeline
from palimpsest.index.docstates import DEMOTED, doc_states

__all__ = ["STRATEGIES", "partial_commit", "run_bench_replay", "summarize"]

STRATEGIES = ("context", "mix", "cochange", "grep", "none")
KINDS = ("targets", "usages", "both")
_IDENTITY = {
    "GIT_AUTHOR_NAME": "replay",
    "GIT_AUTHOR_EMAIL": "replay@localhost",
    "GIT_COMMITTER_NAME": "replay",
    "GIT_COMMITTER_EMAIL": "replay@localhost",
}


async def run_bench_replay(
    settings: BaseServiceSettings,
    *,
    repo: Path,
    changes: int,
    seeds: Sequence[int],
    budget: int,
    signals: bool = False,
    say: Callable[[str], None] = lambda _: None,
) -> dict[str, Any]:
    repo = repo.resolve()
    branch = checked_out_branch(repo) or "HEAD"  # a detached checkout: its commit
    head = git(repo, "rev-parse", "--verify", f"{branch}^{{commit}}").strip()
    eligible = await asyncio.to_thread(replay.eligible_changes, repo, branch)
    samples = {seed: replay.sample_changes(eligible, changes, seed) for seed in seeds}
    union = sorted(
        {c.sha: c for picked in samples.values() for c in picked}.values(), key=lambda c: (c.when, c.sha)
    )
    say(f"{len(eligible)} eligible changes; replaying {len(union)} for seeds {list(seeds)}")
    records: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="palimpsest-replay-") as tmp, _budget_env(budget):
        root = Path(tmp)
        scratch = _scratch_repository(repo, root / "replay.git")
        async with scratch_pipeline(settings, root / "home") as (_, _, infra, tenant):
            for i, change in enumerate(union, 1):
                say(f"[{i}/{len(union)}] {change.sha[:12]}")
                records[change.sha] = await _replay_one(
                    infra.pool, infra.nc, tenant, repo, scratch, change, with_signals=signals
                )
    return {
        "benchmark": "replay",
        "repository": repo.name,
        "branch": branch,
        "commit": head,
        "eligible": len(eligible),
        "changes": changes,
        "seeds": list(seeds),
        "budget_tokens": budget,
        **summarize(records, samples),
        **(
            {"precision_fit": fit_precision(records.values()), "ablation": ablation(records.values())}
            if signals
            else {}
        ),
        "records": [records[c.sha] for c in union],
    }


@contextmanager
def _budget_env(budget: int) -> Iterator[None]:
    """The reviewer reads its budget from its settings (the environment), as in production."""
    key = "PALIMPSEST_REVIEW_BUDGET_TOKENS"
    old = os.environ.get(key)
    os.environ[key] = str(budget)
    try:
        yield
    finally:
        if old is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = old


def _scratch_repository(source: Path, path: Path) -> Path:
    """A bare repository that borrows ``source``'s objects; its ``main`` is moved per change."""
    git(path.parent, "init", "-q", "--bare", str(path))
    common = Path(git(source, "rev-parse", "--path-format=absolute", "--git-common-dir").strip())
    (path / "objects" / "info" / "alternates").write_text(f"{common / 'objects'}\n")
    git(path, "symbolic-ref", "HEAD", "refs/heads/main")
    return path


DEMOTED_DOC = frozenset(DEMOTED.values())  # the reasons a doc is left out of a context


async def _replay_one(
    pool: Pool, nc: NATS, tenant: UUID, repo: Path, scratch: Path, change: Change, *, with_signals: bool
) -> dict[str, Any]:
    git(scratch, "update-ref", "refs/heads/main", change.parent)
    repo_id = await register_path(pool, tenant, scratch)
    # the branch as it is now, and the history up to it: both are waited for
    built = (await index_and_wait(pool, nc, tenant, repo_id, reason="push", recency_required=True))[
        SnapshotBuilt
    ]
    truth = await asyncio.to_thread(replay.truth_of, repo, change)
    head = _seed_commit(scratch, change, truth.seed)
    async with tenant_tx(pool, tenant) as conn:  # the analyzer runs too: has it judged the docs yet?
        doc_rule = "age" if await doc_states(conn, repo_id) is None else "analysis"
    started = time.perf_counter()
    review = await review_local(pool, nc, tenant, scratch, change.parent, head, say=lambda _: None)
    wall_ms = (time.perf_counter() - started) * 1000
    files = _context_files(review, truth.seed)
    signals = await _signals(pool, tenant, repo_id, scratch, change, head) if with_signals else {}
    base = await asyncio.to_thread(replay.baselines, repo, change, truth, len(files))
    found = {"context": files, **base}
    warning = await _warning(pool, tenant, repo_id, repo, change, truth, review)
    indexed = await _indexed(pool, tenant, review.get("snapshot_id"), truth.both)
    timings = (review.get("sources") or {}).get("timings") or {}
    return {
        "change": change.sha,
        "base": change.parent,
        "seed": truth.seed,
        "seed_lines": truth.seed_lines,
        "names": truth.names,
        "usage_names": truth.usage_names,
        "targets": truth.targets,
        "usages": truth.usages,
        "files": len(files),
        "tokens": sum(int(c.get("tokens") or 0) for c in review.get("context", [])),
        "state": review.get("state"),
        "index": {"state": built.state, "reason": built.reason, "duration_s": built.duration_s},
        "snapshot_on_base": (review.get("sources") or {}).get("snapshot_on_base"),
        "assembly_ms": timings.get("total"),
        "review_ms": round(wall_ms, 1),
        "doc_rule": doc_rule,  # docs demoted by the newest analysis's states, or by age (none yet)
        "doc_demoted": _add_up(
            {d["reason"]: 1} for d in review.get("dropped", []) if d["reason"] in DEMOTED_DOC
        ),
        "recall": {name: _recalls(paths, truth) for name, paths in found.items()},
        "found_first": _found_first(review, truth),
        "source_tokens": _source_tokens(review),
        "missing": _missing(review, truth, files, indexed),
        "context": files,
        "reasons": _reasons(review, files),
        "baselines": base,
        "warning": warning,
        **({"signals": signals} if signals else {}),
    }


async def _warning(
    pool: Pool, tenant: UUID, repo_id: UUID, repo: Path, change: Change, truth: Truth, review: dict[str, Any]
) -> dict[str, Any]:
    """The co-change warning against the rest of the change: what the review listed ("usually
    changes with these, not in this pull request"), and at the same length the two baselines —
    raw ``git log`` co-change counts and the list the reviewer gave before issue 43 (partners by
    decayed evidence with 2+ shared commits, from the same index)."""
    from palimpsest.index.context.candidates import partners

    listed = [str(m["path"]) for m in review.get("cochange_missing") or [] if isinstance(m, dict)]
    n = len(listed)
    raw = await asyncio.to_thread(replay.cochange_partners, repo, change.parent, truth.seed)
    previous: list[str] = []
    if n and review.get("snapshot_id"):
        async with tenant_tx(pool, tenant) as conn:
            found = await partners(conn, repo_id, [truth.seed])
            cur = await conn.execute(
                "SELECT path FROM code_index_files WHERE snapshot_id = %s AND path = ANY(%s::text[])",
                (UUID(review["snapshot_id"]), [p.path for p in found]),
            )
            present = {row["path"] for row in await cur.fetchall()}
        previous = [p.path for p in found if p.path in present and p.commits >= 2][:n]
    rest = [p for s, p in change.files if s == "M" and p != truth.seed]
    targets = set(truth.targets)
    return {
        "listed": listed,
        "targets": len(targets),
        "hits": len(targets & set(listed)),
        "rest": len(rest),
        "rest_hits": len(set(rest) & set(listed)),
        "raw": raw[:n],
        "raw_hits": len(targets & set(raw[:n])),
        "previous": previous,
        "previous_hits": len(targets & set(previous)),
    }


def warning_summary(rows: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """The warning's pooled precision (hits / files listed) and recall (hits / target files), and
    the two baselines' precision at the same list length; ``rest``: precision against every file
    the change modified (docs and the like included), not only the replay's code targets."""
    got = [r["warning"] for r in rows if r.get("warning")]
    listed = sum(len(w["listed"]) for w in got)
    targets = sum(w["targets"] for w in got)

    def share(key: str, over: int) -> float | None:
        return round(sum(w[key] for w in got) / over, 4) if over else None

    return {
        "changes": len(got),
        "listed": listed,
        "list_length_mean": round(listed / len(got), 2) if got else None,
        "silent_changes": sum(1 for w in got if not w["listed"]),
        "precision": share("hits", listed),
        "recall": share("hits", targets),
        "precision_rest": share("rest_hits", listed),
        "raw_precision": share("raw_hits", listed),
        "previous_precision": share("previous_hits", listed),
    }


def _seed_commit(scratch: Path, change: Change, seed: str) -> str:
    """A commit on the base whose only change is the seed file's part of ``change``."""
    return partial_commit(scratch, change, [seed], f"replay of {change.sha}: {seed}")


def partial_commit(scratch: Path, change: Change, paths: Sequence[str], message: str) -> str:
    """A commit on the base whose only changes are ``paths``' parts of ``change`` (files it modified)."""
    index = {"GIT_INDEX_FILE": str(scratch / f"replay-index-{change.sha[:12]}")}
    git(scratch, "read-tree", change.parent, env=index)
    for path in paths:
        mode, _, rest = git(scratch, "ls-tree", change.sha, "--", path).partition(" ")
        blob = rest.split()[1]
        git(scratch, "update-index", "--cacheinfo", f"{mode},{blob},{path}", env=index)
    tree = git(scratch, "write-tree", env=index).strip()
    Path(index["GIT_INDEX_FILE"]).unlink(missing_ok=True)
    return git(scratch, "commit-tree", tree, "-p", change.parent, "-m", message, env=_IDENTITY).strip()


def _context_files(review: dict[str, Any], seed: str) -> list[str]:
    """The distinct files of the PR's own repository in the context, best-scored first."""
    items = [c for c in review.get("context", []) if not c.get("repository") and c["path"] != seed]
    ordered = sorted(items, key=lambda c: -float(c.get("score") or 0.0))
    return list(dict.fromkeys(c["path"] for c in ordered))


async def _signals(
    pool: Pool, tenant: UUID, repo_id: UUID, scratch: Path, change: Change, head: str
) -> dict[str, dict[str, int]]:
    """Every candidate file's rank in each source that found it (the context assembled once more,
    directly, for ``--signals``)."""
    from palimpsest.index.context.assemble import assemble_context

    diff = git(scratch, "diff", change.parent, head)
    at_head: dict[str, str | None] = {}
    for path in git(scratch, "diff", "--name-only", change.parent, head).splitlines():
        at_head[path] = git(scratch, "show", f"{head}:{path}")
    async with tenant_tx(pool, tenant) as conn:
        ctx = await assemble_context(conn, repo_id, diff, at_head, 8000, base_sha=change.parent)
    return ctx.file_signals


def _reasons(review: dict[str, Any], files: Sequence[str]) -> dict[str, str]:
    """Each context file's reason, as the stored review gives it."""
    out: dict[str, str] = {}
    for item in review.get("context", []):
        if item["path"] in files and not item.get("repository"):
            out.setdefault(item["path"], item.get("reason") or "")
    return out


async def _indexed(
    pool: Pool, tenant: UUID, snapshot_id: str | None, paths: Sequence[str]
) -> dict[str, str | None]:
    """Of ``paths``, those the snapshot has → None if indexed, else why the build skipped them."""
    if snapshot_id is None or not paths:
        return {}
    async with tenant_tx(pool, tenant) as conn:
        cur = await conn.execute(
            "SELECT path, skip_reason FROM code_index_files WHERE snapshot_id = %s AND path = ANY(%s::text[])",
            (UUID(snapshot_id), list(paths)),
        )
        return {row["path"]: row["skip_reason"] for row in await cur.fetchall()}


def _recalls(paths: Sequence[str], truth: Truth) -> dict[str, float | None]:
    return {
        "targets": recall(paths, truth.targets),
        "usages": recall(paths, truth.usages),
        "both": recall(paths, truth.both),
    }


def _found_first(review: dict[str, Any], truth: Truth) -> dict[str, int]:
    """Per source: the truth files whose best-scored context item came from it."""
    best: dict[str, tuple[float, str]] = {}
    wanted = set(truth.both)
    for item in review.get("context", []):
        path = item["path"]
        if path in wanted and not item.get("repository"):
            score = float(item.get("score") or 0.0)
            if path not in best or score > best[path][0]:
                best[path] = (score, item["source"])
    out: dict[str, int] = {}
    for _, source in best.values():
        out[source] = out.get(source, 0) + 1
    return out


def _source_tokens(review: dict[str, Any]) -> dict[str, int]:
    """Per source: the tokens its items spent in the context."""
    out: dict[str, int] = {}
    for item in review.get("context", []):
        out[item["source"]] = out.get(item["source"], 0) + int(item.get("tokens") or 0)
    return out


def _missing(
    review: dict[str, Any], truth: Truth, files: Sequence[str], indexed: dict[str, str | None]
) -> list[dict[str, Any]]:
    """Why each truth file is absent from the context."""
    have = set(files)
    dropped: dict[str, list[dict[str, Any]]] = {}
    for entry in review.get("dropped") or []:
        if entry.get("path") and not entry.get("repository"):
            dropped.setdefault(entry["path"], []).append(entry)
    partners = [str(m["path"]) for m in review.get("cochange_missing") or [] if isinstance(m, dict)]
    out: list[dict[str, Any]] = []
    for path in truth.both:
        if path in have:
            continue
        kind = "target" if path in truth.targets else "usage"
        record: dict[str, Any] = {"path": path, "kind": kind}
        if kind == "usage":
            record["names"] = truth.usage_by.get(path, [])
        if path not in indexed or indexed[path] is not None:
            record.update(why="not_indexed", reason=indexed.get(path) or "not in the snapshot")
        elif path in dropped:
            first = min(dropped[path], key=lambda d: d.get("rank") or 10**9)
            below = first["reason"] == "budget"
            record["why"] = "below_cut" if below else "dropped"
            record.update(reason=first["reason"], source=first.get("source"), rank=first.get("rank"))
        elif path in partners:
            record.update(
                why="never_candidate", note=f"co-change partner #{partners.index(path) + 1} not fetched"
            )
        else:
            record["why"] = "never_candidate"
        out.append(record)
    return out


# ------------------------------------------------------------------------------------- summary


def fit_precision(records: Iterable[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Per source, the curve ``a · (1 + rank) ** -k`` that best explains (maximum likelihood over
    a grid) which of its candidate files were truth files: how the reviewer's
    ``SOURCE_PRECISION`` is measured."""
    points: dict[str, list[tuple[int, bool]]] = {}
    for record in records:
        truth = {*record["targets"], *record["usages"]}
        for path, ranks in (record.get("signals") or {}).items():
            if path != record["seed"]:
                for source, rank in ranks.items():
                    points.setdefault(source, []).append((int(rank), path in truth))
    out: dict[str, dict[str, float]] = {}
    for source, xs in sorted(points.items()):
        best: tuple[float, float, float] | None = None
        for a in (i / 100 for i in range(10, 92, 2)):
            for k in (i / 20 for i in range(0, 30)):
                ll = sum(_log_likelihood(min(0.99, max(0.01, a * (1 + rank) ** -k)), hit) for rank, hit in xs)
                if best is None or ll > best[0]:
                    best = (ll, a, k)
        assert best is not None
        out[source] = {"a": round(best[1], 2), "k": round(best[2], 2), "candidates": len(xs)}
    return out


def ablation(records: Iterable[dict[str, Any]]) -> dict[str, float]:
    """Recall of targets and usages together at the context's file count when the files are ranked
    from every source (``all``) and from all but one: what each source adds to the ranking."""
    from palimpsest.index.context.assemble import SOURCE_PRECISION, file_chance

    rows = [r for r in records if r.get("signals") and (r["targets"] or r["usages"])]
    out: dict[str, float] = {}
    for left_out in ("all", *sorted(SOURCE_PRECISION)):
        values = []
        for record in rows:
            truth = {*record["targets"], *record["usages"]}
            chance: dict[str, float] = {}
            for path, ranks in record["signals"].items():
                p = file_chance({s: int(r) for s, r in ranks.items() if s != left_out})
                if path != record["seed"] and p > 0:
                    chance[path] = p
            top = sorted(chance, key=lambda p: (-chance[p], p))[: record["files"]]
            values.append(len(truth & set(top)) / len(truth))
        out[left_out if left_out == "all" else f"without_{left_out}"] = (
            round(statistics.fmean(values), 4) if values else 0.0
        )
    return out


def _log_likelihood(p: float, hit: bool) -> float:
    return math.log(p if hit else 1.0 - p)


def summarize(records: dict[str, dict[str, Any]], samples: dict[int, list[Change]]) -> dict[str, Any]:
    """Mean recall per seed and strategy, the mean over seeds with its spread, sources, reasons."""
    per_seed: dict[str, Any] = {}
    for seed, picked in samples.items():
        rows = [records[c.sha] for c in picked if c.sha in records]
        per_seed[str(seed)] = _seed_summary(rows)
    means: dict[str, dict[str, dict[str, float | None]]] = {}
    for strategy in STRATEGIES:
        means[strategy] = {}
        for kind in KINDS:
            values = [
                v["recall"][strategy][kind]
                for v in per_seed.values()
                if v["recall"][strategy][kind] is not None
            ]
            means[strategy][kind] = {
                "mean": round(statistics.fmean(values), 4) if values else None,
                "spread": round(max(values) - min(values), 4) if values else None,
            }
    rows = list(records.values())
    return {
        "warning": warning_summary(rows),
        "recall": means,
        "margin_vs_mix": _margin(per_seed, "mix"),
        "usage_share_of_grep": _usage_share(means),
        "per_seed": per_seed,
        "found_first": _add_up(r["found_first"] for r in rows),
        "source_tokens_mean": {
            source: round(n / len(rows), 1) for source, n in _add_up(r["source_tokens"] for r in rows).items()
        },
        "missing_why": _add_up({m["why"]: 1} for r in rows for m in r["missing"]),
        "files_mean": round(statistics.fmean(r["files"] for r in rows), 2) if rows else 0,
        "tokens_mean": round(statistics.fmean(r["tokens"] for r in rows), 1) if rows else 0,
        "assembly_ms": _percentiles([r["assembly_ms"] for r in rows if r["assembly_ms"] is not None]),
        "review_ms": _percentiles([r["review_ms"] for r in rows]),
        "doc_rule": _add_up({r["doc_rule"]: 1} for r in rows),
        "doc_demoted": _add_up(r["doc_demoted"] for r in rows),
    }


def _seed_summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    recall_means: dict[str, dict[str, float | None]] = {}
    for strategy in STRATEGIES:
        recall_means[strategy] = {}
        for kind in KINDS:
            values = [r["recall"][strategy][kind] for r in rows if r["recall"][strategy][kind] is not None]
            recall_means[strategy][kind] = round(statistics.fmean(values), 4) if values else None
    return {
        "changes": len(rows),
        "warning": warning_summary(rows),
        "recall": recall_means,
        "files_mean": round(statistics.fmean(r["files"] for r in rows), 2) if rows else 0,
        "tokens_mean": round(statistics.fmean(r["tokens"] for r in rows), 1) if rows else 0,
    }


def _margin(per_seed: dict[str, Any], other: str) -> dict[str, float | None]:
    """The context's lead over ``other`` on both-recall: mean over seeds and the smallest."""
    margins = [
        v["recall"]["context"]["both"] - v["recall"][other]["both"]
        for v in per_seed.values()
        if v["recall"]["context"]["both"] is not None and v["recall"][other]["both"] is not None
    ]
    if not margins:
        return {"mean": None, "min": None}
    return {"mean": round(statistics.fmean(margins), 4), "min": round(min(margins), 4)}


def _usage_share(means: dict[str, dict[str, dict[str, float | None]]]) -> float | None:
    ours, grep = means["context"]["usages"]["mean"], means["grep"]["usages"]["mean"]
    if ours is None or not grep:
        return None
    return round(ours / grep, 4)


def _add_up(parts: Any) -> dict[str, int]:
    out: dict[str, int] = {}
    for part in parts:
        for key, n in part.items():
            out[key] = out.get(key, 0) + n
    return dict(sorted(out.items(), key=lambda kv: -kv[1]))


def _percentiles(values: list[float]) -> dict[str, float]:
    if not values:
        return {}
    ordered = sorted(values)

    def pick(q: float) -> float:
        return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]

    return {"p50": round(pick(0.5), 1), "p95": round(pick(0.95), 1)}


def markdown_report(result: dict[str, Any]) -> str:
    """The missing-context report: the summary table, then every truth file the context lacked."""
    lines = [
        f"# Replay of {result['repository']} @ {result['commit'][:12]} ({result['branch']})",
        "",
        f"{len(result['records'])} changes, seeds {result['seeds']}, budget {result['budget_tokens']} tokens,"
        f" {result['files_mean']} files in the context on average.",
        "",
        "| strategy | targets | usages | both (± spread over seeds) |",
        "| --- | --- | --- | --- |",
    ]
    for strategy in STRATEGIES:
        r = result["recall"][strategy]
        lines.append(
            f"| {strategy} | {_fmt(r['targets']['mean'])} | {_fmt(r['usages']['mean'])} |"
            f" {_fmt(r['both']['mean'])} ± {_fmt(r['both']['spread'])} |"
        )
    w = result.get("warning") or {}
    lines += [
        "",
        'Co-change warning ("usually changes with these, not in this pull request"):'
        f" precision {_fmt(w.get('precision'))}, recall {_fmt(w.get('recall'))},"
        f" {w.get('list_length_mean')} files listed per change ({w.get('silent_changes')} silent);"
        f" at the same length raw co-change counts {_fmt(w.get('raw_precision'))},"
        f" the list before issue 43 {_fmt(w.get('previous_precision'))}.",
        "",
        f"Truth files found first, per source: {result['found_first']}",
        f"Tokens spent per change, per source: {result['source_tokens_mean']}",
        f"Why truth files were missing: {result['missing_why']}",
        "",
    ]
    lines += [
        "| change | seed | missing file | kind | why | source | rank | reason |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for record in result["records"]:
        for m in record["missing"]:
            lines.append(
                f"| {record['change'][:12]} | {record['seed']} | {m['path']} | {m['kind']} | {m['why']} |"
                f" {m.get('source') or ''} | {m.get('rank') or ''} | {m.get('reason') or ''} |"
            )
    return "\n".join(lines) + "\n"


def _fmt(value: float | None) -> str:
    return "—" if value is None else f"{value:.4f}"
