"""After the soak: wait for quiescence, then check every promise and list what does not hold.

Read as the database owner (across tenants, like an auditor) and from the stream itself:

* every delivery was answered, and every distinct delivery id has exactly one accepted record;
* every event an accepted delivery emitted is on the stream exactly once, and the outbox is empty;
* every event on the stream was applied exactly once by each consumer subscribed to it (inbox);
* each repository's newest ready snapshot is its head commit, with the same paths and blob SHAs;
* each requested review (repository, head) exists once, completed, and was posted exactly once
  (or not at all when a later request's review was posted first); each pull request has one
  summary comment, edited in place, naming its newest requested head; no finding posted twice;
* no dead letters; nothing of one tenant is readable with the other's credentials (API and RLS);
* no secret (webhook secret, access token, API or admin token) in any log, event or argv.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
import psycopg
from nats.js.errors import ServiceUnavailableError
from psycopg.rows import dict_row

from palimpsest.cli.processes import Supervisor
from palimpsest.cli.stack import StackInfo
from palimpsest.core import bus
from palimpsest.core.events import subject_of
from palimpsest.core.wire import FINDING_MARKER
from palimpsest.devtools.chaos.github import FakeGitHubAPI
from palimpsest.devtools.chaos.repos import ChaosRepo
from palimpsest.index.context.leftbehind import SECTION_TITLE

if TYPE_CHECKING:
    from palimpsest.devtools.chaos.soak import ChaosConfig, Delivery

QUIET_POLLS = 3


@dataclass(slots=True)
class Tenant:
    key: str
    tenant_id: str
    api_token: str
    installation_external_id: int
    login: str
    webhook_secret: str
    access_token: str
    installation_id: str | None = None


@dataclass(slots=True)
class Expectations:
    deliveries: list[Delivery] = field(default_factory=list)


async def verify(
    stack: StackInfo,
    sup: Supervisor,
    tenants: dict[str, Tenant],
    repos: list[ChaosRepo],
    api: FakeGitHubAPI,
    expected: Expectations,
    cfg: ChaosConfig,
) -> dict[str, Any]:
    problems: list[str] = []
    argv = _process_arguments(sup)
    tenant_ids = [t.tenant_id for t in tenants.values()]
    quiet_s = await _quiescence(stack, tenant_ids, cfg.quiescence_timeout_s)
    if quiet_s is None:
        problems.append(f"no quiescence within {cfg.quiescence_timeout_s:.0f}s")
    async with await psycopg.AsyncConnection.connect(
        stack.owner_url, autocommit=True, row_factory=dict_row
    ) as db:
        accepted = await _check_deliveries(db, expected, tenant_ids, problems)
        events = await _stream_events(stack, tenant_ids)
        _check_events(accepted, events, problems)
        await _check_outbox(db, tenant_ids, problems)
        await _check_inbox(db, events, problems)
        snapshots = await _check_snapshots(db, repos, problems)
        reviews = await _check_reviews(db, events, repos, api, problems)
        await _check_dead_letters(db, tenant_ids, problems)
    await _check_isolation(stack, sup, tenants, repos, problems)
    _check_secrets(sup, tenants, events, argv, problems)
    return {
        "accepted": len(accepted),
        "events": len(events),
        "quiescence_s": quiet_s,
        "snapshots_checked": snapshots,
        "reviews": reviews,
        "discrepancies": problems,
    }


# ---------------------------------------------------------------------------- quiescence


async def _quiescence(stack: StackInfo, tenant_ids: list[str], timeout_s: float) -> float | None:
    """Seconds until nothing is pending anywhere for QUIET_POLLS polls in a row (None: timed out)."""
    started = time.monotonic()
    quiet = 0
    nc = await bus.connect(stack.nats_url, name="chaos-verify")
    try:
        js = nc.jetstream()
        while time.monotonic() - started < timeout_s:
            busy = await _busy(stack, js, tenant_ids)
            quiet = 0 if busy else quiet + 1
            if quiet >= QUIET_POLLS:
                return round(time.monotonic() - started - (QUIET_POLLS - 1), 1)
            await asyncio.sleep(1.0)
    finally:
        await nc.close()
    return None


async def _busy(stack: StackInfo, js: Any, tenant_ids: list[str]) -> bool:
    try:
        async with await psycopg.AsyncConnection.connect(stack.owner_url, autocommit=True) as db:
            cur = await db.execute("SELECT count(*) FROM outbox WHERE published_at IS NULL")
            row = await cur.fetchone()
            if row is None or row[0]:
                return True
            cur = await db.execute(
                "SELECT count(*) FROM code_index_snapshots WHERE state = 'building' AND tenant_id = ANY(%s::uuid[])",
                (tenant_ids,),
            )
            row = await cur.fetchone()
            if row is None or row[0]:
                return True
        for spec in bus.CONSUMERS.values():
            info = await js.consumer_info(bus.STREAM, spec.name)
            if info.num_pending or info.num_ack_pending:
                return True
    except Exception:  # a server still coming back counts as busy
        return True
    return False


# ---------------------------------------------------------------------------- deliveries, events


async def _check_deliveries(
    db: psycopg.AsyncConnection[dict[str, Any]],
    expected: Expectations,
    tenant_ids: list[str],
    problems: list[str],
) -> dict[str, list[str]]:
    """delivery id → the event ids of its one accepted record."""
    for d in expected.deliveries:
        if d.expect is not None:  # hostile: exactly the expected answer, and never an event
            if d.status != d.expect or d.event_ids or d.outcome == "accepted":
                problems.append(
                    f"{d.kind} delivery {d.delivery_id}: HTTP {d.status} ({d.outcome}), expected {d.expect}"
                )
        elif d.status is None or d.status >= 500:
            problems.append(f"delivery {d.delivery_id} ({d.kind}) never answered (last status {d.status})")
        elif d.status >= 300:
            problems.append(f"delivery {d.delivery_id} ({d.kind}) answered {d.status} ({d.outcome})")
    cur = await db.execute(
        "SELECT delivery_id, outcome, event_ids FROM deliveries WHERE tenant_id = ANY(%s::uuid[])",
        (tenant_ids,),
    )
    rows = await cur.fetchall()
    accepted: dict[str, list[str]] = {}
    for r in rows:
        if r["outcome"] == "accepted":
            if r["delivery_id"] in accepted:
                problems.append(f"delivery {r['delivery_id']} accepted twice")
            accepted[r["delivery_id"]] = [str(e) for e in r["event_ids"]]
    for d in {d.delivery_id: d for d in expected.deliveries}.values():
        if d.expect is not None:
            if d.delivery_id in accepted:
                problems.append(f"{d.kind} delivery {d.delivery_id} was accepted")
        elif d.delivery_id not in accepted:
            problems.append(f"delivery {d.delivery_id} ({d.kind}) has no accepted record")
        elif len(accepted[d.delivery_id]) != 1:
            problems.append(f"delivery {d.delivery_id} emitted {len(accepted[d.delivery_id])} events, not 1")
    return accepted


async def _stream_events(stack: StackInfo, tenant_ids: list[str]) -> list[dict[str, Any]]:
    """Every message on the events stream that belongs to the soak's tenants, in stream order."""
    nc = await bus.connect(stack.nats_url, name="chaos-read")
    found: list[dict[str, Any]] = []
    wanted = set(tenant_ids)
    try:
        js = nc.jetstream()
        sub = await js.pull_subscribe(bus.SUBJECTS[0], durable=None, stream=bus.STREAM)
        unavailable = 0
        try:
            while True:
                try:
                    msgs = await sub.fetch(500, timeout=2.0)
                except TimeoutError:
                    break
                except ServiceUnavailableError:
                    # on a cluster the new consumer may not answer yet (no leader placed): retried
                    unavailable += 1
                    if unavailable > 60:
                        raise
                    await asyncio.sleep(0.5)
                    continue
                for m in msgs:
                    payload = json.loads(m.data)
                    if payload.get("tenant_id") in wanted:
                        found.append({**payload, "_raw": m.data.decode("utf-8", "replace")})
                    await m.ack()
        finally:
            await sub.unsubscribe()
    finally:
        await nc.close()
    return found


def _check_events(accepted: dict[str, list[str]], events: list[dict[str, Any]], problems: list[str]) -> None:
    on_stream = Counter(str(e["id"]) for e in events)
    for event_id, n in on_stream.items():
        if n > 1:
            problems.append(f"event {event_id} is on the stream {n} times")
    for delivery_id, ids in accepted.items():
        for event_id in ids:
            if on_stream[event_id] == 0:
                problems.append(f"event {event_id} of delivery {delivery_id} never reached the stream")


async def _check_outbox(
    db: psycopg.AsyncConnection[dict[str, Any]], tenant_ids: list[str], problems: list[str]
) -> None:
    cur = await db.execute(
        "SELECT count(*) AS n FROM outbox WHERE published_at IS NULL AND tenant_id = ANY(%s::uuid[])",
        (tenant_ids,),
    )
    row = await cur.fetchone()
    if row and row["n"]:
        problems.append(f"{row['n']} events still unpublished in the outbox")


async def _check_inbox(
    db: psycopg.AsyncConnection[dict[str, Any]], events: list[dict[str, Any]], problems: list[str]
) -> None:
    cur = await db.execute(
        "SELECT consumer, event_id FROM inbox WHERE event_id = ANY(%s::uuid[])", ([e["id"] for e in events],)
    )
    applied = Counter((r["consumer"], str(r["event_id"])) for r in await cur.fetchall())
    for e in events:
        for spec in bus.CONSUMERS.values():
            if subject_of(e["type"]) not in spec.subjects:
                continue
            n = applied[(spec.name, str(e["id"]))]
            if n != 1:
                problems.append(f"{spec.name} applied {e['type']} {e['id']} {n} times")


# ---------------------------------------------------------------------------- index, reviews


def _hex(value: Any) -> str:
    if isinstance(value, bytes | memoryview):
        return bytes(value).hex()
    text = str(value)
    return text[2:] if text.startswith("\\x") else text


async def _check_snapshots(
    db: psycopg.AsyncConnection[dict[str, Any]], repos: list[ChaosRepo], problems: list[str]
) -> int:
    checked = 0
    for repo in repos:
        head = await asyncio.to_thread(repo.head)
        cur = await db.execute(  # applied once: no commit built into two kept snapshots
            "SELECT commit_sha, count(*) AS n FROM code_index_snapshots WHERE repository_id = %s"
            " AND state IN ('ready', 'superseded') GROUP BY 1 HAVING count(*) > 1",
            (repo.repository_id,),
        )
        for twice in await cur.fetchall():
            problems.append(
                f"{repo.full_name}: commit {_hex(twice['commit_sha'])[:12]} built {twice['n']} times"
            )
        cur = await db.execute(
            "SELECT snapshot_id, commit_sha FROM code_index_snapshots WHERE repository_id = %s AND state = 'ready'"
            " AND NOT pinned"
            " ORDER BY ready_at DESC NULLS LAST, created_at DESC LIMIT 1",
            (repo.repository_id,),
        )
        snap = await cur.fetchone()
        if snap is None:
            problems.append(f"{repo.full_name}: no ready snapshot")
            continue
        if _hex(snap["commit_sha"]) != head:
            problems.append(
                f"{repo.full_name}: newest ready snapshot is {_hex(snap['commit_sha'])[:12]}, head is {head[:12]}"
            )
            continue
        cur = await db.execute(
            "SELECT path, blob_sha FROM code_index_files WHERE snapshot_id = %s", (snap["snapshot_id"],)
        )
        indexed = {r["path"]: _hex(r["blob_sha"]) for r in await cur.fetchall()}
        tree = await asyncio.to_thread(repo.tree, head)
        if indexed != tree:
            missing = sorted(set(tree) - set(indexed))[:3]
            extra = sorted(set(indexed) - set(tree))[:3]
            changed = sorted(p for p in set(tree) & set(indexed) if tree[p] != indexed[p])[:3]
            problems.append(
                f"{repo.full_name}: snapshot files differ from git (missing {missing}, extra {extra}, blob {changed})"
            )
            continue
        checked += 1
    return checked


async def _check_reviews(
    db: psycopg.AsyncConnection[dict[str, Any]],
    events: list[dict[str, Any]],
    repos: list[ChaosRepo],
    api: FakeGitHubAPI,
    problems: list[str],
) -> dict[str, int]:
    """Each requested head reviewed once; per pull request one summary, edited in place, ending on
    the newest requested head; no finding posted twice.

    A head whose request is older than the request of a head already posted is not posted
    (``not posted: superseded …``): a late request never overwrites a newer head's summary; a
    head asked for again after another head was posted is named by the summary again.
    """
    by_id = {r.repository_id: r for r in repos}
    requested: dict[tuple[str, str], int] = {}
    newest: dict[tuple[str, int], tuple[str, str]] = {}  # (repo id, number) → (occurred_at, head)
    for e in events:
        if e["type"] != "review.requested" or not e.get("head_sha"):
            continue
        key, pr = (str(e["repository_id"]), str(e["head_sha"])), (str(e["repository_id"]), int(e["number"]))
        requested[key] = int(e["number"])
        when = datetime.fromisoformat(str(e["occurred_at"]).replace("Z", "+00:00")).isoformat()
        newest[pr] = max(newest.get(pr, ("", "")), (when, str(e["head_sha"])))
    cur = await db.execute(
        "SELECT repository_id, head_sha, state, reason, posted FROM reviews WHERE repository_id = ANY(%s::uuid[])",
        ([r.repository_id for r in repos],),
    )
    stored: Counter[tuple[str, str]] = Counter()
    rows: dict[tuple[str, str], dict[str, Any]] = {}
    for r in await cur.fetchall():
        key = (str(r["repository_id"]), str(r["head_sha"]))
        stored[key] += 1
        rows[key] = r
    posted_ok = superseded = 0
    for (repo_id, head), number in requested.items():
        repo = by_id.get(repo_id)
        name = repo.full_name if repo else repo_id
        where = f"{name}#{number}@{head[:12]}"
        if stored[(repo_id, head)] != 1:
            problems.append(f"{where}: {stored[(repo_id, head)]} reviews stored, not 1")
            continue
        row = rows[(repo_id, head)]
        if row["state"] != "completed":
            problems.append(f"{where}: review {row['state']} ({row['reason']})")
        posts = api.posts[(name, number, head)]
        if posts >= 1 and row["posted"]:  # more than once: named again by a newer request for it
            posted_ok += 1
        elif not row["posted"] and str(row["reason"] or "").startswith("not posted: superseded"):
            # posts is 0, or 1 when a post went through and the process died before storing the
            # review: its redelivery found a newer head posted meanwhile
            superseded += 1
        else:
            problems.append(f"{where}: posted {posts} times (stored posted={row['posted']})")
    for (repo_id, number), (_, head) in newest.items():
        repo = by_id.get(repo_id)
        name = repo.full_name if repo else repo_id
        made = api.summaries_created[(name, number)]
        if made != 1:
            problems.append(f"{name}#{number}: {made} summary comments, not 1")
            continue
        final = api.summaries[(name, number)][0]["body"]
        if rows.get((repo_id, head), {}).get("state") == "completed" and f"head={head}" not in final:
            problems.append(
                f"{name}#{number}: the summary does not name the newest requested head {head[:12]}"
            )
    for (name, number, fp), n in api.findings_posted.items():
        if n != 1:
            problems.append(f"{name}#{number}: finding {fp[:12]} posted {n} times")
    left_behind = _check_left_behind(api, problems)
    return {
        "requested": len(requested),
        "stored": sum(stored.values()),
        "posted_once": posted_ok,
        "superseded": superseded,
        "pull_requests": len(newest),
        "findings_posted": sum(api.findings_posted.values()),
        "left_behind_in_summaries": left_behind,
    }


def _check_left_behind(api: FakeGitHubAPI, problems: list[str]) -> int:
    """Each pull request's summary lists a left-behind doc finding (its section, "Docs this change
    leaves behind") once, and never one also posted inline; returns how many the summaries list."""
    listed = 0
    for (name, number), summaries in api.summaries.items():
        body = str(summaries[0]["body"]) if summaries else ""
        if SECTION_TITLE not in body:
            continue
        section = body.split(SECTION_TITLE, 1)[1].split("\n\n", 1)[0]
        marks = Counter(FINDING_MARKER.findall(section))
        listed += len(marks)
        for fp, n in marks.items():
            if n != 1:
                problems.append(f"{name}#{number}: left-behind finding {fp[:12]} listed {n} times")
            if api.findings_posted[(name, number, fp)]:
                problems.append(
                    f"{name}#{number}: left-behind finding {fp[:12]} both inline and in the summary"
                )
    return listed


async def _check_dead_letters(
    db: psycopg.AsyncConnection[dict[str, Any]], tenant_ids: list[str], problems: list[str]
) -> None:
    cur = await db.execute(
        "SELECT consumer, event_type, last_error FROM dead_letters WHERE tenant_id = ANY(%s::uuid[])",
        (tenant_ids,),
    )
    for r in await cur.fetchall():
        problems.append(f"dead letter: {r['consumer']} {r['event_type']}: {(r['last_error'] or '')[:200]}")


# ---------------------------------------------------------------------------- isolation, secrets


async def _check_isolation(
    stack: StackInfo, sup: Supervisor, tenants: dict[str, Tenant], repos: list[ChaosRepo], problems: list[str]
) -> None:
    from palimpsest.core.db import open_pool, tenant_tx

    a, b = tenants["a"], tenants["b"]
    b_repo = next(r for r in repos if r.tenant == "b")
    async with httpx.AsyncClient(timeout=10.0) as http:
        auth = {"Authorization": f"Bearer {a.api_token}"}
        for path in (
            f"/v1/tenants/{b.tenant_id}/repositories",
            f"/v1/tenants/{b.tenant_id}/repositories/{b_repo.repository_id}",
            f"/v1/tenants/{a.tenant_id}/repositories/{b_repo.repository_id}",
            f"/v1/tenants/{b.tenant_id}/deliveries",
        ):
            r = await http.get(sup.ingest_url + path, headers=auth)
            if r.status_code not in (403, 404):
                problems.append(f"tenant A's token read {path}: HTTP {r.status_code}")
    pool = await open_pool(stack.app_url, transaction_pooler=stack.transaction_pooler, min_size=1, max_size=2)
    try:
        async with tenant_tx(pool, a.tenant_id) as conn:
            cur = await conn.execute(
                "SELECT c.relname FROM pg_class c JOIN pg_attribute a ON a.attrelid = c.oid"
                " WHERE a.attname = 'tenant_id' AND c.relkind IN ('r', 'p') AND c.relnamespace = 'public'::regnamespace"
                " AND has_table_privilege(c.oid, 'SELECT')"
            )
            tables = [str(r["relname"]) for r in await cur.fetchall()]
            for table in tables:
                cur = await conn.execute(
                    f"SELECT count(*) AS n FROM {table} WHERE tenant_id = %s",
                    (b.tenant_id,),
                )
                row = await cur.fetchone()
                if row and row["n"]:
                    problems.append(f"tenant A's transaction reads {row['n']} rows of tenant B in {table}")
    finally:
        await pool.close()


def _process_arguments(sup: Supervisor) -> list[str]:
    found: list[str] = []
    for p in sup.processes.values():
        if p.pid is None:
            continue
        try:
            found.append(Path(f"/proc/{p.pid}/cmdline").read_bytes().decode("utf-8", "replace"))
        except OSError:
            continue
    return found


def _check_secrets(
    sup: Supervisor,
    tenants: dict[str, Tenant],
    events: list[dict[str, Any]],
    argv: list[str],
    problems: list[str],
) -> None:
    secrets: dict[str, str] = {}
    for t in tenants.values():
        secrets[f"tenant {t.key} webhook secret"] = t.webhook_secret
        secrets[f"tenant {t.key} access token"] = t.access_token
        secrets[f"tenant {t.key} API token"] = t.api_token
    admin = sup.processes["ingest"].env.get("PALIMPSEST_ADMIN_TOKEN")
    if admin:
        secrets["admin token"] = admin
    places: dict[str, str] = {f"process arguments of {i}": a for i, a in enumerate(argv)}
    for p in sup.processes.values():
        try:
            places[str(p.log_path)] = p.log_path.read_text("utf-8", "replace")
        except OSError:
            continue
    places["events on the stream"] = "\n".join(e["_raw"] for e in events)
    problems.extend(secret_leaks(secrets, places))


def secret_leaks(secrets: dict[str, str], places: dict[str, str]) -> list[str]:
    """Each (secret, place) where the secret's text occurs."""
    return [
        f"{what} appears in {where}"
        for where, text in places.items()
        for what, value in secrets.items()
        if value and value in text
    ]
